"""Graph cuts: the Hogwild! paper's multiway-cut relaxation.

Given a weighted graph and terminal vertices with fixed labels among D, find
x_v in the probability simplex of R^D for every vertex minimising

    sum over edges (u, v) of w_uv ||x_u - x_v||_1,      x_t = e_label(t) for terminals.

Each sample is an edge: a subgradient step on w ||x_u - x_v||_1 followed by the
Euclidean projection of x_u and x_v back onto the simplex (the sort-based
O(D log D) algorithm of Held et al. / Duchi et al. 2008). Rounding gives each
vertex the label of its largest coordinate (with two labels, the best threshold
on x_v[1] when it cuts less); the fit keeps the best rounding seen over the
epochs (the rounded cut of an SGD iterate can get worse as steps
shrink around a fractional point), so the reported cut never regresses.
For two labels the relaxation is the minimum s-t cut's LP, whose optimum is the
exact minimum cut.
"""
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
from numba import njit
from scipy.sparse import csr_matrix

from hogwild.config import TrainingConfig, settle
from hogwild.kernels.stack import stack_array
from hogwild.structure import IdArray, Supports
from hogwild.engine import fit as engine_fit
from hogwild.errors import HogwildError, check_int
from hogwild.limits import available_memory
from hogwild.objective import Metric, Objective

MAX_LABELS = 64


def sorting_network(size):
    """Batcher's odd-even merge sort for ``size`` items as two int64 arrays of
    compare-exchange positions (first[c] < second[c]). Built for the next power of
    two; comparators reaching past ``size`` are dropped, which is exact because the
    missing items would be +inf and never move. Branch-free, it sorts the short
    rows of a projection 2-5x faster than insertion sort."""
    n = 1
    while n < size:
        n *= 2
    pairs = []
    p = 1
    while p < n:
        k = p
        while k >= 1:
            for j in range(k % p, n - k, 2 * k):
                for i in range(min(k, n - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < size:
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    pairs = np.array(pairs, np.int64).reshape(-1, 2)
    return np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])


@njit(nogil=True, inline="always")
def project_row(X, v, scratch, first, second):
    """Project row v of X onto the probability simplex, in place: sort the row into
    a stack buffer with the sorting network (first, second), find the threshold
    theta with sum(max(x - theta, 0)) = 1, clip."""
    k = scratch.size
    for j in range(k):
        scratch[j] = X[v, j]
    for c in range(first.size):  # compare-exchange, ascending
        a, b = scratch[first[c]], scratch[second[c]]
        scratch[first[c]] = min(a, b)
        scratch[second[c]] = max(a, b)
    total = np.float32(0.0)
    theta = np.float32(0.0)
    for i in range(k - 1, -1, -1):  # largest first
        total += scratch[i]
        candidate = (total - np.float32(1.0)) / np.float32(k - i)
        if scratch[i] - candidate > 0:
            theta = candidate
    for j in range(k):
        X[v, j] = max(X[v, j] - theta, np.float32(0.0))


def simplex_projector(n_labels):
    """A compiled function projecting every row of a float32[n, n_labels] array onto
    the probability simplex in place (the kernels' projection, callable alone)."""
    k = int(n_labels)
    first, second = sorting_network(k)

    @njit(nogil=True)
    def project_rows(X):
        scratch = stack_array(k, np.float32)
        for v in range(X.shape[0]):
            project_row(X, v, scratch, first, second)

    return project_rows


def cut_kernels(n_labels):
    """(update, loss) for D = n_labels (a compile-time constant of the kernel).

    params = (X float32[n_vertices, D],)
    data   = (u int32[m], v int32[m], w float32[m], fixed uint8[n_vertices])
    """
    k = int(n_labels)
    first, second = sorting_network(k)

    def update(e, params, data, step):
        X = params[0]
        u, v = data[0][e], data[1][e]
        g = np.float32(step) * data[2][e]
        move_u = data[3][u] == 0
        move_v = data[3][v] == 0
        for j in range(k):
            d = X[u, j] - X[v, j]
            if d > 0:
                if move_u:
                    X[u, j] -= g
                if move_v:
                    X[v, j] += g
            elif d < 0:
                if move_u:
                    X[u, j] += g
                if move_v:
                    X[v, j] -= g
        scratch = stack_array(k, np.float32)
        if move_u:
            project_row(X, u, scratch, first, second)
        if move_v:
            project_row(X, v, scratch, first, second)

    def loss(e, params, data):
        X = params[0]
        u, v = data[0][e], data[1][e]
        total = 0.0
        for j in range(k):
            total += abs(X[u, j] - X[v, j])
        return data[2][e] * total

    return update, loss


