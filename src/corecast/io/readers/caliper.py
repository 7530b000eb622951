"""Caliper region profiles (https://github.com/LLNL/Caliper), one profile per count.

A profile is a list of records (attribute -> value) plus globals (run metadata):

- ``.cali`` files, read with the ``caliper-reader`` package (``pip install
  caliper-reader``, or corecast's ``caliper`` extra);
- JSON from ``cali-query ... format json`` / the ``json`` formatter: a list of records,
  or ``{"records": [...], "globals": {...}}``;
- the ``json-split`` layout (``hatchet-region-profile``): ``columns``, ``data`` rows and
  ``nodes`` (the region tree the ``path`` column points into), globals as the other keys.

The region is the record's ``path`` (nested regions joined with ``/``).  The count is a
record attribute or a global: ``--count-attribute``, else the first of
``COUNT_ATTRIBUTES`` that differs between the profiles (a set of MPI runs records
``threads`` 1 in every one and the rank count in ``mpi.world.size``), else the first
present.  The metric is ``--profile-metric``, else the first of ``TIME_METRICS`` the
records carry.  Records repeating a region at one count (one per rank or thread) are
repetitions.
"""
from __future__ import annotations

import io
import math
from typing import Sequence

from ...errors import InputError
from ..fileio import parse_json, quoted
from .raw import RawSeries, Series, as_count, named_curves
from .registry import CURVES, NOT_JSON, Reader, Sniff

RANK_ATTRIBUTES = ("mpi.world.size", "jobsize")  # counts of MPI ranks, not threads
COUNT_ATTRIBUTES = ("omp.num.threads", "threads", "num_threads", "omp_max_threads",
                    "mpi.world.size", "jobsize")
# Caliper's region-profile time metrics, preferred first: the per-rank average of the
# inclusive time (spot/runtime-report), then the other aggregations Caliper writes.
TIME_METRICS = ("avg#inclusive#sum#time.duration", "inclusive#sum#time.duration",
                "sum#inclusive#sum#time.duration", "max#inclusive#sum#time.duration",
                "time.inclusive.duration", "inclusive#time.duration", "sum#time.duration",
                "time (inc)", "time")
READER_HINT = "pip install caliper-reader (or corecast[caliper])"


def require_reader(path: str) -> None:
    try:
        import caliperreader  # noqa: F401
    except ImportError:
        raise InputError(f"{path}: reading .cali files needs the caliper-reader package: {READER_HINT}; "
                         "or convert with 'cali-query -q \"format json\"'") from None


Profile = tuple[list[dict], dict]  # records, globals


def read_profile(path: str, text: str) -> Profile:
    """The records and globals of one profile's ``text`` (read from ``path``)."""
    if text.lstrip().startswith("__rec="):
        return _cali(path, text)
    obj = parse_json(text, path)
    if isinstance(obj, list):
        records, globs = obj, {}
    elif isinstance(obj, dict) and "records" in obj:
        records, globs = obj["records"], obj.get("globals") or {}
    elif isinstance(obj, dict) and {"data", "columns", "nodes"} <= set(obj):
        records, globs = _split(obj, path)
    else:
        raise InputError(f"{path}: not a Caliper profile (expected a list of records, "
                         "{\"records\": [...]} or the json-split layout)")
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise InputError(f"{path}: Caliper records must be a list of objects")
    if not isinstance(globs, dict):
        raise InputError(f"{path}: Caliper globals must be an object")
    return records, globs


def _cali(path: str, text: str) -> Profile:
    require_reader(path)
    import caliperreader

    _no_self_parent(path, text)
    try:
        records, globs = caliperreader.read_caliper_contents(io.StringIO(text))
    except Exception as exc:  # the package raises whatever its parser meets
        raise InputError(f"{path}: not a readable .cali file ({type(exc).__name__}: "
                         f"{str(exc)[:80]})") from None
    return records, globs


def _record(line: str) -> dict[str, list[str]]:
    """A .cali line's fields as caliper-reader splits them (its private
    ``_read_cali_record``, which corecast does not import): the line stripped, ``,``
    between fields, ``=`` between a key and its values, ``\\`` escaping the next character
    (``\\n`` a newline), a key given twice its last values."""
    fields: dict[str, list[str]] = {}
    entry: list[str] = []
    word = ""
    chars = iter(line.strip())
    for c in chars:
        if c == "\\":
            c = next(chars, None)
            if c is None:  # the package's parser fails here: its own error says so
                return {}
            word += "\n" if c == "n" else c
        elif c == ",":
            entry.append(word)
            fields[entry[0]] = entry[1:]
            word, entry = "", []
        elif c == "=":
            entry.append(word)
            word = ""
        else:
            word += c
    if word:
        entry.append(word)
        fields[entry[0]] = entry[1:]
    return fields


def _no_self_parent(path: str, text: str) -> None:
    """InputError where a node record names itself as its parent: caliper-reader appends
    such a node to itself and then walks its parents forever.  (Any other parent is an
    older node object, so no other cycle can form.)  The lines and fields are those the
    package reads (``_record``; ``__rec`` may come anywhere, an id be written ``1_3``), so
    the check sees the ids it would."""
    for no, line in enumerate(io.StringIO(text), start=1):
        plain = line.replace("\\", "")  # holds every word the escaped line spells, and more
        if "node" not in plain or "parent" not in plain:  # cheap: most lines are snapshots
            continue
        rec = _record(line)
        try:
            if rec["__rec"][0] != "node":
                continue
            node, parent = int(rec["id"][0]), int(rec["parent"][0])
        except (KeyError, IndexError, ValueError):
            continue  # not this check's to judge: the package's parser says what is wrong
        if node == parent:
            raise InputError(f"{path}: line {no}: node {node} is its own parent (not a readable .cali file)")


