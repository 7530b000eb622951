"""Score-P's CUBE profiles (``profile.cubex``), one run each, read with pycubexr
(https://github.com/extra-p/pycubexr, ``pip install 'corecast[cube]'``), as Extra-P's
``--cube`` reader does (``extrap/fileio/file_reader/cube_file_reader2.py``).

Inputs: ``.cubex`` files, or folders: a Score-P experiment folder holding its profile, or
a set's folder whose subfolders do (Extra-P's layout).  Several profiles at one count are
repetitions.

The count (``--count-attribute``):

- ``name``: the profile's folder name, Extra-P's convention ``[PREFIX.]PARAMETER-VALUE
  PAIRS[.rREP]`` (``mm.x25y1z1.r1``, ``example.f3``; Extra-P's ``docs/file-formats.md``,
  "Cube file format", and ``_determine_parameters_from_paths`` in
  ``abstract_directory_reader.py``): the parameters whose value differs between the runs
  are the count, and it must be one; ``.rN`` is the repetition;
- ``threads`` (the most CPU threads of one process), ``processes`` or ``locations``
  (every CPU thread: threads x processes): the profile's system tree;
- by default ``name`` where every folder name carries the parameters, else ``locations``.

The value: the metric ``time`` (``--profile-metric``: another by its unique name),
inclusive, at the call tree's root (its roots summed) or at ``--callpath`` (Extra-P's
``main->foo`` names), the largest over the CPU threads: the run's time as its slowest
thread saw it.
"""
from __future__ import annotations

import os
import re
import warnings
from typing import Sequence

from ...errors import InputError
from ...model.scaling import count_unit_of
from ..fileio import quoted, read_error, shown
from .cubearchive import check_archive
from .raw import RawSeries, Series, as_count, named_curves
from .registry import CURVES, Reader, Sniff

SUFFIX = ".cubex"
COUNT_SOURCES = ("name", "threads", "processes", "locations")
UNITS = {"threads": "threads", "processes": "processes", "locations": "threads"}
DEFAULT_METRIC = "time"
HINT = "pip install 'corecast[cube]' (or pip install pycubexr)"
NAME_RULE = "Extra-P's NAME.pVALUE.rREP, e.g. mm.p8.r1"
_REPETITION = re.compile(r"\.r\d+$")
_PAIR = re.compile(r"([^0-9.,]+)([0-9][0-9.,]*)")
_PARAMETER = re.compile(r"[A-Za-z][A-Za-z_]*")  # not Score-P's own "scorep-20240101_1200_..."


def require_pycubexr(path: str) -> None:
    if os.path.isdir(path):
        profiles(path, shown(path))  # a folder of no profile is said so first, whatever is installed
    try:
        import pycubexr  # noqa: F401
    except ImportError:
        raise InputError(f"{shown(path)}: reading CUBE profiles needs the pycubexr package: {HINT}") from None


def profiles(path: str, where: str) -> list[str]:
    """The ``.cubex`` files ``path`` names: itself, or the folder's own (not starting with
    a dot, as Extra-P), else those of its subfolders (a set's folder)."""
    if path == "-":
        raise InputError("standard input: a CUBE profile is read from its file (give the .cubex file or its folder)")
    if not os.path.isdir(path):
        try:
            os.stat(path)
        except OSError as exc:  # missing, a symlink loop, a folder on the way not searchable
            raise read_error(path, exc) from None
        if not os.path.isfile(path):
            raise InputError(f"{where}: not a regular file")
        return [path]

    def own(folder: str) -> list[str]:
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            raise InputError(f"{shown(folder)}: cannot read the folder: {exc.strerror or exc}") from None
        return [os.path.join(folder, n) for n in names if n.endswith(SUFFIX) and not n.startswith(".")
                and os.path.isfile(os.path.join(folder, n))]

    found = own(path)
    if not found:
        subfolders = [os.path.join(path, n) for n in sorted(os.listdir(path)) if not n.startswith(".")]
        found = [f for sub in subfolders if os.path.isdir(sub) for f in own(sub)]
    if not found:
        # whatever the folder holds (a user's Caliper or CSV files), not only Score-P's
        raise InputError(f"{where}: is a directory, and no {SUFFIX} file is in it or its subfolders: give the "
                         "files themselves (e.g. DIR/*.cali), or a Score-P experiment folder (which holds "
                         "profile.cubex)")
    return found


