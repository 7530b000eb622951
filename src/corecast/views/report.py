"""Plain-text report of a ``CurvePrediction``: a fixed-width table plus a short summary."""
from __future__ import annotations

import numpy as np

from ..model.curve.entities import Measurements, CurvePrediction
from ..io.fileio import printable
from ..model.scaling import COUNT_UNITS
from .columns import speedup_cell  # its one home; mergeview and sweeptable import it from here too

# Grids longer than this show only the interesting rows (see ``_rows_to_show``).
MAX_FULL_ROWS = 40
LOW_ROWS_FROM = 8  # a long grid's rows below its smallest measured count, if that is this or more, are left out


def format_table(
    pred: CurvePrediction,
    measured: bool = True,
    reference: Measurements | None = None,
    every_measured: Measurements | None = None,
) -> str:
    """The prediction as a table, then method, choice, preferred and knee counts, warnings.

    ``measured`` adds the measured value where a count was measured; counts the user asked
    for with ``at`` are always shown; ``reference`` adds measurements the prediction
    did not see (held-out points) with the relative error against them.
    ``every_measured``: every count the input measured where the fit left some out
    (``Series.measured``: a sweep's oversubscribed counts); they are shown as measured.
    """
    counts = pred.counts.astype(int)
    fitted = _by_count(pred.measured.at_target_size())
    seen = _by_count((every_measured or pred.measured).at_target_size()) if measured else {}
    held = _by_count(reference.at_target_size()) if reference is not None else {}
    held = {n: v for n, v in held.items() if n not in seen}
    checkpoints = {int(round(c)) for c in pred.checkpoints}

    header = [pred.count_unit, pred.value_label, "band low..high", "speedup", "effic."]
    if seen:
        header.append("measured")
    if held:
        header += ["held out", "error"]
    header.append("")
    rows: list[list[str]] = []
    shown = _rows_to_show(counts, set(seen) | set(held), pred)
    prev = None
    for i in shown:
        n = int(counts[i])
        if prev is not None and n != prev + 1:
            rows.append(["..."] + [""] * (len(header) - 1))
        prev = n
        row = [
            str(n),
            _num(pred.values[i]),
            f"{_num(pred.low[i])}..{_num(pred.high[i])}",
            speedup_cell(pred.speedup[i]),
            percent(pred.efficiency[i]) if np.isfinite(pred.efficiency[i]) else "-",
        ]
        if seen:
            row.append(_measured_cell(seen.get(n)))
        if held:
            h = held.get(n)
            row.append(_measured_cell(h))
            row.append(f"{(pred.values[i] - h[0]) / h[0]:+.1%}" if h else "")
        notes = [
            label
            for label, hit in (
                ("checkpoint", n in checkpoints),
                ("preferred", n == pred.preferred),
                ("fastest", n == pred.fastest and n != pred.preferred),
                ("knee", n == pred.knee),
                ("not fitted", n in seen and n not in fitted),
            )
            if hit
        ]
        row.append(", ".join(notes))
        rows.append(row)

    lines = _align([header] + rows)
    low = _below_measured(counts, set(seen) | set(held))
    if low:
        lines.append(f"(rows below {low}, the smallest measured count, left out: the models there run "
                     "backwards from the measurements; --json has them)")
    lines.append("")
    lines.append(f"method: {pred.method}, chose {pred.candidate}: {pred.reason}")
    many, one = count_nouns(pred.count_unit)
    if pred.model_preferred is not None:
        best = _by_count(pred.measured.at_target_size()).get(pred.preferred)
        value = f"measured {pred.value_label} {_num(best[0])}" if best else \
            f"predicted {pred.value_label} {_num(pred.value_at(pred.preferred))}"
        lines.append(f"preferred count: {pred.preferred} ({capped_preferred_words(pred)}; {value})")
    else:
        lines.append(f"preferred count: {pred.preferred} (predicted {pred.value_label} "
                     f"{_num(pred.value_at(pred.preferred))}; each {one} added up to it gains at least "
                     f"{given_percent(pred.min_gain)} of one)")
    if pred.fastest is not None and pred.fastest != pred.preferred:
        best = _by_count(pred.measured.at_target_size()).get(pred.fastest) if pred.fastest_measured else None
        value = best[0] if best else pred.value_at(pred.fastest)
        lines.append(fastest_line(pred.fastest, best is not None, f"{pred.value_label} {_num(value)}"))
    if pred.scaling == "weak":
        lines.append("weak scaling: speedup is the work rate n/T(n) relative to the base count's, "
                     "efficiency T(base)/T(n)")
    if pred.knee is None:
        lines.append(f"knee: none up to {int(pred.counts.max())} (no count asked beyond which adding "
                     f"{many} gains less than {given_percent(pred.knee_fraction)} of a {one})")
    else:
        lines.append(
            f"knee: {pred.knee} (adding {many} beyond {pred.knee} gains less than "
            f"{given_percent(pred.knee_fraction)} of a {one})"
        )
    lines += fit_quality_lines(pred, len(seen) if measured else None)
    # A base count other than 1 is said once, by the prediction's warning.
    lines += [f"warning: {w}" for w in pred.warnings]
    return "\n".join(printable(line) for line in lines) + "\n"  # names from the input file


