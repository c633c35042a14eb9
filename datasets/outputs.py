"""Files a run writes against the files it reads: one typo (``--save train.svm``)
must not replace a user's data with a model. Checked before anything is read or
trained, so the refusal costs nothing; the same file is recognised through links
(os.path.samefile), and a new file that would land among the part files of a
``--data`` folder or pattern (and be read as data by the next run) is refused too.
"""
import os
from pathlib import Path

from hogwild.datasets.parts import SKIPPED_PREFIXES, is_pattern
from hogwild.errors import HogwildError


def check_outputs(outputs, inputs, may_share=()):
    """Refuse (HogwildError, naming both options) an output that is a file the run
    reads, lies among the data files of an input folder or matches an input glob
    pattern, or is another output's file. ``outputs`` and ``inputs``: {option:
    path or None}; an input that names no file (a dataset name, a generated
    ``clicks:`` spec) is no file the run reads here. ``may_share``: (output, input)
    option pairs that may name one file (a checkpoint that a resumed run rewrites:
    read once, at the start)."""
    given = {option: str(path) for option, path in outputs.items() if path is not None}
    for option, path in given.items():
        for other, other_path in given.items():
            if other < option and _same(path, other_path):
                raise HogwildError(f"{other} and {option} both name {path}: one would replace "
                                   "the other; give each its own path")
        for source, spec in inputs.items():
            if spec is None or (option, source) in may_share:
                continue
            reason = _reads(str(spec), path)
            if reason is not None:
                raise HogwildError(f"{option} {path} {reason.format(source=source, spec=spec)}"
                                   "; give another path")


def _reads(spec, path):
    """Why writing ``path`` would overwrite or add to the files input ``spec`` names
    (a message with {source} and {spec} to fill), or None."""
    if os.path.isdir(spec):
        if Path(path).name.startswith(SKIPPED_PREFIXES):  # never read as a part file
            return None
        folder = os.path.dirname(os.path.abspath(path))
        if _same(folder, spec):
            return "is inside the {source} folder {spec}: the next run would read it as data"
        return None
    if is_pattern(spec) and not os.path.exists(spec):
        pattern = os.path.abspath(os.path.expanduser(spec))
        if Path(os.path.abspath(path)).match(pattern):
            return "matches the {source} pattern {spec}: the next run would read it as data"
        return None
    if _same(path, spec):
        return "is the {source} file: the run would replace it"
    return None


def _same(a, b):
    """Whether the paths ``a`` and ``b`` name one file or folder: an existing one
    through links (hard ones too), one still to be written by the same path once
    links are resolved."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # either missing, or a name the system refuses
        pass
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def check_script_outputs(parser, outputs, inputs, may_share=()):
    """check_outputs for a script's argparse ``parser``: a refusal is its one-line
    error, exit 2, as a usage error is."""
    try:
        check_outputs(outputs, inputs, may_share)
    except HogwildError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
