"""The parameter half of scikit-learn's estimator API (get_params, set_params,
repr), shared by the problems' estimators without depending on scikit-learn; the
estimators' training parameters, derived from the table of training options
(hogwild.options); and how an estimator's parameters become the engine's
TrainingConfig and RunControls."""
import functools
import inspect
import textwrap

import numpy as np
import scipy.sparse as sp

from hogwild.config import RUN_CONTROLS, RunControls, TrainingConfig
from hogwild.datasets.ratings import held_out_per_group
from hogwild.errors import HogwildError, check_seed
from hogwild.options import TRAINING, parameters_doc

TRAINING_DOC_SLOT = "{training parameters}"
HOLDOUT_STREAM = 0x484F4C44  # early stopping's draw of held-out samples, apart from the run's
RUN_DOC_SLOT = "{run attributes}"
RUN_ATTRIBUTES_DOC = """history_ : list of hogwild.results.EpochRecord
    One record per epoch run (step, seconds, updates, objective, the test metric
    when an eval_set is given, the held-out score under early_stopping);
    objective is NaN for an epoch not measured (the objective_every run control).
best_epoch_ : int or None
    Under early_stopping, the epoch whose model was kept (the best held-out
    score; 0: the start, where no epoch improved on it); None without it.
kept_record_ : hogwild.results.EpochRecord
    The record of the model kept: best_epoch_'s (epoch 0: the start's held-out
    and test metrics), else the last epoch's.
workers_ : int
    The workers that ran, in all.
distributed_ : dict or None
    What backend 'ray' or 'mpi' reports (traffic, staleness, algorithm).
replication_, replicated_ : str, dict or None
    The replication mode that ran ('auto' resolved) and what it copied.
setup_seconds_, startup_seconds_ : float
    The scheduler's preparation (e.g. colouring); starting worker processes.
data_bytes_, params_bytes_ : int
    The samples and parameters as trained: the least memory a fit takes.
streaming_ : dict or None
    How the samples were read from disk (see hogwild.streaming), or None."""


def training_parameters(own, notes=None, table=TRAINING, **defaults):
    """A class decorator for an estimator: its ``__init__`` takes keyword
    parameters only, ``own`` (name -> default: the problem's own parameters) and
    then every training option of hogwild.options.TRAINING, with ``defaults`` (the
    problem's) in place of the table's, and stores each unchanged under its own
    name (scikit-learn's convention). The line TRAINING_DOC_SLOT of the class
    docstring becomes the training options' numpydoc entries, with the problem's
    defaults and its ``notes``; the line RUN_DOC_SLOT, the fitted attributes every
    estimator keeps (Params.keep_run). ``notes`` (name -> a sentence added to the table's help; kept
    in ``training_notes`` for the command line). ``table``: the rows
    (hogwild.options.TRAINING)."""
    names = {option.name for option in table}
    unknown = sorted(set(defaults) - names) + sorted(set(notes or {}) - names)
    if unknown:
        raise TypeError(f"{unknown[0]!r} is not a training option")
    parameters = {**own, **{option.parameter: defaults.get(option.name, option.default)
                            for option in table}}

    def __init__(self, **params):
        for name in params:
            if name not in parameters:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                                f"argument {name!r}")
        for name, default in parameters.items():
            setattr(self, name, params.get(name, default))

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
           for name, default in parameters.items()])

    def decorate(cls):
        cls.__init__ = __init__
        cls.training_notes = dict(notes or {})
        __init__.__qualname__ = f"{cls.__name__}.__init__"
        cls.__doc__ = _filled(_filled(cls.__doc__, TRAINING_DOC_SLOT,
                                      parameters_doc(parameters, notes, table,
                                                     estimator=True)),
                              RUN_DOC_SLOT, RUN_ATTRIBUTES_DOC)
        return cls
    return decorate


def _filled(doc, slot, text):
    """``doc`` with its line ``slot``, if it has one, replaced by ``text``, indented
    as that line."""
    lines = doc.split("\n")
    at = next((i for i, line in enumerate(lines) if line.strip() == slot), None)
    if at is None:
        return doc
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    return "\n".join(lines[:at] + [textwrap.indent(text, indent)] + lines[at + 1:])


