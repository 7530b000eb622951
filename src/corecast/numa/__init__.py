"""NUMA node-count prediction (SPEC section 4): machine descriptions (``machine``), the
two-level queueing model and its inputs (``model``), and reading sample files.

Standard library only, like ``corecast.queueing``: the runtime model imports it inside
profiled programs."""
from __future__ import annotations

import json
import os
from typing import Any

from .machine import Machine, MachineError, detect, load, presets
from .model import NodePrediction, Rates, SampleError, fit_rate, parse_sample, predict_nodes

__all__ = ["Machine", "MachineError", "NodePrediction", "Rates", "SampleError", "detect",
           "fit_rate", "load", "load_sample", "parse_sample", "predict_nodes", "presets"]


def read_json(path: str | os.PathLike, what: str) -> Any:
    """Parsed JSON of ``path``; SampleError with a one-line reason otherwise."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise SampleError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SampleError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise SampleError(f"{path}: not a JSON {what}: {exc.msg} (line {exc.lineno})") from None


def load_sample(path: str | os.PathLike, machine: Machine) -> Rates:
    """Rates from a sample file (see ``model.parse_sample``)."""
    try:
        return parse_sample(read_json(path, "sample"), machine)
    except SampleError as exc:
        if str(exc).startswith(f"{path}:"):
            raise
        raise SampleError(f"{path}: {exc}") from None