@njit(nogil=True, cache=True)
def _best_threshold(score, indptr, indices, weights, fixed, fixed_labels):
    """Two labels: the threshold t (label 1 iff score >= t) with the smallest cut
    that keeps every terminal's label, by one sweep in decreasing score (flipping
    a vertex to label 1 changes the cut by its edge weight to label-0 neighbours
    minus that to label-1 neighbours). Returns (cut, threshold); the cut is inf if
    no threshold keeps the terminals (never, for scores from the relaxation)."""
    order = np.argsort(-score, kind="mergesort")
    n = score.size
    label = np.zeros(n, np.int8)
    ones_left = 0
    for v in range(n):
        if fixed[v] and fixed_labels[v] == 1:
            ones_left += 1
    zeros_flipped = 0
    cut = 0.0
    best_cut, best_t = np.inf, np.inf
    for i in range(n):
        v = order[i]
        for k in range(indptr[v], indptr[v + 1]):
            cut += weights[k] if label[indices[k]] == 0 else -weights[k]
        label[v] = 1
        if fixed[v]:
            if fixed_labels[v] == 1:
                ones_left -= 1
            else:
                zeros_flipped += 1
        at_boundary = i + 1 == n or score[order[i + 1]] < score[v]
        if ones_left == 0 and zeros_flipped == 0 and at_boundary and cut < best_cut:
            best_cut, best_t = cut, score[v]
    return best_cut, best_t


@njit(nogil=True, inline="always")
def _argmax_label(X, vertex):
    best = 0
    for label in range(1, X.shape[1]):
        if X[vertex, label] > X[vertex, best]:
            best = label
    return best


def argmax_cut_share(e, params, data):
    """Edge e's weight when the argmax rounding (terminals keep their label: their
    rows sit at its vertex) puts its ends apart, else 0: averaged over the edges, the
    rounded cut per edge. What early_stopping watches (a cut has no held-out
    samples: the cut itself is the measure)."""
    X = params[0]
    return data[2][e] if _argmax_label(X, data[0][e]) != _argmax_label(X, data[1][e]) else 0.0


def cut_weight(u, v, w, labels):
    """Total weight of the edges whose ends have different labels."""
    return float(np.sum(w[labels[u] != labels[v]], dtype=np.float64))


@dataclass
class CutResult:
    labels: np.ndarray        # best rounding seen (terminals keep their labels)
    cut: float                # its cut weight
    relaxation: float         # final relaxed objective (sum of w ||x_u - x_v||_1)
    x: np.ndarray             # final relaxed solution, float32[n_vertices, D]
    history: list             # engine records, with metrics "rounded_cut"
    workers: int
    setup_seconds: float
    replication: str = "shared"         # the mode that ran (FitResult.replication)
    replicated: Optional[dict] = None   # what it copied (FitResult.replicated)
    distributed: Optional[dict] = None  # backends ray and mpi: FitResult.distributed
    best_epoch: Optional[int] = None    # early stopping: the epoch x is from (0: the start)
    start: Optional[object] = None      # early stopping: the start's EpochRecord


