"""The pthread shim's counters, read from inside the process (native/export.c).

When the preload library is loaded (``corecast run``), ``ctypes.CDLL(None)`` finds its
exported ``corecast_thread_waits``: per program thread, wait seconds, acquisitions and
contended acquisitions per stall category.  Without it (plain ``python -m
corecast.opencl``) ``Shim().available`` is False and the waits are simply not measured.
"""
from __future__ import annotations

import ctypes

from ..recording.abi import MAX_THREADS

CATEGORIES = 16  # room for more categories than the library has today


class Shim:
    def __init__(self):
        self.available = False
        self.names: list[str] = []
        try:
            lib = ctypes.CDLL(None)
            fn = lib.corecast_thread_waits
            name = lib.corecast_stall_name
        except (OSError, AttributeError):
            return
        name.restype = ctypes.c_char_p
        name.argtypes = [ctypes.c_int]
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double),
                       ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(ctypes.c_ulonglong),
                       ctypes.c_int, ctypes.c_int]
        names = []
        for i in range(CATEGORIES):
            n = name(i)
            if not n:
                break
            names.append(n.decode())
        self.names = names
        self._fn = fn
        self._tids = (ctypes.c_int * MAX_THREADS)()
        self._waits = (ctypes.c_double * (MAX_THREADS * CATEGORIES))()
        self._acq = (ctypes.c_ulonglong * (MAX_THREADS * CATEGORIES))()
        self._con = (ctypes.c_ulonglong * (MAX_THREADS * CATEGORIES))()
        self._mark = getattr(lib, "corecast_mark_internal", None)
        self.available = fn(None, None, None, None, 0, CATEGORIES) >= 0

    def mark_internal(self) -> None:
        """The calling thread is corecast's: its waits stay out of the program's."""
        if self.available and self._mark is not None:
            self._mark()

    def tids(self) -> set[int]:
        """The program threads the library lists (corecast's own left out); empty without it."""
        if not self.available:
            return set()
        rows = min(self._fn(self._tids, None, None, None, MAX_THREADS, CATEGORIES), MAX_THREADS)
        return {int(self._tids[r]) for r in range(max(rows, 0))}

    def read(self, tids: set[int]) -> tuple[list[float], list[int], list[int]] | None:
        """Waits (s), acquisitions and contended acquisitions per category (``names``),
        summed over the threads in ``tids``; None without the library."""
        if not self.available:
            return None
        rows = min(self._fn(self._tids, self._waits, self._acq, self._con, MAX_THREADS, CATEGORIES),
                   MAX_THREADS)
        k = len(self.names)
        waits, acq, con = [0.0] * k, [0] * k, [0] * k
        for r in range(max(rows, 0)):
            if self._tids[r] not in tids:
                continue
            base = r * CATEGORIES
            for c in range(k):
                waits[c] += self._waits[base + c]
                acq[c] += self._acq[base + c]
                con[c] += self._con[base + c]
        return waits, acq, con
