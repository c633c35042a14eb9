"""Step-size schedules. epoch counts from 0; t is the run's time in epochs, read
at the update (epoch + the fraction of the epoch's updates done before it).

constant:        step
geometric:       step * decay**epoch          (the Hogwild! paper's gamma <- beta * gamma)
inverse:         step / (1 + decay * epoch)   (1/t-style decay, per epoch)
inverse_updates: step / (1 + decay * t)       (1/t within the epoch too)

The first three hold one step over an epoch. inverse_updates lowers it as the
epoch goes, the way SGD's 1/t schedules (Pegasos, scikit-learn's SGDClassifier,
Vowpal Wabbit) do per sample. Large early steps then average out within the first
epoch instead of being applied to the epoch's last samples too. The compiled
loops read it from a table of SEGMENTS steps per epoch, at each run of samples,
by where the worker is in its share (EpochSteps).

The decay's clock (``epoch`` above) leaves out the epochs that were still leaving a
saddle (decay_holds): a model of products of factors starts near zero, where
every gradient is small, and takes a few epochs, more on larger matrices (the
random start is less aligned with the signal), to leave it; a decay counted from
the first epoch would spend the step there. The first epoch holds the decay when
its objective ended above the start (adaptive steps' first moves, and the noise
they give the factors, before the factors carry any signal); each later one while
its objective fell by more than the epoch before's (the descent still speeding
up). A convex objective's first epoch falls, or with nothing to learn stays: its
clock is the epoch count.
"""
import math
from dataclasses import dataclass

import numpy as np

from hogwild.errors import HogwildError, choose

STEP_SCHEDULES = ("constant", "geometric", "inverse", "inverse_updates")
# Steps per epoch of a schedule that changes within one: each 1/64 of a worker's
# share takes the schedule's step at its middle (news20 20-class SVM, 1/16 of an
# epoch per step against 1/4: 0.8434 against 0.8405 test accuracy after the first
# epoch, so finer is better; 64 adds nothing measurable to a loop)
SEGMENTS = 64


@dataclass(frozen=True)
class StepSchedule:
    kind: str
    step: float
    decay: float

    def __post_init__(self):
        choose(STEP_SCHEDULES, self.kind, "step schedule")
        if not (isinstance(self.step, (int, float)) and math.isfinite(self.step)
                and self.step > 0):
            raise HogwildError(f"step must be a finite number > 0, got {self.step!r}")
        if not (isinstance(self.decay, (int, float)) and not isinstance(self.decay, bool)
                and math.isfinite(self.decay)):
            raise HogwildError(f"decay must be a finite number, got {self.decay!r}")
        if self.kind == "geometric" and not 0 < self.decay <= 1:
            raise HogwildError(f"decay must be in (0, 1] for the geometric schedule, "
                               f"got {self.decay!r}")
        if self.kind == "constant" and self.decay != 1:
            raise HogwildError(f"decay={self.decay!r} has no effect with the constant schedule; "
                               "use the geometric or inverse schedule")
        if self.kind.startswith("inverse") and not self.decay >= 0:
            raise HogwildError(f"decay must be >= 0 for the {self.kind} schedule, got "
                               f"{self.decay!r}")

    @property
    def within_epoch(self):
        """Whether the step changes during an epoch."""
        return self.kind == "inverse_updates"

    def __call__(self, t):
        """The step at time ``t`` (in epochs; only inverse_updates reads its fraction)."""
        if self.kind == "geometric":
            return self.step * self.decay ** t
        if self.kind.startswith("inverse"):
            return self.step / (1.0 + self.decay * t)
        return self.step

    def epoch_steps(self, epoch):
        """The EpochSteps of epoch ``epoch``."""
        if not self.within_epoch:
            return EpochSteps(np.array([self(epoch)], np.float64))
        middles = epoch + (np.arange(SEGMENTS) + 0.5) / SEGMENTS
        return EpochSteps(self.step / (1.0 + self.decay * middles))

    def from_epoch(self, epoch):
        """The schedule whose epoch 0 is this one's epoch ``epoch`` (partial_fit's
        batch, a run of one epoch of its own): inverse_updates rescaled, any other
        the constant step of that epoch."""
        if self.within_epoch:
            base = 1.0 + self.decay * epoch
            return StepSchedule(self.kind, self.step / base, self.decay / base)
        return StepSchedule("constant", self(epoch), 1.0)


@dataclass(frozen=True)
class EpochSteps:
    """One epoch's steps, as the compiled loops read them: ``table`` holds one
    step, or SEGMENTS steps for equal parts of a worker's share of the epoch."""

    table: np.ndarray  # float64

    def over(self, lo, hi):
        """The steps of the part [lo, hi) of the epoch (fractions), as a table of
        its own: a loop that runs only that part reads it across its share."""
        if self.table.size == 1:
            return self
        size = self.table.size
        first = min(int(lo * size), size - 1)
        return EpochSteps(self.table[first:max(first + 1, math.ceil(hi * size))])

    def scaled(self, factor):
        """These steps times ``factor`` (MPI's linear scaling rule)."""
        return EpochSteps(self.table * factor)

    @property
    def mean(self):
        """The mean step over the epoch's updates (what its EpochRecord keeps)."""
        return float(self.table.mean())


def decay_holds(history, value, start):
    """Whether the epoch after ``history`` (EpochRecords), whose objective is
    ``value`` (the run's start: ``start``), holds the decay's clock: see the module
    docstring. An unmeasured (NaN) objective ends the hold."""
    if not math.isfinite(value):
        return False
    if not history:
        return value > start
    last = history[-1]
    if not last.decay_held:
        return False
    fell_before = history[-2].objective - last.objective if len(history) > 1 else 0.0
    return last.objective - value > max(fell_before, 0.0)


def decay_clock(history):
    """The schedule's epoch for the epoch after ``history``: the epochs run, less
    those that held the decay."""
    return len(history) - sum(record.decay_held for record in history)
