"""``corecast.predict``: measurements in, predictions with bands out (the plain function API
the CLI and the runtime both call)."""
from __future__ import annotations

import warnings as warnings_module
from dataclasses import replace
from typing import Iterable, Mapping

import numpy as np

from . import methods
from .band import band, smt_span
from .entities import Fit, InputError, Measurements, CurvePrediction, from_perf
from ...errors import article
from .fitquality import count_params, fit_quality
from .fitting import rms
from ..scaling import MAX_COUNT
from ..machine.hardware import Hardware, oversubscribed
from .preference import (DEFAULT_MIN_GAIN, PREFERRED_SLACK, SCALINGS, _supported, fastest_count,  # noqa: F401
                         horizon_warnings, knee_count, measured_paid, measured_preferred, reaches_measured, strong_look,
                         weak_look, preferred_count, within_hardware)

DEFAULT_KNEE_FRACTION = 0.1
# Models are fitted to at most this many points per input size (more are pooled into bins
# of neighbouring counts, see Measurements.binned): PreSca refits on every other prefix of
# the points, so its cost grows with their square while dense counts add little.  128
# leaves every curve of the shared measured datasets (at most 125 training points) as it is.
MAX_FIT_POINTS = 128
# With stall columns ESTIMA refits six kernels on every prefix, per stall category and for
# the factor: several times PreSca's cost, so fewer points.
MAX_FIT_POINTS_STALLS = 24
MISS_FACTOR = 1.5  # a fit this far off a measured value (either way) gets a warning
# ... and so does one whose SMAPE over the measured counts (the fit-quality table's, in
# percent) exceeds this: on the corpus's curves USL and PreSca stay below 7%, and ESTIMA
# on docs/predict.md's example, 41% off at 1 thread, scores 21%.
POOR_SMAPE = 10.0
POOR_FIT = "the fit is poor"  # that warning's start
TRY_METHOD = "; try another method"  # how fit_miss's warnings end; each caller says how (with_advice)


def predict(
    counts: Iterable[float],
    values: Iterable[float],
    metric: str | None = None,
    upto: int | None = None,
    at: Iterable[int] = (),
    method: str = "auto",
    stalls: Mapping[str, Iterable[float]] | None = None,
    sizes: Mapping[str, Iterable[float]] | None = None,
    knee_fraction: float = DEFAULT_KNEE_FRACTION,
    hw_threads: int | None = None,
    cores: int | None = None,
    sockets: int | None = None,
    fill: str | None = None,
    min_gain: float = DEFAULT_MIN_GAIN,
    scaling: str | None = None,
    with_fit_quality: bool = True,
) -> CurvePrediction:
    """Predict performance at every count 1..``upto`` (default: twice the largest
    measured count) and at the counts in ``at``.

    ``metric`` is ``"time"`` (lower is better) or ``"throughput"`` and must be given: the
    two read the same numbers in opposite directions, and no guess is safe for both a
    throughput that falls and a time that grows.  Repeated counts are repetitions.
    ``min_gain``: the preferred count's threshold (see ``preferred_count``); ``scaling``:
    ``"strong"`` (fixed total work, the default) or ``"weak"`` (fixed work per count).  ``hw_threads``, ``cores``, ``sockets``, ``fill``: of the machine
    predicted for, when known (see corecast.model.machine.hardware).  ``with_fit_quality``
    False leaves ``fit_quality`` empty: the runtime reads none of it, and its
    leave-last-out refit doubled the exit's least-squares work.  Raises ``InputError`` with a
    one-line message on unusable input.
    """
    if metric is None:
        raise InputError("metric must be given: 'time' (lower is better) or 'throughput' (higher is better)")
    data = Measurements.from_samples(counts, values, metric, stalls=stalls, sizes=sizes)
    return predict_measurements(data, upto=upto, at=at, method=method, knee_fraction=knee_fraction,
                                hardware=Hardware.of(hw_threads, cores, sockets, fill), min_gain=min_gain,
                                scaling=scaling, with_fit_quality=with_fit_quality)


