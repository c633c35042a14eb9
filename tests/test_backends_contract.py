"""The contract between the engine and its backends, and the one table that says how
each kind of plan runs."""
import inspect

import numpy as np
import pytest

from hogwild.backends import BACKEND_NAMES, get_backend
from hogwild.backends.base import Backend
from hogwild.errors import HogwildError
from hogwild.kernels.compiler import CompiledLoops
from hogwild.kernels.plans import PLAN_KINDS
from hogwild.schedulers import SCHEDULERS, EpochPlan


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_every_backend_keeps_the_whole_contract(name):
    if name == "gpu":
        pytest.importorskip("numba.cuda", reason="backend 'gpu' needs numba-cuda")
    backend = get_backend(name)
    assert issubclass(backend, Backend) and backend.name == name
    assert not inspect.isabstract(backend), sorted(backend.__abstractmethods__)


def test_each_plan_kind_runs_with_a_compiled_loop_and_every_scheduler_makes_one():
    assert set(PLAN_KINDS) == {"spans", "locked", "gated", "phased", "free"}
    assert {kind.loop for kind in PLAN_KINDS.values()} <= set(CompiledLoops._fields)
    assert {scheduler.kind for scheduler in SCHEDULERS.values()} == set(PLAN_KINDS)
    with pytest.raises(HogwildError, match="unknown plan kind 'racy'; choose one of: spans, "
                                           "locked, gated, phased, free"):
        EpochPlan("racy", np.zeros(1, np.int64), 1, ())
