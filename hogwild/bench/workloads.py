"""The workloads the benchmarks share: for each problem, a dataset (the real one
when the shared data folder has it, else a small generated one), a run function
``run(scheduler, workers, backend, seed) -> measured(...)``, the peers that solve
the same problem, its supports (sparsity statistics) and its objective (for the
kernel-only measurements). ``hogwild bench`` and the scripts in scripts/ build
their runs from svm_run, mc_run and cuts_run, and summarise rounds with medians.
"""
import math
import statistics
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from hogwild.bench.peers import (liblinear_peer, sgd_classifier_peer, surprise_peer,
                                 torch_mc_peer, torch_svm_peer)
from hogwild.structure import Supports


def measured(history, metric, setup_seconds=0.0, startup_seconds=0.0,
             nonzeros_per_update=None):
    """One run's figures from its epoch records: the update phase's rate, the rate
    with each epoch's planning counted (end_to_end_per_s), the final objective and
    ``metric``, and their values per epoch."""
    seconds = sum(r.seconds for r in history)
    updates = sum(r.updates for r in history)
    result = {"epochs": len(history), "update_seconds": seconds,
              "updates_per_s": updates / seconds,
              "end_to_end_per_s": updates / (seconds + sum(r.plan_seconds for r in history)),
              "setup_seconds": setup_seconds, "startup_seconds": startup_seconds,
              "objective": history[-1].objective,
              "metric": metric, "metric_value": history[-1].metrics[metric],
              "objective_per_epoch": [r.objective for r in history],
              "metric_per_epoch": [r.metrics[metric] for r in history],
              "seconds_per_epoch": [r.seconds for r in history]}
    if nonzeros_per_update is not None:
        result["nonzeros_per_s"] = result["updates_per_s"] * nonzeros_per_update
    return result


def medians(rounds):
    """The rounds' figures of one configuration: the median of every number, the
    first round's lists and names (the same seed's per-epoch values), and the
    update rate of each round."""
    first = rounds[0]
    summary = {key: statistics.median(r[key] for r in rounds) if _number(value) else value
               for key, value in first.items()}
    summary["updates_per_s_per_round"] = [r["updates_per_s"] for r in rounds]
    return summary


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def svm_run(X, y, X_test, y_test, epochs, intercept=True, **options):
    """run(scheduler, workers, backend, seed) of SparseSVM with the hinge loss and the
    default schedule; with ``intercept``, an intercept wherever the scheduler allows
    one (a conflict-free scheduler needs the samples' supports, and an intercept is a
    coordinate of every sample), else never (every scheduler fits the same model).
    ``options``: more of the estimator's parameters (replication, merge_every)."""
    from hogwild.problems.sparse_svm import SparseSVM
    from hogwild.schedulers import get_scheduler

    nnz = X.nnz / X.shape[0]

    def run(scheduler, workers, backend, seed):
        model = SparseSVM(epochs=epochs, scheduler=scheduler, workers=workers,
                          backend=backend, random_state=seed, fit_intercept=intercept and
                          "supports" not in get_scheduler(scheduler).needs, **options)
        model.fit(X, y, eval_set=(X_test, y_test), objective_every=1)  # the curve
        return measured(model.history_, "test_error", model.setup_seconds_,
                        model.startup_seconds_, nonzeros_per_update=nnz)
    return run


