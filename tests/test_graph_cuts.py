"""Graph cuts: the simplex projection against a NumPy reference, the exact minimum
s-t cut (SciPy's maximum flow) on a real graph, and bad input."""
import numpy as np
import pytest
import scipy.sparse as sp

from hogwild import HogwildError
from hogwild.datasets.graphs import read_edge_list
from hogwild.paths import shared_data_dir
from hogwild.kernels.compiler import compile_loops
from hogwild.problems.graph_cuts import (cut_objective, cut_weight, exact_two_label_cut,
                                         multiway_cut, nearest_terminal_labels,
                                         simplex_projector)
from reference.naive import cut_sgd_epoch


def reference_projection(y):
    """Euclidean projection onto the simplex by bisection on the threshold."""
    lo, hi = y.min() - 1.0, y.max()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(y - mid, 0).sum() > 1:
            lo = mid
        else:
            hi = mid
    return np.maximum(y - (lo + hi) / 2, 0)


@pytest.mark.parametrize("labels", [2, 3, 8, 16, 33, 64])
def test_projection_matches_the_reference(labels):
    rng = np.random.default_rng(labels)
    X = rng.normal(0, 1, (200, labels)).astype(np.float32)
    expected = np.array([reference_projection(row.astype(np.float64)) for row in X])
    simplex_projector(labels)(X)
    np.testing.assert_allclose(X, expected, atol=2e-6)
    np.testing.assert_allclose(X.sum(axis=1), 1, atol=1e-5)


def test_sorting_networks_sort_every_zero_one_input():
    """The 0-1 principle: a comparator network sorts every input iff it sorts
    every sequence of zeros and ones."""
    import itertools

    from hogwild.problems.graph_cuts import sorting_network
    for size in range(1, 13):
        first, second = sorting_network(size)
        assert np.all(first < second) and np.all(second < size)
        for bits in itertools.product((0, 1), repeat=size):
            x = list(bits)
            for a, b in zip(first, second):
                if x[a] > x[b]:
                    x[a], x[b] = x[b], x[a]
            assert x == sorted(bits), (size, bits)
    assert sorting_network(8)[0].size == 19  # Batcher's count for 8 items


SNAP = {"facebook": ("snap-facebook-combined", "facebook_combined.txt"),
        "grqc": ("snap-ca-GrQc", "CA-GrQc.txt"),
        "enron": ("snap-email-Enron", "Email-Enron.txt.gz")}


def snap_edges(name):
    """(n, u, v) of a shared SNAP graph, each undirected edge once, or skip."""
    folder, file = SNAP[name]
    path = shared_data_dir() / folder / file
    if not path.exists():
        pytest.skip(f"{path} not found (set HOGWILD_DATA to the shared data folder)")
    g, _ = read_edge_list(path)
    return (g.n_vertices, *g.edges())


@pytest.fixture(scope="module")
def facebook():
    return snap_edges("facebook")


@pytest.mark.parametrize("graph,scheduler,workers", [
    ("facebook", "serial", 1), ("facebook", "hogwild", 2), ("facebook", "colored", 2),
    ("facebook", "cyclades", 2), ("grqc", "serial", 1), ("grqc", "hogwild", 2),
    ("grqc", "colored", 2), ("enron", "serial", 1), ("enron", "hogwild", 2),
    ("enron", "colored", 2)])
def test_two_terminal_cut_matches_the_exact_minimum_cut(graph, scheduler, workers):
    """Two terminal sets of 5 vertices drawn by seed; the default settings."""
    n, u, v = snap_edges(graph)
    chosen = np.random.default_rng(0).choice(n, 10, replace=False)
    terminals = {int(c): int(i >= 5) for i, c in enumerate(chosen)}
    exact = exact_two_label_cut(n, u, v, np.ones(u.size), terminals)
    result = multiway_cut(n, u, v, np.ones(u.size), terminals, 2, workers=workers,
                          scheduler=scheduler, seed=0)
    assert result.cut <= 1.02 * exact, (result.cut, exact)
    assert result.cut == cut_weight(u, v, np.ones(u.size, np.float32), result.labels)
    assert all(result.labels[t] == label for t, label in terminals.items())
    assert result.workers == workers


def test_eight_label_cut_beats_the_nearest_terminal_baseline(facebook):
    n, u, v = facebook
    chosen = np.random.default_rng(0).choice(n, 8, replace=False)
    terminals = {int(c): i for i, c in enumerate(chosen)}
    w = np.ones(u.size, np.float32)
    baseline = cut_weight(u, v, w, nearest_terminal_labels(n, u, v, terminals))
    result = multiway_cut(n, u, v, w, terminals, 8, workers=2, seed=0)
    assert result.cut < baseline


