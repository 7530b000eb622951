"""The runtime side: the preload library's model bridge, launcher and report channel (the
plumbing); the in-process model they feed is ``corecast.model.runtime``.

Modules here are imported inside profiled programs (through the embedded model
library), so they stay light: the standard library only, no numpy or scipy.
"""
