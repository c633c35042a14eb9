"""The command line's value types: integers and numbers as people type them in
ASCII, since Python's int() and float() also take other digits ('\u0661'), blanks
and underscores, which the data files refuse."""
import argparse
import re


def integer(text):
    """An integer option: ASCII digits, with a sign (int() would also take '\u0661',
    ' 7 ' or '1_000', which the data files refuse)."""
    if re.fullmatch(r"[+-]?[0-9]+", text):
        return int(text)
    raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")


def number(text):
    """A number option: ASCII decimal or exponent notation, or nan / inf (refused
    later, naming the option, where they do not belong)."""
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", text,
                    re.IGNORECASE):
        return float(text)
    raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