def fastest_line(count: int, measured: bool, value: str,
                 support: str | None = "as far as the band supports") -> str:
    """The fastest count's line, in the words ``predict``, ``sweep`` and ``merge`` share:
    ``value`` (e.g. "time 0.33 s") is what was measured there when the count is the best
    measured one (``CurvePrediction.fastest_measured``: the model's optimum was measured
    slower, so the band vouched for nothing), else the prediction there, qualified by
    ``support`` (what vouches for it; a model without a band says so, or None)."""
    if measured:
        return (f"fastest count: {count} (the best measured: {value}; "
                "the model's optimum was measured slower)")
    return f"fastest count: {count} (predicted {value}" + (f", {support})" if support else ")")


def capped_preferred_words(pred) -> str:
    """Why a preferred count is not the one the marginal-gain rule named on the model's
    curve (``pred.model_preferred``): the best measured count capped it, or the measured
    counts showed the model's count clearly beaten (``preference.measured_paid``).  The
    rule's words would not hold.  ``pred``: a CurvePrediction or a RankPrediction."""
    model = pred.model_preferred
    if model > pred.preferred and pred.fastest_measured and pred.fastest == pred.preferred:
        return f"the best measured count, below the model's preferred {model}"
    where = "past" if model < pred.preferred else "below"
    return f"from the measured counts, {where} the model's preferred {model}, which was measured slower"


def fit_quality_lines(pred: CurvePrediction, measured: int | None = None) -> list[str]:
    """Each model's RSS, adjusted R² and SMAPE against the measured counts, as Extra-P
    shows them next to its models; a model through every point is "interpolates: not a
    fit", and the error it made on counts it was not fitted to is shown beside.
    ``measured``: how many counts the input measured, where the fit left some out."""
    if not pred.fit_quality:
        return []
    n = len(pred.measured.at_target_size())
    fitted = len(np.unique(pred.measured.at_target_size().counts))
    against = f"the {fitted} fitted of the {measured} measured counts" if measured and measured > fitted else \
        f"the {n} measured counts"
    rows = [["  model", "params", "RSS", "adj. R²", "SMAPE", "held-out error", ""]]
    for q in pred.fit_quality:
        held = q.get("holdout_error")
        held = "-" if held is None else f"{held:.1%} ({q['holdout']})"
        if q.get("interpolates"):
            rows.append([f"  {q['model']}", str(q["params"]), "-", "-", "-", held, "interpolates: not a fit"])
            continue
        rss = "n/a" if q["rss"] is None else _num(q["rss"])
        rows.append([f"  {q['model']}", str(q["params"]), rss, _r2(q["adj_r2"]), f"{q['smape']:.2f}%", held, ""])
    return [f"fit quality against {against} ({pred.value_label} in its unit):"] + _align(rows)


def _r2(adj: float | None) -> str:
    """Adjusted R² to four decimals, but a fit that misses never reads as 1.0000 (which
    claims one through every point): 0.99998 is >0.9999."""
    if adj is None:
        return "n/a"
    return ">0.9999" if 0.99995 <= adj < 1 else f"{adj:.4f}"


