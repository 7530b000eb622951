"""libgomp's ordered turn (shims/gomp.c): GOMP_ordered_end is empty, and the loop's next call
hands the turn on, so a thread holds it from its first ordered block of a chunk to its next
chunk.  One acquisition per chunk, the hold to the next call, the hand-off lost to the turn.

``TAIL_C``'s work comes after its ordered block, in one-iteration chunks: the work runs in
turn.  On the 2-core VM, bare, 2 threads took 2.00 s where 1 took 1.91 (S@2 0.95).  With the
hold ended at GOMP_ordered_end the region's holds read 0.00 s of 4.0 s of busy time: S@2 0.99
but S@4 0.58, waits read as a queue that grows; with the turn's hold, 1.95 s: S@4 1.01."""
from __future__ import annotations

import pytest

from .helpers import clean_env, events, read_lines, run

TAIL_C = r"""
#include <stdio.h>
#include <stdlib.h>
static double work(int k, double x) { for (int j = 0; j < k; j++) x = x * 1.0000001 + 0.5; return x; }
int main(int argc, char **argv) {
    int calls = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
    double s = 0, out = 0;
    for (int c = 0; c < calls; c++) {
#pragma omp parallel for ordered schedule(static, 1) reduction(+:s)
        for (int i = 0; i < n; i++) {
#pragma omp ordered
            out += i;
            s += work(k, i);
        }
    }
    printf("%g %g\n", s > 0, out);
    return 0;
}
"""


def _region(build, lib, tmp_path, threads: int, *args: str) -> dict:
    exe = build("ordered_tail", TAIL_C, "-fopenmp")
    out = tmp_path / f"ordered-{threads}.jsonl"
    env = clean_env(OMP_NUM_THREADS=str(threads))
    bare = run([exe, *args], env=env)
    measured = run([exe, *args], env=env, preload=lib, output=str(out), keep_counting="1", quiet="1")
    assert measured.returncode == 0 and measured.stdout == bare.stdout, measured.stderr[-300:]
    (region,) = events(read_lines(out), "region")
    return region


def test_an_ordered_chunk_is_one_acquisition(build, lib, tmp_path):
    """One thread gets the whole loop as one chunk: one turn per call, not one per block
    (before: 2000 a call, each counted as an acquisition that never waits)."""
    region = _region(build, lib, tmp_path, 1, "20", "2000", "10")
    assert region["counters"]["acquisitions"]["critical"] == 20


def test_the_turn_is_held_to_the_loops_next_call(build, lib, tmp_path):
    """Two threads in one-iteration chunks take 2 x 2000 turns a call, and the work after
    each block is held (0.48-0.50 of busy time idle, 0.25 under two busy loops; 0.00 before)."""
    region = _region(build, lib, tmp_path, 2, "20", "2000", "20000")
    counters = region["counters"]
    assert counters["acquisitions"]["critical"] == 20 * 2000
    assert counters["hold_s"]["critical"] > 0.1 * counters["busy_s"], counters
