"""hogwild: lock-free, shared-memory, asynchronous SGD (Niu, Recht, Re and Wright, 2011).

Describe a sparse separable objective with plain per-sample ``update`` and ``loss``
functions (compiled by numba into the engine's loops), then ``fit`` it with many
workers writing one shared parameter array without locks.
"""
import sys as _sys
from pathlib import Path as _Path

# `python -m hogwild.cli` imports this package before the command's own start-up
# guard could run: a Ctrl-C (or SIGTERM) during numba's import below is recorded
# instead, and the command ends with exit 130 (143) as `hogwild` does.
if _sys.argv[:1] == ["-m"] and {"hogwild.cli", "-mhogwild.cli"} & set(
        getattr(_sys, "orig_argv", ())):
    import hogwild_launcher as _launcher
    _launcher.guard_start_up(raise_at_once=False)

# In a source checkout the subpackages hogwild.problems and hogwild.datasets are the
# folders problems/ and datasets/ beside this one (pyproject's package-dir). pip's
# installs map them; this makes the checkout itself import the same way, so that
# `python -m pytest` at its root, which imports hogwild from the working directory,
# works whatever was installed last (a regular install over an editable one, say).
if (_Path(__file__).resolve().parent.parent / "pyproject.toml").is_file():
    __path__.append(str(_Path(__file__).resolve().parent.parent))  # noqa: F821

from hogwild import numba_cache  # noqa: E402

numba_cache.install()  # before any module below defines a cached numba function

from hogwild.errors import DataFormatError, DivergenceError, HogwildError  # noqa: E402

# The engine's names are imported when first used, so that a program that reads a
# file (hogwild.datasets) or loads a model does not pay for the engine, its
# backends and schedulers at start-up.
_LAZY = {"RunControls": "hogwild.config", "TrainingConfig": "hogwild.config",
         "fit": "hogwild.engine", "usable_cores": "hogwild.limits",
         "EpochRecord": "hogwild.results", "FitResult": "hogwild.results",
         "Metric": "hogwild.objective", "Objective": "hogwild.objective",
         "SCHEDULERS": "hogwild.schedulers", "STEP_SCHEDULES": "hogwild.steps",
         "vertex_program": "hogwild.vertex_programs"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'hogwild' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = ["Objective", "Metric", "fit", "TrainingConfig", "RunControls", "FitResult",
           "EpochRecord", "usable_cores", "HogwildError", "DataFormatError", "DivergenceError",
           "SCHEDULERS", "STEP_SCHEDULES", "vertex_program", "__version__"]