def name_parameters(path: str) -> dict[str, float] | None:
    """The parameters the name of ``path``'s folder carries (Extra-P's convention), or None."""
    name = os.path.basename(os.path.dirname(os.path.abspath(path)))
    name = _REPETITION.sub("", name)
    pairs = name.split(".", 1)[1] if "." in name else name
    found = _PAIR.findall(pairs)
    if not found or "".join(a + b for a, b in found) != pairs:
        return None
    out = {}
    for key, value in found:
        if not _PARAMETER.fullmatch(key):
            return None
        try:
            out[key] = float(value.replace(",", ".").rstrip("."))
        except ValueError:
            return None
    return out


class _Profile:
    """What corecast takes from one ``.cubex``: its system tree's counts, its callpaths,
    and the chosen metric's inclusive value per CPU thread at the chosen callpath."""

    def __init__(self, path: str, where: str, metric: str, callpath: str | None) -> None:
        from pycubexr import CubexParser

        self.where = where
        try:
            with warnings.catch_warnings():
                # CubeWriter 4.8 wrote bad tar checksums, which pycubexr reads past with a
                # Python warning (its source line on stderr); a profile that is garbled
                # beyond them is still refused below
                warnings.filterwarnings("ignore", "Detected invalid checksum", UserWarning)
                check_archive(path, where)
                with CubexParser(path) as cube:
                    self._read(cube, metric, callpath)
        except InputError:
            raise
        except Exception as exc:  # pycubexr raises whatever its tar, XML and data parsers meet
            why = f"{type(exc).__name__}: {str(exc)[:80]}" if str(exc) else type(exc).__name__
            raise InputError(f"{where}: not a readable CUBE profile ({why})") from None

    def _read(self, cube, metric: str, callpath: str | None) -> None:
        import numpy as np
        from pycubexr.utils.exceptions import MissingMetricError

        locations = cube.get_locations()
        cpu = [i for i, loc in enumerate(locations) if "thread" in str(loc.type).lower()]
        cpu = cpu or list(range(len(locations)))  # no location says what it is: all of them
        # A thread's rank is its number in its process: a process's first thread is rank 0.
        ranks = [int(locations[i].rank) for i in cpu]
        self.counts = {"locations": len(cpu), "processes": max(1, ranks.count(0)), "threads": max(ranks) + 1}

        self.callpaths: dict[str, list] = {}

        def walk(node, prefix: str) -> None:
            name = f"{prefix}->{node.region.name}" if prefix else node.region.name
            self.callpaths.setdefault(name, []).append(node)
            for child in node.get_children():
                walk(child, name)

        roots = cube.get_root_cnodes()
        for root in roots:
            walk(root, "")
        if callpath is None:
            self.callpath, nodes = " + ".join(r.region.name for r in roots), roots
        elif callpath in self.callpaths:
            self.callpath, nodes = callpath, self.callpaths[callpath]
        else:
            self.callpath, nodes = callpath, []
            return
        try:
            chosen = cube.get_metric_by_name(metric)
        except KeyError:
            names = ", ".join(m.name for m in cube.all_metrics()[:8])
            raise InputError(f"{self.where}: no metric {metric!r} in the profile (its metrics: {names})"
                             + ("; name one with --profile-metric" if metric == DEFAULT_METRIC else "")) from None
        try:
            values = cube.get_metric_values(chosen, cache=False)
        except MissingMetricError:
            raise InputError(f"{self.where}: the profile holds no data for the metric {metric!r}") from None
        try:
            per_location = sum(np.asarray(values.cnode_values(n, convert_to_inclusive=True), dtype=float)
                               for n in nodes)
        except (TypeError, ValueError):
            raise InputError(f"{self.where}: the metric {metric!r} ({chosen.data_type}) is not one number "
                             "per location") from None
        self.value = float(np.max(per_location[cpu]))


