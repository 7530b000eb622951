"""Helpers for the runtime tests: running programs with and without the preload library,
reading the JSON Lines it writes."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NATIVE_SOURCE = Path(__file__).resolve().parents[2] / "native"  # also when corecast is installed
TIMEOUT = 300  # generous: a guard against hangs, never a speed check
REPORT_HEAD = "corecast: pid "


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without corecast settings or preloads, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def run(cmd, env=None, cwd=None, preload: Path | str | None = None, timeout: float = TIMEOUT, **settings: str):
    """Runs ``cmd``; with ``preload`` it goes into LD_PRELOAD and ``settings`` become
    CORECAST_* variables (``output="x"`` -> ``CORECAST_OUTPUT=x``).  ``timeout``: a test
    whose failure is a hang fails sooner with one well below TIMEOUT."""
    env = dict(clean_env() if env is None else env)
    if preload is not None:
        env["LD_PRELOAD"] = str(preload)
    for key, value in settings.items():
        env[f"CORECAST_{key.upper()}"] = str(value)
    return subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True,
                          timeout=timeout)


def run_bounded(cmd, env: dict[str, str], hung_s: float = 120) -> subprocess.CompletedProcess:
    """Runs ``cmd`` in a session of its own; one that has not ended in ``hung_s`` (well below
    TIMEOUT: a hang fails the test, never a speed check) fails it with its whole process
    group killed (a hung child outlives its killed parent)."""
    p = subprocess.Popen([str(c) for c in cmd], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=hung_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"hung: no end in {hung_s:g} s")
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def corecast_run(args, cmd, env=None, cwd=None):
    """``corecast run ARGS -- CMD`` through this Python (no PATH lookup of the script)."""
    return run([sys.executable, "-m", "corecast", "run", *args, "--", *cmd], env=env, cwd=cwd)


def read_lines(path: Path) -> list[dict]:
    """Every line of a JSON Lines file, parsed (a missing file has none)."""
    if not path.exists():
        return []
    text = path.read_text()
    assert text == "" or text.endswith("\n"), "the last JSON line is cut short"
    return [json.loads(line) for line in text.splitlines()]


def events(lines: list[dict], kind: str, **match) -> list[dict]:
    return [d for d in lines if d["event"] == kind and all(d.get(k) == v for k, v in match.items())]


def report_blocks(stderr: bytes) -> int:
    """How many exit reports a stderr holds."""
    return stderr.decode(errors="replace").count(REPORT_HEAD)


def beside_model(lib: Path, model: Path, folder: Path) -> Path:
    """A copy of the preload library in ``folder`` with ``model`` beside it as the model
    library it loads (a stand-in that answers without Python); the copy's path."""
    folder.mkdir(exist_ok=True)
    shutil.copy2(lib, folder / lib.name)
    shutil.copy2(model, folder / "libcorecast_model.so")
    return folder / lib.name


# C: whether the program sees corecast's model library mapped (for programs that check that
# the model did or did not start; needs <stdio.h> and <string.h>).
# The start of a stand-in for the embedded model library (model_abi.h's three entry
# points; a test writes corecast_model_predict): started at once, with no reason to give,
# and ``one_count`` to fill a prediction of 1 thread at speedup 1 under ``basis``.
FAKE_MODEL_PRELUDE_C = r"""
#include <stdio.h>
#include "model_abi.h"
void corecast_model_configure(const char *root, const char *home, int host_python, void (*cb)(void)) {
    (void)root; (void)home; (void)host_python; (void)cb;
}
const char *corecast_model_start(void) { return 0; }
static void one_count(struct cc_region_prediction *p, const char *basis) {
    p->npred = 1;
    p->threads[0] = p->fastest = 1;
    p->speedup[0] = p->low[0] = p->high[0] = 1.0;
    snprintf(p->basis, sizeof p->basis, "%s", basis);
}
"""

MODEL_MAPPED_FN_C = r"""
static int model_mapped(void) {
    char line[4096];
    int found = 0;
    FILE *m = fopen("/proc/self/maps", "r");
    while (m && fgets(line, sizeof line, m))
        found |= strstr(line, "libcorecast_model") != NULL;
    if (m)
        fclose(m);
    return found;
}
"""

# The model's answers scripted: every region to 1 thread, settled from the second answer on,
# or from the first with -DFIRST_SETTLES=1.  An unsettled first answer after a convoy step
# in C is the real model's where the interpreter's start left the new count fewer calls
# than the own count's first window (it takes a window's team as the one that made most of
# its calls); a settled one may come before the new count ended a call.  The count a
# region was stepped to when the first answer came goes into each region's JSON line.
SCRIPTED_MODEL_C = FAKE_MODEL_PRELUDE_C + r"""
static int answers, first_saw = -1;
int corecast_model_predict(const struct cc_sample *s, struct cc_result *r) {
    r->status = 0;
    if (s->nregions < 2) /* the interpreter's warm-up (bridge.c): an empty sample */
        return 0;
    if (first_saw < 0) /* the team of the region steer_start.c stepped, if any */
        for (int i = first_saw = 0; i < s->nregions - 1; i++)
            first_saw = s->regions[i].steered_to > first_saw ? s->regions[i].steered_to : first_saw;
    for (int i = 0; i < s->nregions; i++) {
        struct cc_region_prediction *p = &r->regions[i];
        one_count(p, "scripted model");
        if (i < s->nregions - 1) { /* the process is last */
            p->next_threads = 1;
            p->steer_chosen = answers > 0 || FIRST_SETTLES;
            snprintf(p->numa_json, sizeof p->numa_json, "\"first_answer_saw_steered_to\":%d", first_saw);
        }
    }
    answers++;
    return 0;
}
"""
