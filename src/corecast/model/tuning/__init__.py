"""Choosing a thread count and its CPUs: ``tuners``, the online tuners (OPreSca, Binsearch)
that the runtime's steering drives; ``tunesim``, their replay on a measured curve
(``corecast tune-sim``); ``placement``, which CPUs a sweep's count runs on.

Importing this package imports nothing; all three are standard library only (the tuners
run inside profiled programs).
"""
