"""auto: placeholder until the selector lands (uses USL)."""
from __future__ import annotations

from ..entities import Fit, Measurements
from . import register
from .laws import fit_amdahl, fit_usl


@register("auto", "chooses per input among the other methods", 2)
def fit_auto(data: Measurements, nmax: float) -> Fit:
    if len(data.at_target_size()) < 3:
        return fit_amdahl(data, nmax)
    return fit_usl(data, nmax)
