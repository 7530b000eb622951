"""Python host, threading: THREADS threading.Thread workers take block numbers from a
queue.Queue and hash SIZE blocks of 4 MiB with hashlib (sha256 and blake2b release the GIL
on large buffers), adding digests under a threading.Lock.

    python hash_threads.py THREADS SIZE
"""
from __future__ import annotations

import hashlib
import queue
import sys
import threading


def main() -> int:
    threads, size = int(sys.argv[1]), int(sys.argv[2])
    block = bytes(range(256)) * (4 << 12)  # 4 MiB
    todo: queue.Queue[int | None] = queue.Queue()
    for i in range(size):
        todo.put(i)
    for _ in range(threads):
        todo.put(None)
    lock = threading.Lock()
    acc = [0]

    def worker() -> None:
        while (i := todo.get()) is not None:
            h = hashlib.sha256(i.to_bytes(8, "little"))
            h.update(block)
            d = hashlib.blake2b(block, key=h.digest()).digest()
            with lock:
                acc[0] ^= int.from_bytes(d[:8], "little")

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(acc[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
