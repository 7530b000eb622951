"""``corecast sweep``: the JSON contract, {threads} placeholder and CPU confinement, stall
plugins, failed counts, and one-line errors for bad input.

The programs are tiny so every sweep takes well under a second per run; no assertion
depends on how fast this machine is (only on structure and on times being positive).
"""
from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from corecast import predict, sweep
from corecast.views import sweepviz
from corecast.model.curve.extrapolation import category_curve, estima_categories, extrapolate
from corecast.io.sweepresult import empty_result
from corecast.recording.abi import STALLS
from corecast.sweep.runner import region_curves
from corecast.views.sweeptable import format_sweep
from corecast._native import PRELOAD
from corecast.cli import main

from cli_checks import assert_one_line_error

ROOT = Path(__file__).resolve().parents[1]
TOP_KEYS = {"measured", "predictions", "stall_predictions", "preferred_threads", "fastest_threads",
            "preferred_count", "fastest_count", "fastest_measured", "bottleneck",
            "command", "runtime", "warnings", "failed", "regions", "placement", "cpus_allowed"}
NCPUS = len(os.sched_getaffinity(0))

# Starts argv[1] threads that contend on a mutex (forced: at every count); exits 3 unless it may run on exactly
# min(argv[1], argv[2]) CPUs (the sweep's confinement); argv[3] (optional) selects a
# behaviour: "gc" prints two gc=0.5 lines and writes gc=0.25 to the file argv[4];
# "fail2" exits 1 at 2 threads; "hang3" sleeps 60 s at 3 threads.
PTHREADS_PROGRAM = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;

static int announced;

