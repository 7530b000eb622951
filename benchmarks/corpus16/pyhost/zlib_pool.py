"""Python host, thread pool: compress SIZE chunks of 1 MiB with zlib in a
concurrent.futures.ThreadPoolExecutor of THREADS workers (zlib releases the GIL while it
compresses, so the pool scales until the GIL-held bookkeeping and memory traffic bite).

    python zlib_pool.py THREADS SIZE
"""
from __future__ import annotations

import random
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor


def chunk(i: int) -> bytes:
    """1 MiB of word-like text: compressible, and different for every chunk."""
    rng = random.Random(i)
    words = [bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(400)]
    out = b" ".join(rng.choices(words, k=190_000))
    return out[: 1 << 20]


def work(i: int, base: bytes) -> int:
    # one shared base chunk rotated per item: the text is made once, outside the timed pool work
    k = (i * 7919) % len(base)
    return len(zlib.compress(base[k:] + base[:k], 6))


def main() -> int:
    threads, size = int(sys.argv[1]), int(sys.argv[2])
    base = chunk(1)
    with ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(lambda i: work(i, base), range(size)))
    print(total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
