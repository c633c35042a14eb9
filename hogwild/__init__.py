"""hogwild: lock-free, shared-memory, asynchronous SGD (Niu, Recht, Re and Wright, 2011).

Describe a sparse separable objective with plain per-sample ``update`` and ``loss``
functions (compiled by numba into the engine's loops), then ``fit`` it with many
workers writing one shared parameter array without locks.
"""
from hogwild import numba_cache

numba_cache.install()  # before any module below defines a cached numba function

from hogwild.engine import EpochRecord, FitResult, fit, usable_cores  # noqa: E402
from hogwild.errors import DataFormatError, DivergenceError, HogwildError  # noqa: E402
from hogwild.objective import Metric, Objective  # noqa: E402
from hogwild.schedulers import SCHEDULERS  # noqa: E402
from hogwild.steps import STEP_SCHEDULES  # noqa: E402
from hogwild.vertex_programs import vertex_program  # noqa: E402

__version__ = "0.1.0"

__all__ = ["Objective", "Metric", "fit", "FitResult", "EpochRecord", "usable_cores", "HogwildError",
           "DataFormatError", "DivergenceError", "SCHEDULERS", "STEP_SCHEDULES", "vertex_program", "__version__"]
