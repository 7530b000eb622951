"""Measurement files other tools write, as curves ``corecast predict`` can fit.

``read_inputs(paths, ...)`` recognises each format by its content (not its name, except
``.cali``) and returns one ``Series`` per (callpath, metric):

- corecast's own CSV and sweep JSON (``readers.measurements``): one series;
- Extra-P input files (``readers.extrap``): text (``PARAMETER``/``POINTS``/``REGION``/
  ``METRIC``/``DATA``), JSON (the legacy id-table layout and the newer nested one) and
  JSON Lines (what ``corecast export --extrap`` writes); the one parameter is the count;
- Caliper region profiles (``readers.caliper``): ``.cali`` files (with the
  ``caliper-reader`` package), ``cali-query`` JSON records and the ``json-split`` layout;
  one profile per count, the count from a thread- or rank-count attribute.

Every file goes through ``fileio.read_text`` once (size limit, FIFOs and standard input
work, one-line errors).  Values of a profile's metric are costs (time, visits, bytes: lower is better)
unless ``metric`` says otherwise.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ...errors import InputError
from ..fileio import read_text, shown
from .raw import RawSeries

if TYPE_CHECKING:
    from ...entities import Measurements


@dataclass
class Series:
    """One curve: its measurements, or why it cannot be fitted (``error``).

    ``callpath`` and ``metric_name`` are None for a corecast CSV or sweep result (one
    curve per file); for Extra-P and Caliper inputs they name the curve as the tool does."""

    data: "Measurements | None"
    callpath: str | None = None
    metric_name: str | None = None
    source: str = "csv"  # csv | extrap | caliper
    error: str | None = None
    count_unit: str = "threads"  # threads | ranks

    @property
    def label(self) -> str:
        if self.callpath is None:
            return ""
        return f"{self.callpath} [{self.metric_name}]" if self.metric_name else self.callpath


def read_inputs(paths: Sequence[str], metric: str | None = None, callpath: str | None = None,
                profile_metric: str | None = None, count_attribute: str | None = None) -> list[Series]:
    """The curves in ``paths`` (several files: Caliper profiles, one per count), filtered
    to ``callpath`` and ``profile_metric`` when given.  InputError (one line) on bad input."""
    from .measurements import parse_measurements
    from . import caliper, extrap

    if not paths:
        raise InputError("no input file given")
    texts = [(p, _text(p)) for p in paths]
    kinds = [_kind(p, t) for p, t in texts]
    if len(paths) > 1 and any(k != "caliper" for k in kinds):
        odd = next(p for p, k in zip(paths, kinds) if k != "caliper")
        raise InputError(f"{shown(odd)}: several input files must all be Caliper profiles "
                         "(one per count); give a CSV, sweep result or Extra-P file on its own")
    if kinds[0] == "csv":
        if callpath or profile_metric:
            raise InputError(f"{shown(paths[0])}: --callpath and --profile-metric are for Extra-P "
                             "and Caliper inputs, this is a corecast CSV or sweep result")
        return [Series(parse_measurements(texts[0][1], shown(paths[0]), metric))]
    if kinds[0] == "extrap":
        raw = extrap.parse(texts[0][1], shown(paths[0]))
        source = "extrap"
    else:
        raw = caliper.parse([(shown(p), t) for p, t in texts], count_attribute, profile_metric)
        source = "caliper"
    if callpath is not None:
        raw = [r for r in raw if r.callpath == callpath]
        if not raw:
            raise InputError(f"{shown(paths[0])}: no callpath {callpath!r}")
    if profile_metric is not None and source == "extrap":
        raw = [r for r in raw if r.metric_name == profile_metric]
        if not raw:
            raise InputError(f"{shown(paths[0])}: no metric {profile_metric!r}")
    return [_series(r, source, metric) for r in raw]


def _text(path: str) -> str:
    if path.lower().endswith(".cali"):
        from .caliper import require_reader

        require_reader(path)  # before reading a large file for nothing
    return read_text(path)


def _kind(path: str, text: str) -> str:
    """csv | extrap | caliper, from the content."""
    head = text.lstrip()
    if path.lower().endswith(".cali") or head.startswith("__rec="):
        return "caliper"
    first = next((line.split(None, 1)[0] for line in head.splitlines()
                  if line.strip() and not line.lstrip().startswith("#")), "")
    if first in ("PARAMETER", "POINTS", "REGION", "METRIC", "DATA"):
        return "extrap"
    if not head.startswith(("{", "[")):
        return "csv"
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        # JSON Lines (Extra-P's), or broken JSON that the sweep reader words best
        line = head.split("\n", 1)[0]
        try:
            first_obj = json.loads(line)
        except (ValueError, RecursionError):
            return "csv"
        return "extrap" if isinstance(first_obj, dict) and "params" in first_obj else "csv"
    if isinstance(obj, dict):
        if "measured" in obj:
            return "csv"  # a corecast sweep result
        if "callpaths" in obj or ("parameters" in obj and "measurements" in obj):
            return "extrap"
        if "params" in obj:
            return "extrap"  # JSON Lines of one line
        if "records" in obj or {"data", "columns", "nodes"} <= set(obj):
            return "caliper"
        return "csv"  # the sweep reader says what is missing
    return "caliper" if isinstance(obj, list) else "csv"


def _series(raw: RawSeries, source: str, metric: str | None) -> Series:
    from ...entities import Measurements

    counts = [n for n, _ in raw.points]
    values = [v for _, v in raw.points]
    try:
        data = Measurements.from_samples(counts, values, metric or "time")
    except InputError as exc:
        return Series(None, raw.callpath, raw.metric_name, source, error=str(exc), count_unit=raw.count_unit)
    return Series(data, raw.callpath, raw.metric_name, source, count_unit=raw.count_unit)
