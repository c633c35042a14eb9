"""Exceptions raised by hogwild.

Every error a user can cause is a ``HogwildError`` with a one-line message that
names the problem (file, line, parameter, allowed values), so the CLI can print
it without a traceback.
"""
import numpy as np


class HogwildError(ValueError):
    """Bad input or configuration; the message says what and how to fix it."""


class DataFormatError(HogwildError):
    """A data file could not be parsed (the message names file and line)."""


class DivergenceError(HogwildError, ArithmeticError):
    """The parameters became NaN or Inf during training."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped training after a whole epoch. ``epoch`` epochs are done and,
    when the run had a checkpoint path, their state is in ``checkpoint``."""

    def __init__(self, epoch, checkpoint=None):
        super().__init__(f"interrupted after epoch {epoch}")
        self.epoch = epoch
        self.checkpoint = checkpoint


def check_int(name, value, minimum):
    """value as an int >= minimum, or a HogwildError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise HogwildError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def choose(options, name, what):
    """options[name] for a dict (or ``name`` itself for a tuple of names); an unknown
    name raises a HogwildError that lists the valid ones."""
    if isinstance(name, str) and name in options:
        return options[name] if isinstance(options, dict) else name
    raise HogwildError(f"unknown {what} {name!r}; choose one of: {', '.join(options)}")