def cut_objective(n_vertices, u, v, w, terminals, n_labels):
    """(Objective, fixed, fixed_labels) of the relaxation, after checking the input:
    free vertices start at the simplex's centre, terminals at their label's vertex;
    fixed[v] = 1 and fixed_labels[v] = its label for terminals."""
    n_labels = check_int("labels", n_labels, 2)
    if n_labels > MAX_LABELS:
        raise HogwildError(f"labels must be at most {MAX_LABELS}, got {n_labels}")
    n_vertices = check_int("n_vertices", n_vertices, 2, 2**31 - 1)
    u, v = (_vertex_numbers(ends, name, n_vertices) for ends, name in ((u, "u"), (v, "v")))
    w = np.ascontiguousarray(w, np.float32)
    if not len(u) == len(v) == len(w) or len(u) == 0:
        raise HogwildError("edges need equal, non-zero numbers of u, v and w entries")
    if not terminals:
        raise HogwildError("give at least one terminal vertex (vertex -> label)")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise HogwildError("edge weights must be finite and >= 0 (and within float32's range)")
    needed, memory = n_vertices * (4 * n_labels + 9), available_memory()  # X, fixed, labels
    if memory is not None and needed > memory:
        raise HogwildError(f"{n_vertices:,} vertices of {n_labels} labels need "
                           f"{needed / 2**30:.1f} GiB, more than the {memory / 2**30:.1f} GiB "
                           "of memory available")
    X = np.full((n_vertices, n_labels), 1.0 / n_labels, np.float32)
    fixed = np.zeros(n_vertices, np.uint8)
    fixed_labels = np.full(n_vertices, -1, np.int64)
    for vertex, label in terminals.items():
        if not (isinstance(vertex, (int, np.integer)) and 0 <= vertex < n_vertices):
            raise HogwildError(f"terminal {vertex!r} is not a vertex number in "
                               f"0..{n_vertices - 1}")
        if not (isinstance(label, (int, np.integer)) and 0 <= label < n_labels):
            raise HogwildError(f"terminal {vertex} has label {label!r}, outside "
                               f"0..{n_labels - 1}")
        X[vertex] = 0.0
        X[vertex, label] = 1.0
        fixed[vertex] = 1
        fixed_labels[vertex] = label
    unlabelled = sorted(set(range(n_labels)) - set(int(label) for label in terminals.values()))
    if unlabelled:
        raise HogwildError(f"label {unlabelled[0]} has no terminal vertex: a multiway cut needs "
                           f"at least one per label (labels 0..{n_labels - 1})")
    update, loss = cut_kernels(n_labels)
    objective = Objective(update, loss, (X,), (u, v, w, fixed), len(u),
                          name=f"multiway-cut-{n_labels}",
                          supports=Supports.from_edges(n_vertices, u, v),
                          id_arrays=(IdArray(0, (0,), (3,)), IdArray(1, (0,), (3,))))
    return objective, fixed, fixed_labels


def _vertex_numbers(ends, name, n_vertices):
    """Edge ends as int32 vertex numbers, or a HogwildError naming the first outside
    0..n_vertices-1 (the kernels would write past the array)."""
    ends = np.asarray(ends)
    whole = ends.dtype.kind in "iu" or (ends.dtype.kind == "f" and np.all(ends == np.round(ends)))
    if ends.size and not whole:
        raise HogwildError(f"edge ends {name} must be integer vertex numbers, got {ends.dtype}")
    outside = np.flatnonzero((ends < 0) | (ends >= n_vertices))
    if outside.size:
        raise HogwildError(f"edge {outside[0]}: {name} = {ends[outside[0]]} is not a vertex "
                           f"number in 0..{n_vertices - 1}")
    return np.ascontiguousarray(ends, np.int32)


# 200 epochs, step 0.1, decay 0.98 reach the exact minimum s-t cut on the shared SNAP
# graphs; fewer epochs leave vertices far from every terminal undecided.
CUT_TRAINING = TrainingConfig(epochs=200, step=0.1, decay=0.98)


