"""hogwild: lock-free, shared-memory, asynchronous SGD (Niu, Recht, Re and Wright, 2011).

Describe a sparse separable objective with plain per-sample ``update`` and ``loss``
functions (compiled by numba into the engine's loops), then ``fit`` it with many
workers writing one shared parameter array without locks.
"""
from pathlib import Path as _Path

# In a source checkout the subpackages hogwild.problems and hogwild.datasets are the
# folders problems/ and datasets/ beside this one (pyproject's package-dir). pip's
# installs map them; this makes the checkout itself import the same way, so that
# `python -m pytest` at its root, which imports hogwild from the working directory,
# works whatever was installed last (a regular install over an editable one, say).
if (_Path(__file__).resolve().parent.parent / "pyproject.toml").is_file():
    __path__.append(str(_Path(__file__).resolve().parent.parent))  # noqa: F821

from hogwild import numba_cache  # noqa: E402

numba_cache.install()  # before any module below defines a cached numba function

from hogwild.config import RunControls, TrainingConfig  # noqa: E402
from hogwild.engine import fit  # noqa: E402
from hogwild.limits import usable_cores  # noqa: E402
from hogwild.results import EpochRecord, FitResult  # noqa: E402
from hogwild.errors import DataFormatError, DivergenceError, HogwildError  # noqa: E402
from hogwild.objective import Metric, Objective  # noqa: E402
from hogwild.schedulers import SCHEDULERS  # noqa: E402
from hogwild.steps import STEP_SCHEDULES  # noqa: E402
from hogwild.vertex_programs import vertex_program  # noqa: E402

__version__ = "0.1.0"

__all__ = ["Objective", "Metric", "fit", "TrainingConfig", "RunControls", "FitResult",
           "EpochRecord", "usable_cores", "HogwildError", "DataFormatError", "DivergenceError",
           "SCHEDULERS", "STEP_SCHEDULES", "vertex_program", "__version__"]
