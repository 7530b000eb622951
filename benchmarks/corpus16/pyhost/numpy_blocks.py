"""Python host, numpy in threads: THREADS threads each run SIZE steps of a 5-point smoothing
stencil on their own band of rows of a shared 2048 x 2048 array, meeting at a
threading.Barrier every step (numpy's array loops release the GIL; the barrier and the
Python between calls do not).

    python numpy_blocks.py THREADS SIZE
"""
from __future__ import annotations

import sys
import threading

import numpy as np


def main() -> int:
    threads, steps = int(sys.argv[1]), int(sys.argv[2])
    n = 2048
    a = np.random.default_rng(3).random((n + 2, n + 2))
    b = np.empty_like(a)
    bands = np.linspace(1, n + 1, threads + 1).astype(int)
    barrier = threading.Barrier(threads)

    def worker(k: int) -> None:
        lo, hi = bands[k], bands[k + 1]
        src, dst = a, b
        for _ in range(steps):
            dst[lo:hi, 1:-1] = 0.2 * (src[lo:hi, 1:-1] + src[lo - 1:hi - 1, 1:-1] + src[lo + 1:hi + 1, 1:-1]
                                      + src[lo:hi, :-2] + src[lo:hi, 2:])
            barrier.wait()  # every band of this step is written before the next step reads it
            src, dst = dst, src

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(float(a.sum() + b.sum()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
