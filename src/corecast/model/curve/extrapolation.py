"""Extrapolating a measured time and its stall categories, as ``corecast sweep`` does for
a whole program and for each of its regions: the time with ``predict`` (``auto``, or the
regression over MPI rank counts), every stall category with ESTIMA's per-category step
(``methods.estima``), or with ``auto`` on the category as a curve when there are too few
counts; the future bottleneck is the category with the largest predicted stall at the
horizon."""
from __future__ import annotations

import statistics
from typing import Optional, Sequence

from ...errors import InputError
from ...recording.record import CLOCK_RESOLUTION_S

# Two rank counts: sweep and merge both extrapolate the time with auto, through both
REGRESSION_NEEDS_3 = "the regression over rank counts needs 3 counts: time extrapolated with auto"


def extrapolate(result: dict, times_at: dict, ok: list[int], categories: list[str],
                per_count: dict, horizon: int, waits: Optional[Sequence[str]] = None,
                cpus: Optional[int] = None) -> None:
    """Predictions of ``times_at`` (count -> the repetitions' times) and of each stall
    category (``per_count``: count -> the repetitions' {category: seconds}) into
    ``result`` (a sweep result object: the whole program's, or one region's; its
    "warnings" list gains the models' warnings).  ``waits``: the counts are MPI rank
    counts and these categories the communication the regression splits off.  ``cpus``:
    the CPUs the runs had; counts above it ran oversubscribed, and a time that grows only
    there is no sign of weak scaling."""
    from .methods.registry import STALL_COLUMNS
    from .methods.estima import MIN_POINTS
    from .prediction import POOR_FIT, predict
    import numpy as np

    from .preference import weak_look
    from ..machine.hardware import fitted_within

    warnings = result["warnings"]
    counts = [n for n in ok for _ in times_at[n]]
    times = [t for n in ok for t in times_at[n]]
    stalls = {k: [s.get(k, 0.0) for n in ok for s in per_count[n]] for k in categories}
    method = "auto"
    if waits is not None:
        # Over ranks only the MPI waits are the communication the regression splits off (the
        # library's helper threads' waits are not); the regression needs 3 counts.
        categories[:] = [k for k in categories if k in waits]
        stalls = {k: stalls[k] for k in categories}
        if len(ok) >= 3:
            method = "regression"
        else:
            warnings.append(REGRESSION_NEEDS_3)
    # A sweep extrapolates as strong scaling and has no --scaling: where its times look like
    # weak scaling's (a {threads} that sizes the input), its warning sends the result to
    # predict, which has.
    # with_fit_quality=False here and below: a sweep result carries no fit figures, and
    # they cost a second fit (leave-last-out) of every curve and region
    fit_counts, fit_times, fit_stalls, hw_threads = counts, times, stalls, None
    inside, note = fitted_within(counts, cpus)
    if note:
        warnings.append(note)
    if inside is not None:
        fit_counts, fit_times = [counts[i] for i in inside], [times[i] for i in inside]
        fit_stalls = {k: [v[i] for i in inside] for k, v in stalls.items()}
        hw_threads = cpus
    pred = predict(fit_counts, fit_times, metric="time", upto=horizon, method=method, stalls=fit_stalls or None,
                   scaling="strong", with_fit_quality=False, hw_threads=hw_threads)
    measured = pred.measured.at_target_size()
    if cpus is not None:  # oversubscribed counts slow down from sharing CPUs, not from more work
        measured = measured.subset(np.flatnonzero(measured.counts <= cpus))
    weak_note = weak_look(measured, "give the sweep's --json-out file to 'corecast predict --scaling weak'")
    if weak_note:
        warnings.append(weak_note)
    if waits is not None:
        result["basis"] = pred.reason
    # ESTIMA's own run on the categories below says once why it could not use them;
    # auto's note that its ESTIMA member left the stall columns unused is the same news.
    # sweep has no --method: its fit warnings say where another method can be tried
    name = result.get("name")
    advice = ("; try another with 'corecast predict --method' on the sweep's --json-out file" if name is None
              else f"; try another with 'corecast predict --callpath \"main->{name}\" --method' on "
              "'corecast export --extrap' of the sweep's --json-out file")
    warnings.extend(w for w in with_advice(pred.warnings, advice) if not w.startswith(f"{STALL_COLUMNS} unused"))
    result["predictions"] = [
        {"threads": int(n), "value": float(v), "low": float(lo), "high": float(hi), "speedup": float(s)}
        for n, v, lo, hi, s in zip(pred.counts, pred.values, pred.low, pred.high, pred.speedup)
    ]
    # *_count: the unit-neutral keys (the count is ranks in a launcher's sweep); *_threads
    # the same numbers, for readers written before them.
    result["preferred_count"] = result["preferred_threads"] = int(pred.preferred)
    result["fastest_count"] = result["fastest_threads"] = None if pred.fastest is None else int(pred.fastest)
    result["fastest_measured"] = bool(pred.fastest_measured)

    grid = [int(n) for n in pred.counts]
    curves: dict[str, list[float]] = {}
    if categories and len(ok) >= MIN_POINTS:
        try:
            est = predict(counts, times, metric="time", upto=horizon, method="estima", stalls=stalls,
                          with_fit_quality=False)
            # Only ESTIMA's categories are used, not its time: its time's SMAPE is not the sweep's
            warnings.extend(w for w in est.warnings if w not in warnings and not w.startswith(POOR_FIT))
            ecounts = [int(c) for c in est.extras["counts"]]
            for k in categories:
                values = dict(zip(ecounts, est.extras["categories"][k]["values"]))
                curves[k] = [float(values[n]) for n in grid]
        except (InputError, KeyError, ValueError, FloatingPointError) as exc:
            # ESTIMA as a whole can fail at translating stalls to time; its first step,
            # extrapolating each category, does not depend on that.
            curves = estima_categories(ok, per_count, categories, grid)
            how = ("its per-category extrapolation was used on its own" if curves
                   else "each category was extrapolated with auto instead")
            warnings.append(f"ESTIMA failed ({exc}); {how}")
    elif categories:
        warnings.append(f"ESTIMA needs {MIN_POINTS} measured counts, the sweep has {len(ok)}: each stall "
                        "category was extrapolated on its own with method auto (rough)")
    for k in categories:
        if k not in curves:
            medians = [statistics.median([s.get(k, 0.0) for s in per_count[n]]) for n in ok]
            curves[k] = category_curve(ok, medians, grid, horizon, k, warnings)
    result["stall_predictions"] = {
        k: [{"threads": n, "value": max(0.0, float(v))} for n, v in zip(grid, curves[k])] for k in categories
    }
    if categories:
        at_end = {k: curves[k][-1] for k in categories}
        top = max(at_end, key=lambda k: at_end[k])
        result["bottleneck"] = top if at_end[top] >= CLOCK_RESOLUTION_S else None


