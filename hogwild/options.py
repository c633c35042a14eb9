"""Every training option declared once, as data: the TRAINING table.

A row (Option) gives an option's type, default, bounds or allowed values, what it
does (one text: the docstrings, the estimators' documentation and ``--help`` all
show it), and which backends accept a value other than its default. Everything
else is derived from the table:

- hogwild.config.TrainingConfig: its fields, their checks and its docstring;
- the command line's training option group (hogwild.cli.options);
- the estimators' training parameters, with each problem's own defaults, their
  checks and their documentation (hogwild.estimator.training_init).

An option added here appears in all of them; one removed disappears from all.
Rules between options are the rows' ``rule`` (replication against the scheduler,
the step schedule's step and decay, the distributed settings against the backend).
"""
import math
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Optional

from hogwild.backends import BACKEND_NAMES, distributed_settings
from hogwild.errors import HogwildError, check_int, check_seed, choose
from hogwild.limits import MAX_EPOCHS, parse_size
from hogwild.replication import MERGE_RULES, REPLICATION_MODES
from hogwild.replication import check as check_replication
from hogwild.schedulers import SCHEDULERS
from hogwild.steps import STEP_SCHEDULES, StepSchedule

KINDS = {  # kind -> the numpydoc type
    "int": "int", "number": "float", "choice": "str", "bool": "bool",
    "seed": "int, numpy.random.SeedSequence or numpy.random.Generator",
    "size": "int or str", "settings": "SSPSettings, AllreduceSettings or dict",
}


@dataclass(frozen=True)
class Option:
    """One training option. ``low``/``high`` bound an int or number (``open``:
    the bounds themselves are refused); ``choices`` are a choice's allowed values;
    ``optional``: None is allowed (the help says what it means). ``backends``:
    the backends that accept a value other than the default (None: all).
    ``rule(values)``: a check between
    options, given every option's checked value; it returns this option's final
    value. ``cli_words``: words the command line passes through as they are
    (--step auto); ``parameter_name``: the estimators' name for it, where it
    differs."""

    name: str
    kind: str
    default: Any
    help: str
    low: Optional[float] = None
    high: Optional[float] = None
    open: bool = False
    choices: tuple = ()
    optional: bool = False
    backends: Optional[tuple] = None
    rule: Optional[Callable] = None
    cli_words: tuple = ()
    parameter_name: Optional[str] = None

    @property
    def flag(self):
        return "--" + self.name.replace("_", "-")

    @property
    def parameter(self):
        """The estimators' parameter for this option: its name, or scikit-learn's
        where that differs (random_state, which clone, GridSearchCV and
        check_estimator set)."""
        return self.parameter_name or self.name

    @property
    def doc_type(self):
        """The numpydoc type."""
        if self.kind == "choice":
            return "{" + ", ".join(repr(c) for c in self.choices) + "}"
        return KINDS[self.kind] + (" or None" if self.optional else "")

    def check(self, value):
        """``value`` checked against this row alone (a size becomes bytes), or a
        HogwildError naming the option and what it accepts."""
        if value is None and (self.optional or self.kind in ("seed", "settings")):
            return value
        if self.kind == "int":
            return check_int(self.name, value, self.low, self.high)
        if self.kind == "number":
            return self._number(value)
        if self.kind == "choice":
            return choose(self.choices, value, self.name.replace("_", " "))
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise HogwildError(f"{self.name} must be True or False, got {value!r}")
            return value
        if self.kind == "seed":
            return check_seed(value)
        if self.kind == "size":
            positive_int = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            return value if positive_int else parse_size(value)
        return value  # settings: checked by their backend's rule

    def _number(self, value):
        finite = isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value)
        low_ok = finite and (self.low is None or (value > self.low if self.open
                                                  else value >= self.low))
        high_ok = finite and (self.high is None or (value < self.high if self.open
                                                    else value <= self.high))
        if low_ok and high_ok:
            return value
        raise HogwildError(f"{self.name} must be {self.bounds_text()}, got {value!r}")

    def bounds_text(self):
        """What a number option accepts, in words."""
        if self.low is not None and self.high is not None:
            left, right = ("(", ")") if self.open else ("[", "]")
            return f"a finite number in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"a finite number {'>' if self.open else '>='} {self.low:g}"
        return "a finite number"

    def refuse_unused(self, value, values):
        """A value other than the default where it would be ignored is an error."""
        if value == self.default:
            return
        if self.backends is not None and values["backend"] not in self.backends:
            raise HogwildError(f"{self.name} is for backend {_either(self.backends)}; "
                               f"this run has backend {values['backend']!r}")

    def doc(self, default, name=None):
        """This option's numpydoc entry with ``default`` (a problem's own), under
        ``name`` (default: the option's)."""
        return f"{name or self.name} : {self.doc_type}, default {default!r}\n" + textwrap.fill(
            self.help, 79, initial_indent="    ", subsequent_indent="    ")


