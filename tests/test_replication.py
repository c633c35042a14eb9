"""replication="worker": each worker its own copy of the parameters, merged by
averaging the changes of the workers that made one (hogwild.backends.replicas)."""
import json

import numpy as np
import pytest

from hogwild import HogwildError, Objective, fit
from hogwild.backends.replicas import Replicas
from hogwild.cli import main
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.problems.sparse_svm import SparseSVM, as_csr, binary_labels, svm_objective
from test_engine import count_visit, least_squares, zero_loss


def svm():
    X, y = make_sparse_classification(2000, 1500, nnz_per_row=15, seed=0)
    X = as_csr(X)
    labels, _ = binary_labels(y, X.shape[0])
    return svm_objective(X, labels, "hinge", 1e-4, 0)


def test_one_worker_with_its_own_copy_is_bitwise_the_serial_run():
    objective = svm()  # with an intercept: a second parameter array
    serial = fit(objective, epochs=3, step=0.2, scheduler="serial", seed=4, workers=1)
    copied = fit(objective, epochs=3, step=0.2, seed=4, workers=1, replication="worker",
                 merge_every=97)
    assert copied.replication == "worker"
    for a, b in zip(serial.params, copied.params):
        np.testing.assert_array_equal(a, b)
    assert [r.objective for r in serial.history] == [r.objective for r in copied.history]


@pytest.mark.parametrize("merge_every", [None, 7, 1000])
def test_merges_lose_no_update_where_workers_touch_different_coordinates(merge_every):
    """Every sample owns one counter: after E epochs each counter is exactly E, on
    two workers with their own copies, whatever the merge interval."""
    objective = Objective(count_visit, zero_loss, params=np.zeros(5001, np.int64),
                          data=np.zeros(1), n_samples=5001)
    result = fit(objective, epochs=3, workers=2, seed=0, replication="worker",
                 merge_every=merge_every)
    np.testing.assert_array_equal(result.params[0], 3)
    assert sum(r.updates for r in result.history) == 3 * 5001


def test_a_coordinate_every_worker_moved_gets_the_mean_of_their_moves():
    shared = (np.array([1.0, 5.0, 2.0], np.float32),)
    replicas = Replicas(shared, 3)
    for w, moves in enumerate(([2.0, 5.0, 2.0], [4.0, 5.0, 2.0], [1.0, 5.0, 8.0])):
        replicas.of(w)[0][:] = moves
    replicas.merge(shared)
    # coordinate 0: moves +1 and +3 by two workers -> +2; 2: one worker -> its value
    np.testing.assert_array_equal(shared[0], [3.0, 5.0, 8.0])
    assert all(np.array_equal(replicas.of(w)[0], shared[0]) for w in range(3))


def test_two_workers_with_their_own_copies_reach_the_planted_solution():
    objective, w_true = least_squares()
    result = fit(objective, epochs=60, step=0.5, workers=2, seed=0, replication="worker",
                 merge_every=64)
    np.testing.assert_allclose(result.params[0], w_true, atol=1e-3)
    assert result.objective < 1e-7


def test_the_svm_estimator_and_the_command_line_take_replication(capsys):
    X, y = make_sparse_classification(2000, 1500, nnz_per_row=15, seed=1)
    model = SparseSVM(workers=2, seed=0, replication="worker", merge_every=16).fit(X, y)
    shared = SparseSVM(workers=2, seed=0).fit(X, y)  # 20 epochs each
    assert model.score(X, y) > shared.score(X, y) - 0.01
    # merged once an epoch, the averaged hot coordinates move half as far: slower
    rare = SparseSVM(workers=2, seed=0, replication="worker").fit(X, y)
    assert rare.history_[-1].objective > 1.1 * shared.history_[-1].objective
    assert main(["run", "svm", "--epochs", "2", "--replication", "worker", "--merge-every",
                 "500", "--json", "--checkpoint-every", "1000000"]) == 0
    assert json.loads(capsys.readouterr().out)["replication"] == "worker"


@pytest.mark.parametrize("options,message", [
    (dict(replication="node"), "unknown replication 'node'; choose one of: shared, worker"),
    (dict(replication="worker", scheduler="colored"),
     "replication='worker' runs lock-free plans (scheduler hogwild or serial); scheduler "
     "'colored' keeps its workers apart already"),
    (dict(replication="worker", backend="processes"),
     "backend 'processes' runs replication 'shared'; got 'worker'"),
    (dict(merge_every=0), "merge_every must be an integer >= 1, got 0"),
])
def test_a_mode_that_cannot_run_is_named(options, message):
    with pytest.raises(HogwildError) as error:
        fit(svm(), epochs=1, workers=2, **options)
    assert str(error.value) == message