def _split(obj: dict, path: str) -> Profile:
    columns, rows, nodes = obj["columns"], obj["data"], obj["nodes"]
    if not (isinstance(columns, list) and isinstance(rows, list) and isinstance(nodes, list)):
        raise InputError(f"{path}: json-split \"columns\", \"data\" and \"nodes\" must be lists")

    def node_path(i, depth=0) -> list[str]:
        if not isinstance(i, int) or not 0 <= i < len(nodes) or depth > len(nodes):
            raise InputError(f"{path}: json-split node {i!r} is not in \"nodes\" (or the tree has a cycle)")
        node = nodes[i] if isinstance(nodes[i], dict) else {}
        parent = node.get("parent")
        return (node_path(parent, depth + 1) if parent is not None else []) + [str(node.get("label", ""))]

    records = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(columns):
            raise InputError(f"{path}: a json-split data row does not have one value per column")
        rec = dict(zip(map(str, columns), row))
        if rec.get("path") is not None:
            rec["path"] = node_path(rec["path"])
        records.append(rec)
    globs = {k: v for k, v in obj.items() if k not in ("data", "columns", "column_metadata", "nodes")}
    return records, globs


def _number(v) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _count_key(profiles: Sequence[Profile], wanted: str | None, paths: Sequence[str]) -> str:
    def values(key):
        return {str(r.get(key, g.get(key))) for recs, g in profiles for r in recs if key in r or key in g}

    if wanted is not None:
        if not values(wanted):
            raise InputError(f"{paths[0]}: no attribute or global {wanted!r} (--count-attribute)")
        return wanted
    present = [k for k in COUNT_ATTRIBUTES if values(k)]
    if not present:
        raise InputError(f"{paths[0]}: no thread or rank count in the profile (looked for "
                         f"{', '.join(COUNT_ATTRIBUTES)}); name it with --count-attribute")
    return next((k for k in present if len(values(k)) > 1), present[0])


def parse(files: Sequence[tuple[str, str]], count_attribute: str | None = None,
          metric: str | None = None) -> list[RawSeries]:
    """The per-region curves of the profiles ``files`` ((path, text) pairs)."""
    paths = [p for p, _ in files]
    profiles = [read_profile(p, t) for p, t in files]
    key = _count_key(profiles, count_attribute, paths)
    if metric is None:
        seen = {k for recs, _ in profiles for r in recs for k in r}
        metric = next((m for m in TIME_METRICS if m in seen), None)
        if metric is None:
            raise InputError(f"{paths[0]}: no time metric in the records (looked for "
                             f"{', '.join(TIME_METRICS[:3])}, ...); name one with --profile-metric")
    series: dict[str, list[tuple[float, float]]] = {}
    for path, (records, globs) in zip(paths, profiles):
        found = False
        for i, rec in enumerate(records):
            region = rec.get("path")
            if region is None or metric not in rec:
                continue  # e.g. the record of time outside any region
            region = "/".join(map(str, region)) if isinstance(region, list) else str(region)
            where = f"{path}: record {i} ({region})"
            raw_count = rec.get(key, globs.get(key))
            n = _number(raw_count)
            if n is None:
                raise InputError(f"{where}: count {key} {quoted(str(raw_count))} is not a number")
            value = _number(rec[metric])
            if value is None:
                raise InputError(f"{where}: {metric} {quoted(str(rec[metric]))} is not a number")
            series.setdefault(region, []).append((as_count(n, f"{where}: {key}"), value))
            found = True
        if not found:
            raise InputError(f"{path}: no region record with the metric {metric!r}")
    counts = {n for pts in series.values() for n, _ in pts}
    if len(counts) < 2:
        raise InputError(f"{paths[0]}: every profile has {key} = {min(counts):g}: a curve needs profiles "
                         "at two or more counts (give one file per count)")
    unit = "ranks" if key in RANK_ATTRIBUTES else "threads"
    return [RawSeries(region, metric, pts, unit) for region, pts in series.items()]


# ---------------------------------------------------------------- its reader


def _load(files: list[tuple[str, str]], metric: str | None = None, callpath: str | None = None,
          profile_metric: str | None = None, count_attribute: str | None = None) -> list[Series]:
    raw = parse(files, count_attribute, profile_metric)
    return named_curves(raw, "caliper", files[0][0], metric, callpath)


def _is_profile(s: Sniff) -> bool:
    if s.head.startswith("__rec="):
        return True
    obj = s.json
    if isinstance(obj, dict):
        return "records" in obj or {"data", "columns", "nodes"} <= set(obj)
    return obj is not NOT_JSON and isinstance(obj, list)


READER = Reader(
    "caliper", CURVES, "Caliper profiles",
    "Caliper region profiles, one file per count: `.cali` files (with the `caliper-reader` "
    "package), `cali-query` JSON records and the `json-split` layout",
    "a name ending in `.cali`; text starting with `__rec=`; a JSON list, or an object with "
    "`records` or with `data`, `columns` and `nodes`",
    _is_profile, _load, suffixes=(".cali",), several=True, require=require_reader)
