"""Schedulers decide which samples each worker runs in an epoch, and in what order.

A scheduler returns an EpochPlan and never runs kernels, so its invariants
(every sample exactly once per epoch, no conflicting blocks in one phase) are
testable alone. Backends execute plans.

Determinism: ``serial`` is bitwise reproducible for a seed, and so is
``blocked`` for a seed and a block layout, whatever the number of workers and
the thread timing (concurrent blocks never touch the same parameters, and each
block waits for the blocks before it on its row and column).
``hogwild`` and ``locked`` draw the same permutations for a seed, but with more
than one worker the interleaving of updates depends on thread timing, so
results are reproducible only in distribution.
"""
import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from hogwild.errors import HogwildError, check_int, choose


@dataclass(frozen=True)
class EpochPlan:
    """An epoch as phases run one after another, with a barrier between them.

    The samples are visited in runs of consecutive samples: run r covers samples
    runs[r] .. min(runs[r] + run_length, limit) - 1. ``phases[p][w]`` is worker
    w's work in phase p, an int64 array of spans, rows (lo, hi, limit) meaning
    runs lo..hi-1 in that order (one compiled call per worker and phase). Runs keep
    plans small (n / run_length starts, not n indices) and let workers stream
    consecutive samples.
    """

    runs: np.ndarray
    run_length: int
    phases: tuple
    locked: bool
    gates: int = 0  # > 0: spans are rows (lo, hi, limit, gate_a, gate_b, level); see
    # loops_template.run_gated_spans: a span starts once both gates reach its level


@dataclass(frozen=True)
class BlockLayout:
    """Samples stored grouped into a grid x grid array of blocks: block (i, j) is
    samples offsets[i * grid + j] : offsets[i * grid + j + 1]. Samples in blocks
    that share neither a row nor a column of the grid never touch the same
    parameters (e.g. ratings of disjoint user and item groups)."""

    grid: int
    offsets: np.ndarray

    def block(self, i, j):
        k = i * self.grid + j
        return int(self.offsets[k]), int(self.offsets[k + 1])


def block_layout(row_keys, col_keys, grid, rng):
    """Group samples into a grid of blocks by two keys (a rating's user and item).

    Keys are relabelled in a random order and cut into ``grid`` contiguous label
    ranges, one per grid row (column); samples are in random order within each
    block. Returns (order, row_labels, col_labels, layout): store the samples as
    ``data[order]`` with their keys replaced by ``row_labels[key]`` and
    ``col_labels[key]``. Then each block is contiguous (workers stream it) and
    the parameter rows of different grid rows are in disjoint memory ranges, so
    workers on different blocks share no cache line (not even of small per-key
    arrays such as biases).
    """
    grid = check_int("grid", grid, 1)
    row_keys = np.asarray(row_keys, dtype=np.int64)
    col_keys = np.asarray(col_keys, dtype=np.int64)

    def relabel(keys):
        n_keys = int(keys.max()) + 1 if keys.size else 1
        labels = rng.permutation(n_keys)
        return labels, labels * grid // n_keys

    row_labels, row_block = relabel(row_keys)
    col_labels, col_block = relabel(col_keys)
    shuffled = rng.permutation(row_keys.size)
    block_ids = row_block[row_keys[shuffled]] * grid + col_block[col_keys[shuffled]]
    by_block = np.argsort(block_ids, kind="stable")
    offsets = np.searchsorted(block_ids[by_block], np.arange(grid * grid + 1))
    return (shuffled[by_block], row_labels, col_labels,
            BlockLayout(grid, offsets.astype(np.int64)))


def even_spans(n_items, parts):
    """Split range(n_items) into `parts` contiguous spans whose sizes differ by <= 1."""
    edges = np.linspace(0, n_items, parts + 1).round().astype(np.int64)
    return tuple((int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]))