def _count_source(files: Sequence[tuple[str, str]], wanted: str | None) -> tuple[str, dict[str, float]]:
    """The count's source and, for ``name``, each file's count; ``files``: (shown, path)."""
    if wanted is not None and wanted not in COUNT_SOURCES:
        raise InputError(f"{files[0][0]}: --count-attribute {quoted(wanted)}: a CUBE profile's count is one of "
                         f"{', '.join(COUNT_SOURCES)}")
    if wanted not in (None, "name"):
        return wanted, {}
    named = [(where, name_parameters(path)) for where, path in files]
    without = [where for where, params in named if params is None]
    if without:
        if wanted == "name":
            raise InputError(f"{without[0]}: its folder's name carries no count ({NAME_RULE}); "
                             "count by --count-attribute threads, processes or locations")
        if len(without) < len(named):  # some do and some do not: which count was meant is unclear
            with_name = next(w for w, p in named if p is not None)
            raise InputError(f"{without[0]}: its folder's name carries no count and {with_name}'s does: name "
                             f"every run's folder {NAME_RULE}, or count by --count-attribute locations")
        return "locations", {}
    first = list(named[0][1])
    for where, params in named:
        if list(params) != first:
            raise InputError(f"{where}: its folder names the parameters {', '.join(params)}, "
                             f"{named[0][0]}'s {', '.join(first)}: the same, in the same order")
    varying = [k for k in first if len({p[k] for _, p in named}) > 1]
    if len(varying) > 1:
        raise InputError(f"{named[0][0]}: the folders' names vary in {len(varying)} parameters "
                         f"({', '.join(varying)}); corecast reads one, the count")
    if not varying:
        if wanted == "name":
            raise InputError(f"{named[0][0]}: every folder's name carries the same parameters: a curve needs "
                             "runs at two or more counts")
        return "locations", {}
    return varying[0], {where: as_count(p[varying[0]], f"{where}: parameter {varying[0]}") for where, p in named}


def parse(files: Sequence[tuple[str, str]], count_source: str | None = None, metric: str | None = None,
          callpath: str | None = None) -> list[RawSeries]:
    """The curve of the profiles ``files`` ((name as shown, path): files or folders)."""
    cubex = {}
    for where, path in files:
        for found in profiles(path, where):
            cubex.setdefault(os.path.realpath(found), (shown(found) if found != path else where, found))
    runs = list(cubex.values())
    key, by_name = _count_source(runs, count_source)
    metric = metric or DEFAULT_METRIC
    read = [(where, _Profile(path, where, metric, callpath)) for where, path in runs]
    missing = [(where, p) for where, p in read if not hasattr(p, "value")]
    if missing:
        where, p = missing[0]
        names = ", ".join(repr(n) for n in list(p.callpaths)[:8])
        raise InputError(f"{where}: no callpath {callpath!r} (the profile's callpaths: {names})")
    points = [(by_name[where] if by_name else as_count(float(p.counts[key]), f"{where}: its {key}"), p.value)
              for where, p in read]
    if len({n for n, _ in points}) < 2:
        raise InputError(f"{read[0][0]}: every profile has {key} = {points[0][0]:g}: a curve needs profiles "
                         "at two or more counts (give one per count, or pick the count with --count-attribute)")
    unit = count_unit_of(key) if by_name else UNITS[key]
    return [RawSeries(read[0][1].callpath, metric, points, unit)]


# ---------------------------------------------------------------- its reader


def _load(files: list[tuple[str, str]], metric: str | None = None, callpath: str | None = None,
          profile_metric: str | None = None, count_attribute: str | None = None) -> list[Series]:
    raw = parse(files, count_attribute, profile_metric, callpath)
    return named_curves(raw, "cube", files[0][0], metric)


def _never(s: Sniff) -> bool:
    return False  # a binary archive: recognised by its name or its folder alone


READER = Reader(
    "cube", CURVES, "CUBE profiles",
    "Score-P's CUBE profiles (with the `pycubexr` package), one run each: `.cubex` files, Score-P "
    "experiment folders holding one, or a set's folder of them (Extra-P's layout); the count from "
    "the folder's name (`mm.p8.r1`) or the system tree",
    "a name ending in `.cubex`, or a folder",
    _never, _load, suffixes=(SUFFIX,), several=True, require=require_pycubexr, by_path=True)
