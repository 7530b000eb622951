"""Online team-size steering: one OPreSca instance per OpenMP region (SPEC section 2).

Each sampler window is one scheduling interval.  The region's calls per second of region
time at the team size it ran with is the interval's performance; OPreSca answers with the
team size for the next window.  Candidates are 1 .. the program's own count: steering
only ever shrinks a team, and the C side never applies it inside another team.
"""
from __future__ import annotations

from .blas import load_numeric
from .history import RegionHistory


class RegionSteer:
    def __init__(self, own: int) -> None:
        load_numeric()  # numpy/scipy: only in steered runs
        from ..tuning import OPreSca

        self.own = own
        self.tuner = OPreSca(list(range(1, own + 1)))

    def step(self, history: RegionHistory) -> int:
        """Feed the last window's measurement; the team size for the next window."""
        if history.window_team is not None and history.window_perf:
            self.tuner.observe(history.window_team, history.window_perf)
        return int(self.tuner.next_count())

    def chosen(self) -> int | None:
        return int(self.tuner.best) if self.tuner.converged and self.tuner.best else None

    def gain(self, history: RegionHistory) -> float | None:
        """Measured perf(chosen) / perf(program's own count) - 1."""
        chosen = self.chosen()
        if chosen is None:
            return None
        mine, theirs = history.perf(chosen), history.perf(self.own)
        return mine / theirs - 1.0 if mine and theirs else None
