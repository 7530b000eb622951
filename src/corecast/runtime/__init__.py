"""The runtime side: the preload library's model bridge, its predictor and launcher.

Modules here are imported inside profiled programs (through the embedded model
library), so they stay light: the standard library only, no numpy or scipy.
"""
