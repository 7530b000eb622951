"""Extra-P's input files (https://github.com/extra-p/extrap, ``extrap/fileio/file_reader``):

- text: ``PARAMETER x``, ``POINTS ( 20 ) ( 30 )`` (or ``POINTS 20 30``, or one
  ``POINTS`` line per point), then per ``REGION`` (callpath) and ``METRIC`` one ``DATA``
  line of repetitions per point, in the points' order; ``REGION`` and ``METRIC`` restart
  that order; ``#`` starts a comment;
- JSON, legacy: ``parameters``, ``callpaths``, ``metrics``, ``coordinates`` (lists of
  objects with ``id``) and ``measurements`` (``callpath_id``, ``coordinate_id``,
  ``metric_id``, ``value``: one repetition each);
- JSON, newer: ``{"parameters": ["x"], "measurements": {CALLPATH: {METRIC:
  [{"point": [4], "values": [...]}]}}}``;
- JSON Lines: ``{"params": {"x": 4}, "callpath": ..., "metric": ..., "value": v}`` per
  repetition (callpath ``<root>`` and metric ``<default>`` when absent, as Extra-P does);
  ``"cpus_allowed"``, which ``corecast export --extrap`` adds where the sweep recorded it,
  leaves out counts that ran oversubscribed as ``predict`` of the sweep result does.

corecast reads files with one parameter, the count; its values must be whole numbers, and
its name labels the counts (``model.scaling.count_unit_of``).
"""
from __future__ import annotations

import json
import re

from ...errors import InputError
from ...model.scaling import count_unit_of
from ..fileio import parse_json, quoted
from ..sweepresult import cpus_allowed
from .measurements import finite_number
from .raw import RawSeries, Series, as_count, named_curves, no_count_attribute
from .registry import CURVES, NOT_JSON, Reader, Sniff

FIELDS = ("PARAMETER", "POINTS", "REGION", "METRIC", "DATA")
DEFAULT_CALLPATH = "<root>"   # JSON Lines without "callpath" (Extra-P's name)
DEFAULT_METRIC = "<default>"  # JSON Lines without "metric"


class _Collector:
    """(callpath, metric) -> points, in the order first seen."""

    def __init__(self) -> None:
        self.series: dict[tuple[str, str], list[tuple[float, float]]] = {}
        self.parameter = ""  # the one parameter's name: what the counts are called
        self.cpus_allowed: int | None = None  # JSON Lines of `corecast export --extrap`: the sweep's CPUs

    def add(self, callpath: str, metric: str, count: float, values: list[float]) -> None:
        self.series.setdefault((callpath, metric), []).extend((count, v) for v in values)

    def result(self, path: str) -> list[RawSeries]:
        if not self.series:
            raise InputError(f"{path}: no measurements (not an Extra-P input file?)")
        unit = count_unit_of(self.parameter) if self.parameter.strip() else "count"
        return [RawSeries(c, m, pts, unit, cpus_allowed=self.cpus_allowed) for (c, m), pts in self.series.items()]


def parse(text: str, path: str) -> list[RawSeries]:
    """The curves of an Extra-P input file's ``text`` (read from ``path``)."""
    if text.lstrip().startswith("{"):
        return parse_json_input(text, path)
    return _parse_text(text, path)


def parse_json_input(text: str, path: str) -> list[RawSeries]:
    """The curves of an Extra-P JSON or JSON Lines ``text`` (read from ``path``)."""
    try:
        first = json.loads(text.lstrip().split("\n", 1)[0])
    except (ValueError, RecursionError):
        first = None
    is_lines = isinstance(first, dict) and "params" in first
    return _parse_jsonlines(text, path) if is_lines else _parse_json(text, path)


def _one_parameter(names: list[str], path: str) -> None:
    if len(names) != 1:
        raise InputError(f"{path}: {len(names)} parameters ({', '.join(map(str, names[:4]))}); corecast "
                         "reads Extra-P files with one parameter, the count")


