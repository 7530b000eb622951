"""``corecast tune-sim``'s replay: an online tuner (``tuners``) driven by a
measured curve used as the oracle."""
from __future__ import annotations

from typing import Sequence

from .tuners import Tuner


# The largest relative noise: past it 1 + noise * N(0, 1) is below 0 more often than once
# in six intervals (a performance that is not one; such draws are held at a trace of the best).
MAX_NOISE = 1.0


def simulate(
    tuner: Tuner,
    counts: Sequence[int],
    perf: Sequence[float],
    noise: float = 0.0,
    rng_seed: int = 0,
    max_steps: int = 50,
    trace: list | None = None,
) -> dict:
    """Replay ``tuner`` against a measured curve (``counts`` -> ``perf``, higher is better).

    Each step asks the tuner for a count, answers with the measured performance there,
    multiplied by ``1 + noise * N(0, 1)`` when ``noise`` > 0, and feeds it back.  Losses use
    the noise-free curve: ``loss = 1 - perf(chosen) / max(perf)``.

    ``steps`` counts the intervals until convergence, the convergence interval included:
    the first interval run at the converged count after the tuner declared convergence
    (so three seeds that already contain the answer take 4 steps).  ``sum_loss`` adds the
    loss of every one of those intervals; ``chosen`` is the converged count and
    ``final_loss`` its loss.  A tuner that has not converged after ``max_steps`` intervals
    stops there; ``chosen`` is then its best measured count.

    ``trace``, when given a list, receives one ``(count, observed_perf, loss)`` per step.
    """
    table = {int(c): float(p) for c, p in zip(counts, perf)}
    if not table:
        raise ValueError("empty curve")
    if not 0 <= noise <= MAX_NOISE:
        raise ValueError(f"noise must be a fraction from 0 to {MAX_NOISE:g}")
    top = max(table.values())
    import numpy as np  # the noise generator only: the tuners themselves need no numpy

    rng = np.random.default_rng(rng_seed)

    def loss(c: int) -> float:
        return 1.0 - table[c] / top

    steps, total = 0, 0.0
    while steps < max_steps:
        was_converged = tuner.converged
        c = tuner.next_count()
        if c not in table:
            raise ValueError(f"tuner chose count {c}, which the curve does not have")
        observed = table[c]
        if noise > 0:
            observed = max(observed * (1.0 + noise * rng.standard_normal()), 1e-12 * top)
        steps += 1
        total += loss(c)
        if trace is not None:
            trace.append((c, observed, loss(c)))
        tuner.observe(c, observed)
        if was_converged:
            break
    chosen = tuner.best if tuner.best is not None else max(table, key=table.get)
    return {"steps": steps, "chosen": int(chosen), "final_loss": loss(int(chosen)), "sum_loss": total}
