"""native/fit_waits.c, the final record's fit of the sections' credited waits and holds
(critical, atomic, omp_lock) into the threads' time, run on samples built here: a small
driver compiled against the file itself.  Figures are exact fractions of two, so each
result is checked for equality (to rounding), not only against a bound: holds shrink to the
room beside the exact waits and serial_s follows them, then the waits shrink to what is
left, a process's room is its threads x wall, and no room leaves none."""
from __future__ import annotations

import subprocess

import pytest

from corecast.recording.abi import STALLS

from .helpers import NATIVE_SOURCE, TIMEOUT

# Reads one region a line (the process last): threads wall_s busy_s serial_s single_s, then
# stall_s and hold_s per category; writes serial_s, stall_s and hold_s of each after the fit.
DRIVER_C = r"""
#include <stdio.h>
#include "sample.h"

static struct cc_sample s;

int main(void) {
    struct cc_region_sample *g = s.regions;
    while (s.nregions < 128 && scanf("%d %lf %lf %lf %lf", &g->threads, &g->wall_s, &g->busy_s, &g->serial_s,
                                     &g->single_s) == 5) {
        for (int c = 0; c < 2 * CC_NSTALL; c++)
            if (scanf("%lf", c < CC_NSTALL ? &g->stall_s[c] : &g->hold_s[c - CC_NSTALL]) != 1)
                return 2;
        g = &s.regions[++s.nregions];
    }
    cc_sample_fit_waits(&s);
    for (int i = 0; i < s.nregions; i++) {
        g = &s.regions[i];
        printf("%.17g", g->serial_s);
        for (int c = 0; c < 2 * CC_NSTALL; c++)
            printf(" %.17g", c < CC_NSTALL ? g->stall_s[c] : g->hold_s[c - CC_NSTALL]);
        printf("\n");
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def fit(build):
    """``fit(*regions)``: each region (``entry``'s dicts, the process last) after the fit."""
    driver = build("fit_waits_driver", DRIVER_C, f"-I{NATIVE_SOURCE}", str(NATIVE_SOURCE / "fit_waits.c"))

    def _fit(*regions: dict) -> list[dict]:
        lines = []
        for g in regions:
            figures = [g["threads"], g["wall_s"], g["busy_s"], g["serial_s"], g["single_s"]]
            figures += [g["stall_s"].get(c, 0.0) for c in STALLS] + [g["hold_s"].get(c, 0.0) for c in STALLS]
            lines.append(" ".join(repr(float(x)) if isinstance(x, float) else str(x) for x in figures))
        proc = subprocess.run([driver], input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stderr
        out = []
        for line in proc.stdout.splitlines():
            v = [float(x) for x in line.split()]
            out.append({"serial_s": v[0], "stall_s": dict(zip(STALLS, v[1:1 + len(STALLS)])),
                        "hold_s": dict(zip(STALLS, v[1 + len(STALLS):]))})
        assert len(out) == len(regions)
        return out

    return _fit


def entry(busy_s: float = 1.0, threads: int = 1, wall_s: float = 1.0, single_s: float = 0.0,
          stall_s: dict | None = None, hold_s: dict | None = None) -> dict:
    """A sample entry as sample.c fills it: serial_s is single_s plus every hold."""
    hold_s = dict(hold_s or {})
    return {"threads": threads, "wall_s": wall_s, "busy_s": busy_s, "single_s": single_s, "stall_s": dict(stall_s or {}),
            "hold_s": hold_s, "serial_s": single_s + sum(hold_s.values())}


def same(got: dict, want: dict, serial_s: float) -> None:
    """``got`` is ``want`` (every category, 0 where it names none) and serial_s is ``serial_s``."""
    for kind in ("stall_s", "hold_s"):
        assert got[kind] == pytest.approx({c: want.get(kind, {}).get(c, 0.0) for c in STALLS}, rel=1e-12, abs=1e-15), kind
    assert got["serial_s"] == pytest.approx(serial_s, rel=1e-12)


def test_waits_and_holds_that_fit_are_left_as_they_are(fit):
    g = entry(busy_s=2.0, single_s=0.125, stall_s={"mutex": 0.25, "critical": 0.5, "atomic": 0.25, "omp_lock": 0.5},
              hold_s={"mutex": 0.125, "critical": 0.125})
    (got, _) = fit(g, entry())
    same(got, g, g["serial_s"])


def test_holds_past_the_room_beside_the_exact_waits_shrink_and_serial_follows(fit):
    # 1 s busy, 0.375 s exact (mutex wait and hold): 0.625 s of room for 1.25 s of settled
    # holds, which shrink by half; serial_s is single + every hold after the fit (not the
    # holds taken off and left off), and the exact figures stay.
    g = entry(busy_s=1.0, single_s=0.0625, stall_s={"mutex": 0.25},
              hold_s={"mutex": 0.125, "critical": 0.75, "omp_lock": 0.5})
    (got, _) = fit(g, entry())
    same(got, {"stall_s": {"mutex": 0.25}, "hold_s": {"mutex": 0.125, "critical": 0.375, "omp_lock": 0.25}},
         serial_s=0.0625 + 0.125 + 0.625)


def test_waits_shrink_to_what_the_exact_waits_and_the_holds_leave(fit):
    # 1 s busy less 0.25 s exact (a condition variable's wait) less 0.25 s of holds that fit:
    # 0.5 s for 1.5 s of settled waits, a third each.
    g = entry(busy_s=1.0, stall_s={"condvar": 0.25, "critical": 1.0, "atomic": 0.5}, hold_s={"critical": 0.25})
    (got, _) = fit(g, entry())
    same(got, {"stall_s": {"condvar": 0.25, "critical": 1.0 / 3, "atomic": 0.5 / 3}, "hold_s": {"critical": 0.25}},
         serial_s=0.25)


def test_waits_that_fit_beside_the_exact_waits_but_not_beside_the_holds_shrink(fit):
    # 1 s busy, no exact waits, 0.5 s of holds that fit: 0.75 s of settled waits fit the
    # busy time alone but not beside the holds, and shrink to the 0.5 s the holds leave.
    g = entry(busy_s=1.0, stall_s={"critical": 0.5, "omp_lock": 0.25}, hold_s={"atomic": 0.5})
    (got, _) = fit(g, entry())
    same(got, {"stall_s": {"critical": 0.5 * 2 / 3, "omp_lock": 0.25 * 2 / 3}, "hold_s": {"atomic": 0.5}},
         serial_s=0.5)


def test_holds_that_fill_the_room_leave_no_waits(fit):
    g = entry(busy_s=1.0, stall_s={"mutex": 0.5, "omp_lock": 0.75}, hold_s={"omp_lock": 1.0})
    (got, _) = fit(g, entry())
    same(got, {"stall_s": {"mutex": 0.5}, "hold_s": {"omp_lock": 0.5}}, serial_s=0.5)


def test_exact_waits_past_the_threads_time_leave_no_settled_waits_or_holds(fit):
    # 1.25 s exact in 1 s busy: no room at all, and the settled figures go to 0, not below
    # (a negative scale) nor left as they were.
    g = entry(busy_s=1.0, single_s=0.125, stall_s={"mutex": 1.0, "critical": 0.5, "omp_lock": 0.25},
              hold_s={"mutex": 0.25, "critical": 0.5, "atomic": 0.125})
    (got, _) = fit(g, entry())
    same(got, {"stall_s": {"mutex": 1.0}, "hold_s": {"mutex": 0.25}}, serial_s=0.125 + 0.25)
    # Waits alone (no holds to shrink first) with no room go to 0 as well.
    g = entry(busy_s=0.5, stall_s={"omp_barrier": 0.5, "atomic": 0.25})
    (got, _) = fit(g, entry())
    same(got, {"stall_s": {"omp_barrier": 0.5}}, serial_s=0.0)


def test_imbalance_and_runqueue_waits_take_no_room(fit):
    # They lie outside the spans the sections' time is in: not subtracted from the room.
    g = entry(busy_s=1.0, stall_s={"imbalance": 4.0, "runqueue": 4.0, "critical": 0.5}, hold_s={"atomic": 0.5})
    (got, _) = fit(g, entry())
    same(got, g, serial_s=0.5)


def test_a_process_has_its_threads_times_wall_a_region_its_busy_time(fit):
    # The process (the last entry): 4 threads x 1 s, 2 s of CPU, 0.5 s exact: 3 s of
    # settled waits fit (they would not in 1 s of wall, nor in its busy time).  A region of
    # 4 threads x 1 s busy for 1.5 s: 2 s of waits shrink to 1.5 s.
    region = entry(busy_s=1.5, threads=4, wall_s=1.0, stall_s={"critical": 1.5, "omp_lock": 0.5})
    process = entry(busy_s=2.0, threads=4, wall_s=1.0, stall_s={"mutex": 0.5, "critical": 2.0, "omp_lock": 1.0})
    got_region, got_process = fit(region, process)
    same(got_region, {"stall_s": {"critical": 1.125, "omp_lock": 0.375}}, serial_s=0.0)
    same(got_process, process, serial_s=0.0)
    # 2 threads x 1 s less 0.5 s exact: 1.5 s for 3 s of waits and holds of 1 s, holds first.
    process = entry(busy_s=0.5, threads=2, wall_s=1.0, stall_s={"mutex": 0.5, "critical": 3.0}, hold_s={"atomic": 1.0})
    (_, got_process) = fit(entry(), process)
    same(got_process, {"stall_s": {"mutex": 0.5, "critical": 0.5}, "hold_s": {"atomic": 1.0}}, serial_s=1.0)


def test_the_threads_sampled_waits_say_no_more_than_the_process(build, lib, tmp_path):
    """per_thread's waits are the threads' raw counts: those of the sections, scaled up from
    timed samples, said one thread of a run at 1 thread "waited" 0.52 s in 0.31 s where the
    process record, fitted, said 0.12.  They are shrunk as the process's were, so that no
    thread says more than the process of a sampled category (1 thread: the same figure)."""
    from .helpers import EXAMPLES, clean_env, events, read_lines, run

    exe = build("omp_slowdown", EXAMPLES / "omp_slowdown.c", "-fopenmp")
    out = tmp_path / "one.jsonl"
    r = run([exe, "2000"], env=clean_env(OMP_NUM_THREADS="1"), preload=lib, output=out, quiet="1",
            keep_counting="1")
    assert r.returncode == 0, r.stderr
    (process,) = events(read_lines(out), "process")
    for cat in ("critical", "atomic", "omp_lock"):
        said = sum(t["waits_s"].get(cat, 0) for t in process["per_thread"])
        assert said <= process["stalls_s"][cat] * (1 + 1e-5) + 1e-6, (cat, said, process["stalls_s"])
