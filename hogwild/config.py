"""How a run is configured: TrainingConfig and RunControls.

``TrainingConfig`` is what decides the trained model (epochs, steps, workers,
scheduler, backend and its settings, sample order, seed): frozen and validated
when built, so a bad value is named before any work. Its fields, their checks and
its docstring come from the one table of training options, hogwild.options.
``RunControls`` is what a caller watches and keeps (evaluation, callback,
progress bar, checkpoints, resume); it does not change the result. hogwild.fit
takes both, or their fields as keywords; the estimators and the CLI build them
from their own parameters.
"""
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional

from hogwild.options import TRAINING, checked, parameters_doc
from hogwild.errors import HogwildError, check_int
from hogwild.steps import StepSchedule

def config_class(table):
    """The frozen dataclass of the options of ``table`` (a tuple of
    hogwild.options.Option): a field per row, checked by the rows when built."""
    def check(config):
        given = {option.name: getattr(config, option.name) for option in table}
        for name, value in checked(given, table).items():
            object.__setattr__(config, name, value)

    def schedule(config):
        """The step of each epoch (hogwild.steps.StepSchedule)."""
        return StepSchedule(config.step_schedule, config.step, config.decay)

    doc = ("The options that decide a fit's result, each declared once in "
           "hogwild.options.TRAINING;\nbuilt frozen and checked (a HogwildError names a bad "
           "value, or an option given\nwhere it would be ignored).\n\nParameters\n"
           "----------\n" + parameters_doc({}, table=table))
    return dataclasses.make_dataclass(
        "TrainingConfig",
        [(option.name, Any, dataclasses.field(default=option.default)) for option in table],
        frozen=True, namespace={"__module__": __name__, "__doc__": doc,
                                "__post_init__": check, "schedule": property(schedule)})


TrainingConfig = config_class(TRAINING)


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
    objective_every : int or None, default 1
        Epochs between measurements of the exact objective (a pass over the
        samples, a third of a short one-vs-rest epoch); the last epoch's is always
        measured, None measures only it (under early_stopping every epoch's is: any
        may be the one kept). An epoch not measured records NaN, and the
        divergence check then sees only its parameters' finiteness.
    """

    evaluate: Any = None
    callback: Optional[Callable] = None
    progress: Optional[Callable] = None
    checkpoint: Any = None
    checkpoint_every: Optional[int] = 1
    resume: Any = None
    objective_every: Optional[int] = 1

    def __post_init__(self):
        for name in ("checkpoint_every", "objective_every"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), 1)
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