def with_advice(warnings: list[str], advice: str) -> list[str]:
    """``warnings`` with the model's advice to try another method (``prediction.TRY_METHOD``)
    replaced by ``advice`` (``"; ..."``, or "" for none): each command says how (predict's
    ``--method``; sweep and merge have none); the Python API keeps the model's words."""
    from .prediction import TRY_METHOD

    return [w[:-len(TRY_METHOD)] + advice if w.endswith(TRY_METHOD) else w for w in warnings]


def estima_categories(ok: list[int], per_count: dict, categories: list[str],
                       grid: list[int]) -> dict[str, list[float]]:
    """ESTIMA's step 1 (``estima.extrapolate_stall``) on each category's medians; {} on failure."""
    import numpy as np

    from .methods.estima import extrapolate_stall

    n = np.array(ok, dtype=float)
    medians = {k: np.array([statistics.median([s.get(k, 0.0) for s in per_count[c]]) for c in ok])
               for k in categories}
    scale = max(float(v.max()) for v in medians.values())
    q = np.array(grid, dtype=float)
    try:
        return {k: [float(v) for v in extrapolate_stall(n, y, float(max(grid)), scale)(q)]
                for k, y in medians.items()}
    except (InputError, ValueError, FloatingPointError):
        return {}


def category_curve(ok: list[int], values: list[float], grid: list[int], horizon: int,
                    name: str, warnings: list[str]) -> list[float]:
    """One stall category extrapolated with ``auto`` as a time-like curve.

    As in ESTIMA, only the positive points are fitted and the category is 0 below the
    first of them (a lock wait is 0 at one thread).  Within the measured range the
    measurements are interpolated linearly; beyond it auto's curve is scaled to pass
    through the last measured value (a two-point auto fit is Amdahl's law alone, which
    cannot follow a wait that grows, so there the category is held at its last value).
    With one positive point the category is held flat beyond it.
    """
    from .prediction import predict

    top = max(values)
    pos = [(n, v) for n, v in zip(ok, values) if v > 1e-6 * top]
    first, last_n, last_v = pos[0][0], ok[-1], values[-1]
    if len(pos) < 2:
        warnings.append(f"stall category {name!r} is positive at one count only: held flat beyond it")
        ahead = {n: last_v for n in grid}
    else:
        try:
            p = predict([n for n, _ in pos], [v for _, v in pos], metric="time",
                        upto=max(horizon, last_n), method="auto", with_fit_quality=False)
            fitted = dict(zip((int(c) for c in p.counts), (float(v) for v in p.values)))
            scale = last_v / fitted[last_n] if fitted[last_n] > 0 else 0.0
            ahead = {n: fitted[n] * scale for n in grid if n > last_n}
        except (InputError, ValueError, FloatingPointError) as exc:
            warnings.append(f"stall category {name!r} could not be extrapolated ({exc}): held flat")
            ahead = {n: last_v for n in grid}
    out = []
    for n in grid:
        if n < first:
            out.append(0.0)
        elif n > last_n:
            out.append(ahead[n])
        else:
            out.append(float(_interp(n, ok, values)))
    return out


def _interp(n: float, xs: Sequence[int], ys: Sequence[float]) -> float:
    import numpy as np

    return float(np.interp(n, xs, ys))
