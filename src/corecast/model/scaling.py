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
the count it names and ``basis`` (one line: what the prediction rests on).  The count has
one name per meaning: ``fastest``, the best (the runtime's members name only this one,
the fewest threads within 1% of it), and ``preferred``, the count that pays off (each one
added gains enough: ``corecast predict`` and ``merge``; ``corecast numa``: the fewest nodes
within ``--efficiency`` of the best, which is the best without it).

Standard library only: the runtime's members are made inside profiled programs.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing costs a profiled program start-up time: annotations only
if TYPE_CHECKING:
    from typing import Sequence

# What a count may be said to count (one: many); any other name another tool gives its
# count (Extra-P's parameter ``x``) labels the counts as it is.
COUNT_UNITS = {"thread": "threads", "rank": "ranks", "process": "processes", "core": "cores", "node": "nodes",
               "compute unit": "compute units"}

# The largest count corecast reads or predicts: every count up to --upto is predicted, so
# the grid stays bounded; every reader of counts refuses more (a file's count of 2^70 was
# exported and read back only for predict to refuse it).  Here, standard library only, so
# that the readers check it without importing numpy.
MAX_COUNT = 100_000


def over_max_count(text: str) -> str:
    """Why the count written ``text`` is refused: above ``MAX_COUNT`` (a long one said by
    its digits, not all of them)."""
    shown = text if len(text) <= 20 else f"a count of {len(text)} digits"
    return f"{shown} is above {MAX_COUNT}, the largest count corecast predicts"


def count_unit_of(name: str) -> str:
    """The ``count_unit`` of counts another tool calls ``name`` (Extra-P's ``p``, ``x``,
    ``threads``...): one of ``COUNT_UNITS`` where the name is one, in either number and
    any case, else the name itself: a thread count only where the file says it is."""
    low = name.strip().lower()
    for one, many in COUNT_UNITS.items():
        if low in (one, many):
            return many
    return name.strip()


class ScalingPrediction:
    """The family's base: members define ``counts``, ``speedup``, ``fastest`` or
    ``preferred`` (or both) and ``basis`` (as fields or properties) and, where they have a band, ``speedup_band``."""

    __slots__ = ()
    count_unit = "threads"  # what a count is: threads, ranks, NUMA nodes, cores

    def speedup_band(self) -> tuple[Sequence[float], Sequence[float]] | None:
        """(low, high) speedup at each count; None: the model gives no band."""
        return None
