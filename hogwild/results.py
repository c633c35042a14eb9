"""What a fit returns: one record per epoch, and the result of the whole run.
"""
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class EpochRecord:
    """One epoch: ``step`` is the step the backend applied (the schedule's, times
    the ranks under MPI's linear scaling rule, averaged over the epoch's updates
    during its warm-up); ``seconds`` is the update phase alone; drawing the epoch's
    plan (``plan_seconds``: batches, components) and evaluation are excluded; the
    held-out metrics took ``metric_seconds`` (so that a caller timing epochs by the
    clock can leave them out). ``objective`` is NaN for an epoch whose objective
    was not measured (RunControls.objective_every). ``decay_held``: the epoch was
    still leaving a saddle, so the next one keeps its step (see hogwild.steps)."""

    epoch: int
    step: float
    seconds: float
    updates: int
    updates_per_s: float
    objective: float
    metrics: dict = field(default_factory=dict)
    plan_seconds: float = 0.0
    metric_seconds: float = 0.0
    decay_held: bool = False


@dataclass
class FitResult:
    params: tuple
    history: list
    scheduler: str
    backend: str
    workers: int
    seed: Optional[int]
    setup_seconds: float = 0.0  # scheduler preparation, e.g. colouring the conflict graph
    startup_seconds: float = 0.0  # starting worker processes (processes backend)
    distributed: Optional[dict] = None  # backend "ray": staleness, waiting, traffic, restarts
    replication: str = "shared"  # TrainingConfig.replication
    replicated: Optional[dict] = None  # what "worker"/"hot" replicated (Backend.replicated)
    data_bytes: int = 0  # the samples (the objective's and held-out metrics' data) and
    params_bytes: int = 0  # the parameters: the least memory a run can hold (peak RSS
    # is reported against their sum)
    streaming: Optional[dict] = None  # samples read from disk: the chunking (SampleStream)
    best_epoch: Optional[int] = None  # early stopping: the epoch whose params these are
    start: Optional[EpochRecord] = None  # early stopping: the model before training (0)

    @property
    def kept_record(self):
        """The EpochRecord of the parameters returned: the best epoch's where early
        stopping kept it (``start``, epoch 0, where no epoch beat the start), else
        the last's."""
        if self.best_epoch == 0:
            return self.start
        return self.history[(self.best_epoch or len(self.history)) - 1]

    @property
    def objective(self):
        return self.kept_record.objective
