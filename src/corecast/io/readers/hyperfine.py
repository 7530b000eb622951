"""hyperfine's exports (https://github.com/sharkdp/hyperfine) of a parameter scan:
``hyperfine -P threads 1 16 'prog {threads}' --export-csv t.csv --export-json t.json``.

- CSV (``--export-csv``): ``command,mean,stddev,median,user,system,min,max`` and one
  ``parameter_NAME`` column per parameter; a row per command, its median wall time the value;
- JSON (``--export-json``): ``{"results": [{"command", "mean", ..., "times": [...],
  "parameters": {NAME: VALUE}, "exit_codes": [...]}]}``; every run's time in ``times`` is a
  repetition, except a run whose exit code is not 0 (``--ignore-failure``): left out, and
  a warning counts them.

The one parameter is the count (its name labels the counts, ``model.scaling.count_unit_of``);
values are wall times in seconds.  An export without a parameter (commands that differ by
an environment variable) carries no count: the error says how to give one.
"""
from __future__ import annotations

from ...errors import InputError
from ...model.scaling import count_unit_of
from ..fileio import parse_json, quoted
from .measurements import finite_number, parse_table
from .raw import RawSeries, Series, as_count
from .registry import CURVES, Reader, Sniff

CSV_HEADER = ("command", "mean", "stddev")  # then median (from 1.10), user, system, min, max
PARAMETER_PREFIX = "parameter_"
NO_PARAMETER = ("hyperfine's export has no parameter, so no count: run hyperfine with "
                "--parameter-scan threads 1 16 or --parameter-list threads 1,2,4,8 and "
                "{threads} in the command (the count reaches an OpenMP program as "
                "'OMP_NUM_THREADS={threads} prog')")


def _is_csv(s: Sniff) -> bool:
    first = next((line for line in s.head.splitlines() if line.strip()), "")
    return tuple(c.strip() for c in first.split(",")[:len(CSV_HEADER)]) == CSV_HEADER


def _results(obj: object) -> list | None:
    """A hyperfine JSON export's ``results``; None: ``obj`` is not one."""
    results = obj.get("results") if isinstance(obj, dict) else None
    ok = (isinstance(results, list) and all(isinstance(r, dict) for r in results)
          and (not results or {"command", "mean"} <= set(results[0])))
    return results if ok else None


def _is_json(s: Sniff) -> bool:
    return _results(s.json) is not None


def _parameter(names: list[str], path: str) -> str:
    if not names:
        raise InputError(f"{path}: {NO_PARAMETER}")
    if len(names) > 1:
        raise InputError(f"{path}: {len(names)} parameters ({', '.join(names)}); corecast reads "
                         "hyperfine exports with one parameter, the count")
    return names[0]


def _points(rows: list[tuple[str, str, list[float]]], name: str, path: str) -> list[tuple[float, float]]:
    """(count, time) pairs of ``rows`` (where, parameter value, times); two commands at
    one count are two programs, not repetitions: refused."""
    seen: dict[float, str] = {}
    points = []
    for where, value, times in rows:
        try:
            number = float(value)
        except ValueError:
            raise InputError(f"{path}: {where}: parameter {name} is {quoted(value)}, not a count") from None
        count = as_count(number, f"{path}: {where}: parameter {name}")
        if count in seen:
            raise InputError(f"{path}: {name} {count:g} has two commands ({seen[count]} and {where}): "
                             "give each command's scan in a file of its own")
        seen[count] = where
        points += [(count, t) for t in times]
    return points


def parse_csv(text: str, path: str) -> RawSeries:
    if not _is_csv(Sniff(path, text)):  # --format hyperfine-csv given another file
        raise InputError(f"{path}: not a hyperfine CSV export (its header starts {','.join(CSV_HEADER)})")
    table = parse_table(text, path)
    params = [(i, h[len(PARAMETER_PREFIX):]) for i, h in enumerate(table.header) if h.startswith(PARAMETER_PREFIX)]
    name = _parameter([n for _, n in params], path)
    col = params[0][0]
    key = "median" if "median" in table.header else "mean"  # hyperfine before 1.10 wrote no median
    median = table.header.index(key)
    rows = [(f"line {line}", cells[col],
             [finite_number(cells[median], f"{path}: line {line}: column '{key}'")])
            for line, cells in table.rows]
    return RawSeries("command", "time", _points(rows, name, path), count_unit_of(name))


