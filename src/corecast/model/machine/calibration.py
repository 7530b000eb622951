"""The machine's own loss of per-thread speed as more of its cores are busy, measured once
by ``corecast calibrate`` (``tools/calibrate.py``), and applied to a region's one-sample
prediction only where the run's evidence says which loss the region suffers
(``model/runtime/evidence.py``).

Two curves, the two kernels of likwid-bench (Treibig, Hager and Wellein, PSTI 2010):

* compute, e_c(n): a thread's rate of multiply-adds held in registers with n threads
  busy over its rate alone (falling turbo clocks, hyperthreads presented as cores,
  shared power);
* bandwidth, e_b(n) = bw(n) / (n bw(1)): the STREAM triad's aggregate bandwidth at n
  threads over n times one thread's (what each thread of a memory-bound loop keeps).

The one-sample model takes a region's busy time at its sampled team n0 as the work, so it
is blind to either: the time at n is ``e(n0) / e(n)`` of what it predicts.

The file (schema 2; docs/file-formats.md): ``{"corecast_calibration": 2, "machine":
{"cpus", "cpu_model", ...}, "compute": {"efficiency": [[n, e_c], ...], ...}, "bandwidth":
{"gbps": [[n, GB/s], ...], ...}, ...}``, either curve may be absent.  Schema 1 files (one
curve measured by Python processes, which on the 16-core machine read e(16) = 0.61 where
a compute-bound program reached 0.90: issue #38) are refused; a recording that holds one is
replayed without it.  A file that is not used says so, and how to silence the line, never to
measure again: calibrating is not advised (``NOT_ADVISED``).

Standard library only: it runs inside profiled programs.
"""
from __future__ import annotations

import math
import os
import stat

from ...recording.values import json_number, shown_value
from ..scaling import MAX_COUNT, over_max_count

SCHEMA = 2
KEY = "corecast_calibration"  # the file's first key and its schema number
# What a file that is not used adds (issue #38: no calibration has yet made predictions
# better, held out): never "run corecast calibrate again".
NOT_ADVISED = "runs need none, and calibrating is not advised yet (docs/runtime-model.md)"
MAX_BYTES = 1 << 20


class CalibrationError(ValueError):
    """A calibration file that cannot be used (its one-line reason)."""


class OutdatedCalibration(CalibrationError):
    """A schema-1 calibration: measured in a way that misjudged machines (issue #38)."""


class Curve:
    """e(n) at the counts ``counts`` (ascending, the first 1, e(1) = 1)."""

    __slots__ = ("counts", "efficiency")

    def __init__(self, counts: list[int], efficiency: list[float]) -> None:
        self.counts = counts
        self.efficiency = efficiency

    def at(self, n: float) -> float:
        """e(n): log-linear between the measured counts, the last one's value beyond them."""
        c, e = self.counts, self.efficiency
        if n <= c[0]:
            return e[0]
        for i in range(1, len(c)):
            if n <= c[i]:
                w = (math.log(n) - math.log(c[i - 1])) / (math.log(c[i]) - math.log(c[i - 1]))
                return math.exp(math.log(e[i - 1]) * (1 - w) + math.log(e[i]) * w)
        return e[-1]


class Calibration:
    """The curves measured on a machine of ``cpus`` online CPUs whose processor is
    ``cpu_model``: ``compute`` (e_c) and ``bandwidth`` (e_b, from ``gbps``, the triad's
    aggregate GB/s at its counts), either None when not measured."""

    __slots__ = ("compute", "bandwidth", "gbps", "cpus", "cpu_model", "quick", "llc_bytes")

    def __init__(self, compute: Curve | None, bandwidth: Curve | None, cpus: int, cpu_model: str,
                 gbps: list[float] | None = None, quick: bool = False, llc_bytes: int = 0) -> None:
        self.compute = compute
        self.bandwidth = bandwidth
        self.gbps = gbps or []
        self.cpus = cpus
        self.cpu_model = cpu_model
        self.quick = quick  # `corecast calibrate --quick`: tiny runs that check the kernels, not figures
        # the last-level caches' total size as sysfs gave it (0: not known): data past it
        # comes from memory (a kernel's compulsory traffic, kernelmodel)
        self.llc_bytes = llc_bytes

    def curve(self, kind: str) -> Curve | None:
        """The curve named ``kind`` ("compute" or "bandwidth"), None when not measured."""
        return self.compute if kind == "compute" else self.bandwidth if kind == "bandwidth" else None

    def to_json(self) -> str:
        """The object its file holds, less what a run does not use (``from_dict`` reads it)."""
        import json

        doc: dict = {KEY: SCHEMA, "machine": {"cpus": self.cpus, "cpu_model": self.cpu_model}}
        if self.llc_bytes:
            doc["machine"]["llc_bytes"] = self.llc_bytes
        if self.quick:
            doc["quick"] = True
        if self.compute is not None:
            doc["compute"] = {"efficiency": [[n, round(e, 4)] for n, e in
                                             zip(self.compute.counts, self.compute.efficiency)]}
        if self.bandwidth is not None:
            doc["bandwidth"] = {"gbps": [[n, round(g, 3)] for n, g in zip(self.bandwidth.counts, self.gbps)]}
        return json.dumps(doc, separators=(",", ":"))