def shuffled_runs(n_samples, run_length, rng):
    """The starts of the runs of ``run_length`` consecutive samples, in random order:
    run_length=1 is a uniform permutation; longer runs turn random reads into
    sequential streams (several times faster on large sparse data) and are as
    random as the samples' stored order."""
    return rng.permutation(-(-n_samples // run_length)).astype(np.int64) * run_length


class ShuffledScheduler:
    """A fresh random order of runs each epoch, cut into one span per worker."""

    gated = False
    phased = False

    def __init__(self, name, locked, single_worker):
        self.name = name
        self.locked = locked
        self.single_worker = single_worker

    def prepare(self, objective, workers):
        return _ShuffledPlanner(objective.n_samples, 1 if self.single_worker else workers,
                                self.locked)


class _ShuffledPlanner:
    setup_seconds = 0.0

    def __init__(self, n_samples, workers, locked):
        self.n_samples, self.workers, self.locked = n_samples, workers, locked

    def plan(self, rng, run_length=1):
        runs = shuffled_runs(self.n_samples, run_length, rng)
        phase = tuple(np.array([(lo, hi, self.n_samples)], np.int64)
                      for lo, hi in even_spans(runs.size, self.workers))
        return EpochPlan(runs, run_length, (phase,), self.locked)


class BlockedScheduler:
    """DSGD / FPSGD-style conflict-free blocks (Gemulla et al. 2011; Zhuang et al.
    2013). An epoch is ``grid`` rounds; round s runs the blocks (i, sigma_s(i)) for
    every grid row i, where the sigma_s are a random rotation order composed with
    a random column relabelling, so every block runs exactly once per epoch and
    no two blocks of a round share a row or a column.

    There is no barrier between rounds: a block starts as soon as the blocks of
    the previous round on its grid row and on its grid column are done (gates in
    compiled code), so it sees exactly the parameters it would see with a barrier,
    and the result is bitwise reproducible for a seed and layout whatever the
    number of workers and the thread timing. Each worker owns a fixed band of grid
    rows, whose parameters stay in its cache (put the larger side, e.g. users, on
    the rows); only column blocks move between cores.
    """

    name = "blocked"
    locked = False
    gated = True
    phased = False

    def prepare(self, objective, workers):
        layout = objective.blocks
        if layout is None:
            raise HogwildError("scheduler 'blocked' needs an objective with a block layout "
                               "(Objective(..., blocks=...), see hogwild.schedulers."
                               "block_layout); matrix completion builds one")
        if int(layout.offsets[-1]) != objective.n_samples:
            raise HogwildError(f"block layout covers {int(layout.offsets[-1])} samples, "
                               f"the objective has {objective.n_samples}")
        return _BlockedPlanner(layout, min(workers, layout.grid), objective.n_samples)


class _BlockedPlanner:
    setup_seconds = 0.0

    def __init__(self, layout, workers, n_samples):
        self.layout, self.workers, self.n_samples = layout, workers, n_samples

    def plan(self, rng, run_length=1):
        g, offsets, workers = self.layout.grid, self.layout.offsets, self.workers
        rotations = rng.permutation(g)
        relabel = rng.permutation(g)
        shares = [[] for _ in range(workers)]
        for level, shift in enumerate(rotations):
            for i in range(g):
                j = int(relabel[(i + shift) % g])
                k = i * g + j  # block (i, j) is run k: samples offsets[k]..offsets[k+1]-1
                # gates: grid row i is gate i, grid column j is gate g + j
                shares[i * workers // g].append((k, k + 1, int(offsets[k + 1]), i, g + j,
                                                 level))
        phase = tuple(np.array(share, np.int64).reshape(-1, 6) for share in shares)
        return EpochPlan(offsets[:-1], self.n_samples, (phase,), locked=False, gates=2 * g)


def _needs_supports(objective, name):
    if objective.supports is None:
        raise HogwildError(f"scheduler {name!r} needs the samples' supports "
                           "(Objective(..., supports=hogwild.conflicts.Supports...)); the "
                           "sparse SVM and matrix completion give them")
    return objective.supports


def _phase_of_groups(samples, group_of, workers, n_samples):
    """One phase in which each worker runs a contiguous share of ``samples``: whole
    groups (colour-class pieces or components) dealt to workers, largest first to
    the least loaded, each group keeping its samples' order. Returns (samples in
    run order, the phase)."""
    order, shares = _deal_groups(group_of, workers)
    phase = tuple(np.array([(lo, hi, n_samples)], np.int64) for lo, hi in shares)
    return samples[order], phase


@njit(nogil=True, cache=True)
def _deal_groups(group_of, workers):
    """(permutation putting worker 0's groups first, then worker 1's..., spans)."""
    n = group_of.size
    size = np.zeros(n, np.int64)
    for g in group_of:
        size[g] += 1
    by_size = np.argsort(-size, kind="mergesort")
    worker_of_group = np.zeros(n, np.int64)
    load = np.zeros(workers, np.int64)
    for g in by_size:
        if size[g] == 0:
            break
        w = np.argmin(load)
        worker_of_group[g] = w
        load[w] += size[g]
    key = np.empty(n, np.int64)
    for i in range(n):
        key[i] = worker_of_group[group_of[i]] * n + group_of[i]
    order = np.argsort(key, kind="mergesort")
    spans = np.empty((workers, 2), np.int64)
    start = 0
    for w in range(workers):
        spans[w, 0] = start
        start += load[w]
        spans[w, 1] = start
    return order, spans


class ColoredScheduler:
    """GraphLab's chromatic engine: colour the conflict graph of the samples, then
    run the colour classes one after another (a barrier between them); within a
    class no two samples share a coordinate, so workers cannot conflict and the
    result is serially equivalent and bitwise reproducible for a seed with any
    number of workers. The class order and the order within classes are drawn
    from the seed each epoch."""

    name = "colored"
    locked = False
    gated = False
    phased = True  # one phase per colour class, barriers in compiled code

    def prepare(self, objective, workers):
        from hogwild.coloring import color_graph
        from hogwild.conflicts import conflict_graph

        supports = _needs_supports(objective, self.name)
        start = time.perf_counter()
        colors = color_graph(conflict_graph(supports), "dsatur")
        planner = _ColoredPlanner(colors, workers, objective.n_samples)
        planner.setup_seconds = time.perf_counter() - start
        return planner


class _ColoredPlanner:
    def __init__(self, colors, workers, n_samples):
        self.workers, self.n_samples = workers, n_samples
        by_color = np.argsort(colors, kind="stable")
        counts = np.bincount(colors)
        self.classes = np.split(by_color, np.cumsum(counts)[:-1])
        self.n_colors = counts.size

    def plan(self, rng, run_length=1):
        runs, phases = [], []
        start = 0
        for c in rng.permutation(self.n_colors):
            members = self.classes[c][rng.permutation(self.classes[c].size)]
            pieces = np.arange(members.size) * self.workers // max(members.size, 1)
            ordered, phase = _phase_of_groups(members, pieces, self.workers, self.n_samples)
            runs.append(ordered)
            phases.append(tuple(share + np.array([start, start, 0]) for share in phase))
            start += members.size
        return EpochPlan(np.concatenate(runs).astype(np.int64), 1, tuple(phases), False)


class CycladesScheduler:
    """CYCLADES (Pan et al., NIPS 2016): each epoch, a random permutation cut into
    batches; the connected components of each batch's conflict graph (union-find
    over shared coordinates) are dealt whole to workers, batches run one after
    another. Components never conflict, so the run is serially equivalent and
    bitwise reproducible for a seed with any number of workers, without ever
    building the full conflict graph.

    Batch size: n / (2 (1 + d)), with d the mean number of other samples that
    share a coordinate with a sample (counted with repeats), so that a batch's
    conflict graph has about one edge per four samples and stays in small pieces
    (at least 64 samples, at most n). Data with a coordinate in most samples
    still forms one big component per batch, which runs on one worker.
    """

    name = "cyclades"
    locked = False
    gated = False
    phased = True  # one phase per batch, barriers in compiled code

    def prepare(self, objective, workers):
        supports = _needs_supports(objective, self.name)
        counts = np.bincount(supports.indices, minlength=supports.n_coordinates)
        n = supports.n_samples
        mean_conflicts = float(np.sum(counts.astype(np.float64) * (counts - 1))) / n
        batch = int(min(n, max(64, n / (2 * (1 + mean_conflicts)))))
        return _CycladesPlanner(supports, workers, batch)


class _CycladesPlanner:
    setup_seconds = 0.0

    def __init__(self, supports, workers, batch):
        self.supports, self.workers, self.batch = supports, workers, batch
        self._owner = np.full(supports.n_coordinates, -1, np.int64)
        self._parent = np.empty(batch, np.int64)

    def plan(self, rng, run_length=1):
        from hogwild.conflicts import batch_components

        n = self.supports.n_samples
        order = rng.permutation(n).astype(np.int64)
        runs, phases = [], []
        for start in range(0, n, self.batch):
            batch = order[start:start + self.batch]
            roots = batch_components(self.supports.indptr, self.supports.indices, batch,
                                     self._owner, self._parent)
            ordered, phase = _phase_of_groups(batch, roots, self.workers, n)
            runs.append(ordered)
            phases.append(tuple(share + np.array([start, start, 0]) for share in phase))
        return EpochPlan(np.concatenate(runs), 1, tuple(phases), False)


SCHEDULERS = {
    "hogwild": ShuffledScheduler("hogwild", locked=False, single_worker=False),
    "locked": ShuffledScheduler("locked", locked=True, single_worker=False),
    "serial": ShuffledScheduler("serial", locked=False, single_worker=True),
    "blocked": BlockedScheduler(),
    "colored": ColoredScheduler(),
    "cyclades": CycladesScheduler(),
}


def get_scheduler(name):
    return choose(SCHEDULERS, name, "scheduler")
