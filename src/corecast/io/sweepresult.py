"""A ``corecast sweep`` result: the JSON object ``run_sweep`` returns and ``--json-out``
writes (the contract is in ``corecast.sweep``'s docstring), and ``SweepResult``, the
typed record every reader of such an object gets, validated once by ``SweepResult.read``.

Standard library only: readers of sweep files import this module.
"""
from __future__ import annotations

import json
import math
import shlex
import statistics
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import InputError
from ..model.scaling import MAX_COUNT, over_max_count
from ..recording.values import json_number
from .fileio import parse_json, read_text, shown, write_file

MIN_REGION_SHARE = 0.05  # regions taking less of the run are not extrapolated on their own
SOURCE = "sweep result"  # names a result passed as a dict in error messages


class SweepError(InputError):
    """A one-line reason the sweep cannot start or cannot predict.

    ``result`` is the (partial) result object when the runs were made, so the caller can
    still write and print what was measured.
    """

    def __init__(self, message: str, result: Optional[dict] = None):
        super().__init__(message)
        self.result = result


def empty_result(command: list[str], runtime: str, warnings: list[str], failed: dict[int, str]) -> dict:
    """The result object before anything was measured or predicted."""
    return {
        "measured": [],
        "predictions": [],
        "stall_predictions": {},
        "preferred_count": None,
        "fastest_count": None,
        "preferred_threads": None,  # the same counts under their first names, for older readers
        "fastest_threads": None,
        "fastest_measured": False,
        "bottleneck": None,
        "command": list(command),
        "runtime": runtime,
        "warnings": warnings,
        "failed": [{"threads": n, "reason": failed[n]} for n in sorted(failed)],
        "regions": [],
    }


def write_json(result: dict, path: str) -> None:
    """The result as one line of JSON (ASCII: non-ASCII text as \\u escapes)."""
    write_file(path, json.dumps(result, allow_nan=False) + "\n")


# ---------------------------------------------------------------- reading one back

SWEEP_HINT = "expected a corecast sweep result: {\"measured\": [{\"threads\": N, \"time_s\": T}, ...], ...}"


def load_sweep_json(path: str) -> dict:
    """The sweep result object in ``path`` with its "measured" list checked; raises
    ``InputError`` (one line naming the file) on anything else."""
    return parse_sweep_json(read_text(path), shown(path))


def parse_sweep_json(text: str, path: str) -> dict:
    """``load_sweep_json`` of ``text`` read from ``path`` (as messages show it)."""
    if not text.strip():
        raise InputError(f"{path}: file is empty")
    obj = parse_json(text, path, hint=SWEEP_HINT)
    check_sweep(obj, path)
    return obj


def check_sweep(obj: object, source: str) -> None:
    """Check that ``obj`` is a sweep result with a usable "measured" list; ``source``
    (a file name) starts the one-line ``InputError``."""
    if not isinstance(obj, dict):
        raise InputError(f"{source}: top level is a JSON {_json_type(obj)}, not an object; {SWEEP_HINT}")
    if "measured" not in obj:
        if isinstance(obj.get("results"), list):  # hyperfine --export-json: predict reads it
            raise InputError(f"{source}: a hyperfine export, not a corecast sweep result: 'corecast predict' "
                             f"reads it; {SWEEP_HINT}")
        raise InputError(f"{source}: no \"measured\" key, not a sweep result; {SWEEP_HINT}")
    measured = obj["measured"]
    if not isinstance(measured, list):
        raise InputError(f"{source}: \"measured\" is a JSON {_json_type(measured)}, not a list")
    if not measured:
        raise InputError(f"{source}: \"measured\" is empty: the sweep has no successful runs")
    for i, entry in enumerate(measured):
        _check_sweep_entry(source, i, entry)


def _check_sweep_entry(path: str, i: int, entry, where: str | None = None) -> None:
    where = where or f"{path}: measured[{i}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where}: a JSON {_json_type(entry)}, not an object")
    for key in ("threads", "time_s"):
        if key not in entry:
            raise InputError(f"{where}: no \"{key}\" key")
    n = _count(entry["threads"], where)
    t = entry["time_s"]
    if json_number(t) is None or t <= 0:
        raise InputError(f"{where}: \"time_s\" {_short(t)} must be a positive number")
    d = entry.get("spread_s")
    if d is not None and (json_number(d) is None or d < 0):
        raise InputError(f"{where}: \"spread_s\" {_short(d)} must be a number >= 0")
    runs = entry.get("runs")
    if runs is not None:
        if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
            raise InputError(f"{where}: \"runs\" must be a list of objects")
        for j, r in enumerate(runs):
            _check_sweep_entry(path, i, {"threads": n, **r}, f"{where}: runs[{j}]")
    _check_stalls(where, entry.get("stalls_s"))


