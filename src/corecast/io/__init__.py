"""I/O: the one file reader and writer (``fileio``), the input readers (``readers/``), the
sweep result file (``sweepresult``), stall plugins and the ``CORECAST_*`` settings.

Absolute ``import io`` elsewhere is still the standard library; this package is only ever
named as ``corecast.io`` or relatively (``from ..io.fileio import ...``)."""
