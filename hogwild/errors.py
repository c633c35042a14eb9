"""Exceptions raised by hogwild.

Every error a user can cause is a ``HogwildError`` with a one-line message that
names the problem (file, line, parameter, allowed values), so the CLI can print
it without a traceback.
"""
import math
import signal

import numpy as np


class HogwildError(ValueError):
    """Bad input or configuration; the message says what and how to fix it."""


class DataFormatError(HogwildError):
    """A data file could not be parsed (the message names file and line)."""


class DivergenceError(HogwildError, ArithmeticError):
    """The parameters became NaN or Inf during training."""


class WorkerLost(HogwildError):
    """A worker (a Ray node) died and the run was stopped; ``state_note`` says where,
    for the checkpoint of the state at that moment that the engine then writes."""

    def __init__(self, message, state_note):
        super().__init__(message)
        self.state_note = state_note


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT), SIGTERM or SIGHUP stopped training. After the first signal,
    the run stops after a whole epoch: ``epoch`` epochs are done and, when the run had
    a checkpoint path, their state is in ``checkpoint``. A second signal abandons the
    epoch under way (``epoch`` is None; the last checkpoint is intact).
    ``signum`` is the signal; a command line exits with 128 + signum."""

    def __init__(self, epoch, checkpoint=None, signum=signal.SIGINT):
        super().__init__(f"{signal.Signals(signum).name}: " + (
            f"interrupted after epoch {epoch}" if epoch is not None
            else "interrupted during an epoch"))
        self.epoch = epoch
        self.checkpoint = checkpoint
        self.signum = signum


def check_int(name, value, minimum, maximum=None):
    """value as an int >= minimum (and <= maximum), or a HogwildError naming the
    parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum \
            or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum:,}"
        raise HogwildError(f"{name} must be an integer {bounds}, got {value!r}")
    return int(value)


def check_nonnegative(name, value):
    """value as a float, or a HogwildError naming the parameter unless it is a finite
    number >= 0 (a regulariser, a scale)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
            or not 0 <= value < math.inf:
        raise HogwildError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def check_seed(seed):
    """A seed numpy accepts: None, an integer >= 0, a SeedSequence or a Generator."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        check_int("seed", seed, 0)
    elif not (seed is None or isinstance(seed, (np.random.SeedSequence,
                                                np.random.Generator))):
        raise HogwildError(f"seed must be None or an integer >= 0, got {seed!r}")
    return seed


def choose(options, name, what):
    """options[name] for a dict (or ``name`` itself for a tuple of names); an unknown
    name raises a HogwildError that lists the valid ones."""
    if isinstance(name, str) and name in options:
        return options[name] if isinstance(options, dict) else name
    raise HogwildError(f"unknown {what} {name!r}; choose one of: {', '.join(options)}")
