"""Threaded Python example: CPU work in pure Python (the threads contend for the GIL), a
contended ``threading.Lock`` and a ``queue.Queue`` between producers and consumers.

    corecast run -- python3 examples/threaded.py [rounds]

Every printed number is a sum over work items that does not depend on which thread did
which item, so stdout is the same whatever the scheduling.  Takes about 0.5-1 s.
"""
import queue
import sys
import threading

WORKERS = 4


def crunch(seed: int, steps: int) -> int:
    """Pure-Python CPU work: a 32-bit xorshift chain."""
    x = (seed * 2654435761 + 1) & 0xFFFFFFFF
    for _ in range(steps):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
    return x


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    lock = threading.Lock()
    totals = {"locked": 0, "queued": 0, "items": 0}
    work: queue.Queue = queue.Queue(maxsize=16)
    start = threading.Barrier(WORKERS + 1)

    def locked_worker(wid: int) -> None:
        start.wait()
        for i in range(rounds):
            value = crunch(wid * rounds + i, 1000)
            with lock:  # contended: every worker adds under the same lock, working inside
                totals["locked"] = (totals["locked"] + crunch(value, 100)) & 0xFFFFFFFFFFFF

    def consumer() -> None:
        mine = count = 0
        while True:
            item = work.get()
            if item is None:
                break
            mine += crunch(item, 600)
            count += 1
        with lock:
            totals["queued"] += mine
            totals["items"] += count

    threads = [threading.Thread(target=locked_worker, args=(w,)) for w in range(WORKERS)]
    consumers = [threading.Thread(target=consumer) for _ in range(2)]
    for t in threads + consumers:
        t.start()
    start.wait()
    for i in range(rounds * 2):  # the main thread produces
        work.put(i)
    for _ in consumers:
        work.put(None)
    for t in threads + consumers:
        t.join()
    print(f"locked {totals['locked']:012x}")
    print(f"queued {totals['queued']:x} items {totals['items']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