class Params:
    """For classes whose __init__ takes keyword parameters only and stores each
    unchanged under its own name (scikit-learn's convention)."""

    @classmethod
    def _param_names(cls):
        return tuple(name for name in inspect.signature(cls.__init__).parameters
                     if name != "self")

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                raise HogwildError(f"unknown parameter {name!r} for {type(self).__name__}; "
                                   f"valid: {', '.join(names)}")
            setattr(self, name, value)
        return self

    def training_config(self, **resolved):
        """The TrainingConfig of this estimator's training parameters, with
        ``resolved`` values (an automatic step, a derived seed) in their place: each
        checked by its row of the table of options, and against the others."""
        return TrainingConfig(**{**{option.name: getattr(self, option.parameter)
                                    for option in TRAINING}, **resolved})

    def held_out(self, n, what="samples", groups=None):
        """early_stopping's (training, held-out) indices of ``n`` samples, each sorted:
        a random validation_fraction of them held out (of each group's, leaving
        every group one, where ``groups`` gives each sample's), drawn from seed_;
        None without early_stopping."""
        if self.early_stopping is None:
            return None
        fraction, rng = self.validation_fraction, np.random.default_rng(
            (self.seed_, HOLDOUT_STREAM))
        if groups is None:
            held = np.zeros(n, bool)
            held[rng.permutation(n)[:int(round(fraction * n))]] = True
        else:
            held = held_out_per_group(groups, fraction, rng)
        count = int(held.sum())
        if not 1 <= count < n:
            raise HogwildError(f"validation_fraction={fraction:g} of {n} {what} holds out "
                               f"{count}: early_stopping needs at least one held-out and one "
                               "training sample")
        return np.flatnonzero(~held), np.flatnonzero(held)

    def keep_run(self, result):
        """The fitted attributes of RUN_ATTRIBUTES_DOC, from the engine's FitResult."""
        self.best_epoch_, self.kept_record_ = result.best_epoch, result.kept_record
        self.history_, self.workers_ = result.history, result.workers
        self.distributed_ = result.distributed
        self.replication_, self.replicated_ = result.replication, result.replicated
        self.setup_seconds_, self.startup_seconds_ = result.setup_seconds, result.startup_seconds
        self.data_bytes_, self.params_bytes_ = result.data_bytes, result.params_bytes
        self.streaming_ = result.streaming

    def __repr__(self):
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if v != defaults[k]]
        return f"{type(self).__name__}({', '.join(changed)})"


def drawn_seed(seed, backend="threads"):
    """The seed a run uses: ``seed`` checked, or for None 128 bits drawn from the
    operating system (as numpy's SeedSequence(None) draws), returned so that it
    can be recorded and passed again to reproduce the run. The ranks of an MPI job
    all use rank 0's draw: they must agree on the run's settings."""
    if check_seed(seed) is not None:
        return seed
    drawn = int(np.random.SeedSequence().entropy)
    if backend == "mpi":
        from hogwild.backends.mpi import import_mpi, in_mpi_job
        if in_mpi_job():
            drawn = import_mpi().COMM_WORLD.bcast(drawn, root=0)
    return drawn


def not_fitted(estimator, how):
    """The error of a method called before fit: a HogwildError that is also an
    AttributeError and, where scikit-learn is installed, its NotFittedError, so that
    its checks and its users' ``except`` clauses see it as well as ours."""
    message = f"this {type(estimator).__name__} is not fitted yet; call {how} first"
    return _not_fitted_class()(message)


@functools.cache
def _not_fitted_class():
    """NotFitted, and where scikit-learn is installed also its NotFittedError."""
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:
        return NotFitted
    return type("NotFittedError", (NotFittedError, NotFitted), {"__module__": __name__})


class NotFitted(HogwildError, AttributeError):
    """A method that needs a fitted model, called before fit (with scikit-learn, also
    its NotFittedError: either ``except`` catches it)."""


class InputTypeError(HogwildError, TypeError):
    """X holds values that are not numbers: a HogwildError, and the TypeError that
    scikit-learn's own estimators raise there."""


def as_matrix(X, estimator):
    """X as a scipy.sparse matrix or a 2-D numeric ndarray: X itself where it is one,
    with samples and features; anything else (lists, pandas frames, object or
    complex arrays, 1-D arrays) through scikit-learn's check_array where it is
    installed, whose errors its users know ("Reshape your data ...", "Complex data
    not supported"), else through numpy.asarray and the caller's own checks."""
    if (sp.issparse(X) or isinstance(X, np.ndarray)) and X.ndim == 2 \
            and X.dtype.kind in "biuf" and min(X.shape) > 0:
        return X
    try:
        from sklearn.utils import check_array
    except ImportError:
        return X if sp.issparse(X) else np.asarray(X)
    try:
        return check_array(X, accept_sparse=True, dtype="numeric", ensure_all_finite=False,
                           estimator=estimator, input_name="X")
    except ValueError as error:  # one line, as every other bad input's
        raise HogwildError(" ".join(str(error).split())) from None
    except TypeError as error:
        raise InputTypeError("X holds values that are not numbers: "
                             + " ".join(str(error).split())) from None


def run_controls(evaluate, controls):
    """RunControls of an estimator's fit: its own ``evaluate`` (from eval_set) and
    the caller's ``controls`` (callback, progress, checkpoint, checkpoint_every,
    resume)."""
    allowed = [name for name in RUN_CONTROLS if name != "evaluate"]
    for name in controls:
        if name not in allowed:
            raise TypeError(f"fit() got an unknown option {name!r}; run controls: "
                            f"{', '.join(allowed)} (test data goes in eval_set)")
    return RunControls(evaluate=evaluate, **controls)
