"""The curve methods: a measured curve (``entities.Measurements``) to a ``CurvePrediction``.
``prediction`` is the entry (``corecast.predict``), ``methods/`` the registered methods,
``functions`` the function shapes they fit (PreSca's kernels), ``fitting``, ``smallfit``
and ``fitquality`` the fits and their metrics, ``preference`` the preferred counts and
``extrapolation`` a sweep's time and stall categories.

Importing this package imports nothing: the in-process model reaches a fit (numpy) only
through ``prediction``, and only when it fits.
"""