def predict_measurements(
    data: Measurements,
    upto: int | None = None,
    at: Iterable[int] = (),
    method: str = "auto",
    knee_fraction: float = DEFAULT_KNEE_FRACTION,
    hardware: Hardware | None = None,
    min_gain: float = DEFAULT_MIN_GAIN,
    scaling: str | None = None,
    with_fit_quality: bool = True,
    value_name: str = "",
) -> CurvePrediction:
    """``predict`` on measurements already read (see there; ``value_name``: CurvePrediction's);
    ``scaling`` None is strong scaling, with a warning where the times look like weak scaling's."""
    if scaling not in (None,) + SCALINGS:
        raise InputError(f"unknown scaling {scaling!r}: use strong or weak")
    if scaling == "weak" and data.metric != "time":
        raise InputError("weak scaling reads times (each count doing its own fixed share of work); "
                         "a throughput already is the whole program's rate: leave --scaling out")
    if not 0 < min_gain <= 1:
        raise InputError(f"the preferred count's minimum gain must lie in (0, 1], got {min_gain:g}")
    if not 0 < knee_fraction <= 1:  # as --knee-fraction: no knee is defined outside
        raise InputError(f"the knee fraction must lie in (0, 1], got {knee_fraction:g}")
    spec = methods.get(method)
    methods.check_usable(spec, data)
    # Models see values in units of their median and a bounded number of points (see
    # Measurements.normalised and .binned); everything below works in those units and
    # only the returned values are scaled back.
    scaled, scale = data.normalised()
    fitted = scaled.binned(MAX_FIT_POINTS_STALLS if data.stalls else MAX_FIT_POINTS)
    curve = scaled.at_target_size()
    top = float(curve.counts.max())
    if top > MAX_COUNT:  # said in the user's terms, not as the default horizon's 2 x top
        raise InputError(f"counts above {MAX_COUNT} are not predicted (measured at {top:g})")
    # The default horizon, twice the largest measured count, stops at the grid's limit.
    upto = _whole(upto, "the largest count to predict") if upto is not None else min(int(2 * top), MAX_COUNT)
    at = [_whole(a, "a count to predict at") for a in at]
    if upto < 1:
        raise InputError(f"the largest count to predict must be at least 1, got {upto}")
    if max([upto] + at) > MAX_COUNT:
        got = str(max([upto] + at))
        raise InputError(f"counts above {MAX_COUNT} are not predicted (got "
                         f"{got if len(got) <= 20 else f'{article(len(got))} {len(got)}-digit count'})")
    if any(a < 1 for a in at):
        raise InputError("counts to predict at must be at least 1")
    given = hardware
    # A curve measured beyond the hardware threads already shows what sharing them does.
    machine = given if given and top <= given.hw_threads else None
    asked = np.union1d(np.arange(1, upto + 1), np.asarray(at, dtype=int))
    # Every count up to the largest asked is predicted, so the counts named below
    # (preferred, fastest, knee) do not depend on which counts between were asked:
    # ``--upto 4 --at 16`` names what ``--upto 16`` names (#41).  The rows returned are
    # those asked and the named ones.  Counts beyond the machine are predicted from its
    # last hardware thread, which the grid then holds.
    grid = np.arange(1, int(asked.max()) + 1, dtype=float)
    reaches_measured(grid, curve.counts)
    # Where threads ahead land on a kind of fill the measured counts never had, models
    # are fitted and asked in the machine's core units (Hardware.units, .step_ahead).
    in_units = machine is not None and machine.step_ahead(top, float(grid.max()))
    # A time's threads pinned socket by socket wait for the slowest (Hardware.waits_for_slowest).
    equal = machine is not None and machine.waits_for_slowest(data.metric)
    if in_units:
        model_grid, measured_at = machine.units(grid, equal_work=equal), machine.units(curve.counts, equal_work=equal)
        # Threads that wait for the slowest can be worth fewer units than fewer threads:
        # the fitted points stay in the order of their units.
        u = machine.units(fitted.counts, equal_work=equal)
        order = np.argsort(u, kind="stable")
        fitted = replace(fitted.subset(order), counts=u[order])
    else:
        model_grid, measured_at = grid, curve.counts
    # Far from the data a model may overflow or divide by zero; such values are caught
    # below (floored with a warning), so numpy's RuntimeWarnings would only be noise.
    with np.errstate(all="ignore"), warnings_module.catch_warnings():
        warnings_module.simplefilter("ignore", RuntimeWarning)
        fit = spec.fit(fitted, float(model_grid.max()))
        perf = np.asarray(fit.perf(model_grid), dtype=float)
        reason = fit.reason
        if in_units and fit.perf_with is not None:  # auto's step member (methods/auto.py)
            step_grid = machine.model_counts(grid, top, fit.step_yield, equal)
            perf = np.asarray(fit.perf_with(model_grid, step_grid), dtype=float)
            reason += (f"; where threads ahead share cores no measured count shared, the models asked at "
                       f"SMT yield {fit.step_yield:g} vote in the median too")
        at_measured = np.asarray(fit.perf(measured_at), dtype=float)
    warnings = list(fit.warnings) + methods.unread_columns(spec, data)
    if given and not machine:
        warnings.append(f"measured up to {top:g}, beyond the {given.hw_threads} hardware threads given: "
                        "the measured curve is extrapolated as it is")

    bad = ~np.isfinite(perf) | (perf <= 0)
    if np.any(bad):
        floor = float(np.nanmin(curve.perf)) * 1e-3
        perf = np.where(bad, floor, perf)
        warnings.append(
            f"{fit.candidate} gave no positive prediction at {int(bad.sum())} counts; floored there"
        )
    with np.errstate(all="ignore"):
        log_err = np.log(at_measured / curve.perf)  # the fit against every measured point
    # A binned fit's own residual is on the bins; the band needs the scatter of every point.
    residual = fit.residual if fitted is scaled else rms(log_err[np.isfinite(log_err)])
    low, high = band(fit, curve, grid, perf, residual, model_grid)
    if machine:
        if in_units:  # some count shares a core, or reaches a socket, the curve never had
            low, high = smt_span(fit, curve, grid, residual, machine, top, low, high, equal)
        perf, low, high = oversubscribed(grid, perf, low, high, machine.hw_threads)
        if scaling == "weak":  # each count adds its own work: time-shared, its time grows as n / hw
            hw, over = machine.hw_threads, grid > machine.hw_threads
            perf = np.where(over, perf[grid == hw][0] * hw / grid, perf)
            high = np.where(over, high * hw / grid, high)
        warnings += machine.notes(top, float(grid.max()), equal)
    miss = fit_miss(log_err, at_measured, curve, scale)
    if miss:
        warnings.append(miss)

    base_count = float(curve.counts[0])
    # Speedup is relative to the model's own value at the base count, so it is 1 there
    # whatever the fit (an ESTIMA fit that missed the first point printed 1.41 and 141% at
    # 1 thread); a method that interpolates has the measured value there.
    base_perf = float(at_measured[0]) if np.isfinite(at_measured[0]) and at_measured[0] > 0 \
        else float(curve.perf[0])
    if base_count != 1:
        warnings.append(f"count 1 not measured: speedup and efficiency are relative to count {base_count:g}")
    name, seen = value_name or data.metric, data.at_target_size()
    weak_note = (weak_look(seen, 'read it as weak scaling (--scaling weak, scaling="weak" in Python)', name)
                 if scaling is None else strong_look(seen, name) if scaling == "weak" else None)
    if weak_note:
        warnings.append(weak_note)
    # Under weak scaling each count does its own share of work more: the work rate is
    # n / T(n) and efficiency T(base) / T(n) (Gustafson's scaled speedup).
    weak = scaling == "weak"
    scaling = scaling or "strong"
    rate, rate_low = (perf * grid, low * grid) if weak else (perf, low)
    base_rate = base_perf * base_count if weak else base_perf
    speedup = rate / base_rate
    with np.errstate(invalid="ignore"):
        # Relative to a base count above 1 efficiency says nothing below it (an
        # extrapolated 1-thread time over a 27-rank one is no efficiency of 2700%).
        efficiency = np.where(grid >= base_count, speedup * base_count / grid, np.nan)
    hw = machine.hw_threads if machine else None
    ok, skipped = within_hardware(grid, hw)  # none past them is named (skipped: the warning, where one is due)
    warnings += skipped
    fastest = fastest_count(grid[ok], rate[ok], rate_low[ok], base_count, top, curve.counts)
    fastest, note = measured_preferred(fastest, curve, int(grid.max()), weak)
    if note:
        warnings.append(note)
    by_rule = preferred_count(grid[ok], rate[ok], rate_low[ok], base_count, top, min_gain)
    preferred, replaced, moved = measured_paid(min(by_rule, fastest), fastest, curve, int(grid.max()), min_gain, weak)
    warnings += moved + horizon_warnings(grid[ok], rate[ok], rate_low[ok], base_count, top, preferred, hw)
    named = _supported(grid, base_count)  # the knee too is not placed below the measured counts
    knee = knee_count(grid[named], rate[named], knee_fraction)
    rows = np.isin(grid, asked) | np.isin(grid, [c for c in (preferred, fastest, knee) if c is not None])
    grid, perf, low, high, speedup, efficiency = (a[rows] for a in (grid, perf, low, high, speedup, efficiency))
    if len(set(curve.counts.tolist())) < 3:
        warnings.append("only two measured counts: the prediction is a rough law fit with a wide band")
    if data.sizes:
        sizes = ", ".join(f"{k}={v:g}" for k, v in data.target_size().items())
        warnings.append(f"predictions are for input size {sizes}")
    # Stalls (a time) were scaled like the time: back by the scale (time) or its inverse.
    stall_unit = scale if data.metric == "time" else 1.0 / scale
    extras = fit.extras_in_unit(fit.extras, stall_unit) if fit.extras_in_unit else fit.extras

    def user(p: np.ndarray) -> np.ndarray:
        """Normalised performance -> the user's metric and unit (capped at the largest float)."""
        with np.errstate(over="ignore"):
            return np.minimum(from_perf(p, data.metric) * scale, np.finfo(float).max)

    return CurvePrediction(
        method=spec.name,
        metric=data.metric,
        candidate=fit.candidate,
        reason=reason,
        counts=grid.astype(int),
        values=user(perf),
        # The band is computed on performance; in time the low and high ends swap.
        low=user(high if data.metric == "time" else low),
        high=user(low if data.metric == "time" else high),
        speedup=speedup,
        efficiency=efficiency,
        speedup_base=base_count,
        preferred=preferred,
        fastest=fastest,
        fastest_measured=note is not None,
        model_preferred=replaced or (by_rule if note is not None and by_rule > fastest else None),
        min_gain=min_gain,
        scaling=scaling,
        knee=knee,
        knee_fraction=knee_fraction,
        requested_at=sorted(set(at)),
        measured=data,
        checkpoints=list(fit.checkpoints),
        params=fit.params,
        extras=extras,
        warnings=warnings,
        value_scale=scale,
        value_name=value_name,
        fit_quality=_fit_quality(fit, spec.name, curve, scale, at_measured,
                                 leave_last_out(spec, fitted, float(model_grid.max()))) if with_fit_quality else [],
        hardware=given,
    )


