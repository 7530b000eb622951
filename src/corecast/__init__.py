"""corecast: predict how a parallel program scales with threads, cores and NUMA nodes."""
from .entities import InputError, Measurements, Prediction
from .predict import predict, predict_measurements

__all__ = ["predict", "predict_measurements", "Measurements", "Prediction", "InputError"]
__version__ = "0.1.0"
