"""The empirical band: how far one-run predictions have missed programs they were not
chosen on, put around every prediction.

The contention model's own band spreads only what it fits (a serial share, lock holds), and
on the 16-core recordings it held the measured S(16) in a few cases in ten, nearly always
because the program gained less than predicted (barrier-heavy solvers, memory bandwidth:
issue #38).  So each prediction's band is joined with [S e^(lo log2 n), S e^(hi log2 n)]:
lo and hi are the 10th and 90th percentiles of ln(measured / predicted) per doubling of the
thread count, over the measured curves (split conformal prediction: Vovk, Gammerman and
Shafer, "Algorithmic Learning in a Random World", 2005; Lei et al., "Distribution-free
predictive inference for regression", JASA 2018).  The misses are larger where the sample
saw its threads wait: a region or process that spent a share w of its thread time in
stalls gets lo and hi times 1 + k w (locally weighted conformal prediction, Lei et al.
section 5.2, with w as the spread's scale), so a program that only computed gets a narrow
band and a barrier-bound one a wide band.  lo, hi and k are chosen by
``python benchmarks/bands.py``, which scores them leave-one-suite-out and says when these
constants are not the ones it chose.  At n = 1 the band is the prediction (S(1) = 1), and
it widens with every doubling, beyond the measured range too.

Standard library only: imported inside profiled programs."""
from __future__ import annotations

import math

from ...recording.abi import THREAD_STALLS

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from .bound import TeamPrediction

LOW_PER_DOUBLING = -0.072  # ln(measured / predicted) per doubling over the scale, 10th percentile
HIGH_PER_DOUBLING = 0.029  # 90th percentile
STALL_WEIGHT = 5.0  # k: the band's scale is 1 + k * the sample's stall share

_on = True


def stall_share(sample: dict) -> float:
    """The share of a region's or process's thread time (team x wall) its threads stalled
    (every thread stall: synchronisation, imbalance, run-queue wait), 0 to 1."""
    wall = float(sample.get("wall_s") or 0.0) * max(1, int(sample.get("threads") or 1))
    if wall <= 0.0:
        return 0.0
    stalls = sample.get("stalls_s") or {}
    return min(1.0, max(0.0, sum(float(stalls.get(s, 0.0)) for s in THREAD_STALLS) / wall))


def scale(share: float) -> float:
    """How many times the constants' width a band with that stall share gets."""
    return 1.0 + STALL_WEIGHT * min(1.0, max(0.0, share))


def widen(pred: TeamPrediction, share: float = 0.0) -> TeamPrediction:
    """``pred`` with its band joined with the empirical one, scaled by the sample's stall
    share (``stall_share``) (in place; returned)."""
    if not _on:
        return pred
    k = scale(share)
    for i, n in enumerate(pred.threads):
        d = k * math.log2(max(n, 1))
        s = pred.speedup[i]
        pred.low[i] = min(pred.low[i], s * math.exp(LOW_PER_DOUBLING * d))
        pred.high[i] = max(pred.high[i], s * math.exp(HIGH_PER_DOUBLING * d))
    return pred


class disabled:
    """``with spread.disabled():`` predictions without the empirical band (what
    benchmarks/bands.py calibrates it on)."""

    def __enter__(self) -> None:
        global _on
        self.was, _on = _on, False

    def __exit__(self, *exc: object) -> None:
        global _on
        _on = self.was