@pytest.mark.parametrize("scheduler", ["colored", "cyclades"])
def test_conflict_free_cut_is_bitwise_reproducible_across_workers(facebook, scheduler):
    n, u, v = facebook
    terminals = {0: 0, 1: 1, 2: 2}
    runs = [multiway_cut(n, u, v, np.ones(u.size), terminals, 3, epochs=3, workers=w,
                         scheduler=scheduler, seed=1).x for w in (1, 2)]
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("kwargs,message", [
    ({"n_labels": 1}, "labels must be an integer >= 2, got 1"),
    ({"terminals": {}}, "give at least one terminal vertex"),
    ({"terminals": {0: 5}}, "terminal 0 has label 5, outside 0..1"),
    ({"w": [1.0, -1.0]}, "edge weights must be finite and >= 0"),
    ({"u": [0]}, "edges need equal, non-zero numbers of u, v and w entries"),
])
def test_bad_input(kwargs, message):
    args = {"n_vertices": 3, "u": [0, 1], "v": [1, 2], "w": [1.0, 1.0],
            "terminals": {0: 0, 2: 1}, "n_labels": 2}
    args.update(kwargs)
    with pytest.raises(HogwildError, match=message):
        multiway_cut(**args, epochs=1)


def test_two_label_threshold_sweep_finds_the_best_cut_that_keeps_the_terminals():
    from hogwild.problems.graph_cuts import _best_threshold
    # path 0 - 1 - 2 - 3 with weights 5, 1, 5; terminals 0 (label 1) and 3 (label 0)
    u, v, w = np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([5.0, 1.0, 5.0])
    adj = sp.csr_matrix((np.concatenate([w, w]), (np.concatenate([u, v]),
                                                       np.concatenate([v, u]))), shape=(4, 4))
    fixed = np.array([1, 0, 0, 1], np.uint8)
    fixed_labels = np.array([1, -1, -1, 0])
    score = np.array([1.0, 0.6, 0.4, 0.0])  # the cheap edge (1, 2) sits at 0.5
    cut, threshold = _best_threshold(score, adj.indptr, adj.indices, adj.data, fixed,
                                     fixed_labels)
    assert (cut, threshold) == (1.0, 0.6)
    score = np.array([1.0, 0.2, 0.9, 0.0])  # order 0, 2, 1, 3: cuts 5, 11, 5
    cut, threshold = _best_threshold(score, adj.indptr, adj.indices, adj.data, fixed,
                                     fixed_labels)
    assert (cut, threshold) == (5.0, 1.0)


def test_exact_two_label_cut_on_a_small_graph():
    # path 0 - 1 - 2 - 3 (weights 5, 1, 5) plus a chord 0 - 2 (weight 2)
    u, v, w = np.array([0, 1, 2, 0]), np.array([1, 2, 3, 2]), np.array([5.0, 1.0, 5.0, 2.0])
    assert exact_two_label_cut(4, u, v, w, {0: 0, 3: 1}) == 3.0  # cut (1, 2) and (0, 2)
    assert exact_two_label_cut(4, u, v, w, {0: 0, 1: 1}) == 6.0
    assert exact_two_label_cut(4, u, v, w + 0.5, {0: 0, 3: 1}) is None  # not integers


@pytest.mark.parametrize("n_labels", [2, 3, 5])
def test_serial_cut_kernel_matches_the_numpy_reference(n_labels):
    """The compiled update (subgradient step, sorting-network projection) against
    the plain NumPy epoch of tests/reference, edge by edge in the same order."""
    rng = np.random.default_rng(n_labels)
    n_vertices, m, step = 40, 300, 0.02
    u, v = rng.integers(0, n_vertices, m), rng.integers(0, n_vertices, m)
    w = rng.uniform(0.5, 2.0, m)
    terminals = {i: i % n_labels for i in range(n_labels)}
    objective, fixed, _ = cut_objective(n_vertices, u, v, w, terminals, n_labels)
    X = objective.params[0].copy()
    X[n_labels:] = rng.dirichlet(np.ones(n_labels), n_vertices - n_labels)  # off-centre
    expected = X.astype(np.float64)
    loops = compile_loops(objective.update, objective.loss, objective.fastmath)
    for epoch in range(3):
        order = rng.permutation(m).astype(np.int64)
        loops.run_spans(order, np.array([[0, m, m]], np.int64), 1, (X,), objective.data,
                        np.array([step]), 0, 1, epoch)
        cut_sgd_epoch(*objective.data[:3], fixed, expected, step, order)
    np.testing.assert_allclose(X, expected, atol=2e-5)
    np.testing.assert_allclose(X.sum(axis=1), 1.0, atol=1e-5)
