"""The prediction family: what every prediction of how a program scales has.

Each model answers with its own member of ``ScalingPrediction``:

- ``entities.CurvePrediction``: a method's fit of a measured curve (``corecast predict``);
- ``model.runtime.bound.TeamPrediction``: the runtime's answer for a region, process or
  kernel from its samples (``teamcurve.ContentionPrediction`` adds the losses per part);
- ``model.numa.NumaPrediction``: the NUMA model's answer per node count (``corecast numa``);
- ``model.runtime.numa.NumaRegionPrediction``: the runtime's NUMA answer for a region;
- ``tools.ranks.RankPrediction``: MPI ranks' recordings merged (``corecast merge``).

Every member has ``counts`` (in ``count_unit``), ``speedup`` at each count,
``speedup_band()`` (the low and high speedups, or None where the model gives no band),
``preferred`` (one of the counts) and ``basis`` (one line: what the prediction rests on).

Standard library only: the runtime's members are made inside profiled programs.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing costs a profiled program start-up time: annotations only
if TYPE_CHECKING:
    from typing import Sequence


class ScalingPrediction:
    """The family's base: members define ``counts``, ``speedup``, ``preferred`` and
    ``basis`` (as fields or properties) and, where they have a band, ``speedup_band``."""

    __slots__ = ()
    count_unit = "threads"  # what a count is: threads, ranks, NUMA nodes, cores

    def speedup_band(self) -> tuple[Sequence[float], Sequence[float]] | None:
        """(low, high) speedup at each count; None: the model gives no band."""
        return None