def _parse_text(text: str, path: str) -> list[RawSeries]:
    out = _Collector()
    params: list[str] = []
    points: list[float] = []
    callpath, metric, index = "", "", 0
    last_data = 0  # the line of the block's last DATA line

    def block_done() -> None:
        # A block of DATA lines gives every point its values: one missing would drop that
        # point from the curve without a word (more lines than points is refused below).
        if 0 < index < len(points):
            raise InputError(f"{path}: line {last_data}: {index} DATA line{'s' if index != 1 else ''} for the "
                             f"{len(points)} POINTS of {callpath or '(no region)'} [{metric or 'no metric'}]")

    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition(" ")
        name, value = name.strip(), " ".join(value.split())
        where = f"{path}: line {no}"
        if name not in FIELDS:
            raise InputError(f"{where}: unknown field {quoted(name)} (Extra-P text input has "
                             f"{', '.join(FIELDS)})")
        if name == "PARAMETER":
            params += value.split()
            _one_parameter(params, path)
            out.parameter = params[0]
        elif name == "POINTS":
            if not params:
                raise InputError(f"{where}: POINTS before PARAMETER")
            tokens = re.sub(r"[()]", " ", value).split()
            if not tokens:
                raise InputError(f"{where}: POINTS without a point")
            points += [as_count(finite_number(t, where), where) for t in tokens]
        elif name in ("REGION", "METRIC"):
            if not value:
                raise InputError(f"{where}: {name} without a name")
            block_done()
            callpath, metric = (value, metric) if name == "REGION" else (callpath, value)
            index = 0  # the DATA lines that follow start at the first point again
        else:
            if index >= len(points):
                raise InputError(f"{where}: more DATA lines than the {len(points)} POINTS")
            values = [finite_number(t, where) for t in value.split()]
            if not values:
                raise InputError(f"{where}: DATA without a value")
            out.add(callpath, metric, points[index], values)
            index, last_data = index + 1, no
    block_done()
    return out.result(path)


def _list(obj: dict, key: str, path: str) -> list:
    v = obj.get(key)
    if not isinstance(v, list):
        raise InputError(f"{path}: \"{key}\" is missing or not a list (not an Extra-P JSON input file?)")
    return v


def _parse_json(text: str, path: str) -> list[RawSeries]:
    obj = parse_json(text, path)
    if not isinstance(obj, dict):
        raise InputError(f"{path}: not an Extra-P JSON input file (top level is not an object)")
    try:
        if "callpaths" in obj:
            return _legacy(obj, path)
        return _nested(obj, path)
    except (KeyError, TypeError, AttributeError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else "an entry has the wrong type"
        raise InputError(f"{path}: not an Extra-P JSON input file ({what})") from None


def _legacy(obj: dict, path: str) -> list[RawSeries]:
    names = {kind: {e["id"]: str(e["name"]) for e in _list(obj, kind, path)}
             for kind in ("parameters", "callpaths", "metrics")}
    _one_parameter(list(names["parameters"].values()), path)
    out = _Collector()
    (out.parameter,) = names["parameters"].values()
    coords = {}
    for c in _list(obj, "coordinates", path):
        pairs = c["parameter_value_pairs"]
        if len(pairs) != 1:
            raise InputError(f"{path}: coordinate {c['id']} has {len(pairs)} parameter values, not 1")
        coords[c["id"]] = as_count(finite_number(str(pairs[0]["parameter_value"]), f"{path}: coordinate {c['id']}"),
                                   f"{path}: coordinate {c['id']}")
    for i, m in enumerate(_list(obj, "measurements", path)):
        where = f"{path}: measurements[{i}]"
        for key, table in (("callpath_id", "callpaths"), ("metric_id", "metrics"), ("coordinate_id", None)):
            known = coords if table is None else names[table]
            if m[key] not in known:
                raise InputError(f"{where}: {key} {m[key]!r} is not listed")
        out.add(names["callpaths"][m["callpath_id"]], names["metrics"][m["metric_id"]],
                coords[m["coordinate_id"]], [_value(m["value"], where)])
    return out.result(path)


def _nested(obj: dict, path: str) -> list[RawSeries]:
    parameters = [str(p) for p in _list(obj, "parameters", path)]
    _one_parameter(parameters, path)
    data = obj["measurements"]
    if not isinstance(data, dict):
        raise InputError(f"{path}: \"measurements\" is not an object of callpath: {{metric: [...]}}")
    out = _Collector()
    out.parameter = parameters[0]
    for callpath, metrics in data.items():
        for metric, entries in metrics.items():
            for i, e in enumerate(entries):
                where = f"{path}: {callpath} {metric} [{i}]"
                point = e["point"]
                point = point if isinstance(point, list) else [point]
                if len(point) != 1:
                    raise InputError(f"{where}: point has {len(point)} values, not 1")
                n = as_count(_value(point[0], where), where)
                values = e["values"]
                if not isinstance(values, list) or not values:  # "95" was read as runs of 9 and 5
                    raise InputError(f"{where}: \"values\" must be a list of one value or more (the point's "
                                     f"repetitions), not {json.dumps(values)[:40]}")
                out.add(str(callpath), str(metric), n, [_value(v, where) for v in values])
    return out.result(path)


def _value(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise InputError(f"{where}: {json.dumps(v)[:40]} is not a number")
    return finite_number(str(v), where)


def _parse_jsonlines(text: str, path: str) -> list[RawSeries]:
    out = _Collector()
    param: str | None = None
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}: line {no}"
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            raise InputError(f"{where}: not JSON (Extra-P JSON Lines have one object per line)") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("params"), dict) or "value" not in rec:
            raise InputError(f"{where}: not an Extra-P record {{\"params\": {{...}}, \"value\": ...}}")
        params = rec["params"]
        _one_parameter(list(params), path)
        if param is None:
            param = out.parameter = str(next(iter(params)))
        elif param not in params:
            raise InputError(f"{where}: parameter {next(iter(params))!r}, earlier lines have {param!r}")
        n = as_count(_value(params[param], where), where)
        out.add(str(rec.get("callpath", DEFAULT_CALLPATH)), str(rec.get("metric", DEFAULT_METRIC)), n,
                [_value(rec["value"], where)])
        _sweeps_cpus(out, rec, where)
    return out.result(path)


