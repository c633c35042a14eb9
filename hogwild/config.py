"""How a run is configured: every training option declared once, here.

``TrainingConfig`` is what decides the trained model (epochs, steps, workers,
scheduler, backend and its settings, sample order, seed): frozen and validated
when built, so a bad value is named before any work. ``RunControls`` is what a
caller watches and keeps (evaluation, callback, progress bar, checkpoints,
resume); it does not change the result. hogwild.fit takes both, or their fields
as keywords; the estimators and the CLI build them from their own parameters.
"""
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional

from hogwild.backends import BACKEND_NAMES, distributed_settings
from hogwild.errors import HogwildError, check_int, check_seed, choose
from hogwild.limits import MAX_EPOCHS, parse_size
from hogwild.schedulers import SCHEDULERS
from hogwild.replication import MERGE_RULES, REPLICATION_MODES
from hogwild.replication import check as check_replication
from hogwild.steps import StepSchedule


@dataclass(frozen=True)
class TrainingConfig:
    """The options that decide a fit's result (see hogwild.fit for each).

    ``workers``: threads, processes or CUDA streams (None: every usable core), or
    threads per node with backend "ray"; more than 4 per usable core needs
    ``oversubscribe``. ``distributed``: backend "ray"'s settings, a
    hogwild.backends.ray.SSPSettings, or backend "mpi"'s, a
    hogwild.backends.mpi.AllreduceSettings (or a dict of its fields).

    ``replication``: "shared" (Hogwild!: every worker writes the one parameter
    copy), "worker" (each worker its own copy of every array) or "hot" (its own
    copies of only the rows whose id is in more than ``hot_fraction`` of the
    samples, from the objective's id_arrays; the rest shared), or "auto" (the
    CPU backends choose from the sparsity and a short probe, and say why in
    FitResult.replicated; see hogwild.replication.choose). Copies merge every
    ``merge_every`` updates of a worker (default: once an epoch for "worker",
    every replication.HOT_MERGE_EVERY updates for "hot") and at each epoch's end: per
    coordinate, the ``merge`` ("mean", "sum", or "mixed": the mean on hot rows and
    the sum on the rest) of the changes of the workers that made one, a
    coordinate one worker changed taking its value exactly (see
    hogwild.backends.replicas). With one worker every mode is bitwise the serial
    run; with more, runs are reproducible in distribution, as "shared"'s.

    ``memory``: the most memory the run may hold for its parameters and samples,
    in bytes or as a size ("8GB", "512MiB"; None: what the machine has available).
    Samples on disk (read-only memory maps, e.g. a Jumbo matrix or a binary cache)
    that do not fit beside the parameters are streamed from disk chunk by chunk
    (hogwild.streaming), with a warning saying so.
    """

    epochs: int = 10
    step: float = 0.1
    decay: float = 1.0
    step_schedule: str = "geometric"
    workers: Optional[int] = None
    scheduler: str = "hogwild"
    backend: str = "threads"
    distributed: Any = None
    shuffle_block: int = 1
    seed: Any = None
    oversubscribe: bool = False
    replication: str = "shared"
    merge_every: Optional[int] = None
    merge: str = "mean"
    hot_fraction: float = 0.01
    memory: Any = None

    def __post_init__(self):
        check_int("epochs", self.epochs, 1, MAX_EPOCHS)
        StepSchedule(self.step_schedule, self.step, self.decay)
        if self.workers is not None:
            check_int("workers", self.workers, 1)
        choose(SCHEDULERS, self.scheduler, "scheduler")
        choose(BACKEND_NAMES, self.backend, "backend")
        check_int("shuffle_block", self.shuffle_block, 1, 2**31 - 1)
        check_seed(self.seed)
        choose(REPLICATION_MODES, self.replication, "replication")
        if self.merge_every is not None:
            check_int("merge_every", self.merge_every, 1)
        choose(MERGE_RULES, self.merge, "merge")
        if not (isinstance(self.hot_fraction, (int, float)) and 0 < self.hot_fraction < 1):
            raise HogwildError(f"hot_fraction must be a fraction of the samples in (0, 1), "
                               f"got {self.hot_fraction!r}")
        check_replication(self.replication, self.scheduler, SCHEDULERS[self.scheduler].kind)
        if self.memory is not None:
            object.__setattr__(self, "memory", self.memory if isinstance(self.memory, int)
                               and not isinstance(self.memory, bool) and self.memory >= 1
                               else parse_size(self.memory))
        if not isinstance(self.oversubscribe, bool):
            raise HogwildError(f"oversubscribe must be True or False, got "
                               f"{self.oversubscribe!r}")
        object.__setattr__(self, "distributed",
                           distributed_settings(self.backend, self.distributed))

    @property
    def schedule(self):
        """The step of each epoch (hogwild.steps.StepSchedule)."""
        return StepSchedule(self.step_schedule, self.step, self.decay)


@dataclass(frozen=True)
class RunControls:
    """What a caller watches and keeps during a fit; none of it changes the result.

    Parameters
    ----------
    evaluate : hogwild.Metric, list of hogwild.Metric, or callable, optional
        Held-out measures added to each epoch's record: Metrics (computed where
        the parameters are), or ``evaluate(params) -> dict`` on host copies.
    callback : callable, optional
        ``callback(record)`` after each epoch, with its hogwild.results.EpochRecord.
    progress : callable, optional
        ``progress(done, total)``: the updates done so far in the run and its total.
    checkpoint : str or path, optional
        Where the state is written atomically after every ``checkpoint_every``
        epochs, after the last one, and after a Ctrl-C or SIGTERM.
    checkpoint_every : int or None, default 1
        Epochs between checkpoints (None: only after a Ctrl-C or SIGTERM).
    resume : str or path, optional
        Continue the run saved there, up to ``epochs`` in total.
    """

    evaluate: Any = None
    callback: Optional[Callable] = None
    progress: Optional[Callable] = None
    checkpoint: Any = None
    checkpoint_every: Optional[int] = 1
    resume: Any = None

    def __post_init__(self):
        if self.checkpoint_every is not None:
            check_int("checkpoint_every", self.checkpoint_every, 1)
        for name in ("callback", "progress"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise HogwildError(f"{name} must be a callable or None, got "
                                   f"{type(value).__name__}")


TRAINING_OPTIONS = tuple(f.name for f in dataclasses.fields(TrainingConfig))
RUN_CONTROLS = tuple(f.name for f in dataclasses.fields(RunControls))


def settle(config=None, controls=None, **options):
    """(TrainingConfig, RunControls) from either object (default: the defaults)
    with ``options`` (fields of either) replacing their values."""
    config = TrainingConfig() if config is None else config
    controls = RunControls() if controls is None else controls
    if not isinstance(config, TrainingConfig):
        raise HogwildError(f"config must be a hogwild.TrainingConfig, got "
                           f"{type(config).__name__}")
    if not isinstance(controls, RunControls):
        raise HogwildError(f"controls must be a hogwild.RunControls, got "
                           f"{type(controls).__name__}")
    unknown = sorted(set(options) - set(TRAINING_OPTIONS) - set(RUN_CONTROLS))
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r}; training options: "
                        f"{', '.join(TRAINING_OPTIONS)}; run controls: {', '.join(RUN_CONTROLS)}")
    training = {k: v for k, v in options.items() if k in TRAINING_OPTIONS}
    watching = {k: v for k, v in options.items() if k in RUN_CONTROLS}
    return (dataclasses.replace(config, **training) if training else config,
            dataclasses.replace(controls, **watching) if watching else controls)
