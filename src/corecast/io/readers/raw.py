"""What a reader hands back before it becomes ``Measurements``, and the count check the
readers share.  Apart from the package's ``__init__`` (which imports the readers) so that
the readers import it without an import circle."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import InputError


@dataclass
class RawSeries:
    """What a reader found: (count, value) pairs of one callpath and metric."""

    callpath: str
    metric_name: str
    points: list[tuple[float, float]]
    count_unit: str = "threads"  # "ranks" where the count is an MPI rank count


def as_count(x: float, where: str) -> float:
    """``x`` checked to be a count (a whole number >= 1)."""
    if not (math.isfinite(x) and x >= 1 and x == int(x)):
        raise InputError(f"{where}: {x:g} is not a count (a whole number >= 1); corecast's "
                         "one parameter is the thread, core or process count")
    return float(x)