def parse(text: str) -> Calibration:
    """A calibration from a file's text; CalibrationError names what is wrong."""
    import json

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:  # where and what, whole (a cut at 60 characters read "line 2 co")
        raise CalibrationError(f"not JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise CalibrationError(f"not JSON: {type(exc).__name__}") from None
    return from_dict(doc)


def from_dict(doc: object) -> Calibration:
    """A calibration from the object its file holds (also a run's record of it)."""
    if isinstance(doc, dict) and doc.get(KEY) == 1:
        raise OutdatedCalibration("a schema-1 calibration (measured by Python processes, which misjudged "
                                  f"the machine): remove it; {NOT_ADVISED}")
    if isinstance(doc, dict) and type(doc.get(KEY)) is int and doc[KEY] > SCHEMA:
        raise CalibrationError(f"calibration schema {doc[KEY]} is newer than this corecast reads "
                               f"({SCHEMA}); a newer corecast wrote it")
    if not isinstance(doc, dict) or doc.get(KEY) != SCHEMA:
        raise CalibrationError(f'not a corecast calibration (expected "{KEY}": {SCHEMA})')
    machine = doc.get("machine")
    if not isinstance(machine, dict) or not isinstance(machine.get("cpus"), int) or machine["cpus"] < 1 \
            or not isinstance(machine.get("cpu_model"), str):
        raise CalibrationError('"machine" must hold "cpus" (a positive integer) and "cpu_model" (a string)')
    compute = bandwidth = None
    gbps: list[float] = []
    if doc.get("compute") is not None:
        counts, effs = _rows(doc["compute"], "compute", "efficiency", 2.0)
        # e is relative to one thread alone: a file measured otherwise is put on that footing.
        compute = Curve(counts, [e / effs[0] for e in effs])
    if doc.get("bandwidth") is not None:
        counts, gbps = _rows(doc["bandwidth"], "bandwidth", "gbps", math.inf)
        bandwidth = Curve(counts, [g / (n * gbps[0]) for n, g in zip(counts, gbps)])
    if compute is None and bandwidth is None:
        raise CalibrationError('neither "compute" nor "bandwidth" is there')
    llc = machine.get("llc_bytes")  # null where sysfs did not say
    if llc is not None and (not isinstance(llc, int) or isinstance(llc, bool) or llc < 0):
        raise CalibrationError('"machine" "llc_bytes" must be a byte count or null')
    return Calibration(compute, bandwidth, machine["cpus"], machine["cpu_model"], gbps, doc.get("quick") is True,
                       llc or 0)


def _rows(part: object, name: str, key: str, most: float) -> tuple[list[int], list[float]]:
    """The ``[threads, value]`` pairs of ``part[key]``: counts ascending from 1, values in
    (0, most]."""
    rows = part.get(key) if isinstance(part, dict) else None
    shape = f'"{name}" must hold "{key}", a list of [threads, {key}] pairs'
    if not isinstance(rows, list) or not rows or len(rows) > 4096:
        raise CalibrationError(shape)
    counts, values = [], []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], int)
                and not isinstance(row[0], bool) and isinstance(row[1], (int, float))
                and not isinstance(row[1], bool)):
            raise CalibrationError(shape)
        n, v = row
        if n < 1 or (counts and n <= counts[-1]):
            raise CalibrationError(f'"{name}" counts must be positive and ascending')
        if n > MAX_COUNT:  # as every reader of counts (past float range: OverflowError later)
            raise CalibrationError(f'"{name}" count {over_max_count(str(n))}')
        f = json_number(v)  # None past float range
        if f is None or not 0 < f <= most:
            bound = "(0, 2]" if most == 2.0 else "positive"
            raise CalibrationError(f"{name} {key} at {n} threads must be {bound}, got {shown_value(v)}")
        counts.append(n)
        values.append(f)
    if counts[0] != 1:
        raise CalibrationError(f'"{name}" must start at 1 thread')
    return counts, values


def read(path: str) -> Calibration:
    """The calibration in the regular file ``path`` (inside a profiled program: a FIFO or
    device there must not hold up its model); CalibrationError (with the path) when it
    cannot be used."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise CalibrationError(f"{path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CalibrationError(f"{path}: not a regular file")
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise CalibrationError(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        raise CalibrationError(f"{path}: larger than {MAX_BYTES >> 20} MiB")
    try:
        return parse(b"".join(chunks).decode("utf-8"))
    except UnicodeDecodeError:
        raise CalibrationError(f"{path}: not UTF-8 text") from None
    except CalibrationError as exc:
        raise CalibrationError(f"{path}: {exc}") from None


def cpu_model() -> str:
    """This machine's processor name (/proc/cpuinfo "model name"; "" where it has none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    return ""


def for_this_machine(cpus: int, path: str | None, default: str) -> tuple[Calibration | None, str]:
    """The calibration a run on this machine (``cpus`` online CPUs) uses, and a note when a
    file was there but not used: ``path`` (CORECAST_MACHINE_FILE; empty: none), else
    ``default`` when it exists.  A file measured on another machine (another CPU count or
    processor), or with ``--quick``, is not used."""
    if path is None:
        path = default
        if not os.path.isfile(path):
            return None, ""
    if not path:
        return None, ""
    try:
        cal = read(path)
    except CalibrationError as exc:
        return None, f"machine calibration not used: {exc}"
    if cal.quick:  # `corecast calibrate --quick` writes the default file too unless told -o
        return None, (f"machine calibration not used: {path} was measured with --quick (tiny runs: "
                      f"its figures mean nothing): remove it; {NOT_ADVISED}")
    if all(len(c.counts) < 2 for c in (cal.compute, cal.bandwidth) if c is not None):
        # `corecast calibrate --max 1`: one point is no curve, and would change no prediction
        # while the run's header said "calibrated"
        return None, (f"machine calibration not used: {path} measured one thread only (no curve): "
                      f"remove it; {NOT_ADVISED}")
    here = cpu_model()
    if cal.cpus != cpus or cal.cpu_model != here:
        return None, (f"machine calibration not used: {path} was measured on {cal.cpus} CPUs "
                      f"({cal.cpu_model or 'unnamed'}), this machine has {cpus} ({here or 'unnamed'})")
    return cal, ""