static void *worker(void *arg) {
    (void)arg;
    __atomic_add_fetch(&announced, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&lock);
        for (int k = 0; k < 20; k++) counter += k;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = atoi(argv[1]), cpus = atoi(argv[2]);
    const char *mode = argc > 3 ? argv[3] : "";
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    int want = n < cpus ? n : cpus;
    if (CPU_COUNT(&set) != want) {
        fprintf(stderr, "may run on %d CPUs, expected %d\n", CPU_COUNT(&set), want);
        return 3;
    }
    if (!strcmp(mode, "fail2") && n == 2) { fprintf(stderr, "no luck at two\n"); return 1; }
    if (!strcmp(mode, "hang3") && n == 3) sleep(60);
    /* Forced contention, not timing luck: main holds the mutex until every worker has
     * asked for it (announced, then 100 ms to reach the lock call). */
    pthread_t t[64];
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, NULL);
    while (__atomic_load_n(&announced, __ATOMIC_ACQUIRE) < n) sched_yield();
    usleep(100000);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    if (!strcmp(mode, "gc")) {
        printf("gc=0.5\nwork done\ngc=0.5\n");
        FILE *f = fopen(argv[4], "w");
        fprintf(f, "gc=0.25\n");
        fclose(f);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def gcc() -> str:
    path = shutil.which("gcc")
    if path is None:
        pytest.skip("gcc is not installed")
    if not os.path.isfile(PRELOAD):
        pytest.skip(f"the preload library is not built ({PRELOAD})")
    return path


@pytest.fixture(scope="module")
def bindir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sweep-bin")


def compile_c(gcc: str, src: Path, out: Path, *flags: str) -> Path:
    if not out.exists():
        r = subprocess.run([gcc, "-O2", str(src), "-o", str(out), *flags], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            pytest.skip(f"gcc cannot build {src.name} here: {r.stderr.strip()[:200]}")
    return out


@pytest.fixture(scope="module")
def omp_critical(gcc, bindir) -> Path:
    return compile_c(gcc, ROOT / "examples" / "omp_critical.c", bindir / "omp_critical", "-fopenmp", "-lm")


@pytest.fixture(scope="module")
def contend(gcc, bindir) -> Path:
    src = bindir / "contend.c"
    src.write_text(PTHREADS_PROGRAM)
    return compile_c(gcc, src, bindir / "contend", "-pthread")


def sweep_json(capsys, tmp_path, *argv: str, status: int = 0) -> tuple[dict, str, str]:
    out_file = tmp_path / "sweep.json"
    rc = main(["sweep", "--json-out", str(out_file), *argv])
    out, err = capsys.readouterr()
    assert rc == status, err
    result = json.loads(out_file.read_text())  # exactly one object
    assert set(result) == TOP_KEYS
    assert result["cpus_allowed"] == NCPUS  # the CPUs every count shared, for predict
    return result, out, err


def check_contract(result: dict, counts: list[int], upto: int) -> None:
    assert [m["threads"] for m in result["measured"]] == counts
    categories = set(result["measured"][0]["stalls_s"])
    for m in result["measured"]:
        assert set(m) == {"threads", "time_s", "spread_s", "stalls_s", "cpus", "runs"}
        assert len(m["runs"]) >= 1 and all(r["time_s"] > 0 for r in m["runs"])
        assert m["time_s"] > 0 and m["spread_s"] >= 0
        assert set(m["stalls_s"]) == categories  # the same categories at every count
        assert all(v >= 0 for v in m["stalls_s"].values())
    for k in categories:  # categories zero at every count are left out
        assert any(m["stalls_s"][k] > 0 for m in result["measured"])
    assert [p["threads"] for p in result["predictions"]] == list(range(1, upto + 1))
    for p in result["predictions"]:
        assert set(p) == {"threads", "value", "low", "high", "speedup"}
        assert 0 < p["low"] <= p["value"] <= p["high"] and p["speedup"] > 0
    assert set(result["stall_predictions"]) == categories
    for rows in result["stall_predictions"].values():
        assert [r["threads"] for r in rows] == list(range(1, upto + 1))
        assert all(set(r) == {"threads", "value"} and r["value"] >= 0 for r in rows)
    assert isinstance(result["preferred_threads"], int) and 1 <= result["preferred_threads"] <= upto
    assert (result["preferred_count"], result["fastest_count"]) == (result["preferred_threads"],
                                                                    result["fastest_threads"])
    assert result["bottleneck"] in categories
    assert all(isinstance(w, str) for w in result["warnings"])


# ---------------------------------------------------------------- real sweeps


def test_openmp_sweep_json_contract(capsys, tmp_path, omp_critical):
    result, out, err = sweep_json(capsys, tmp_path, "--threads", "1,2", "--repeat", "1", "--upto", "8",
                                  "--", str(omp_critical), "80")
    check_contract(result, [1, 2], 8)
    assert {"imbalance", "critical"} <= set(result["measured"][1]["stalls_s"])
    assert result["command"] == [str(omp_critical), "80"]
    assert result["runtime"] == "openmp" and result["failed"] == []
    assert all(m["spread_s"] == 0 for m in result["measured"])  # one repetition
    assert any("ESTIMA needs" in w for w in result["warnings"])  # two counts: per-category auto
    assert "measured:" in out and "predicted:" in out and "future bottleneck" in out
    assert "total" not in out and err == ""  # the program's own output is captured, not echoed


def test_default_upto_and_repetitions(capsys, tmp_path, omp_critical):
    result, out, _ = sweep_json(capsys, tmp_path, "--threads", "1,2", "--repeat", "2", "--",
                                str(omp_critical), "16")
    check_contract(result, [1, 2], sweep.default_upto([1, 2]))
    assert sweep.default_upto([1, 2]) == 16 and sweep.default_upto([4, 12]) == 24


def test_placeholder_confinement_pthreads(capsys, tmp_path, contend):
    counts = [1, 2, 3]
    result, _, _ = sweep_json(capsys, tmp_path, "--threads", ",".join(map(str, counts)), "--repeat", "1",
                              "--runtime", "pthreads", "--upto", "6", "--",
                              str(contend), "{threads}", str(NCPUS))
    # The program exits 3 unless its CPU affinity matched the count: nothing failed.
    assert result["failed"] == []
    check_contract(result, counts, 6)
    assert result["command"][1] == "{threads}" and result["runtime"] == "pthreads"
    assert "mutex" in result["measured"][-1]["stalls_s"]
    if NCPUS < 3:
        assert any("oversubscribed" in w for w in result["warnings"])


def test_stall_plugins(capsys, tmp_path, contend):
    plugins = [
        {"name": "gc", "source": "stdout", "pattern": r"gc=([0-9.]+)", "reducer": "sum"},
        {"name": "filegc", "source": "file", "path": str(tmp_path / "gc-{threads}.log"),
         "pattern": r"gc=([0-9.]+)", "reducer": "max"},
        {"name": "never", "source": "stderr", "pattern": r"zzz=(\d+)"},
    ]
    spec = tmp_path / "plugins.json"
    spec.write_text(json.dumps(plugins))
    result, out, _ = sweep_json(capsys, tmp_path, "--threads", "1,2", "--repeat", "1", "--upto", "4",
                                "--runtime", "pthreads", "--stall-plugin", str(spec), "--",
                                str(contend), "{threads}", str(NCPUS), "gc", str(tmp_path / "gc-{threads}.log"))
    check_contract(result, [1, 2], 4)
    for m in result["measured"]:
        assert m["stalls_s"]["gc"] == pytest.approx(1.0)  # two gc=0.5 lines, summed
        assert m["stalls_s"]["filegc"] == pytest.approx(0.25)
        assert "never" not in m["stalls_s"]
    assert "gc" in result["stall_predictions"] and "never" not in result["stall_predictions"]
    assert any("'never'" in w and "matched in no run" in w for w in result["warnings"])
    assert "warning: stall plugin 'never'" in out


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
def test_stall_plugin_toml(capsys, tmp_path, contend):
    spec = tmp_path / "plugins.toml"
    spec.write_text('[[plugin]]\nname = "gc"\nsource = "stdout"\npattern = \'gc=([0-9.]+)\'\nreducer = "mean"\n')
    result, _, _ = sweep_json(capsys, tmp_path, "--threads", "1,2", "--repeat", "1", "--upto", "4",
                              "--runtime", "pthreads", "--stall-plugin", str(spec), "--",
                              str(contend), "{threads}", str(NCPUS), "gc", str(tmp_path / "x.log"))
    assert [m["stalls_s"]["gc"] for m in result["measured"]] == [pytest.approx(0.5)] * 2


def test_failing_count_recorded_and_sweep_continues(capsys, tmp_path, contend):
    result, out, err = sweep_json(capsys, tmp_path, "--threads", "1,2,3", "--repeat", "2", "--upto", "4",
                                  "--runtime", "pthreads", "--", str(contend), "{threads}", str(NCPUS), "fail2")
    assert [m["threads"] for m in result["measured"]] == [1, 3]
    assert result["failed"] == [{"threads": 2, "reason": "exit status 1: no luck at two"}]
    assert result["predictions"] and err == ""
    assert "failed at 2 threads: exit status 1: no luck at two" in out


def test_timeout_recorded(capsys, tmp_path, contend):
    result, _, _ = sweep_json(capsys, tmp_path, "--threads", "1,2,3", "--repeat", "1", "--upto", "4",
                              "--timeout", "1", "--runtime", "pthreads", "--",
                              str(contend), "{threads}", str(NCPUS), "hang3")
    assert [m["threads"] for m in result["measured"]] == [1, 2]
    assert result["failed"] == [{"threads": 3, "reason": "timed out after 1 s"}]


def test_fewer_than_two_successful_counts(capsys, tmp_path, contend):
    out_file = tmp_path / "s.json"
    assert main(["sweep", "--threads", "2,3", "--repeat", "1", "--timeout", "1", "--json-out", str(out_file),
                 "--runtime", "pthreads", "--", str(contend), "{threads}", str(NCPUS), "fail2"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("corecast: error: only 1 of 2 counts succeeded") and err.count("\n") == 1
    result = json.loads(out_file.read_text())
    assert set(result) == TOP_KEYS
    assert [m["threads"] for m in result["measured"]] == [3] and result["predictions"] == []
    assert result["failed"][0]["threads"] == 2
    assert "measured:" in out


def test_no_parallel_activity(capsys, tmp_path):
    true = shutil.which("true")
    if true is None or not os.path.isfile(PRELOAD):
        pytest.skip("needs /bin/true and the preload library")
    out_file = tmp_path / "s.json"
    assert main(["sweep", "--threads", "1,2", "--repeat", "1", "--json-out", str(out_file), "--", true]) == 2
    out, err = capsys.readouterr()
    assert err == "corecast: error: no parallel activity detected in any run; nothing predicted\n"
    result = json.loads(out_file.read_text())
    assert [m["threads"] for m in result["measured"]] == [1, 2]
    assert all(m["time_s"] > 0 and m["stalls_s"] == {} for m in result["measured"])
    assert result["predictions"] == [] and result["stall_predictions"] == {}
    assert result["preferred_threads"] is None and result["bottleneck"] is None
    assert any("no parallel activity" in w for w in result["warnings"])


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("threads", ["1,x", "0,1", "1,,2", "", "2,2", "-1"])
def test_bad_threads(capsys, threads):
    err = assert_one_line_error(capsys, ["sweep", f"--threads={threads}", "--", "true"])
    assert "--threads" in err


@pytest.mark.parametrize("argv", [["--repeat", "0"], ["--timeout", "0"], ["--timeout", "nan"],
                                  ["--runtime", "mpi"], ["--upto", "0"],
                                  ["--upto", "100001"]])
def test_bad_options(capsys, argv):
    assert_one_line_error(capsys, ["sweep", *argv, "--", "true"])


def test_unknown_command(capsys, tmp_path):
    err = assert_one_line_error(capsys, ["sweep", "--threads", "1,2", "--json-out", str(tmp_path / "x.json"),
                                         "--", "no-such-program-corecast"])
    assert "no-such-program-corecast: command not found" in err
    assert not (tmp_path / "x.json").exists()  # before any run


def test_no_command(capsys):
    assert "no command given" in assert_one_line_error(capsys, ["sweep", "--threads", "1,2"])


@pytest.mark.parametrize("plugin, message", [
    ([{"name": "gc", "source": "stdout", "pattern": "gc=\\d+"}], "exactly one capture group"),
    ([{"name": "gc", "source": "stdout", "pattern": "(["}], "not a valid regular expression"),
    ([{"name": "gc", "source": "socket", "pattern": "(x)"}], "source"),
    ([{"name": "gc", "source": "file", "pattern": "(x)"}], "needs a 'path'"),
    ([{"name": "gc", "source": "stdout", "pattern": "(x)", "reducer": "__import__('os')"}], "reducer"),
    ([{"name": "mutex", "source": "stdout", "pattern": "(x)"}], "already a measured category"),
    ([{"name": "gc", "source": "stdout", "pattern": "(x)", "eval": "1"}], "unknown key"),
    ({"name": "gc"}, "expected a list"),
    ([], "non-empty list"),
])
def test_bad_plugin_files(capsys, tmp_path, plugin, message):
    spec = tmp_path / "p.json"
    spec.write_text(json.dumps(plugin))
    err = assert_one_line_error(capsys, ["sweep", "--threads", "1,2", "--stall-plugin", str(spec), "--", "true"])
    assert message in err and str(spec) in err


def test_plugin_file_not_json(capsys, tmp_path):
    spec = tmp_path / "p.json"
    spec.write_text("name = gc")
    assert "not valid JSON" in assert_one_line_error(capsys, ["sweep", "--stall-plugin", str(spec), "--", "true"])


def test_plot_without_sweepviz_fails_before_running(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "corecast.views.sweepviz", None)  # as if the module were missing
    err = assert_one_line_error(capsys, ["sweep", "--plot", str(tmp_path / "a.png"), "--", "no-such-program-x"])
    assert "sweepviz" in err


def test_a_plot_suffix_no_format_has_fails_before_running(capsys, tmp_path):
    # --plot x.xyz once wrote PNG bytes under that name, after the whole sweep.
    err = assert_one_line_error(capsys, ["sweep", "--plot", str(tmp_path / "x.xyz"), "--", "no-such-program-x"])
    assert "cannot plot to a .xyz file" in err and not (tmp_path / "x.xyz").exists()


def test_plot_and_html_get_the_result(capsys, tmp_path, monkeypatch, omp_critical):
    calls = []
    fake = types.ModuleType("corecast.views.sweepviz")
    fake.__spec__ = importlib.machinery.ModuleSpec("corecast.views.sweepviz", None)
    fake.plot_sweep = lambda result, path: calls.append(("plot", set(result), path))
    fake.html_report = lambda result, path: calls.append(("html", set(result), path))
    monkeypatch.setitem(sys.modules, "corecast.views.sweepviz", fake)
    import corecast.views

    monkeypatch.setattr(corecast.views, "sweepviz", fake, raising=False)
    png, html = str(tmp_path / "a.png"), str(tmp_path / "a.html")
    sweep_json(capsys, tmp_path, "--threads", "1,2", "--repeat", "1", "--upto", "4", "--plot", png,
               "--html", html, "--", str(omp_critical), "16")
    assert calls == [("plot", TOP_KEYS, png), ("html", TOP_KEYS, html)]


# ---------------------------------------------------------------- pieces


def test_parse_threads():
    assert sweep.parse_threads("4, 1,2") == [1, 2, 4] == sweep.parse_threads("+4,1,2")
    # int() reads '1_0' as 10 and other scripts' digits (review40): a count is never so written.
    for bad in ("", "1,", "a", "0", "3,3", "1_0", "\uff18", "2,\u0664", "-1"):
        with pytest.raises(sweep.InputError):
            sweep.parse_threads(bad)


def _record(event: str, pid: int, name: str, stalls: dict) -> str:
    """A region or process line as the library writes it (the keys the reader needs)."""
    return json.dumps({"event": event, "schema": 4, "pid": pid, "runtime": "openmp", "name": name,
                       "calls": 1, "threads": 2, "wall_s": 1.0, "stalls_s": stalls,
                       "counters": {"busy_s": 2.0, "serial_s": 0.0}}) + "\n"


SUMMARY = '{"event":"summary","schema":4,"pid":1,"elapsed_s":1.0,"cores":2,"target":16}\n'


def test_read_output_sums_process_lines(tmp_path):
    path = tmp_path / "o.jsonl"
    path.write_text(
        _record("region", 1, "main._omp_fn.0", {"mutex": 9})
        + _record("process", 1, "process", {"mutex": 0.5, "imbalance": 0})
        + _record("process", 2, "process", {"mutex": 0.25, "critical": 1})
        + SUMMARY + '{"event":"proc'  # a line cut short
    )
    out = sweep.read_output(path)
    assert out.active
    assert {k: v for k, v in out.stalls.items() if v} == {"mutex": 0.75, "critical": 1.0}
    assert set(out.stalls) == set(STALLS)  # the record's categories, 0 where none
    assert out.regions == {"main._omp_fn.0": (1.0, {**dict.fromkeys(STALLS, 0.0), "mutex": 9.0})}
    path.write_text(SUMMARY)  # written, but nothing a process is read from
    out = sweep.read_output(path)
    assert out.active and out.stalls == {} and out.regions == {}
    path.write_text("")
    out = sweep.read_output(path)
    assert not out.active and out.stalls == {} and out.regions == {}


def _synthetic_runs(counts, stall_of, time_of):
    return {n: [sweep.RunResult(n, True, time_of(n), active=True, stalls=stall_of(n), plugin_values={},
                                plugin_errors={})] for n in counts}


def test_estima_extrapolates_categories_with_six_counts():
    counts = [1, 2, 3, 4, 5, 6, 8]  # mutex is 0 at 1: six positive points remain for ESTIMA

    def stalls(n):
        return {"mutex": 0.02 * (n - 1) ** 1.5, "imbalance": 0.01 * (n - 1)}

    runs = _synthetic_runs(counts, stalls, lambda n: 1.0 / n + 0.03 * n)
    per_count = {n: [stalls(n)] for n in counts}
    result = empty_result(["prog"], "openmp", [], {})
    extrapolate(result, {n: [r.time_s for r in runs[n]] for n in counts}, counts, ["mutex", "imbalance"], per_count, 32)
    assert not any("ESTIMA needs" in w for w in result["warnings"])
    assert [p["threads"] for p in result["predictions"]] == list(range(1, 33))
    # The categories are ESTIMA's own per-category extrapolations.
    est = predict([n for n in counts], [1.0 / n + 0.03 * n for n in counts], metric="time", upto=32,
                  method="estima", stalls={k: [stalls(n)[k] for n in counts] for k in ("mutex", "imbalance")})
    for k in ("mutex", "imbalance"):
        got = [r["value"] for r in result["stall_predictions"][k]]
        assert got == pytest.approx(list(est.extras["categories"][k]["values"]))
    assert result["stall_predictions"]["mutex"][0]["value"] == 0  # no lock wait at one thread
    at_end = {k: rows[-1]["value"] for k, rows in result["stall_predictions"].items()}
    assert result["bottleneck"] == max(at_end, key=at_end.get)


def test_few_counts_category_curve_interpolates_and_extends():
    warnings: list[str] = []
    curve = category_curve([1, 2, 4], [0.0, 0.1, 0.3], list(range(1, 9)), 8, "mutex", warnings)
    assert curve[:4] == [0.0, 0.1, pytest.approx(0.2), pytest.approx(0.3)]  # measured range: interpolated
    assert all(v >= 0 for v in curve[4:])
    flat = category_curve([1, 2], [0.0, 0.1], list(range(1, 5)), 4, "critical", warnings)
    assert flat == [0.0, 0.1, 0.1, 0.1] and any("one count only" in w for w in warnings)


def test_estima_step_one_on_its_own():
    counts = [1, 2, 3, 4, 5, 6, 8]
    per_count = {n: [{"mutex": 0.02 * (n - 1) ** 1.5, "atomic": 0.0}] for n in counts}
    curves = estima_categories(counts, per_count, ["mutex", "atomic"], list(range(1, 17)))
    assert set(curves) == {"mutex", "atomic"} and len(curves["mutex"]) == 16
    assert curves["mutex"][0] == 0 and all(v >= 0 for v in curves["mutex"])
    assert curves["atomic"] == [0.0] * 16


def test_format_sweep_lists_failures_and_warnings():
    result = empty_result(["prog", "{threads}"], "pthreads", ["something odd"], {3: "exit status 1"})
    result["measured"] = [{"threads": 1, "time_s": 1.0, "spread_s": 0.0, "stalls_s": {}}]
    text = format_sweep(result)
    assert "failed at 3 threads: exit status 1" in text and "warning: something odd" in text
    assert "predicted:" not in text


def test_run_sweep_api(contend, tmp_path):
    plug = sweep.StallPlugin("gc", "stdout", r"gc=([0-9.]+)", "max")
    result = sweep.run_sweep([str(contend), "{threads}", str(NCPUS), "gc", str(tmp_path / "gc.log")],
                             threads=[2, 1], repeat=1, upto=4, runtime="pthreads", plugins=[plug])
    check_contract(result, [1, 2], 4)
    assert [m["stalls_s"]["gc"] for m in result["measured"]] == [0.5, 0.5]
    json.dumps(result, allow_nan=False)  # plain JSON types only


# ---------------------------------------------------------------- per-region curves, placement (issue 17)


@pytest.fixture(scope="module")
def omp_two_regions(gcc, bindir) -> Path:
    return compile_c(gcc, ROOT / "examples" / "omp_two_regions.c", bindir / "omp_two_regions", "-fopenmp")


def test_two_regions_each_get_a_curve_and_bottleneck(capsys, tmp_path, omp_two_regions):
    # two regions of similar work: one scales, one has a critical section
    result, out, _ = sweep_json(capsys, tmp_path, "--threads", "1,2", "--repeat", "1", "--upto", "8",
                                "--", str(omp_two_regions), "10", "20000")
    regions = {r["name"]: r for r in result["regions"]}
    assert set(regions) == {"compute._omp_fn.0", "update._omp_fn.0"}
    for r in regions.values():
        assert {"name", "measured", "predictions", "bottleneck"} <= set(r)
        assert [m["threads"] for m in r["measured"]] == [1, 2]
        assert all(0 < m["time_s"] < result["measured"][i]["time_s"] for i, m in enumerate(r["measured"]))
        assert [p["threads"] for p in r["predictions"]] == list(range(1, 9))
        assert r["share"] >= sweep.MIN_REGION_SHARE
        assert r["bottleneck"] in r["measured"][-1]["stalls_s"]
    assert "regions taking at least 5% of the run" in out and "update._omp_fn.0" in out
    records = sweepviz.extrap_records(result)
    assert {r["callpath"] for r in records} >= {"main", "main->compute._omp_fn.0", "main->update._omp_fn.0"}
    assert result["placement"]["policy"] == "compact" and result["placement"]["omp_places"] is True
    assert result["placement"]["cpus"]["1"] == result["measured"][0]["cpus"]


def test_regions_below_share_are_left_out():
    class Run:
        def __init__(self, big, small):
            self.regions = {"big": (big, {"imbalance": 0.1}), "small": (small, {})}

    runs = {1: [Run(4.0, 0.05)], 2: [Run(2.1, 0.05)], 4: [Run(1.2, 0.05)]}  # small: under 3%
    measured = [{"threads": n, "time_s": t} for n, t in ((1, 5.0), (2, 2.8), (4, 1.8))]
    (big,) = region_curves(runs, [1, 2, 4], measured, 8)
    assert big["name"] == "big" and big["measured"][2]["time_s"] == 1.2
    assert big["predictions"][-1]["threads"] == 8 and big["bottleneck"] == "imbalance"
    # "at some count": a region that grows from 1% of the run at 1 thread to 11% at 4 (it
    # scales worse than the rest) is kept, its share the largest it took
    runs = {1: [Run(4.0, 0.05)], 2: [Run(2.1, 0.1)], 4: [Run(1.2, 0.2)]}
    shares = {r["name"]: r["share"] for r in region_curves(runs, [1, 2, 4], measured, 8)}
    assert shares == {"big": pytest.approx(4.0 / 5.0), "small": pytest.approx(0.2 / 1.8)}


def test_a_region_not_predicted_names_no_bottleneck():
    # A region that ran at one count only (a phase a program runs only with 2 threads or
    # more) is listed unpredicted: its bottleneck cell read "none", as for a region whose
    # every category was predicted below the clock's resolution.
    from corecast.views.sweeptable import _region_lines

    measured = [{"threads": 1, "time_s": 1.0}, {"threads": 2, "time_s": 0.6}]
    predicted = [{"threads": 4, "value": 0.5, "speedup": 2.0}]
    regions = [{"name": "b._omp_fn.0", "share": 0.44, "measured": [{"threads": 2, "time_s": 0.1}],
                "predictions": [], "preferred_threads": None, "fastest_threads": None, "bottleneck": None,
                "warnings": ["measured at 1 count(s) with a positive time; not predicted"]},
               {"name": "a._omp_fn.0", "share": 0.5, "measured": measured, "predictions": predicted,
                "preferred_threads": 2, "fastest_threads": 4, "bottleneck": None, "warnings": []}]
    lines = _region_lines({"regions": regions, "measured": measured, "predictions": predicted})
    (b,) = [line for line in lines if line.lstrip().startswith("b._omp_fn.0")]
    (a,) = [line for line in lines if line.lstrip().startswith("a._omp_fn.0")]
    assert b.split()[-1] == "-" and "none" not in b
    assert a.split()[-1] == "none"


def fake_topology(root: Path, cpus: dict[int, tuple[int, int, str]]) -> str:
    """cpu -> (package, core, thread_siblings_list) under root/devices/system/cpu."""
    for cpu, (package, core, siblings) in cpus.items():
        d = root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
        d.mkdir(parents=True)
        (d / "physical_package_id").write_text(f"{package}\n")
        (d / "core_id").write_text(f"{core}\n")
        (d / "thread_siblings_list").write_text(f"{siblings}\n")
    return str(root)


def test_placement_orders(tmp_path):
    from corecast.model.tuning.placement import cpu_order, omp_env

    # 2 sockets x 2 cores x 2 threads, numbered with sockets interleaved and SMT siblings
    # far apart (cpu 0 and 4 share core 0 of socket 0; odd CPUs are socket 1)
    topo = {0: (0, 0, "0,4"), 1: (1, 0, "1,5"), 2: (0, 1, "2,6"), 3: (1, 1, "3,7"),
            4: (0, 0, "0,4"), 5: (1, 0, "1,5"), 6: (0, 1, "2,6"), 7: (1, 1, "3,7")}
    root = fake_topology(tmp_path, topo)
    compact, _ = cpu_order("compact", range(8), root)
    spread, _ = cpu_order("spread", range(8), root)
    assert compact == [0, 2, 1, 3, 4, 6, 5, 7]  # socket 0's cores, socket 1's, then siblings
    assert spread == [0, 1, 2, 3, 4, 5, 6, 7]   # one core of each socket in turn
    assert cpu_order("none", [3, 1, 2], root) == ([1, 2, 3], None)
    order, why = cpu_order("compact", [0, 1, 9], root)  # cpu9 has no topology
    assert order == [0, 1, 9] and "numeric order" in why
    assert omp_env([0, 2]) == {"OMP_PLACES": "{0},{2}", "OMP_PROC_BIND": "close"}


def test_omp_places_reach_the_program(tmp_path):
    if not os.path.isfile(PRELOAD):
        pytest.skip("the preload library is not built")
    out = tmp_path / "env.txt"
    cmd = ["sh", "-c", f'printf "%s|%s|%s" "$OMP_PLACES" "$OMP_PROC_BIND" "$OMP_NUM_THREADS" > {out}']
    cpus = sorted(os.sched_getaffinity(0))
    r = sweep.run_once(cmd, 1, "openmp", cpus, 4, tmp_path, 60, (), placement="compact")
    assert r.ok
    assert out.read_text() == f"{{{cpus[0]}}}|close|1"
    sweep.run_once(cmd, 1, "openmp", cpus, 4, tmp_path, 60, (), placement="none")
    assert out.read_text().split("|")[2] == "1" and not out.read_text().startswith("{")


def test_opencl_count_reaches_pocl_by_both_names(tmp_path):
    if not os.path.isfile(PRELOAD):
        pytest.skip("the preload library is not built")
    out = tmp_path / "env.txt"
    cmd = ["sh", "-c", f'printf "%s|%s" "$POCL_CPU_MAX_CU_COUNT" "$POCL_MAX_PTHREAD_COUNT" > {out}']
    r = sweep.run_once(cmd, 2, "opencl", sorted(os.sched_getaffinity(0)), 4, tmp_path, 60)
    assert r.ok and out.read_text() == "2|2"


def test_an_opencl_sweep_counts_compute_units(contend, tmp_path):
    # an OpenCL sweep's table said "threads" and "future bottleneck at 16 threads" for what
    # is pocl's compute units (the kernels' own reports say compute units)
    from corecast.io.sweepresult import SweepResult

    result = sweep.run_sweep([str(contend), "{threads}", str(NCPUS)], threads=[1, 2], repeat=1, upto=4,
                             runtime="opencl")
    assert result["count"] == "compute units"
    text = format_sweep(result)
    assert "future bottleneck at 4 compute units" in text or "future bottleneck: none" in text, text
    assert [line for line in text.splitlines()[1:] if "threads" in line and not line.startswith("warning:")] == \
        ["compute units  time (s)  spread (s)  top stalls (s, summed over threads)"], text  # the host's waits
    assert SweepResult.read(result, "s.json").unit == "compute units"
    # the count reached no kernel (contend runs none): the sweep says so rather than
    # measure one program twice in silence (newuser38)
    assert any("no OpenCL kernel was recorded" in w for w in result["warnings"]), result["warnings"]

def test_a_runs_regions_are_summed_over_its_processes():
    # A program that forks (or a script running two OpenMP programs) records a region in
    # each process: the run's time in it is both processes', not the last one read
    from corecast.sweep.runs import RunOutput
    from corecast.tools.samples import RecordedProcess

    def proc(pid, wall, imbalance):
        p = RecordedProcess(pid)
        p.regions = [{"name": "r._omp_fn.0", "wall_s": wall, "stalls_s": {"imbalance": imbalance}},
                     {"name": "process", "wall_s": 2 * wall, "stalls_s": {"imbalance": imbalance}}]
        return p

    out = RunOutput(active=True, processes=[proc(1, 0.5, 0.1), proc(2, 0.25, 0.05)])
    ((name, (wall, stalls)),) = out.regions.items()
    assert name == "r._omp_fn.0" and wall == pytest.approx(0.75) and stalls == {"imbalance": pytest.approx(0.15)}


def test_time_growing_only_past_the_cpus_is_not_called_weak_scaling():
    # newuser30: a sweep of 1,2,4,8 on 2 CPUs grows at 4 and 8 from sharing the CPUs, and its
    # warning sent the user to --scaling weak
    times = {1: [1.0], 2: [0.85], 4: [1.3], 8: [2.6]}  # a bandwidth-bound triad
    warned = {}
    for cpus in (None, 2, 8):
        result = empty_result(["prog"], "openmp", [], {})
        extrapolate(result, times, [1, 2, 4, 8], [], {n: [{}] for n in times}, 16, cpus=cpus)
        warned[cpus] = any("weak scaling" in w for w in result["warnings"])
    assert warned == {None: True, 2: False, 8: True}


def test_the_cpus_themselves_are_not_oversubscribed():
    # At the count equal to the CPUs each thread had one: a time that grows there is the
    # program's own, weak scaling's sign as without a CPU limit.
    times = {1: [1.0], 2: [0.85], 4: [1.3], 8: [2.6]}
    result = empty_result(["prog"], "openmp", [], {})
    extrapolate(result, times, [1, 2, 4, 8], [], {n: [{}] for n in times}, 16, cpus=4)
    assert any("weak scaling" in w for w in result["warnings"]), result["warnings"]


def test_a_sweep_and_its_regions_tell_the_models_the_cpus_they_had(contend, monkeypatch):
    from corecast.model.machine.sysfs import allowed_cpus
    from corecast.sweep import runner

    seen, real = [], runner.extrapolate

    def spy(result, *args, **kwargs):
        seen.append(kwargs.get("cpus"))
        return real(result, *args, **kwargs)
    monkeypatch.setattr(runner, "extrapolate", spy)
    sweep.run_sweep([str(contend), "{threads}", str(NCPUS)], threads=[1, 2], repeat=1, upto=4, runtime="pthreads")
    assert seen == [len(allowed_cpus())]
    # a region's curve too (run_sweep hands region_curves the same count)
    class Run:
        def __init__(self, t):
            self.regions = {"r": (t, {})}

    runs = {n: [Run(t)] for n, t in ((1, 1.0), (2, 0.85), (4, 1.3), (8, 2.6))}
    measured = [{"threads": n, "time_s": r[0].regions["r"][0]} for n, r in runs.items()]
    for cpus, warned in ((2, False), (None, True)):
        (region,) = region_curves(runs, [1, 2, 4, 8], measured, 16, cpus)
        assert any("weak scaling" in w for w in region["warnings"]) == warned, region["warnings"]


def test_a_sweeps_fit_warning_says_where_another_method_is_tried():
    # sweep has no --method, yet its fit warnings ended "try another --method"
    from corecast.model.curve.extrapolation import extrapolate, with_advice
    from corecast.model.curve.prediction import TRY_METHOD

    times = {1: [0.0117], 2: [0.0085], 4: [0.05]}  # a rank sweep the regression misses at 2
    per_count = {n: [{"mpi_p2p": 0.001 * n, "mpi_collective": 0.002 * n}] for n in times}
    for extra, advice in (({}, "'corecast predict --method' on the sweep's --json-out file"),
                          ({"name": "f._omp_fn.0"}, "'corecast predict --callpath \"main->f._omp_fn.0\" "
                           "--method' on 'corecast export --extrap' of the sweep's --json-out file")):
        result = {"warnings": [], **extra}
        extrapolate(result, times, [1, 2, 4], ["mpi_p2p", "mpi_collective"], per_count, 16,
                    waits=("mpi_p2p", "mpi_collective"))
        missed = [w for w in result["warnings"] if w.startswith("the fit misses")]
        assert missed and all(w.endswith("; try another with " + advice) for w in missed), result["warnings"]
        assert not any("--method" in w and advice not in w for w in result["warnings"])
    # merge fits the regression only: the advice goes
    warned = "the fit misses 1 of 3 measured counts by more than 1.5x (...): the model does not follow this curve"
    assert with_advice([warned + TRY_METHOD, "other"], "") == [warned, "other"]