def count_nouns(unit: str) -> tuple[str, str]:
    """The count unit in prose, many and one: ("threads", "thread"); a parameter that
    names no unit (Extra-P's ``x``) counts units of itself: ("units of x", "unit of x")."""
    for one, many in COUNT_UNITS.items():
        if unit == many:
            return many, one
    return f"units of {unit}", f"unit of {unit}"


def _by_count(data: Measurements) -> dict[int, tuple[float, float, int]]:
    """count -> (median value, relative spread, repetitions)."""
    return {
        int(n): (float(v), float(s), int(r))
        for n, v, s, r in zip(data.counts, data.values, data.spread, data.repetitions)
    }


def _rows_to_show(counts: np.ndarray, measured: set[int], pred: CurvePrediction) -> list[int]:
    """Indices of the rows to print: all of them for short grids; otherwise measured
    counts (when there are at most MAX_FULL_ROWS of them: thousands would bury the
    rest), powers of two, preferred/knee/checkpoint/--at counts, upto and both ends."""
    if counts.size <= MAX_FULL_ROWS:
        return list(range(counts.size))
    # The end of the 1..upto range (extra --at counts may lie beyond it).
    upto = int(counts[np.flatnonzero(counts == np.arange(1, counts.size + 1))[-1]]) if counts[0] == 1 else 0
    keep = set(measured) if len(measured) <= MAX_FULL_ROWS else set()
    keep |= {pred.preferred, pred.knee or pred.preferred, pred.fastest or pred.preferred, upto, int(counts[-1])}
    keep |= set(pred.requested_at) | {int(round(c)) for c in pred.checkpoints}
    # Below the smallest measured count the rows are the models run backwards (a curve
    # measured at 1000..16000 ranks printed 1, 2, .., 512): what no one asked, in the JSON.
    low = _below_measured(counts, measured)
    if not low:
        keep.add(int(counts[0]))
    return [i for i, n in enumerate(counts) if n in keep or ((n & (n - 1)) == 0 and n >= low)]


def _below_measured(counts: np.ndarray, measured: set[int]) -> int:
    """The smallest measured count where a long grid's rows below it are left out of the
    table (at least ``LOW_ROWS_FROM``); 0 where none are."""
    low = min(measured) if measured else 0
    return low if counts.size > MAX_FULL_ROWS and low >= LOW_ROWS_FROM else 0


def _measured_cell(m: tuple[float, float, int] | None) -> str:
    if m is None:
        return ""
    value, spread, reps = m
    if reps > 1:
        return f"{_num(value)} ±{percent(spread)} ({reps} runs)"
    return _num(value)


def percent(share: float) -> str:
    """A share as a whole percentage, but one that is not zero never reads as 0%: a real
    0.2% efficiency is 0.2%, and below 0.1% it is <0.1%."""
    share = float(share)
    if share == 0 or abs(share) >= 0.01:
        return f"{share:.0%}"
    if abs(share) >= 0.001:
        return f"{share:.1%}"
    return "<0.1%" if share > 0 else ">-0.1%"


def given_percent(fraction: float) -> str:
    """A threshold the user gave (``--min-gain``, ``--knee-fraction``) as a percentage with
    the digits it was given: 0.004 is 0.4%, not 0%, and 0.125 is 12.5%."""
    return f"{100 * float(fraction):.6g}%"


def _num(x: float) -> str:
    """About five significant digits, no exponent for everyday magnitudes."""
    x = float(x)
    if x != 0 and (abs(x) >= 1e7 or abs(x) < 1e-3):
        return f"{x:.4e}"
    if abs(x) >= 1e4:
        return f"{x:.0f}"  # %g would switch to an exponent at 1e5
    return f"{x:.5g}"


def _align(rows: list[list[str]]) -> list[str]:
    """Right-align every column but the last (notes, left-aligned)."""
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) for c, w in zip(r[:-1], widths)] + [r[-1]]
        out.append("  ".join(cells).rstrip())
    return out
