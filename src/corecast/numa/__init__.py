"""NUMA node-count prediction (Cho, Oh and Egger, "Online Scalability Characterization of
Data-Parallel Programs on Many Cores", PACT 2016): reading sample files, and the model's
names for its callers; the two-level queueing model and its inputs are
``corecast.model.numa``, the machines it is for ``corecast.machine.numa``."""
from __future__ import annotations

import os
TYPE_CHECKING = False  # typing costs a profiled program start-up time: annotations only
if TYPE_CHECKING:
    from typing import Any

    from ..machine.numa import Machine

from ..errors import InputError
from ..io.fileio import parse_json, read_text, shown

from ..model.numa import NumaPrediction, Rates, SampleError, fit_rate, parse_sample, predict_nodes

__all__ = ["NumaPrediction", "Rates", "SampleError", "fit_rate", "load_sample", "parse_sample", "predict_nodes"]


def read_json(path: str | os.PathLike, what: str) -> Any:
    """Parsed JSON of ``path`` (corecast's one reader); SampleError with a one-line reason
    otherwise."""
    try:
        return parse_json(read_text(path), path, f"a JSON {what}")
    except InputError as exc:  # already names the file
        raise SampleError(str(exc)) from None


def load_sample(path: str | os.PathLike, machine: Machine) -> Rates:
    """Rates from a sample file (see ``model.parse_sample``)."""
    data = read_json(path, "sample")  # its errors name the file
    try:
        return parse_sample(data, machine)
    except SampleError as exc:
        raise SampleError(f"{shown(path)}: {exc}") from None
