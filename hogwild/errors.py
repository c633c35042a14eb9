"""Exceptions raised by hogwild.

Every error a user can cause is a ``HogwildError`` with a one-line message that
names the problem (file, line, parameter, allowed values), so the CLI can print
it without a traceback.
"""


class HogwildError(ValueError):
    """Bad input or configuration; the message says what and how to fix it."""


class DataFormatError(HogwildError):
    """A data file could not be parsed (the message names file and line)."""


class DivergenceError(HogwildError, ArithmeticError):
    """The parameters became NaN or Inf during training."""


def choose(options, name, what):
    """options[name] for a dict (or ``name`` itself for a tuple of names); an unknown
    name raises a HogwildError that lists the valid ones."""
    if isinstance(name, str) and name in options:
        return options[name] if isinstance(options, dict) else name
    raise HogwildError(f"unknown {what} {name!r}; choose one of: {', '.join(options)}")
