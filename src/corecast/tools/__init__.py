"""Offline tools over what runs recorded or measured, beside the CLI that calls them:
``samples`` (a recording's one reader: a file to its processes), ``replay`` (``corecast
replay``, ``corecast numa --replay``), ``ranks`` (``corecast merge``), ``calibrate``
(``corecast calibrate``: measures this machine).  Never imported inside profiled programs."""
