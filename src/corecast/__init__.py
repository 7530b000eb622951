"""corecast: predict how a parallel program scales with threads, cores and NUMA nodes.

The model API (``predict`` and friends) is imported on first use: the runtime bridge
imports this package inside profiled programs, where numpy and scipy would only cost
start-up time.
"""
from __future__ import annotations

__all__ = ["predict", "predict_measurements", "Measurements", "CurvePrediction", "ScalingPrediction",
           "InputError"]
__version__ = "0.1.0"

_LAZY = {
    "predict": "corecast.model.curve.prediction",
    "predict_measurements": "corecast.model.curve.prediction",
    "Measurements": "corecast.model.curve.entities",
    "CurvePrediction": "corecast.model.curve.entities",
    "ScalingPrediction": "corecast.model.scaling",
    "InputError": "corecast.model.curve.entities",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'corecast' has no attribute {name!r}")
