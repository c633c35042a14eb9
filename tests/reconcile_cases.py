"""What tests/test_reconcile_contract.py runs on each reconcile path, shared with
the MPI ranks of tests/mpi_jobs.py (case "contract"): the objectives and the
serial run they are judged against."""
import numpy as np
from numba import njit

from hogwild import Objective
from hogwild.backends.sharding import piece_plans, pieces_per_epoch, run_seed
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.kernels.compiler import compile_loops
from hogwild.problems.sparse_svm import svm_objective
from hogwild.schedulers import get_scheduler
from hogwild.steps import StepSchedule

SAMPLES = 1200
RUN = {"epochs": 3, "step": 0.25, "decay": 0.5, "seed": 11}  # steps 0.25, 0.125, 0.0625:
# sums of them are exact in float32, so "no update lost" is an equality


@njit(nogil=True, cache=True)
def count_update(e, params, data, step):
    params[0][data[0][e]] += step


@njit(nogil=True, cache=True)
def count_loss(e, params, data):
    return 0.0


def counting():
    """Sample e adds the step to coordinate e alone: every party's samples touch
    coordinates no other party touches, and each coordinate ends at the sum of the
    steps its sample was given."""
    return Objective(count_update, count_loss, (np.zeros(SAMPLES, np.float32),),
                     (np.arange(SAMPLES, dtype=np.int64),), SAMPLES, name="counting")


def svm():
    """A small SVM: shared coordinates, so the order of the updates shows in the
    last bits of the result."""
    X, y = make_sparse_classification(n_samples=SAMPLES, n_features=300, nnz_per_row=10,
                                      seed=5)
    return svm_objective(X, np.where(y > 0, 1.0, -1.0).astype(np.float32), reg=1e-3, seed=1)


OBJECTIVES = {"counting": counting, "svm": svm}


def serial_run_of_pieces(objective, every, epochs=RUN["epochs"], step=RUN["step"],
                         decay=RUN["decay"], seed=RUN["seed"]):
    """The serial run, in one thread with no reconcile, of the pieces that one MPI
    rank or one Ray node cuts its epochs into (hogwild.backends.sharding)."""
    loops = compile_loops(objective.update, objective.loss, objective.fastmath)
    params = tuple(np.array(p) for p in objective.params)
    n = objective.n_samples
    planner = get_scheduler("serial").planner(n, 1)
    schedule = StepSchedule("geometric", step, decay)
    for epoch in range(epochs):
        for plan in piece_plans(planner, n, 1, 0, pieces_per_epoch(n, 1, every), epoch,
                                run_seed(seed), 1):
            loops.run_spans(plan.runs, np.array([[0, plan.runs.size, n]], np.int64), 1,
                            params, objective.data, np.array([schedule(epoch)]), 0, 1,
                            epoch)
    return params
