"""The runtime side: the preload library's model bridge, launcher and report channel (the
plumbing), and in ``model/`` the in-process predictor they feed.

Modules here are imported inside profiled programs (through the embedded model
library), so they stay light: the standard library only, no numpy or scipy.
"""
