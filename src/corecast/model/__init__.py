"""The models, one tree (ARCHITECTURE.md): ``curve/``, the curve methods (a measured
curve to a ``CurvePrediction``); ``runtime/``, the in-process model a running program's
samples go through; ``tuning/``, the online tuners and where a sweep's threads run;
``machine/``, the machine a prediction is for and its calibration; ``numa``, the NUMA
model; ``queueing``, its queues; ``scaling``, the prediction family.

Importing this package imports nothing: ``runtime/`` and what it imports are loaded inside
profiled programs and stay standard library only until a fit needs ``curve/``.
"""
