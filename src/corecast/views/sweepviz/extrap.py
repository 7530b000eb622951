"""A sweep result as Extra-P's JSON Lines input: one line per measured run."""
from __future__ import annotations

import json

from ...io.fileio import write_file
from ...io.sweepresult import SOURCE, check_sweep, cpus_allowed, regions_of

# One parameter, named after what the sweep counted ("threads", or "ranks" for a launcher's
# sweep: the result's "count"), so that Extra-P's models and `corecast predict` of the file
# speak of threads or ranks; the whole program is one callpath.
EXTRAP_PARAMETER = "threads"
EXTRAP_CALLPATH = "main"
EXTRAP_REGION_CALLPATH = "main->{}"  # a region's own time, as a child of main
EXTRAP_TIME_METRIC = "time"
EXTRAP_STALL_METRIC = "stall:{}"  # one metric per stall category, on the same callpath


def extrap_records(result: dict, source: str = SOURCE) -> list[dict]:
    """Extra-P JSON Lines records, one per measured run (each of a count's ``runs``; the
    count's median where a result has none; failed runs and predictions are not
    measurements and are left out).

    Every run gives ``{"params": {"threads": n}, "callpath": "main", "metric": "time",
    "value": time_s}`` and, per stall category it lists, the same with
    ``"metric": "stall:CATEGORY"`` and the stall seconds.  Runs repeating a count become
    repetitions in Extra-P.  Stalls are metrics, not child callpaths: they are thread
    time summed over the team at the same code location, not a region inside ``main``'s
    wall time (at many threads they exceed it), and Extra-P models every
    (callpath, metric) pair on its own either way.  Each region of ``regions`` adds
    callpath ``main->REGION``, metric ``time``, with the region's own time per run (per
    count where its entry has no ``runs``).  The
    parameter is ``ranks`` where the sweep counted ranks (``"count"``).  Every record has
    the sweep's ``"cpus_allowed"`` where it has one.
    """
    check_sweep(result, source)
    name = parameter_of(result)
    # The CPUs the runs shared, on every line (Extra-P's reader reads past a key it does not
    # know): corecast's reader of the file leaves out oversubscribed counts, as of the sweep.
    cpus = cpus_allowed(result, source)
    extra = {"cpus_allowed": cpus} if cpus is not None else {}
    records = []
    for e in result["measured"]:
        # A result that kept its repetitions ("runs") gives a line per run; an older one
        # has only the per-count median.
        for run in e.get("runs") or [e]:
            params = {name: _as_int(e["threads"])}
            records.append({"params": params, "callpath": EXTRAP_CALLPATH, "metric": EXTRAP_TIME_METRIC,
                            "value": float(run["time_s"]), **extra})
            for cat in sorted(run.get("stalls_s") or {}):
                records.append({"params": dict(params), "callpath": EXTRAP_CALLPATH,
                                "metric": EXTRAP_STALL_METRIC.format(cat), "value": float(run["stalls_s"][cat]),
                                **extra})
    for r in regions_of(result.get("regions"), source):
        for e in r["measured"]:
            for run in e.get("runs") or [e]:  # a line per run, as the whole program's
                records.append({"params": {name: _as_int(e["threads"])},
                                "callpath": EXTRAP_REGION_CALLPATH.format(r["name"]),
                                "metric": EXTRAP_TIME_METRIC, "value": float(run["time_s"]), **extra})
    return records


def parameter_of(result: dict) -> str:
    """The exported parameter's name: what the sweep counted (``"count"``: "ranks" for a
    launcher's sweep), else threads."""
    count = result.get("count")
    return count if isinstance(count, str) and count.isidentifier() else EXTRAP_PARAMETER


def export_extrap(result: dict, path: str) -> None:
    """Write the sweep's measured runs to ``path`` in Extra-P's JSON Lines format."""
    text = "".join(json.dumps(r, allow_nan=False) + "\n" for r in extrap_records(result))
    write_file(path, text)


def _as_int(x) -> int | float:
    f = float(x)
    return int(f) if f == int(f) else f
