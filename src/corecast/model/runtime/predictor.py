"""The runtime's one predictor: every region of one window (sample records,
``record.RegionSample``, the process's last) to a ``TeamPrediction`` each, used alike by
the live library (``bridge.predict_sample``) and by ``corecast replay``.  Standard
library only: it runs inside profiled programs."""
from __future__ import annotations

from .bound import TeamPrediction
from .contention import (barrier_latency, compose_process, process_contention, process_team, region_contention,
                         took_turns)
from .evidence import apply_machine, not_applied, one_thread_work, prior_loss, roofline, with_note
from .history import BASIS_LEN, RegionHistory, anchor_t1, combine, extrapolate, mostly_at, probe_basis, reaches
from .spread import one_thread, turns_band, widen

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ..machine.calibration import Calibration
    from ...recording.record import ProcessSample, RegionSample


def predict_region_threads(region: RegionSample, target: int, measured_cores: int, predicted_cores: int,
                           histories: dict[tuple[str, str], RegionHistory], final: bool = True,
                           latency: float = 0.0, machine: Calibration | None = None,
                           process: ProcessSample | None = None) -> TeamPrediction:
    """One OpenMP region (``histories`` remembers each region between windows).

    While most of its calls ran at its largest team (the program's own count; probes are a
    few calls at smaller sizes) the one-sample model predicts from that team, with T(1)
    measured when the history has calls at 1 thread.  Replaying the 16-core calibration
    runs sampled at 4 threads with the 1- and 2-thread runs as history, this was within
    20% for 10 of 13 programs against 7 of 13 for ``auto`` fitted to the three sizes (a
    4x extrapolation from noisy points).  A region whose calls spread over team sizes (the
    program varies its team, steering) is extrapolated from its own history instead, at the
    exit only: a window's prediction is read by no one but steering, which decides from the
    history itself, so numpy and scipy never take CPU from the program while it runs.
    ``machine``: the machine's curves (``corecast calibrate``), put into an outermost
    region's one-sample prediction where its evidence says which applies (``evidence``:
    ``process``, the window's process record, holds the run's hardware counters where a
    PMU was read); a region measured at several sizes has the machine in its own history."""
    history = histories.setdefault((region["name"], region["object"]), RegionHistory())
    history.update(region)
    one = region_contention(region, target, measured_cores, predicted_cores, latency)
    note = ""
    n0 = int(region["threads"])
    if mostly_at(history, n0):
        pred = anchor_t1(one, region, history)
        # T(1) from the smallest team the prediction is anchored to: the sampled one, or a
        # probe's (anchor_t1 rescaled to it)
        smaller = [t for t in history.measured() if t < n0 and t in one.threads]
        one_thread_work(pred, min(smaller) if pred is not one and smaller else n0)
        if machine is not None and not region["nested"]:
            note = apply_machine(pred, region, machine, process)
    else:
        sizes = len(history.measured())
        try:
            fit = extrapolate(history, target) if sizes >= 2 and final else None
        except ImportError as exc:  # the model's Python has no numpy: the one-sample model stands in
            fit = None
            note = f"; no fit: {exc.name or 'numpy'} missing"
            one.basis = one.basis[: BASIS_LEN - len(note)] + note
        # Measured where the sizes reach the target: a steered convoy's S@2 0.18 beside
        # "1 thread measured 22.9 times as fast" was the mean with the one-sample model.
        pred = combine(one, fit, sizes, reaches(history, target))
    if pred is not one and region.get("probes"):  # the history holds probe calls: say so
        pred.basis = probe_basis(pred.basis, region["probes"], room=len(note))
    if note:
        pred.basis = with_note(pred.basis, note)
    return pred


ONE_THREAD_NOTE = "; no evidence at 1 thread"
TURNS_NOTE = "; no evidence: its threads took turns behind other load"


def ran_one_thread(region: RegionSample) -> bool:
    """Whether every call of the region ran on a team of one (its history's teams)."""
    teams = [int(t) for t, calls, _ in region.get("hist") or [] if calls > 0]
    return max(teams, default=int(region["threads"])) <= 1


def predict_window(regions: list[RegionSample], target: int, measured_cores: int, predicted_cores: int,
                   histories: dict[tuple[str, str], RegionHistory], final: bool = True,
                   machine: Calibration | None = None) -> list[TeamPrediction]:
    """The runtime's one predictor: a prediction for every region of one window (sample
    records, ``record.RegionSample``, the process's last), used alike by the live library and by
    ``corecast replay``.  An OpenMP program's process is composed from its outermost
    regions; a plain-threads one gets the process contention model.  ``machine``: the
    machine's curves (``corecast calibrate``), put into outermost regions' one-sample
    predictions where the evidence calls for one (``evidence``; a plain-threads process
    has none: its basis says so), and, where the run's counters give the bytes it moved,
    the composed process is held under the roofline of the machine's bandwidth.  Every prediction's band is joined with the empirical
    one (``spread``)."""
    done: list[tuple[RegionSample, TeamPrediction]] = []
    preds = []
    latency = barrier_latency(regions)
    process = regions[-1] if regions and regions[-1]["name"] == "process" else None
    # An OpenMP team that took turns (a plain-threads process's model says so itself)
    turns = process is not None and took_turns(process, measured_cores)
    for region in regions:
        if region["name"] != "process":
            pred = widen(predict_region_threads(region, target, measured_cores, predicted_cores, histories,
                                                final, latency, machine, process))
            if ran_one_thread(region):
                pred = one_thread(pred)  # after widen: widen keeps a lower band as it is
                pred.basis = with_note(pred.basis, ONE_THREAD_NOTE)
            elif turns:
                pred = turns_band(pred)
                pred.basis = with_note(pred.basis, TURNS_NOTE)
            done.append((region, pred))
        elif any(not r["nested"] for r, _ in done):
            sampled = max(int(r["threads"]) for r, _ in done if not r["nested"])
            pred = compose_process(region, done, prior_loss(sampled))
            if machine is not None:
                note = roofline(pred, region, machine)
                if note:
                    pred.basis = with_note(pred.basis, note)
            if all(ran_one_thread(r) for r, _ in done if not r["nested"]):
                pred = one_thread(pred)
                pred.basis = with_note(pred.basis, ONE_THREAD_NOTE)
            elif turns:
                pred = turns_band(pred)
                pred.basis = with_note(pred.basis, TURNS_NOTE)
        else:
            team = process_team(region, measured_cores)
            pred = one_thread_work(process_contention(region, target, measured_cores, predicted_cores), team)
            if machine is not None:
                note = roofline(pred, region, machine)
                pred.basis = with_note(pred.basis, note or not_applied("no evidence"))
            if min(team, measured_cores) < 2:  # one thread did the work, or its threads took
                pred = one_thread(pred)           # turns on one CPU: the basis says "no evidence"
        preds.append(widen(pred))
    return preds
