"""Python end of the model library: decodes a ``struct cc_sample`` (native/model_abi.h;
each region by ``model.record.region_from_struct``), predicts every region and the
process, steers team sizes when asked, and fills the ``struct cc_result``.  State that
must outlive one window (each region's history and its steering) lives in this module:
the embedded interpreter keeps it between calls."""
from __future__ import annotations

import os

from ..io import settings
from ..model.runtime import history as model_history
from ..model.runtime.bound import TeamPrediction, process_bound, region_bound
from ..model.runtime.contention import barrier_latency, process_contention, region_contention
from ..recording.abi import MAX_NODES, MAX_PRED, NUMA_ROLES
from ..model.runtime.history import RegionHistory
from ..model.runtime.predictor import predict_window
from ..recording.record import OTHER_REGIONS, hardware_from_struct, region_from_struct
from . import blas, devicewait

# A fit in the model loads numpy and scipy through the plumbing's loader (one BLAS thread
# in a non-Python host); the model itself never imports the plumbing.
model_history.load_numeric = blas.load_numeric

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ..recording.record import RegionSample
    from typing import Callable


def _encode(ffi: object, out: object, pred: TeamPrediction) -> None:
    n = min(len(pred.threads), MAX_PRED)
    out.npred = n
    for i in range(n):
        out.threads[i] = pred.threads[i]
        out.speedup[i] = pred.speedup[i]
        out.low[i] = pred.low[i]
        out.high[i] = pred.high[i]
    out.fastest = pred.fastest or 0  # 0: none named (no evidence)
    _put(ffi, out.basis, _shortened(pred.basis, len(out.basis) - 1))
    _put(ffi, out.fitted, ",".join(pred.fitted))
    _put(ffi, out.bottleneck, pred.bottleneck or "")


def _put(ffi: object, field: object, text: str) -> None:
    """Copy ``text`` into a fixed char array, truncated and NUL-terminated."""
    data = text.encode()[: len(field) - 1] + b"\0"
    ffi.memmove(field, data, len(data))


_histories: dict[tuple[str, str], RegionHistory] = {}
_steering: dict[tuple[str, str], object] = {}
_steered_windows = 0  # windows before the exit that reached the model with steering on


def _steer(ffi: object, region: RegionSample, pred: TeamPrediction, sample: object, out: object) -> None:
    """Steering decisions for one region into ``out`` (live runs only)."""
    if not sample.steer:
        return
    if region["name"] in OTHER_REGIONS:
        _put(ffi, out.steer_reason, "many regions: not steered")
        return
    if region["nested"] or region["requested"] < 2:
        _put(ffi, out.steer_reason, "nested" if region["nested"] else "one thread")
        return
    from ..model.runtime.steering import RegionSteer

    key = (region["name"], region["object"])
    history = _histories[key]
    steer = _steering.get(key)
    if steer is None:
        steer = _steering[key] = RegionSteer(region["requested"])
        if sample.final:  # no window's answer reached it
            steer.judge_at_exit(history, region, pred, sample.elapsed_s, sample.window_s, _steered_windows > 0)
    if not sample.final:
        out.next_threads = steer.step(history, region, pred, sample.elapsed_s, sample.window_s)
    out.steer_chosen = steer.chosen() or 0
    out.steer_gain = steer.gain(history) or 0.0
    out.steer_steps = steer.steps
    _put(ffi, out.steer_reason, steer.reason)


_numa = None  # model.runtime.numa.NumaState once a target machine is named


def _predicted_machine(sample: object) -> tuple[int, str]:
    """Cores of the machine the predictions are for, and what it is: the target machine
    when one is named, else a machine of ``target`` cores (a target beyond this machine's
    cores asks about a larger machine, not about oversubscribing this one): "target" when
    CORECAST_TARGET gave it, "this machine" when it is the default, this machine's CPUs."""
    state = _numa_state()
    if state is not None:
        return state.machine.cores_per_node * state.machine.nodes, f"target machine {state.machine.name}"
    given = settings.integer(settings.TARGET, default=None) is not None  # as config.c read it
    return max(1, sample.target), "target" if given else "this machine"


