"""Every input format corecast reads, each a ``Reader`` registered here (``registry``):
its name is the ``--format NAME`` of the commands that read it, and without ``--format``
the readers are tried in the order registered below (``docs/file-formats.md`` lists them).

Measured curves, which ``corecast predict`` fits (``read_inputs``: one ``Series`` per
(callpath, metric)):

- corecast's own CSV (``readers.measurements``) and sweep JSON (``readers.sweepjson``): one series;
- Extra-P input files (``readers.extrap``): text (``PARAMETER``/``POINTS``/``REGION``/
  ``METRIC``/``DATA``), JSON (the legacy id-table layout and the newer nested one) and
  JSON Lines (what ``corecast export --extrap`` writes); the one parameter is the count;
- hyperfine's CSV and JSON exports of a parameter scan (``readers.hyperfine``): the one
  parameter is the count, the wall times the values;
- Caliper region profiles (``readers.caliper``): ``.cali`` files (with the
  ``caliper-reader`` package), ``cali-query`` JSON records and the ``json-split`` layout;
  one profile per count, the count from a thread- or rank-count attribute;
- Score-P's CUBE profiles (``readers.cube``): ``.cubex`` files or their folders (with the
  ``pycubexr`` package), one run each, the count from the folder's name or the system tree.

A run's recording, which ``replay``, ``merge`` and ``numa --replay`` read
(``readers.recording``: the JSON Lines, line by line; ``tools.samples`` decodes them).

A NUMA sample, which ``numa --sample`` and ``--co-run`` read (``readers.numasample``: one
JSON object, its rates for the machine given).

Every file goes through ``fileio.read_text`` once (size limit, FIFOs and standard input
work, one-line errors).  Values of a profile's metric are costs (time, visits, bytes: lower is better)
unless ``metric`` says otherwise.
"""
from __future__ import annotations

from typing import Sequence

from ..fileio import file_key, shown
from . import caliper, cube, extrap, hyperfine, measurements, numasample, recording, sweepjson
from .raw import RawSeries, Series
from .registry import CURVES, NUMA_SAMPLE, READERS, RECORDING, Reader, read, readers, register

__all__ = ["CURVES", "NUMA_SAMPLE", "READERS", "RECORDING", "RawSeries", "Reader", "Series", "read", "read_inputs",
           "readers", "register"]

# Detection order: the first reader of a kind whose detector says yes reads the file; the
# last of a kind is its fallback.  Caliper and CUBE first: a .cali or .cubex name (or a
# folder) decides before the content.
for _reader in (caliper.READER, cube.READER, extrap.TEXT, extrap.JSON, hyperfine.CSV, hyperfine.JSON,
                sweepjson.READER, measurements.CSV, recording.READER, numasample.READER):
    register(_reader)


def read_inputs(paths: Sequence[str], metric: str | None = None, callpath: str | None = None,
                profile_metric: str | None = None, count_attribute: str | None = None,
                format: str | None = None) -> list[Series]:
    """The curves in ``paths`` (several files: Caliper or CUBE profiles, one per count), filtered
    to ``callpath`` and ``profile_metric`` when given; ``format``: a reader's name
    (default: detected).  InputError (one line) on bad input."""
    once, again = [], []
    keys: set = set()
    for path in paths:  # `predict run_*.cali run_1.cali`: one profile counted as two repetitions
        key = file_key(path)
        if key is not None and key in keys:
            again.append(shown(path))
            continue
        keys.add(key)
        once.append(path)
    series = read(once, CURVES, format, metric=metric, callpath=callpath, profile_metric=profile_metric,
                  count_attribute=count_attribute)
    if again:
        for s in series:
            s.warnings.append(f"{', '.join(again)}: named more than once: read once")
    return series
