"""A NUMA sample file: one JSON object of a program's memory traffic, which ``corecast numa
--sample`` and ``--co-run`` read.  What its fields mean is ``model.numa.parse_sample``'s
(rates per work cycle, or raw counts with ``total_cycles``); this module only reads the
file, so that I/O holds every reader (``docs/numa.md``)."""
from __future__ import annotations

TYPE_CHECKING = False  # typing costs a profiled program start-up time: annotations only
if TYPE_CHECKING:
    from ...model.machine.numa import Machine
    from ...model.numa import Rates

from ...errors import InputError
from ...model.numa import SampleError, parse_sample
from ..fileio import parse_json
from .registry import NUMA_SAMPLE, Reader, Sniff


def _load(files: list[tuple[str, str]], machine: Machine) -> Rates:
    ((name, text),) = files
    data = parse_json(text, name, "a JSON sample")  # its errors name the file
    try:
        return parse_sample(data, machine)
    except SampleError as exc:
        raise InputError(f"{name}: {exc}") from None


def _is_sample(s: Sniff) -> bool:
    return isinstance(s.json, dict) and {"llc", "bus"} <= set(s.json)


READER = Reader(
    "numa-sample", NUMA_SAMPLE, "a NUMA sample",
    "one JSON object of a program's memory traffic per node: `llc`, `bus` and `mct` per work "
    "cycle, or raw counts with `total_cycles` (`docs/numa.md`)",
    "a JSON object with `llc` and `bus` (the only reader of its kind: its parser says what is "
    "wrong with any other file)",
    _is_sample, _load)