def _count(n: object, where: str) -> int | float:
    """A result's ``"threads"``: a whole number from 1 to MAX_COUNT, as every reader takes a
    count; InputError naming ``where``."""
    if json_number(n) is None or n < 1 or n != int(n):
        raise InputError(f"{where}: \"threads\" {_short(n)} must be a whole number >= 1")
    if n > MAX_COUNT:
        raise InputError(f"{where}: \"threads\" {over_max_count(json.dumps(n))}")
    return n


def _check_stalls(where: str, stalls) -> None:
    if stalls is None:
        return
    if not isinstance(stalls, dict):
        raise InputError(f"{where}: \"stalls_s\" is a JSON {_json_type(stalls)}, not an object")
    for name, s in stalls.items():
        if not name.strip():
            raise InputError(f"{where}: \"stalls_s\" has an empty category name")
        if json_number(s) is None or s < 0:
            raise InputError(f"{where}: \"stalls_s\" {_short(name)}: {_short(s)} must be a number >= 0")


def _json_type(x) -> str:
    for kind, name in ((bool, "boolean"), (str, "string"), (list, "list"), (dict, "object")):
        if isinstance(x, kind):
            return name
    return "null" if x is None else "number"


def _short(x, limit: int = 40) -> str:
    text = json.dumps(x) if not isinstance(x, float) or math.isfinite(x) else repr(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class SweepResult:
    """The parts of a result the views use, checked and sorted by thread count."""

    measured: list[dict]
    unit: str  # what the counts are: "threads", or "ranks" for an MPI rank sweep (same keys)
    predictions: list[dict]
    stall_predictions: dict[str, list[dict]]
    stall_categories: list[str]
    preferred: Optional[int]
    fastest: Optional[int]  # the best count, as corecast predict names it (None in results written before it)
    bottleneck: Optional[str]
    command: str  # shell-quoted
    runtime: Optional[str]
    warnings: list[str]
    regions: list[dict]
    failed: list[dict]
    cpus_allowed: Optional[int] = None  # the CPUs the runs shared (None: a launcher's sweep, or older)

    @property
    def run_by(self) -> Optional[str]:
        """What ran the counts, as the reports name it: "mpi" for a rank sweep (whose
        "runtime" is "mpi" too, but was the default --runtime, "openmp", in results written
        before fixD), else the runtime."""
        return "mpi" if self.unit == "ranks" else self.runtime

    @classmethod
    def read(cls, result: object, source: str = SOURCE, allow_empty: bool = False) -> "SweepResult":
        """``result`` (a decoded JSON object) checked; ``InputError`` naming ``source``.
        ``allow_empty``: a sweep whose every run failed still has a report worth reading
        (its reasons)."""
        if not (allow_empty and isinstance(result, dict) and result.get("measured") == []):
            check_sweep(result, source)
        measured = sorted(result["measured"], key=lambda e: e["threads"])
        stall_predictions: dict[str, list[dict]] = {}
        stall_preds = result.get("stall_predictions") or {}
        if not isinstance(stall_preds, dict):
            raise InputError(f"{source}: \"stall_predictions\" is not an object of category: list")
        for name, pts in stall_preds.items():
            stall_predictions[str(name)] = _points(pts, f"stall_predictions[{json.dumps(name)}]",
                                                   source, ("value",))
        pref = json_number(_either(result, "preferred"))
        fastest = json_number(_either(result, "fastest"))
        command = result.get("command") or []
        runtime = result.get("runtime")
        warnings = result.get("warnings") or []
        failed = result.get("failed") or []
        for i, f in enumerate(failed if isinstance(failed, list) else []):
            if isinstance(f, dict) and f.get("threads") is not None:  # the plot's axis spans them
                _count(f["threads"], f"{source}: failed[{i}]")
        return cls(
            measured=measured,
            unit=count_unit(result),
            predictions=_points(result.get("predictions"), "predictions", source,
                                TIME_FIELDS),
            stall_predictions=stall_predictions,
            stall_categories=sorted(set(stall_predictions)
                                    | {k for e in measured for k in (e.get("stalls_s") or {})}),
            preferred=int(pref) if pref is not None and pref >= 1 else None,
            fastest=int(fastest) if fastest is not None and fastest >= 1 else None,
            bottleneck=_name(result.get("bottleneck")),
            command=(" ".join(shlex.quote(str(a)) for a in command) if isinstance(command, (list, tuple))
                     else str(command)),
            runtime=str(runtime) if runtime not in (None, "") else None,
            warnings=[str(w) for w in (warnings if isinstance(warnings, list) else [warnings])],
            regions=regions_of(result.get("regions"), source),
            failed=[f if isinstance(f, dict) else {"reason": f} for f in
                    (failed if isinstance(failed, list) else [failed])],
            cpus_allowed=cpus_allowed(result, source))

    # Speedup: the predictions carry speedup = T(base) / T(n); recover T(base) from them
    # so measured speedups use the same base.  Without predictions: the smallest count.
    def speedup_base_time(self) -> float | None:
        products = [p["speedup"] * p["value"] for p in self.predictions if p["speedup"] is not None]
        if products:
            return float(statistics.median(products))
        return self._first_time()

    def _first_time(self) -> float | None:
        """Median measured time at the smallest measured count."""
        if not self.measured:
            return None
        first = self.measured[0]["threads"]
        return float(statistics.median([e["time_s"] for e in self.measured if e["threads"] == first]))

    def ideal_speedup(self, counts: Any) -> Any:
        """Linear speedup through the smallest measured count n0: S(n0) * n / n0 (``counts``:
        a number or a numpy array)."""
        n0 = float(self.measured[0]["threads"])
        s0 = self.speedup_base_time() / self._first_time()
        for p in self.predictions:
            if p["threads"] == n0 and p["speedup"] is not None:
                s0 = p["speedup"]
        return s0 * counts / n0

    def all_counts(self) -> list[float]:
        counts = [float(e["threads"]) for e in self.measured]
        counts += [p["threads"] for p in self.predictions]
        counts += [p["threads"] for pts in self.stall_predictions.values() for p in pts]
        counts += [n for n in (json_number(f.get("threads")) for f in self.failed) if n is not None and n >= 1]
        return counts


def count_unit(result: dict) -> str:
    """What a sweep result's counts are (its ``"count"``): "ranks" for a launcher's sweep,
    "compute units" for an OpenCL one, else threads."""
    return result["count"] if result.get("count") in ("ranks", "compute units") else "threads"


def cpus_allowed(result: dict, source: str = SOURCE) -> Optional[int]:
    """How many CPUs the sweep's runs shared (``"cpus_allowed"``; None where not recorded:
    a launcher's sweep, or a result written before it); ``InputError`` when not a count."""
    n = result.get("cpus_allowed")
    if n is None:
        return None
    if json_number(n) is None or n < 1 or n != int(n) or isinstance(n, bool):
        raise InputError(f"{source}: \"cpus_allowed\" {_short(n)} must be a whole number >= 1")
    return int(n)


def _either(result: dict, what: str) -> object:
    """``WHAT_count``, or in results written before it ``WHAT_threads`` (the same count)."""
    return result.get(f"{what}_count", result.get(f"{what}_threads"))


def _count_or_none(x: object) -> Optional[int]:
    n = json_number(x)
    return int(n) if n is not None and n >= 1 else None


def _name(x: object) -> Optional[str]:
    return str(x) if x not in (None, "") else None


def regions_of(raw: object, source: str) -> list[dict]:
    """The "regions" list (per-region curves), each checked like the whole program's."""
    if not raw:
        return []
    if not isinstance(raw, list):
        raise InputError(f"{source}: \"regions\" is not a list")
    out = []
    for i, r in enumerate(raw):
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            raise InputError(f"{source}: regions[{i}] is not an object with a \"name\"")
        where = f"{source}: regions[{i}] ({json.dumps(r['name'])[:40]})"
        if r.get("measured"):
            check_sweep({"measured": r["measured"]}, where)
        out.append({"name": r["name"], "measured": sorted(r.get("measured") or [], key=lambda e: e["threads"]),
                    "predictions": _points(r.get("predictions"), "predictions", where,
                                           TIME_FIELDS),
                    "preferred_threads": _count_or_none(_either(r, "preferred")),
                    "fastest_threads": _count_or_none(_either(r, "fastest")),
                    "bottleneck": _name(r.get("bottleneck"))})
    return out


TIME_FIELDS = ("value", "low", "high", "speedup")  # a time prediction's


def _points(raw, key: str, source: str, fields: tuple[str, ...]) -> list[dict]:
    """A list of {"threads": n, field: number...}, sorted by n; bad shape -> InputError.
    A time prediction's fields (``TIME_FIELDS``: its value, band and speedup) are positive
    where given: the views divide by them."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError(f"{source}: \"{key}\" is not a list")
    out = []
    for i, p in enumerate(raw):
        if not isinstance(p, dict):
            raise InputError(f"{source}: {key}[{i}] is not an object")
        n = _count(p.get("threads"), f"{source}: {key}[{i}]")
        if json_number(p.get("value")) is None:
            raise InputError(f"{source}: {key}[{i}]: \"value\" must be a finite number")
        if fields == TIME_FIELDS:
            for f in fields:
                x = json_number(p.get(f))
                if x is not None and x <= 0:
                    raise InputError(f"{source}: {key}[{i}]: \"{f}\" must be a positive number, not {_short(x)}")
        out.append({"threads": n, **{f: json_number(p.get(f)) for f in fields}})
    return sorted(out, key=lambda p: p["threads"])
