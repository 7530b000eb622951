"""native/numa.c in real processes: CORECAST_NUMA_EVENTS that is not a plan, events that
cannot be opened (no PMU here), software events standing in for PMU events where the
kernel allows them, and the NUMA topology in the JSON summary line.

A malformed plan or an unusable event must never change what the program prints or its
exit status; a role whose events cannot all be counted stays unmeasured (no invented
values).  The decoder's verdict on each malformed value: test_numa_plan.py."""
from __future__ import annotations


import sys

import pytest

from corecast.runtime import numa_events
from corecast.runtime.numa_events import Event, Plan, encode

from .helpers import FAKE_MODEL_PRELUDE_C, NATIVE_SOURCE, beside_model, clean_env, events, read_lines, run
from .test_numa_plan import MALFORMED, PREFIX, struct_hex

PROGRAM_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long total;
static void *work(void *arg) {
    unsigned long x = (unsigned long)arg + 1;
    for (long i = 0; i < 30000000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    pthread_mutex_lock(&lock);
    total += x >> 60;
    pthread_mutex_unlock(&lock);
    return NULL;
}
static void team(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}
int main(int argc, char **argv) {
    team();
    if (argc > 1) { /* fork after activity: the child counts for itself */
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
            team();
            printf("child %lu\n", total);
            return 0;
        }
        waitpid(child, NULL, 0);
    }
    printf("total %lu\n", total);
    return 3;
}
"""

# perf types and configs (linux/perf_event.h) of events that work without a PMU
PERF_TYPE_SOFTWARE = 1
SW_CPU_CLOCK, SW_TASK_CLOCK = 0, 1

PROBE_C = r"""
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static int try(int pid, int cpu, int config, int inherit) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = config;
    a.inherit = inherit;
    a.exclude_kernel = pid == 0;
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    int fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, 0);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}
int main(void) {
    printf("%d %d\n", try(0, -1, PERF_COUNT_SW_TASK_CLOCK, 1), try(-1, 0, PERF_COUNT_SW_CPU_CLOCK, 0));
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(build):
    return build("numa_program", PROGRAM_C, "-pthread")


@pytest.fixture(scope="module")
def baseline(program):
    return run([program])


@pytest.fixture(scope="module")
def software_events(build) -> tuple[bool, bool]:
    """(task-clock of this process, cpu-clock of CPU 0 machine-wide) can be opened here."""
    task, cpu = (run([build("numa_perf_probe", PROBE_C)]).stdout.split() + [b"0", b"0"])[:2]
    return task == b"1", cpu == b"1"


def run_with(program, lib, tmp_path, value: str, *args: str):
    out = tmp_path / "cc.jsonl"
    proc = run([program, *args], env=clean_env(CORECAST_NUMA_EVENTS=value), preload=lib, output=out)
    return proc, read_lines(out)


def warnings_in(stderr: bytes) -> list[str]:
    return [ln for ln in stderr.decode().splitlines() if ln.startswith("corecast: warning:")]


def numa_of(lines: list[dict]) -> dict:
    (summary,) = events(lines, "summary")
    return summary["numa"]


@pytest.mark.parametrize("value, reason", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_plan_is_ignored_with_one_warning(program, baseline, lib, tmp_path, value, reason):
    proc, lines = run_with(program, lib, tmp_path, value)
    assert proc.stdout == baseline.stdout and proc.returncode == baseline.returncode == 3
    (warning,) = warnings_in(proc.stderr)
    assert warning.startswith("corecast: warning: CORECAST_NUMA_EVENTS is not a NUMA event plan this "
                              f"library reads ({reason}")
    assert warning.endswith("); no NUMA counters")
    numa = numa_of(lines)
    assert numa["measured"] == [] and numa["source"] == ""
    assert numa["nodes"] >= 1  # the topology does not depend on the event list


@pytest.mark.parametrize("value", ["", PREFIX + struct_hex(source=b"empty")], ids=["empty", "no-events"])
def test_empty_plans_are_quiet(program, baseline, lib, tmp_path, value):
    proc, lines = run_with(program, lib, tmp_path, value)
    assert proc.stdout == baseline.stdout and proc.returncode == 3
    assert not warnings_in(proc.stderr)
    assert numa_of(lines)["measured"] == []


def test_events_that_cannot_be_opened_leave_roles_unmeasured(program, baseline, lib, tmp_path):
    # A PMU type no kernel has, and a generic hardware event id past the end of the list.
    bogus = Plan(source="no-such-pmu", events=[
        Event("cycles", -1, 0x7FFFFFFF, 0x76),
        Event("llc", -1, 0, 0xFFFF),
        Event("mct", 0, 0x7FFFFFFF, 0x1F0, cpu=0),
    ])
    proc, lines = run_with(program, lib, tmp_path, encode(bogus))
    assert proc.stdout == baseline.stdout and proc.returncode == 3
    assert not warnings_in(proc.stderr)
    numa = numa_of(lines)
    assert numa["source"] == "no-such-pmu" and numa["measured"] == []
    assert not any(k in numa for k in ("cycles", "llc_misses", "bus", "mct"))


def test_one_unopenable_event_makes_its_role_unmeasured(program, baseline, lib, tmp_path, software_events):
    if not software_events[0]:
        pytest.skip("perf_event_open of software events is refused here")
    mixed = Plan(source="mixed", events=[
        Event("cycles", -1, PERF_TYPE_SOFTWARE, SW_TASK_CLOCK),
        Event("llc", -1, PERF_TYPE_SOFTWARE, SW_TASK_CLOCK),
        Event("llc", -1, 0x7FFFFFFF, 0x1),  # half an LLC count would be a made-up one
    ])
    proc, lines = run_with(program, lib, tmp_path, encode(mixed))
    assert proc.stdout == baseline.stdout and proc.returncode == 3
    numa = numa_of(lines)
    assert numa["measured"] == ["cycles"] and "llc_misses" not in numa


def test_software_events_are_counted(program, baseline, lib, tmp_path, software_events):
    """The whole path (plan text, open, inherit into new threads, read, report) with
    software events in the roles' places: this machine has no PMU."""
    task, cpu_wide = software_events
    if not task:
        pytest.skip("perf_event_open of software events is refused here")
    stand_in = Plan(source="software-stand-in", events=[
        Event("cycles", -1, PERF_TYPE_SOFTWARE, SW_TASK_CLOCK),     # ns of the program's threads
        Event("bus", 0, PERF_TYPE_SOFTWARE, SW_CPU_CLOCK, cpu=0),   # uncore-style: CPU 0, machine-wide
        Event("mct", 0, PERF_TYPE_SOFTWARE, SW_CPU_CLOCK, cpu=0),
    ])
    proc, lines = run_with(program, lib, tmp_path, encode(stand_in))
    assert proc.stdout == baseline.stdout and proc.returncode == 3
    assert not warnings_in(proc.stderr)
    numa = numa_of(lines)
    assert numa["source"] == "software-stand-in"
    assert numa["measured"] == (["cycles", "bus", "mct"] if cpu_wide else ["cycles"])
    assert numa["multiplexed"] is False  # software events are never multiplexed
    (process,) = events(lines, "process")
    # Task clock of the worker threads (created after the events were opened) and the
    # main thread: within the process's CPU time.
    assert 0 < numa["cycles"] * 1e-9 <= process["counters"]["cpu_s"] * 1.2 + 0.05
    if cpu_wide:
        assert len(numa["bus"]) == len(numa["mct"]) == numa["nodes"]
        assert numa["mct"][0] > 0
    assert "NUMA counters (software-stand-in" in proc.stderr.decode()


def test_forked_child_counts_for_itself(program, lib, tmp_path, software_events):
    if not software_events[0]:
        pytest.skip("perf_event_open of software events is refused here")
    value = encode(Plan(source="sw", events=[Event("cycles", -1, PERF_TYPE_SOFTWARE, SW_TASK_CLOCK)]))
    proc, lines = run_with(program, lib, tmp_path, value, "fork")
    assert proc.returncode == 3 and b"child" in proc.stdout
    summaries = events(lines, "summary")
    assert len(summaries) == 2 and len({s["pid"] for s in summaries}) == 2
    for s in summaries:
        assert s["numa"]["measured"] == ["cycles"] and s["numa"]["cycles"] > 0


def test_topology_reaches_the_summary(program, baseline, lib, tmp_path):
    proc, lines = run_with(program, lib, tmp_path, "")
    assert proc.stdout == baseline.stdout
    topo = numa_events.topology()
    expected = [len(topo.get(n, [])) for n in range(min(max(topo) + 1, numa_events.MAX_NODES))]
    numa = numa_of(lines)
    assert numa["nodes"] == len(expected)
    assert numa["node_cpus"] == expected
    assert numa["source"] == "" and numa["measured"] == [] and numa["multiplexed"] is False


# A stand-in for the embedded model: fills the NUMA fields of every region's prediction
# and echoes the topology it was given, so the report's side is checked without Python.
FAKE_MODEL_C = FAKE_MODEL_PRELUDE_C + r"""
int corecast_model_predict(const struct cc_sample *s, struct cc_result *r) {
    r->status = 0;
    for (int i = 0; i < s->nregions; i++) {
        struct cc_region_prediction *p = &r->regions[i];
        one_count(p, "fake model");
        p->nnodes = 2;
        p->node_cores[0] = 8;
        p->node_cores[1] = 16;
        p->node_speedup[0] = 1.0;
        p->node_speedup[1] = 1.93;
        p->fastest_nodes = 2;
        snprintf(p->numa_basis, sizeof p->numa_basis, "fake queue");
        int n = snprintf(p->numa_json, sizeof p->numa_json,
                         "\"fastest_nodes\":2,\"seen_numa\":{\"nodes\":%d,\"node_cpus\":[", s->numa.nodes);
        for (int k = 0; k < s->numa.nodes && k < CC_MAX_NODES; k++)
            n += snprintf(p->numa_json + n, sizeof p->numa_json - n, "%s%d", k ? "," : "", s->numa.node_cpus[k]);
        snprintf(p->numa_json + n, sizeof p->numa_json - n, "]}");
    }
    return 0;
}
"""


def test_node_predictions_in_report_and_json(program, baseline, build, lib, tmp_path):
    fake = build("fake_model.so", FAKE_MODEL_C, "-shared", "-fPIC", f"-I{NATIVE_SOURCE}")
    preload = beside_model(lib, fake, tmp_path / "alone")
    out = tmp_path / "cc.jsonl"
    proc = run([program], preload=preload, output=out)
    assert proc.stdout == baseline.stdout and proc.returncode == 3
    assert "    nodes: 1:1.00  2:1.93  fastest 2 (fake queue)\n" in proc.stderr.decode()
    lines = read_lines(out)
    (process,) = events(lines, "process")
    assert process["fastest_nodes"] == 2
    # The sample the model received carried the machine's topology.
    assert process["seen_numa"] == {"nodes": numa_of(lines)["nodes"], "node_cpus": numa_of(lines)["node_cpus"]}
    assert process["inputs"]["measured"]  # the members were spliced in before "inputs"


# ---- the counters hold no number of the program's ------------------------------------------------
CLOSER_C = r"""
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int data_fd = -1;
static void *work(void *arg) { volatile long x = 0; for (long i = 0; i < 20000000; i++) x += i; return arg; }
static void offset_at_end(void) { printf("offset %ld\n", (long)lseek(data_fd, 0, SEEK_CUR)); }
int main(int argc, char **argv) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d)) printf("fd %s\n", e->d_name);
    closedir(d);
    for (int fd = 3; fd < 1024; fd++) close(fd); /* a daemon's close loop */
    data_fd = open(argv[1], O_RDONLY);
    printf("data fd %d\n", data_fd);
    atexit(offset_at_end); /* after the exit report */
    return 0;
}
"""


def test_counters_are_not_in_the_programs_descriptor_table(build, lib, tmp_path, software_events):
    """The counters are opened on the program's thread (inherited events follow the threads
    it creates), then held in the sampler's table only: before, the program's table kept
    them (fds 3 and 4 listed, its next file at 5), and after a close loop and an open that
    reused the number, the exit's read took 24 bytes of the program's file (offset 24)."""
    if not software_events[0]:
        pytest.skip("perf_event_open of software events is refused here")
    exe = build("numa_closer", CLOSER_C, "-pthread")
    data = tmp_path / "data"
    data.write_bytes(bytes(range(100)))
    plain = run([exe, data])
    value = encode(Plan(source="sw", events=[Event("cycles", -1, PERF_TYPE_SOFTWARE, SW_TASK_CLOCK),
                                             Event("llc", -1, PERF_TYPE_SOFTWARE, SW_TASK_CLOCK)]))
    out = tmp_path / "cc.jsonl"
    measured = run([exe, data], env=clean_env(CORECAST_NUMA_EVENTS=value), preload=lib, output=out)
    assert plain.returncode == measured.returncode == 0, measured.stderr
    assert b"offset 0\n" in plain.stdout
    assert measured.stdout == plain.stdout
    # The sampler still counts them, and the exit's sample has them (read on its thread).
    assert numa_of(read_lines(out))["measured"] == ["cycles", "llc"]


# Its threads work until corecast's sampler (a thread Python did not start) has waited
# out a few windows (each wait one voluntary switch), not for some time.
OS_EXIT_PY = r"""
import os, threading, time
done = threading.Event()
def work():
    x = 0
    while not done.is_set():
        x += 1
threads = [threading.Thread(target=work) for _ in range(2)]
[t.start() for t in threads]
ours = {threading.get_native_id()} | {t.native_id for t in threads}
def waits(tid):
    try:
        with open(f"/proc/self/task/{tid}/status") as f:
            return max([int(ln.split()[1]) for ln in f if ln.startswith("voluntary_ctxt_switches")] + [0])
    except OSError:
        return 0
for _ in range(3000):
    if any(waits(int(t)) >= 5 for t in os.listdir("/proc/self/task") if int(t) not in ours):
        break
    time.sleep(0.01)
done.set()
[t.join() for t in threads]
os._exit(3)
"""


def test_counters_reach_a_report_the_sampler_does_not_answer(lib, tmp_path, software_events):
    """A report the sampler does not answer (os._exit in a Python host: the model is not
    run) still has the counters' counts: once they left the program's table, the exiting
    thread could no longer read them, and the summary said none were measured."""
    if not software_events[0]:
        pytest.skip("perf_event_open of software events is refused here")
    script = tmp_path / "leave.py"
    script.write_text(OS_EXIT_PY)
    value = encode(Plan(source="sw", events=[Event("cycles", -1, PERF_TYPE_SOFTWARE, SW_TASK_CLOCK),
                                             Event("llc", -1, PERF_TYPE_SOFTWARE, SW_TASK_CLOCK)]))
    out = tmp_path / "cc.jsonl"
    r = run([sys.executable, script], env=clean_env(CORECAST_NUMA_EVENTS=value), preload=lib, output=out)
    assert r.returncode == 3, r.stderr
    assert b"the program left Python without its atexit" in r.stderr
    assert numa_of(read_lines(out))["measured"] == ["cycles", "llc"]