def leave_last_out(spec: methods.Method, fitted: Measurements, nmax: float) -> float | None:
    """The method refitted without the largest measured count, its relative error there:
    what a fit that passes through every point can still be judged by (a one-step
    backtest, Tashman 2000).  None where too few counts remain, with sizes, or it fails."""
    if fitted.sizes or len(fitted) - 1 < max(spec.min_points, 2):
        return None
    head = fitted.subset(np.flatnonzero(fitted.counts < fitted.counts.max()))
    try:
        with np.errstate(all="ignore"), warnings_module.catch_warnings():
            warnings_module.simplefilter("ignore", RuntimeWarning)
            methods.check_usable(spec, head)
            got = float(np.asarray(spec.fit(head, nmax).perf(np.array([fitted.counts[-1]])), float)[0])
    except Exception:  # the method cannot fit fewer points: nothing to report, not a failure
        return None
    want = float(fitted.perf[-1])
    return abs(got / want - 1.0) if np.isfinite(got) and got > 0 else None


def _whole(n: object, what: str) -> int:
    """``n`` as an int where it is a whole number (2.0 is, 2.5 and "2" are not: int()
    would ask 2.5 as 2 without a word)."""
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        return int(n)
    if isinstance(n, (float, np.floating)) and float(n).is_integer():
        return int(n)
    raise InputError(f"{what} must be a whole number, got {n!r}")