def parse_json_export(text: str, path: str) -> RawSeries:
    results = _results(parse_json(text, path))
    if results is None:
        raise InputError(f"{path}: not a hyperfine JSON export (expected {{\"results\": [{{\"command\", "
                         "\"mean\", \"times\", \"parameters\"}, ...]}})")
    if not results:
        raise InputError(f"{path}: a hyperfine JSON export with no results (no command was benchmarked)")
    names: list[str] = []
    for i, r in enumerate(results, start=1):
        for key, kind in (("parameters", dict), ("times", list)):  # as hyperfine writes them
            if r.get(key) is not None and not isinstance(r[key], kind):
                raise InputError(f"{path}: result {i} ({quoted(str(r.get('command', '')))}): \"{key}\" "
                                 f"must be {'an object' if kind is dict else 'a list'}, not {quoted(str(r[key]))}")
        names += [n for n in (r.get("parameters") or {}) if n not in names]
    name = _parameter(names, path)
    rows = []
    failed: list[tuple[str, int, int]] = []  # (count, runs that exited non-zero, runs)
    for i, r in enumerate(results, start=1):
        where = f"result {i} ({quoted(str(r.get('command', '')))})"
        value = (r.get("parameters") or {}).get(name)
        if value is None:
            raise InputError(f"{path}: {where}: no parameter {name}")
        times = r.get("times") or [r.get("median", r.get("mean"))]
        codes = r.get("exit_codes")
        if isinstance(codes, list) and len(codes) == len(times) and r.get("times"):
            # --ignore-failure keeps the runs that exited non-zero: a crash or an error
            # path is not the program's time, so they are left out (and counted).
            bad = [c for c in codes if c != 0]
            failed.append((str(value), len(bad), len(codes)))
            times = [t for t, c in zip(times, codes) if c == 0]
            if not times:
                continue
        rows.append((where, str(value), [_time(t, f"{path}: {where}") for t in times]))
    failures = [(v, k, n) for v, k, n in failed if k]
    if failures and not rows:
        raise InputError(f"{path}: every run exited non-zero (hyperfine --ignore-failure): no time to predict from")
    bad = sum(k for _, k, _ in failures)
    notes = [] if not failures else [
        f"{bad} of {sum(n for _, _, n in failed)} runs exited non-zero "
        f"(hyperfine --ignore-failure) and {'was' if bad == 1 else 'were'} left out: "
        + ", ".join(f"{name} {v}: {k} of {n}" + (", no run left" if k == n else "") for v, k, n in failures)]
    return RawSeries("command", "time", _points(rows, name, path), count_unit_of(name), notes)


def _time(t: object, where: str) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise InputError(f"{where}: time {quoted(str(t))} is not a number")
    x = finite_number(str(t), where)
    if x <= 0:  # said where it is, not later as a value of no result
        raise InputError(f"{where}: time {x:g} is not positive")
    return x


def _load(parse):
    def load(files: list[tuple[str, str]], metric: str | None = None, callpath: str | None = None,
             profile_metric: str | None = None, count_attribute: str | None = None) -> list[Series]:
        from ...model.curve.entities import Measurements  # numpy: only once measurements are built

        ((path, text),) = files
        for flag, given in (("--metric throughput", metric == "throughput"), ("--callpath", callpath),
                            ("--profile-metric", profile_metric), ("--count-attribute", count_attribute)):
            if given:  # ignored, the flag would look obeyed
                raise InputError(f"{path}: {flag} does not apply to a hyperfine export (one curve of "
                                 "wall times, counted by its parameter)")
        raw = parse(text, path)
        try:
            data = Measurements.from_samples([n for n, _ in raw.points], [t for _, t in raw.points], "time")
        except InputError as e:
            raise InputError(f"{path}: {e}") from None
        return [Series(data, source="hyperfine", count_unit=raw.count_unit, warnings=raw.warnings)]
    return load


CSV = Reader(
    "hyperfine-csv", CURVES, "a hyperfine CSV export",
    "hyperfine's `--export-csv` of a parameter scan: the `parameter_NAME` column is the count, "
    "each command's median the time (the CSV holds no exit codes: runs that failed under "
    "`--ignore-failure` count as measured, where the JSON export's are left out)",
    "a first line starting `" + ",".join(CSV_HEADER) + "`",
    _is_csv, _load(parse_csv))
JSON = Reader(
    "hyperfine-json", CURVES, "a hyperfine JSON export",
    "hyperfine's `--export-json` of a parameter scan: each result's one parameter is the count, "
    "its `times` the repetitions",
    "a JSON object whose `results` are objects with `command` and `mean` (or empty)",
    _is_json, _load(parse_json_export))
