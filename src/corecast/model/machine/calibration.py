"""The machine's own loss of per-thread speed as more of its cores are busy, measured once
by ``corecast calibrate`` (``tools/calibrate.py``) and applied to the one-sample model
(``model/runtime/predictor.py``: ``apply_calibration``).

A compute kernel with nothing shared between its copies runs slower per copy when more of
them run at once: turbo frequencies fall as cores wake, a virtual machine's "cores" may be
hyperthreads of fewer physical ones, and cores share power and cache.  The calibration is
e(n), one copy's speed with n copies running over its speed alone (e(1) = 1).

The one-sample model takes a region's busy time at its sampled team n0 as the work, so it
is blind to this: the work of one thread alone is really ``e(n0)`` of it, and the time at
n is ``e(n0) / e(n)`` of what it predicts, so the speedup S(n) = T(1) / T(n) is the
model's times e(n).  On the 16-core device machine NPB ep.W, embarrassingly parallel, had
e(16) = 0.82, and every program no model choice was made with was predicted to gain more
from 2 to 16 threads than it did (``benchmarks/device16``; with ep.W standing in for the
calibration, ``machine_whatif.py`` took their median error from 0.37 to 0.21).

Standard library only: it runs inside profiled programs.
"""
from __future__ import annotations

import math
import os
import stat

SCHEMA = 1
KEY = "corecast_calibration"  # the file's first key and its schema number
MAX_BYTES = 1 << 20


class CalibrationError(ValueError):
    """A calibration file that cannot be used (its one-line reason)."""


class Calibration:
    """e(n) at the counts ``counts`` (ascending, the first 1) measured on a machine of
    ``cpus`` online CPUs whose processor is ``cpu_model``."""

    __slots__ = ("counts", "efficiency", "cpus", "cpu_model")

    def __init__(self, counts: list[int], efficiency: list[float], cpus: int, cpu_model: str) -> None:
        self.counts = counts
        self.efficiency = efficiency
        self.cpus = cpus
        self.cpu_model = cpu_model

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

    def to_json(self) -> str:
        """The object its file holds, less what a run does not use (``from_dict`` reads it)."""
        import json

        return json.dumps({KEY: SCHEMA, "machine": {"cpus": self.cpus, "cpu_model": self.cpu_model},
                           "efficiency": [[n, round(e, 4)] for n, e in zip(self.counts, self.efficiency)]},
                          separators=(",", ":"))

    def note(self, n0: int, n: int) -> str:
        """The basis's words for it, from ``n0`` threads to ``n``."""
        return f"; machine x{self.at(n) / self.at(n0):.2f} {n0}->{n}"


def parse(text: str) -> Calibration:
    """A calibration from a file's text; CalibrationError names what is wrong."""
    import json

    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CalibrationError(f"not JSON ({str(exc)[:60]})") from None
    return from_dict(doc)


def from_dict(doc: object) -> Calibration:
    """A calibration from the object its file holds (also a run's record of it)."""
    if not isinstance(doc, dict) or doc.get(KEY) != SCHEMA:
        raise CalibrationError(f'not a corecast calibration (expected "{KEY}": {SCHEMA})')
    machine, rows = doc.get("machine"), doc.get("efficiency")
    if not isinstance(machine, dict) or not isinstance(machine.get("cpus"), int) or machine["cpus"] < 1 \
            or not isinstance(machine.get("cpu_model"), str):
        raise CalibrationError('"machine" must hold "cpus" (a positive integer) and "cpu_model" (a string)')
    if not isinstance(rows, list) or not rows or len(rows) > 4096:
        raise CalibrationError('"efficiency" must be a list of [threads, efficiency] pairs')
    counts, effs = [], []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], int)
                and not isinstance(row[0], bool) and isinstance(row[1], (int, float))
                and not isinstance(row[1], bool)):
            raise CalibrationError('"efficiency" must be a list of [threads, efficiency] pairs')
        n, e = row
        if n < 1 or (counts and n <= counts[-1]):
            raise CalibrationError('"efficiency" counts must be positive and ascending')
        if not (math.isfinite(e) and 0 < e <= 2):
            raise CalibrationError(f"efficiency at {n} threads must be in (0, 2], got {e!r}"[:120])
        counts.append(n)
        effs.append(float(e))
    if counts[0] != 1:
        raise CalibrationError('"efficiency" must start at 1 thread')
    # e is relative to one copy alone: a file measured otherwise is put on that footing.
    effs = [e / effs[0] for e in effs]
    return Calibration(counts, effs, machine["cpus"], machine["cpu_model"])


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
    processor) is not used."""
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
    here = cpu_model()
    if cal.cpus != cpus or cal.cpu_model != here:
        return None, (f"machine calibration not used: {path} was measured on {cal.cpus} CPUs "
                      f"({cal.cpu_model or 'unnamed'}), this machine has {cpus} ({here or 'unnamed'})")
    return cal, ""