def multiway_cut(n_vertices, u, v, w, terminals, n_labels, config=CUT_TRAINING,
                 controls=None, **options):
    """Solve the relaxation with Hogwild! SGD and round it.

    terminals: dict vertex -> label in 0..n_labels-1 (at least one vertex).
    Free vertices start at the simplex's centre. ``config``, ``controls`` and
    ``options`` are hogwild.fit's, with CUT_TRAINING's defaults; the evaluation is
    the rounded cut's (each epoch's ``rounded_cut`` metric), so ``evaluate`` is
    not an option. early_stopping watches the argmax rounding's cut (there is no
    held-out data; validation_fraction is unused) and keeps the best epoch's x.
    """
    config, controls = settle(config, controls, **options)
    if controls.evaluate is not None:
        raise HogwildError("multiway_cut evaluates the rounded cut itself; evaluate is not "
                           "an option")
    objective, fixed, fixed_labels = cut_objective(n_vertices, u, v, w, terminals, n_labels)
    n_labels = objective.params[0].shape[1]
    u, v, w = objective.data[:3]
    best = {"cut": np.inf, "labels": None}
    if n_labels == 2:
        adjacency = csr_matrix((np.concatenate([w, w]), (np.concatenate([u, v]),
                                                        np.concatenate([v, u]))),
                               shape=(n_vertices, n_vertices))

    def evaluate(params):
        labels = np.argmax(params[0], axis=1)
        labels[fixed == 1] = fixed_labels[fixed == 1]
        cut = cut_weight(u, v, w, labels)
        if n_labels == 2:  # the best threshold on x_v[1] is at least as good as argmax
            swept, threshold = _best_threshold(params[0][:, 1], adjacency.indptr,
                                               adjacency.indices, adjacency.data, fixed,
                                               fixed_labels)
            if swept < cut:
                cut, labels = swept, (params[0][:, 1] >= threshold).astype(np.int64)
        if cut < best["cut"]:
            best.update(cut=cut, labels=labels)
        return {"rounded_cut": cut}

    if config.early_stopping is not None:
        objective = objective.with_validation(Metric("argmax_cut_per_edge", argmax_cut_share,
                                                     (u, v, w), len(u)))
    result = engine_fit(objective, config, replace(controls, evaluate=evaluate))
    return CutResult(labels=best["labels"], cut=best["cut"],
                     relaxation=result.objective * len(u), x=result.params[0],
                     history=result.history, workers=result.workers,
                     setup_seconds=result.setup_seconds, replication=result.replication,
                     replicated=result.replicated, distributed=result.distributed,
                     best_epoch=result.best_epoch, start=result.start)


def random_terminals(n_vertices, n_labels, per_label=1, seed=0):
    """{vertex: label}: ``per_label`` distinct vertices drawn (seeded) for each label."""
    chosen = np.random.default_rng(seed).choice(n_vertices, per_label * n_labels,
                                                replace=False)
    return {int(v): k // per_label for k, v in enumerate(chosen)}


def nearest_terminal_labels(n_vertices, u, v, terminals):
    """The baseline: every vertex takes the label of its nearest terminal (fewest
    edges; vertices that reach no terminal take label 0)."""
    from scipy.sparse.csgraph import dijkstra

    graph = csr_matrix((np.ones(2 * len(u)), (np.concatenate([u, v]), np.concatenate([v, u]))),
                       shape=(n_vertices, n_vertices))
    sources = np.array(list(terminals), dtype=np.int64)
    _, _, nearest = dijkstra(graph, unweighted=True, indices=sources, min_only=True,
                             return_predecessors=True)
    label_of = np.zeros(n_vertices, np.int64)
    label_of[sources] = [terminals[int(t)] for t in sources]
    return np.where(nearest >= 0, label_of[np.maximum(nearest, 0)], 0)


def exact_two_label_cut(n_vertices, u, v, w, terminals):
    """The minimum cut separating the label-0 terminals from the label-1 ones, by
    SciPy's maximum flow (integer weights only; None otherwise): the exact answer
    that a two-label relaxation's rounding is measured against."""
    from scipy.sparse.csgraph import maximum_flow

    w = np.asarray(w, np.float64)
    if np.any(w != np.round(w)) or w.sum() >= 2**30:
        return None
    sources = np.array([t for t, label in terminals.items() if label == 0], np.int64)
    sinks = np.array([t for t, label in terminals.items() if label == 1], np.int64)
    big = int(w.sum()) + 1  # terminal links can never be in a minimum cut
    rows = np.concatenate([u, v, np.full(sources.size, n_vertices), sinks])
    cols = np.concatenate([v, u, sources, np.full(sinks.size, n_vertices + 1)])
    capacity = np.concatenate([w, w, np.full(sources.size + sinks.size, big)])
    graph = csr_matrix((capacity.astype(np.int32), (rows, cols)),
                       shape=(n_vertices + 2, n_vertices + 2))
    return float(maximum_flow(graph, n_vertices, n_vertices + 1).flow_value)
