"""The empirical band: how far one-run predictions have missed programs they were not
chosen on, put around every prediction.

The contention model's own band spreads only what it fits (a serial share, lock holds), and
on the 16-core recordings it held the measured S(16) in a few cases in ten, nearly always
because the program gained less than predicted (barrier-heavy solvers, memory bandwidth:
issue #38).  So each prediction's band is joined with [S e^(lo log2 n), S e^(hi log2 n)]:
lo and hi are the 10th and 90th percentiles of ln(measured / predicted) per doubling of the
thread count, over the measured curves (split conformal prediction: Vovk, Gammerman and
Shafer, "Algorithmic Learning in a Random World", 2005; Lei et al., "Distribution-free
predictive inference for regression", JASA 2018).  They are chosen by
``python benchmarks/bands.py``, which scores them leave-one-suite-out and says when these
constants are not the ones it chose.  At n = 1 the band is the prediction (S(1) = 1), and
it widens with every doubling, beyond the measured range too.

Standard library only: imported inside profiled programs."""
from __future__ import annotations

import math

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from .bound import TeamPrediction

LOW_PER_DOUBLING = -0.107  # ln(measured / predicted) per doubling, 10th percentile
HIGH_PER_DOUBLING = 0.053  # 90th percentile

_on = True


def widen(pred: TeamPrediction) -> TeamPrediction:
    """``pred`` with its band joined with the empirical one (in place; returned)."""
    if not _on:
        return pred
    for i, n in enumerate(pred.threads):
        d = math.log2(max(n, 1))
        s = pred.speedup[i]
        pred.low[i] = min(pred.low[i], s * math.exp(LOW_PER_DOUBLING * d))
        pred.high[i] = max(pred.high[i], s * math.exp(HIGH_PER_DOUBLING * d))
    return pred


def one_thread(pred: TeamPrediction) -> TeamPrediction:
    """A sample whose work ran on one thread shows nothing of how it divides (imbalance,
    barriers, shared cache and bandwidth only appear with a team): its band reaches down
    to no gain, S = 1, at every count (lower where its own band is lower), whatever the
    central value assumes, and it names no fastest count (``fastest`` None: a count read
    off an assumed curve would be a confident answer with no evidence behind it) (in
    place; returned).  Replaying the 16-core recordings made at 1 thread
    (benchmarks/scale16_curves), 6 of 13 were off by more than 50% at 16."""
    for i, n in enumerate(pred.threads):
        if n > 1:
            pred.low[i] = min(pred.low[i], 1.0)
    pred.fastest = None
    return pred


def turns_band(pred: TeamPrediction) -> TeamPrediction:
    """A sample whose team took turns on the CPUs (``contention.took_turns``) shows nothing
    of how its threads run side by side, no more than one thread's does: the band joins
    no gain, S = 1, at every count, and no fastest count is named (in place; returned).
    The central value stays the model's, as ``one_thread``'s does: on the 2-core VM under
    two busy loops an OpenMP loop around a critical section read S@2 0.05-0.65 in 12 runs,
    about 0.2 measured bare on the idle VM; S = 1 would be further off in every one."""
    for i, n in enumerate(pred.threads):
        if n > 1:
            pred.low[i] = min(pred.low[i], 1.0)
            pred.high[i] = max(pred.high[i], 1.0)
    pred.fastest = None
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
