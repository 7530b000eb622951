"""Holds the ``sitecustomize`` that ``corecast run`` puts first on PYTHONPATH
(runtime/autoload.py)."""