def _fit_quality(fit: Fit, name: str, curve: Measurements, scale: float, at_measured: np.ndarray,
                 last_out: float | None = None) -> list[dict]:
    """Extra-P's fit metrics of the chosen model and of each model it combines, in the
    user's metric and unit, against every measured count; with each, what it can be
    judged by where it interpolates: ``holdout_error`` (the chosen model's leave-last-out
    error ``last_out``, a member's backtest error) and ``holdout`` naming which."""
    def user(p):
        with np.errstate(all="ignore"):
            return np.nan_to_num(from_perf(np.asarray(p, float), curve.metric) * scale,
                                 nan=0.0, posinf=np.finfo(float).max)

    measured = user(curve.perf)
    rows = [{"model": name, **fit_quality(user(at_measured), measured, max(1, count_params(fit.params))),
             "holdout": "leave-last-out" if last_out is not None else None, "holdout_error": last_out}]
    backtest = fit.extras.get("backtest") or {}
    for m in fit.members:
        label = m.candidate if m.candidate == m.method else f"{m.method}:{m.candidate}"
        with np.errstate(all="ignore"):
            pred = m.perf(curve.counts)
        err = backtest.get(m.method)
        rows.append({"model": label, **fit_quality(user(pred), measured, max(1, count_params(m.params))),
                     "holdout": "backtest" if err is not None else None, "holdout_error": err})
    return rows