def _either(names):
    """'a', 'b' or 'c'."""
    quoted = [repr(name) for name in names]
    return " or ".join(filter(None, [", ".join(quoted[:-1]), quoted[-1]]))


def _step_schedule(values):
    StepSchedule(values["step_schedule"], values["step"], values["decay"])
    return values["step_schedule"]


def _replication(values):
    scheduler = values["scheduler"]
    check_replication(values["replication"], scheduler, SCHEDULERS[scheduler].kind)
    return values["replication"]


def _distributed(values):
    return distributed_settings(values["backend"], values["distributed"])


TRAINING = (
    Option("epochs", "int", 10, "Passes over the samples.", low=1, high=MAX_EPOCHS),
    Option("early_stopping", "int", None,
           "Stop once this many epochs in a row have not improved the score on "
           "held-out samples, and keep the best epoch's model (None: run every epoch). "
           "The problems hold out validation_fraction of the training samples; an "
           "Objective of your own brings them as its validation Metric.",
           low=1, high=MAX_EPOCHS, optional=True),
    Option("validation_fraction", "number", 0.1,
           "The share of the training samples early_stopping holds out (the built-in "
           "problems; each user's share for implicit feedback).", low=0, high=0.5,
           open=True),
    Option("step", "number", 0.1,
           "The initial step (learning rate) of the schedule.", low=0, open=True,
           cli_words=("auto",)),
    Option("decay", "number", 1.0,
           "How the step decays per epoch: the geometric schedule's factor (in (0, 1]) "
           "or the inverse schedules' rate (>= 0); 1 with the constant schedule. "
           "Epochs still leaving a saddle (the first ending above the start, then "
           "each falling faster than the last) do not count."),
    Option("step_schedule", "choice", "geometric",
           "The step of epoch t: 'geometric' step * decay^t, 'inverse' step / (1 + "
           "decay * t), or 'constant' step; 'inverse_updates' is step / (1 + decay * t) "
           "with t read at each update (epochs and the fraction of the epoch done), so "
           "the step falls within an epoch too.", choices=STEP_SCHEDULES,
           rule=_step_schedule),
    Option("workers", "int", None,
           "Threads, processes or CUDA streams (None: every usable core, but no more "
           "than one per 128 KiB of samples: a tiny set trains on one), or threads "
           "per node (backend 'ray') or per rank (backend 'mpi'); more than 4 per "
           "usable core needs oversubscribe.", low=1, optional=True),
    Option("scheduler", "choice", "hogwild",
           "Which samples each worker runs, in what order (hogwild.schedulers): "
           "'hogwild' (lock-free), 'locked' (a spinlock per update), 'serial', "
           "'blocked' and 'fpsgd' (matrix completion's conflict-free grid blocks), "
           "'colored' and 'cyclades' (conflict-free, bitwise reproducible).",
           choices=tuple(SCHEDULERS)),
    Option("backend", "choice", "threads",
           "Where the workers run: 'threads', 'processes' (over shared memory), 'gpu' "
           "(CUDA streams of one NVIDIA GPU), 'ray' (nodes with a parameter server, "
           "bounded staleness) or 'mpi' (the ranks of an mpirun job, averaged by "
           "allreduce).", choices=BACKEND_NAMES),
    Option("distributed", "settings", None,
           "Backend 'ray''s settings (hogwild.backends.ray.SSPSettings) or backend "
           "'mpi''s (hogwild.backends.mpi.AllreduceSettings), or a dict of their "
           "fields (None: the defaults).", backends=("ray", "mpi"), rule=_distributed),
    Option("shuffle_block", "int", 1,
           "Samples are visited in a random order of runs of this many consecutive "
           "samples (sequential memory reads); 1 draws a uniform permutation each epoch.",
           low=1, high=2**31 - 1),
    Option("seed", "seed", None,
           "Seed of the sample order and of every random choice of the run (None: a "
           "new one each run, recorded as the estimators' seed_). The serial, blocked, "
           "colored and cyclades schedulers are then bitwise reproducible, and "
           "replication 'worker' for a given worker count; the others in "
           "distribution. The estimators call it random_state, as scikit-learn does.",
           parameter_name="random_state"),
    Option("oversubscribe", "bool", False,
           "Allow more than 4 workers per usable core (they mostly wait for a core)."),
    Option("replication", "choice", "shared",
           "'shared' (Hogwild!: every worker writes the one parameter copy), 'worker' "
           "(each worker its own copy of every array), 'hot' (its own copies of the "
           "rows whose id is in more than hot_fraction of the samples; the rest "
           "shared) or 'auto' (the CPU backends choose by the sparsity and a short "
           "probe, and say why in FitResult.replicated); copies are for the lock-free "
           "schedulers hogwild and serial (hogwild.replication).",
           choices=REPLICATION_MODES, rule=_replication),
    Option("merge_every", "int", None,
           "A worker's updates between merges of the copies (None: once an epoch for "
           "'worker', every hogwild.replication.HOT_MERGE_EVERY updates for 'hot'); "
           "copies also merge at each epoch's end.", low=1, optional=True),
    Option("merge", "choice", "mean",
           "How copies merge, per coordinate several workers changed: the 'mean' or "
           "the 'sum' of their changes, or 'mixed' (the mean on hot rows, the sum on "
           "the rest); a coordinate one worker changed takes its value exactly.",
           choices=MERGE_RULES),
    Option("hot_fraction", "number", 0.01,
           "A row is hot when its id is in more than this fraction of the samples.",
           low=0, high=1, open=True),
    Option("memory", "size", None,
           "The most memory the run holds for its parameters and samples, in bytes or "
           "as a size such as '8GB' or '512MiB' (None: what the machine has "
           "available); samples on disk beyond it stream from disk chunk by chunk "
           "(hogwild.streaming).", optional=True),
)

def checked(values, table=TRAINING):
    """Every option of ``values`` (name -> value, one per row of ``table``) checked,
    alone and then against the others; returns the final values (sizes in bytes,
    distributed settings as their backend's object)."""
    values = {option.name: option.check(values[option.name]) for option in table}
    for option in table:
        option.refuse_unused(values[option.name], values)
    for option in table:
        if option.rule is not None:
            values[option.name] = option.rule(values)
    return values


def parameters_doc(defaults, notes=None, table=TRAINING, estimator=False):
    """The numpydoc entries of every option of ``table``, with ``defaults`` (name ->
    default) where a caller's differ from the table's and ``notes`` (name -> a
    sentence added to the option's help); ``estimator``: under the estimators'
    parameter names (random_state), else the TrainingConfig's fields."""
    notes = notes or {}

    def name(option):
        return option.parameter if estimator else option.name

    return "\n".join(option.doc(defaults.get(name(option), option.default), name(option))
                     + ("\n" + textwrap.fill(notes[option.name], 79, initial_indent="    ",
                                             subsequent_indent="    ")
                        if option.name in notes else "")
                     for option in table)