def mc_run(train, test, rank, epochs, **options):
    """run(scheduler, workers, backend, seed) of MatrixFactorization (the biased model,
    its defaults, and ``options``), with the test RMSE."""
    from hogwild.problems.matrix_completion import MatrixFactorization

    def run(scheduler, workers, backend, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a few test ids unseen in training
            model = MatrixFactorization(rank=rank, epochs=epochs, scheduler=scheduler,
                                        workers=workers, backend=backend, random_state=seed,
                                        **options)
            model.fit(train, eval_set=test)
        return measured(model.history_, "test_rmse", model.setup_seconds_,
                        model.startup_seconds_)
    return run


def cuts_run(n, u, v, w, terminals, labels, epochs, **options):
    """run(scheduler, workers, backend, seed) of multiway_cut (with ``options``), with
    the rounded cut."""
    from hogwild.problems.graph_cuts import multiway_cut

    def run(scheduler, workers, backend, seed):
        result = multiway_cut(n, u, v, w, terminals, labels, epochs=epochs, workers=workers,
                              scheduler=scheduler, backend=backend, seed=seed, **options)
        return measured(result.history, "rounded_cut", result.setup_seconds)
    return run


@dataclass
class Workload:
    problem: str
    dataset: str
    unit: str                  # what one update is: "samples", "ratings", "edges"
    bytes_per_update: float    # memory traffic of one update if nothing were cached
    run: Callable              # run(scheduler, workers, backend, seed) -> dict
    peers: dict                # name -> (workers, peer(seed) -> dict, same metric)
    supports: object           # hogwild.structure.Supports, for the sparsity statistics
    objective: Callable        # () -> (Objective, step) of the hogwild kernel (sharing_cost)


def _svm(quick, workers):
    from hogwild.datasets.registry import SVM_DATASETS, load_svm_data
    from hogwild.datasets.synthetic import make_sparse_classification
    from hogwild.problems.sparse_svm import as_csr, auto_step, binary_labels, svm_objective

    if quick or not SVM_DATASETS["imdb-aclimdb"].available():
        X, y = make_sparse_classification(6000, 5000, nnz_per_row=30, seed=0)
        name, X, y, X_test, y_test, epochs = "synthetic-6000x5000", X[:5000], y[:5000], \
            X[5000:], y[5000:], 3
    else:
        train, test = load_svm_data("imdb-aclimdb")
        name, X, y, X_test, y_test, epochs = "imdb-aclimdb", train.X, train.y, test.X, \
            test.y, 20
    nnz = X.nnz / X.shape[0]

    run = svm_run(X, y, X_test, y_test, epochs)

    def peer(fit, threads=1):
        return threads, lambda seed: peer_result(fit(seed), "test_error", epochs)
    peers = {}
    if installed("sklearn"):
        peers["sgdclassifier-hinge"] = peer(lambda seed: sgd_classifier_peer(
            X, y, X_test, y_test, "hinge", 1e-4, epochs, seed))
        peers["sgdclassifier-log"] = peer(lambda seed: sgd_classifier_peer(
            X, y, X_test, y_test, "log_loss", 1e-4, epochs, seed))
    if installed("liblinear"):
        peers["liblinear"] = peer(lambda seed: liblinear_peer(X, y, X_test, y_test, 1e-4))
    if installed("torch"):
        step = auto_step(as_csr(X))
        peers["pytorch-hogwild"] = peer(lambda seed: torch_svm_peer(
            as_csr(X), y, as_csr(X_test), y_test, 1e-4, epochs, step, 0.9, workers, seed),
            workers)
    def objective():
        csr = as_csr(X)
        labels, _ = binary_labels(y, csr.shape[0])
        return svm_objective(csr, labels, "hinge", 1e-4, 0), auto_step(csr)
    # per nonzero: index and value read, weight read and written (4 bytes each)
    return Workload("svm", name, "samples", 16 * nnz + 16, run, peers,
                    Supports.from_csr(X), objective)


def _mc(quick, workers):
    from hogwild.datasets.jumbo import make_jumbo
    from hogwild.datasets.ratings import split_ratings
    from hogwild.datasets.registry import RATINGS_DATASETS, load_ratings
    from hogwild.problems.matrix_completion import (MatrixFactorization, mf_objective,
                                                    rating_model)

    rank = 8 if quick else 32
    if quick or RATINGS_DATASETS["ml-1m"].locate() is None:
        train, test, _ = make_jumbo(2000, 1500, 100_000, rank=4, noise=0.5, seed=0,
                                    folder=None)
        name, epochs = "jumbo-2000x1500x100000", 3
    else:
        train, test = split_ratings(load_ratings("ml-1m"), 0.2, seed=0)
        name, epochs = "ml-1m", 20

    run = mc_run(train, test, rank, epochs)

    peers = {}
    if installed("surprise") and installed("pandas"):
        peers["surprise-svd"] = 1, lambda seed: peer_result(
            surprise_peer(train, test, rank, epochs, seed), "test_rmse", epochs)
    if installed("torch"):
        model = MatrixFactorization(rank=rank, epochs=epochs, adaptive=False)  # plain SGD
        _, reg, bias_reg, step, init_scale = model.settings()
        peers["pytorch-hogwild"] = workers, lambda seed: peer_result(torch_mc_peer(
            train, test, rank, reg, bias_reg, init_scale, epochs, step, model.decay,
            workers, seed), "test_rmse", epochs)
    users = np.unique(train.users, return_inverse=True)[1].astype(np.int32)
    items = np.unique(train.items, return_inverse=True)[1].astype(np.int32)

    def objective():  # the biased model, fixed step, on the ratings in a shuffled order
        order = np.random.default_rng(0).permutation(users.size)
        return (mf_objective(users[order], items[order], train.values[order], rank=rank,
                             seed=1), rating_model("biased").step)
    # the rating (12 bytes), two factor rows and two biases read and written
    return Workload("mc", name, "ratings", 12 + 2 * 2 * 4 * rank + 16, run, peers,
                    Supports.from_keys(users, items), objective)


def _cuts(quick, workers):
    from hogwild.datasets.registry import load_graph
    from hogwild.paths import shared_data_dir
    from hogwild.problems.graph_cuts import cut_objective, random_terminals

    shared = (shared_data_dir() / "snap-facebook-combined").is_dir()
    data = "random:3000x20000" if quick or not shared else "snap-facebook-combined"
    n, u, v, w, _ = load_graph(data)
    labels, epochs = 8, (3 if quick else 20)
    terminals = random_terminals(n, labels)

    run = cuts_run(n, u, v, w, terminals, labels, epochs)
    # the edge (12 bytes + 2 flags), two rows of 8 labels read and written
    return Workload("cuts", data, "edges", 14 + 2 * 2 * 4 * labels, run, {},
                    Supports.from_edges(n, u, v),
                    lambda: (cut_objective(n, u, v, w, terminals, labels)[0], 0.1))


BUILDERS = {"svm": _svm, "mc": _mc, "cuts": _cuts}


def installed(module):
    """Peers run where installed (pip install hogwild[bench])."""
    import importlib.util

    return importlib.util.find_spec(module) is not None


def peer_result(measured, metric, epochs):
    """A peer's figures in the shape of ours (updates/s only for SGD peers)."""
    return {"epochs": epochs, "update_seconds": measured["fit_seconds"],
            "updates_per_s": measured.get("updates_per_s", math.nan), "objective": math.nan,
            "metric": metric, "metric_value": measured[metric],
            "objective_per_epoch": [], "metric_per_epoch": [], "seconds_per_epoch": []}


def growth_halves(interactions, seed=0):
    """Interactions arriving in two halves, for partial_fit: (first, second, users,
    items, old users, old items), a tenth of the users and a twentieth of the items
    only in the second half and the other pairs split at random, both matrices
    with their users and items reordered (``users``, ``items``: the original
    indices in the new order) so that the new ones come after the first half's
    (``old users``, ``old items`` of them)."""
    coo = interactions.tocoo()
    rng = np.random.default_rng(seed)
    new_users, new_items = rng.random(coo.shape[0]) < 0.1, rng.random(coo.shape[1]) < 0.05
    second = (rng.random(coo.nnz) < 0.5) | new_users[coo.row] | new_items[coo.col]
    users = np.concatenate([np.flatnonzero(~new_users), np.flatnonzero(new_users)])
    items = np.concatenate([np.flatnonzero(~new_items), np.flatnonzero(new_items)])

    def part(mask):
        return sp.csr_matrix((coo.data[mask], (coo.row[mask], coo.col[mask])),
                             shape=coo.shape)[users][:, items]
    return part(~second), part(second), users, items, int((~new_users).sum()), \
        int((~new_items).sum())