def _sweeps_cpus(out: _Collector, rec: dict, where: str) -> None:
    """A record's ``cpus_allowed`` (``corecast export --extrap`` writes the sweep's on every
    line; Extra-P reads past keys it does not know): one value for the whole file."""
    cpus = cpus_allowed(rec, where)
    if cpus is None:
        return
    if out.cpus_allowed is not None and cpus != out.cpus_allowed:
        raise InputError(f"{where}: \"cpus_allowed\" {cpus}, earlier lines have {out.cpus_allowed} "
                         "(runs of different sweeps)")
    out.cpus_allowed = cpus


# ---------------------------------------------------------------- their readers


def _load(parser):
    def load(files: list[tuple[str, str]], metric: str | None = None, callpath: str | None = None,
             profile_metric: str | None = None, count_attribute: str | None = None) -> list[Series]:
        ((name, text),) = files
        no_count_attribute(name, count_attribute, "an Extra-P input")
        return named_curves(parser(text, name), "extrap", name, metric, callpath, profile_metric)
    return load


def _is_json(s: Sniff) -> bool:
    obj = s.json
    if obj is NOT_JSON:  # JSON Lines: the first line alone is an Extra-P record
        obj = s.first_line_json
        return isinstance(obj, dict) and "params" in obj
    return isinstance(obj, dict) and ("callpaths" in obj or "params" in obj
                                      or ("parameters" in obj and "measurements" in obj))


TEXT = Reader(
    "extrap-text", CURVES, "an Extra-P text file",
    "Extra-P's text input: `PARAMETER`, `POINTS`, then `REGION`, `METRIC` and `DATA` lines "
    "(one parameter, the count)",
    "the first line that is not blank or a `#` comment starts with one of "
    + ", ".join(f"`{f}`" for f in FIELDS),
    lambda s: s.first_word in FIELDS, _load(_parse_text))
JSON = Reader(
    "extrap-json", CURVES, "an Extra-P JSON file",
    "Extra-P's JSON input (the legacy id tables and the newer nested layout) and JSON Lines "
    "(`corecast export --extrap` writes them)",
    "one JSON object with `callpaths`, `params`, or `parameters` and `measurements`; or "
    "JSON Lines whose first line has `params`",
    _is_json, _load(parse_json_input))