def _machines(sample: object) -> tuple[int, int]:
    """CPUs the sample was measured on (those the process may run on) and cores of the
    machine the predictions are for."""
    measured = sample.cpus_allowed if 0 < sample.cpus_allowed < sample.cores else sample.cores
    return max(1, measured), _predicted_machine(sample)[0]


def _predicted_for(ffi: object, sample: object, result: object) -> None:
    result.predicted_cores, source = _predicted_machine(sample)
    cal, text = _calibration()
    if cal is not None:
        source += ", calibrated"
        # for replay; a calibration too long for the record is left out
        _put(ffi, result.machine_json, text if len(text) < len(result.machine_json) else "")
    _put(ffi, result.predicted_for, source)


_CALIBRATION: list = []  # [(Calibration or None, its JSON for the record)] once looked up

# The program's working directory when the library started ("": unknown), set by the model's
# init code (native/model/model_init.py): the model runs at the exit, by when the program
# may have changed directory.
START_DIR = ""


def _at_start(path: str | None, preset: bool = False) -> str | None:
    """A machine file's setting (CORECAST_MACHINE_FILE, CORECAST_TARGET_MACHINE) as the
    start directory names it, as `corecast run` resolves them.  With ``preset``, a name
    with no '/' that is no file there stays as it is: a preset's (machine.numa.presets)."""
    if not path or os.path.isabs(path) or not START_DIR:
        return path
    there = os.path.join(START_DIR, path)
    return there if not preset or "/" in path or os.path.exists(there) else path


def _calibration() -> tuple[object | None, str]:
    """This machine's calibration (``corecast calibrate``; machine.calibration) and its
    JSON for the summary record, looked up once; a file that is there but cannot be used
    is said once on the report channel.  The machine is this one's online CPUs, as the
    library counts them: the first sample need not name it (a Python host starts the
    model with an empty one)."""
    if not _CALIBRATION:
        from ..model.machine.calibration import for_this_machine

        named = _at_start(os.environ.get(settings.MACHINE_FILE))
        cal, note = for_this_machine(os.sysconf("SC_NPROCESSORS_ONLN"), named, settings.calibration_path())
        _CALIBRATION.append((cal, cal.to_json() if cal is not None else ""))
        if note:  # a warning as every other of the run's: the run goes on without it
            from .channel import warn

            warn(note)
    return _CALIBRATION[0]


def _numa_state() -> object | None:
    """The NUMA state when CORECAST_TARGET_MACHINE names a machine (imported only then)."""
    global _numa
    path = _at_start(os.environ.get(settings.TARGET_MACHINE), preset=True)
    if _numa is None and path:
        from ..model.runtime.numa import NumaState

        _numa = NumaState(path)
        if _numa.error:
            from .channel import warn

            warn(f"no node-count predictions: {_numa.error}")
    return _numa if _numa is not None and _numa.machine is not None else None


def _history_sizes(region: RegionSample) -> set[int]:
    """Team sizes the region ran 2 calls or more with (history.MIN_CALLS)."""
    return {t for t, calls, _ in region["hist"] if calls >= 2}


