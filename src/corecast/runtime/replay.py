"""``corecast replay``: the current runtime model on the samples a run recorded.

Each recorded process goes through the predictor the live library calls
(``bridge.predict_window`` for regions and the process, ``kernelmodel.predict`` for
kernels), as one final window with a fresh history: what replay prints is what the run
would have printed with this model.  Differences from the live run, all small: the live
history credits each window's stalls to the team size that ran most in that window,
replay credits the whole run's to the team size that ran most calls; node-count
predictions (``--target-machine``) and steering are not replayed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .bound import RegionPrediction
from .samples import RecordedProcess, read_recording

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from .record import RegionSample


@dataclass
class ReplayedProcess:
    recorded: RecordedProcess
    target: int
    predicted_cores: int
    predictions: list[RegionPrediction]        # one per recorded region, process last
    kernels: list[tuple] = field(default_factory=list)  # (KernelStats, prediction or None)

    @property
    def process(self) -> tuple[RegionSample, RegionPrediction] | None:
        """The process record and its prediction, if the run recorded one."""
        for region, pred in zip(self.recorded.regions, self.predictions):
            if region["name"] == "process":
                return region, pred
        return None


def replay_process(proc: RecordedProcess, target: int | None = None,
                   histories: dict | None = None) -> ReplayedProcess:
    """Predictions for one recorded process, up to ``target`` threads (default: the
    recorded target) on a machine of that many cores.  ``histories`` (the bridge's
    {(region, object): RegionHistory}) holds what earlier windows saw, if anything."""
    from .bridge import predict_window

    target = max(1, int(target or proc.target or proc.cores))
    cores = proc.cores or max(target, *(k.compute_units for k in proc.kernels), 1)  # unrecorded: enough
    measured = proc.cpus_allowed if 0 < proc.cpus_allowed < cores else cores
    preds = predict_window(proc.regions, target, max(1, measured), target,
                           {} if histories is None else histories) if proc.regions else []
    kernels = []
    if proc.kernels:
        from . import kernelmodel

        kernels = [(k, kernelmodel.predict(k, target, cores)) for k in proc.kernels]
    return ReplayedProcess(proc, target, target, preds, kernels)


def replay(path: str, target: int | None = None) -> list[ReplayedProcess]:
    """Every process recorded in ``path``, predicted again (``InputError`` on bad files)."""
    return [replay_process(p, target) for p in read_recording(path)]
