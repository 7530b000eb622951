"""A ``corecast sweep --json-out`` result as ``Measurements`` (its "measured" runs: a time
curve with stall columns), and its reader.

The file is one JSON object whose "measured" list is a curve:
  {"measured": [{"threads": n, "time_s": t, "spread_s": d, "stalls_s": {category: s}}], ...}
Each entry is one count: metric "time"; "stalls_s" become stall columns (a category an
entry does not list counts as 0 there, as a category absent from a run does in sweep);
"spread_s" (half the range of that count's repetitions, in seconds) becomes the relative
spread that widens the band.  Entries repeating a count are repetitions.  Every other key
is ignored here.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...errors import InputError
from .raw import Series, as_the_sweep, check_metric, one_curve
from .registry import CURVES, Reader

if TYPE_CHECKING:
    from ...model.curve.entities import Measurements


def looks_like_json(path: str, text: str) -> bool:
    """A ``.json`` name, or a first non-blank character ``{`` (a CSV never starts so)."""
    return path.lower().endswith(".json") or text.lstrip().startswith("{")


def sweep_measurements(result: dict, path: str, metric: str | None = None) -> Measurements:
    """A checked sweep result's "measured" runs (read from ``path``) as time
    ``Measurements`` with stall columns."""
    from ...model.curve.entities import Measurements  # numpy: only once measurements are built

    if metric is not None and metric != "time":
        raise InputError(f"{path}: --metric {metric} conflicts with a sweep result (its times are a time metric)")
    measured = result["measured"]
    categories = sorted({k for e in measured for k in (e.get("stalls_s") or {})})
    counts = [float(e["threads"]) for e in measured]
    values = [float(e["time_s"]) for e in measured]
    stalls = {k: [float((e.get("stalls_s") or {}).get(k, 0.0)) for e in measured] for k in categories}
    try:
        data = Measurements.from_samples(counts, values, "time", stalls=stalls)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    # A count measured once carries its repetitions' spread in "spread_s".
    spread = data.spread.copy()
    for j, (n, reps) in enumerate(zip(data.counts, data.repetitions)):
        if reps == 1:
            (entry,) = [e for e in measured if float(e["threads"]) == n]
            d = entry.get("spread_s")
            if d is not None:
                spread[j] = float(d) / data.values[j]
    return replace(data, spread=spread)



def _not_a_recording(text: str, name: str) -> None:
    """A run's recording (JSON Lines whose first line has ``event``) is replay's input,
    not a curve: say so instead of what a sweep result lacks."""
    import json

    first = text.lstrip().split("\n", 1)[0]
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):  # the sweep reader's parser says what is wrong
        return
    if isinstance(obj, dict) and "event" in obj:
        raise InputError(f"{name}: a run's recording (corecast run --json-out), one team size, not "
                         "measurements at several counts: 'corecast replay' predicts from it")


def _load_sweep(files: list[tuple[str, str]], metric: str | None = None, callpath: str | None = None,
                profile_metric: str | None = None, count_attribute: str | None = None) -> list[Series]:
    from ..sweepresult import count_unit, cpus_allowed, parse_sweep_json

    ((name, text),) = files
    check_metric(metric)
    _not_a_recording(text, name)
    result = parse_sweep_json(text, name)
    # A launcher's sweep counted ranks: its curve is labelled so, as merge's is.
    (series,) = one_curve(sweep_measurements(result, name, metric), name, callpath, profile_metric,
                          count_unit(result), count_attribute)
    as_the_sweep(series, cpus_allowed(result, name))
    return [series]


READER = Reader(
    "sweep", CURVES, "a sweep result",
    "the JSON `corecast sweep --json-out` writes: its `measured` runs as a time curve with stall columns",
    "a name ending in `.json`, or text starting with `{`, that no reader above claimed",
    lambda s: looks_like_json(s.path, s.text), _load_sweep)