def fit_miss(log_err: np.ndarray, at_measured: np.ndarray, curve: Measurements, scale: float) -> str | None:
    """A warning when the fit misses a measured value by more than ``MISS_FACTOR``
    (either way), or its SMAPE over the measured counts exceeds ``POOR_SMAPE``, else None.  ``at_measured``: the fit's performance at ``curve.counts``;
    ``log_err``: log(at_measured / measured)."""
    off = np.abs(log_err)
    off = np.where(np.isfinite(off), off, np.inf)
    missed = off > np.log(MISS_FACTOR)
    with np.errstate(all="ignore"):
        # SMAPE is the same on time as on its inverse, so performance gives the table's figure
        total = np.abs(at_measured) + np.abs(curve.perf)
        terms = np.where(total > 0, 2 * np.abs(at_measured - curve.perf) / np.where(total > 0, total, 1), 0)
        smape = float(np.mean(np.where(np.isfinite(terms), terms, 2.0))) * 100
    if not np.any(missed) and not smape > POOR_SMAPE:
        return None
    worst = int(np.argmax(off))
    with np.errstate(all="ignore"):
        predicted, measured = (float(from_perf(p, curve.metric) * scale)
                               for p in (at_measured[worst], curve.perf[worst]))
    worst_at = f"worst at {curve.counts[worst]:g}: predicted {predicted:.4g}, measured {measured:.4g}"
    if not np.any(missed):
        return (f"{POOR_FIT}: SMAPE {smape:.1f}% against the {len(curve)} measured counts (above "
                f"{POOR_SMAPE:g}%; {worst_at}): its counts are rough{TRY_METHOD}")
    return (f"the fit misses {int(missed.sum())} of {len(curve)} measured counts by more than "
            f"{MISS_FACTOR:g}x ({worst_at}): the model does not follow this curve{TRY_METHOD}")