def _shortened(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` UTF-8 bytes (a C field less its NUL): where it is
    longer, cut after its last whole word that fits and marked with an ellipsis.  A cut
    by bytes had printed "serial work, oversubscript; no history fit" in the report."""
    if len(text.encode()) <= limit:
        return text
    mark = "\u2026"
    room = limit - len(mark.encode())
    head = text.encode()[:max(0, room)].decode(errors="ignore")
    if not text[len(head):len(head) + 1].isspace():  # the cut fell inside a word
        head = head[:max(0, head.rfind(" "))]
    return head.rstrip(" ,;:") + mark


def _noted(text: str, note: str, limit: int = 95) -> str:
    """``text`` with ``note`` appended, ``text`` shortened so that both fit the C field."""
    return _shortened(text, limit - len(note.encode())) + note


def _agreement(res: object, threads_best: int, cores_per_node: int) -> None:
    """Says in the node answer why it differs from the thread table's, where it does: the
    thread table's fastest count is not within the fastest node count's cores.  The node
    model has a memory model (and leaves the fork/join term, which it would count twice,
    out of its sync part); the thread-level model has neither."""
    nodes = -(-threads_best // cores_per_node)  # the node count that holds the best threads
    if nodes == res.fastest:
        return
    # The thread count in nodes beside the node count: "fastest 2 (...; thread fastest 2)" read as
    # an agreement where 2 threads (1 node) and 2 nodes differed.
    short = res.basis.replace("two-level queue", "queue").replace(" x sync model", " x sync")
    short = short.replace("(fitted, no counters)", "(fitted)")  # ", fitted: ..." follows it
    res.basis = _noted(short, f"; threads' fastest {threads_best} = {nodes} node{'s' if nodes > 1 else ''}: "
                              "no memory model")
    why = (f"the thread table's fastest count ({threads_best} thread{'s' if threads_best != 1 else ''}, "
           f"{nodes} node{'s' if nodes != 1 else ''}) has no memory model; "
           "the node model adds one and leaves the fork/join term to it")
    from ..io.fileio import json_text

    res.json += ',"threads_differ":' + json_text(why)


def _encode_nodes(ffi: object, out: object, res: object) -> None:
    n = min(len(res.speedup), MAX_NODES)
    out.nnodes = n
    for i in range(n):
        out.node_cores[i] = res.cores[i]
        out.node_speedup[i] = res.speedup[i]
    out.fastest_nodes = res.fastest
    _put(ffi, out.numa_basis, _shortened(res.basis, len(out.numa_basis) - 1))
    _put(ffi, out.numa_json, res.json)


def decode_counts(ffi: object, numa: object) -> dict:
    """A ``struct cc_numa_counts`` (cffi cdata) as a plain dict; a role's values are None
    unless its ``measured`` bit is set.  Here, not in numa_events (the launcher's event
    tables): importing those (dataclasses, inspect) cost every exit 10 ms."""
    nodes = max(0, min(int(numa.nodes), MAX_NODES))
    measured = [r for i, r in enumerate(NUMA_ROLES) if int(numa.measured) & (1 << i)]

    def per_node(arr: object) -> list[float]:
        return [float(arr[i]) for i in range(nodes)]

    return {
        "nodes": nodes,
        "node_cpus": [int(numa.node_cpus[i]) for i in range(nodes)],
        "measured": measured,
        "multiplexed": bool(numa.multiplexed),
        "cycles": float(numa.cycles) if "cycles" in measured else None,
        "llc_misses": float(numa.llc_misses) if "llc" in measured else None,
        "bus": per_node(numa.bus) if "bus" in measured else None,
        "mct": per_node(numa.mct) if "mct" in measured else None,
        "source": ffi.string(numa.source).decode("utf-8", "replace"),
    }


def _predict_nodes(ffi: object, sample: object, regions: list[RegionSample], result: object,
                   preds: list | None = None) -> None:
    """Node counts on the target machine for every outermost region (or the process of a
    plain-threads program)."""
    state = _numa_state()
    if state is None:
        return
    from ..model.runtime.numa import predict_region_nodes

    counts = decode_counts(ffi, sample.numa)
    state.window(counts, regions, sample.window_s)
    has_regions = any(r["name"] != "process" and not r["nested"] for r in regions)
    latency = barrier_latency(regions)
    for i, region in enumerate(regions):
        if region["nested"] or (region["name"] == "process") == has_regions:
            continue
        if region["name"] == "process":
            predict = lambda t, r=region: process_contention(r, t, t)  # noqa: E731
            bound = lambda t, r=region: process_bound(r, t, t)  # noqa: E731
            history = None
        else:
            predict = lambda t, r=region: region_contention(r, t, t, latency=latency)  # noqa: E731
            bound = lambda t, r=region: region_bound(r, t)  # noqa: E731
            history = _histories.get((region["name"], region["object"]))
        res = predict_region_nodes(state, region, history, counts, predict, bound,
                                   limit=len(result.regions[i].numa_json) - 1)
        if res is not None:
            if preds is not None and preds[i].fastest and len(res.json) < len(result.regions[i].numa_json) - 400:
                _agreement(res, preds[i].fastest, state.machine.cores_per_node)
            _encode_nodes(ffi, result.regions[i], res)


def _counted_window(ffi: object, sample: object, regions: list[RegionSample], result: object) -> int:
    """A window the sampler hands over only for the NUMA model's memory-traffic counters
    (no steering): what later predictions read of it is kept, the regions' histories and
    the counters credited to the region that dominated it, and nothing is predicted.  The
    answers were read by no one, and a model run per window takes a core the program's
    threads may hold (issue #40: --target-machine costs no more than the exit's)."""
    for region in regions:
        if region["name"] != "process":
            _histories.setdefault((region["name"], region["object"]), RegionHistory()).update(region)
    state = _numa_state()
    if state is not None:
        state.window(decode_counts(ffi, sample.numa), regions, sample.window_s)
    result.status = 0
    return 0


def _injected_fault(sample: object) -> None:
    """Test hook, CORECAST_TEST_FAULT=segv|abort|hang: the exit prediction fails as a broken
    model or library would, so the tests can check that the program's exit survives it."""
    what = os.environ.get(settings.TEST_FAULT, "")
    if not sample.final or not what:
        return
    if what == "segv":
        import ctypes

        ctypes.string_at(0)
    elif what == "abort":
        os.abort()
    elif what == "hang":
        import time

        time.sleep(3600)


def _opencl_host(regions: list[RegionSample], preds: list[TeamPrediction],
                 predict: Callable[[RegionSample], TeamPrediction]) -> list[TeamPrediction]:
    """An OpenCL host's process prediction (``model.runtime.openclhost``), where the OpenCL
    layer registered what it saw (``devicewait``); ``preds`` as they are without it."""
    seen = devicewait.measured()
    if seen is None:
        return preds
    from ..model.runtime.openclhost import host_predictions

    return host_predictions(regions, preds, seen, predict)


def predict_sample(ffi: object, sample: object, result: object) -> int:
    """Fill ``result`` for every region of ``sample``; 0 on success.  No region at or past
    ``sample.nregions``: the records end there (native/model_abi.h)."""
    global _steered_windows
    _injected_fault(sample)
    try:
        hardware = hardware_from_struct(sample)
        regions = [region_from_struct(ffi, sample.regions[i], hardware) for i in range(sample.nregions)]
        if not sample.final and not sample.steer:
            return _counted_window(ffi, sample, regions, result)
        # With a target machine the node model answers beyond this machine (its memory
        # model: the thread-level history fit has none), so the exit fits no history: the
        # fit (numpy, scipy) cost omp_triad 0.33-0.44 s of CPU at exit, 38-55% of its run.
        if not sample.final:
            _steered_windows += 1
        nodes = _numa_state() is not None
        preds = predict_window(regions, sample.target, *_machines(sample), _histories,
                               bool(sample.final) and not nodes, _calibration()[0])
        if nodes and sample.final:
            for region, pred in zip(regions, preds):
                if region["name"] != "process" and len(_history_sizes(region)) >= 2:
                    pred.basis = _noted(pred.basis, "; no history fit: see nodes")
        if sample.final:
            preds = _opencl_host(regions, preds, lambda r: predict_window(
                [r], sample.target, *_machines(sample), {}, False, _calibration()[0])[0])
        for i, (region, pred) in enumerate(zip(regions, preds)):
            if region["name"] != "process":
                _steer(ffi, region, pred, sample, result.regions[i])
            _encode(ffi, result.regions[i], pred)
        _predict_nodes(ffi, sample, regions, result, preds)
        _predicted_for(ffi, sample, result)
        result.status = 0
        return 0
    except Exception as exc:  # the host program must never see a traceback
        _put(ffi, result.note, f"model error: {type(exc).__name__}: {exc}")
        result.status = 1
        return 1
