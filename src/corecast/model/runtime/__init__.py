"""The runtime's in-process model: a sample of a running program to its predictions.

Imported inside profiled programs: the standard library only, and never the runtime's
plumbing (``corecast.runtime``: bridge, launcher, channel) that feeds it.
"""
