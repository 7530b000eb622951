"""The Python hosts of benchmarks/stress.py; each prints only what does not depend on
scheduling and writes out.txt in its working folder.

    python benchmarks/stress_host.py threads|osexit|fork

    threads  threads sharing a Lock and a Queue, then sys.exit(7)
    osexit   the same, then os._exit(5) from a worker while the others still run
    fork     the same, then os.fork() while spinners run: the child prints and exits 3
             by sys.exit, the parent prints its status and exits 7
"""
import os
import queue
import sys
import threading


def work(n: int) -> int:
    s = 0
    for i in range(n):
        s = (s * 31 + i) % 1000003
    return s


def main(mode: str) -> None:
    lock, q, total = threading.Lock(), queue.Queue(), [0]
    stop = threading.Event()

    def producer() -> None:
        for i in range(2000):
            q.put(i)

    def consumer() -> None:
        for _ in range(1000):
            v = work(q.get() % 50)
            with lock:
                total[0] += v

    def spinner() -> None:
        while not stop.is_set():
            work(500)

    threads = [threading.Thread(target=producer), threading.Thread(target=consumer),
               threading.Thread(target=consumer)]
    spin = [threading.Thread(target=spinner, daemon=True) for _ in range(2)]
    for t in threads + spin:
        t.start()
    for t in threads:
        t.join()
    print("total", total[0])
    with open("out.txt", "w") as f:
        f.write(f"{total[0]}\n")
    if mode == "osexit":
        sys.stdout.flush()
        leaver = threading.Thread(target=lambda: os._exit(5))
        leaver.start()
        leaver.join()
    if mode == "fork":
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            print("child", work(3000))
            sys.exit(3)
        print("child status", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    stop.set()
    sys.exit(7)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "threads")
