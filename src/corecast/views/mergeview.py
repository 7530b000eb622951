"""``corecast merge`` output: the merged MPI report as a table or one JSON object."""
from __future__ import annotations

from ..errors import counted
from ..io.fileio import printable
from .report import capped_preferred_words, fastest_line, speedup_cell
from ..tools.ranks import WAITS, RankPrediction, Run, rank_counts


def _ranks(n: int) -> str:
    return f"{n} rank" + ("" if n == 1 else "s")


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "-"


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def _wide(name: str) -> int:
    """A wait column's width: its category's name, or a time such as 12345.678s."""
    return max(9, len(name))


def _run_table(run: Run) -> list[str]:
    slow = run.slowest
    # the time is the longest MPI phase, which the slowest rank (most compute) need not have
    lines = [f"run at {counted(run.ranks, 'rank')}: {run.time_s:.3f}s (the longest MPI phase: rank "
             f"{run.longest.rank}'s), slowest rank "
             f"{slow.rank} (most compute: {slow.compute_s:.3f}s, imbalance max/mean {run.imbalance:.2f})",
             f"{'rank':>5} {'pid':>8} {'thr':>4} {'time':>9} {'compute':>9} "
             + "".join(f"{k:>{_wide(k)}} " for k in WAITS) + f"{'wait':>5} {'bytes':>11}  file"]
    for r in run.per_rank:
        lines.append(f"{r.rank:>5} {r.pid:>8} {r.threads:>4} {r.wall_s:>8.3f}s {r.compute_s:>8.3f}s "
                     + "".join(f"{r.waits_s[k]:>{_wide(k) - 1}.3f}s " for k in WAITS)
                     + f"{_share(r.wait_s, r.wall_s):>5} {_bytes(sum(r.bytes.values())):>11}  "
                     f"{printable(r.source)}")
    return lines


def table(m: RankPrediction) -> str:
    lines = []
    for run in m.runs:
        lines += _run_table(run) + [""]
    if not m.counts:  # no run with every rank's records: its warning says so
        return "\n".join(lines + [f"warning: {printable(w)}" for w in m.warnings]) + "\n"
    largest = max(r.ranks for r in m.whole)  # the largest run the prediction rests on
    wanted = set(rank_counts(largest, max(m.counts)))
    rows = [(c, s) for c, s in zip(m.counts, m.speedup) if c in wanted]
    lines.append(f"predicted speedup over rank counts (relative to {_ranks(m.speedup_base)}):")
    lines.append("  ranks " + " ".join(f"{c:>6}" for c, _ in rows))
    lines.append("  S     " + " ".join(f"{speedup_cell(s):>6}" for _, s in rows))
    if m.model_preferred is not None:
        lines.append(f"  preferred: {_ranks(m.preferred)} ({capped_preferred_words(m)})")
    else:
        # "preferred: 2 ranks" beside S rising to 16 read as the model's verdict: it is its cap
        capped = m.speedup_band() is None and m.preferred == largest and any(
            c > largest and s > m.speedup[m.counts.index(largest)] for c, s in zip(m.counts, m.speedup))
        lines.append(f"  preferred: {_ranks(m.preferred)} (each rank added up to it pays off, "
                     "as predict's preferred count" + ("; no further than the largest run: the one-run "
                                                       "model has no band to vouch past it)" if capped else ")"))
    if m.fastest is not None and m.fastest != m.preferred:
        if m.fastest_measured:
            value = m.measured_s[m.fastest]
        else:
            value = m.time_s[m.counts.index(m.fastest)]
        # Without a band nothing vouches for a count past the largest run.
        beyond = m.fastest > largest
        unbanded = {"support": "past the largest run, with no band to vouch for it" if beyond else None}
        lines.append("  " + fastest_line(m.fastest, m.fastest_measured, f"time {value:.3f} s",
                                         **({} if m.speedup_band() is not None else unbanded)))
    lines.append(f"  model: {printable(m.model)}")
    lines += [f"warning: {printable(w)}" for w in m.warnings]
    return "\n".join(lines) + "\n"


def to_dict(m: RankPrediction) -> dict:
    return {
        "runs": [{
            "ranks": run.ranks,
            "time_s": run.time_s,
            "longest_rank": run.longest.rank,  # whose MPI phase time_s is
            "slowest_rank": run.slowest.rank,
            "imbalance": run.imbalance,
            "missing_ranks": run.missing,
            "per_rank": [{
                "rank": r.rank, "pid": r.pid, "file": r.source, "threads": r.threads,
                "wall_s": r.wall_s, "compute_s": r.compute_s,
                **{f"{k}_s": r.waits_s[k] for k in WAITS},
                "bytes": r.bytes, "mpi_init_s": r.init_s, "mpi_finalize_s": r.finalize_s,
            } for r in run.per_rank],
        } for run in m.runs],
        "model": m.model or None,  # None: no prediction (no run has every rank's records)
        "predicted": [{"ranks": c, "speedup": s, "time_s": t} for c, s, t in zip(m.counts, m.speedup, m.time_s)],
        # predict's and sweep's unit-neutral keys, beside the ones in ranks
        "count_unit": m.count_unit,
        "preferred_count": m.preferred,
        "fastest_count": m.fastest,
        "preferred_ranks": m.preferred,
        "fastest_ranks": m.fastest,
        "fastest_measured": m.fastest_measured,
        "warnings": m.warnings,
    }
