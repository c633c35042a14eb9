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

from hogwild.coloring import color_graph
from hogwild.conflicts import color_samples, components_by_batch
from hogwild.errors import HogwildError, check_int, choose
from hogwild.kernels.plans import PLAN_KINDS


@dataclass(frozen=True)
class EpochPlan:
    """An epoch as phases run one after another, with a barrier between them.

    The samples are visited in runs of consecutive samples: run r covers samples
    runs[r] .. min(runs[r] + run_length, limit) - 1. ``phases[p][w]`` is worker
    w's work in phase p, an int64 array of span rows, (lo, hi, limit, ...) meaning
    runs lo..hi-1 in that order (one compiled call per worker and phase). Runs keep
    plans small (n / run_length starts, not n indices) and let workers stream
    consecutive samples. ``kind`` says how the spans run (hogwild.kernels.plans:
    spans, locked, gated, phased) and so the columns of the rows.
    """

    kind: str
    runs: np.ndarray
    run_length: int
    phases: tuple
    gates: int = 0  # gated: the gates its blocks wait on (gate_a, gate_b columns)
    barriers: int = 0  # phased: that many phases with compiled barriers between them, all
    # in phases[0] (the phase column)

    def __post_init__(self):
        choose(PLAN_KINDS, self.kind, "plan kind")


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
    """A fresh random order of runs each epoch, cut into one span per worker
    (under one lock for the plan kind "locked")."""

    def __init__(self, name, kind, single_worker):
        self.name = name
        self.kind = kind
        self.single_worker = single_worker

    def prepare(self, objective, workers):
        return self.planner(objective.n_samples, workers)

    def planner(self, n_samples, workers):
        """Plans for n_samples samples and ``workers`` workers (one for serial)."""
        return _ShuffledPlanner(n_samples, 1 if self.single_worker else workers, self.kind)


class _ShuffledPlanner:
    setup_seconds = 0.0

    def __init__(self, n_samples, workers, kind):
        self.n_samples, self.workers, self.kind = n_samples, workers, kind

    def plan(self, rng, run_length=1):
        return self.plan_pieces(rng, run_length, 1)[0]

    def plan_pieces(self, rng, run_length, pieces, first=0):
        """One epoch's random order of runs cut into ``pieces`` consecutive plans
        (a parameter-server node's clocks), each split between the workers; the
        samples are first .. first + n_samples - 1."""
        runs = shuffled_runs(self.n_samples, run_length, rng) + first
        limit = first + self.n_samples
        plans = []
        for a, b in even_spans(runs.size, pieces):
            phase = tuple(np.array([(lo, hi, limit)], np.int64)
                          for lo, hi in even_spans(b - a, self.workers))
            plans.append(EpochPlan(self.kind, runs[a:b], run_length, (phase,)))
        return plans


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
    kind = "gated"

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
        return EpochPlan("gated", offsets[:-1], self.n_samples, (phase,), gates=2 * g)


def _needs_supports(objective, name):
    if objective.supports is None:
        raise HogwildError(f"scheduler {name!r} needs the samples' supports "
                           "(Objective(..., supports=hogwild.conflicts.Supports...)); the "
                           "sparse SVM and matrix completion give them")
    return objective.supports


@njit(nogil=True, cache=True)
def _deal_phases(order, phase_starts, groups, workers, limit):
    """Share out phases of independent groups: phase p is positions
    phase_starts[p]..phase_starts[p + 1]-1 of ``order`` (samples in serial order),
    and groups[i] labels position i's group within its phase (0 .. phase size-1;
    samples of different groups never conflict). Whole groups go to workers,
    largest first to the least loaded; each worker runs its samples in their
    ``order`` positions, so every group keeps its serial order and reads of the
    data stay close together.

    Returns (runs, spans): runs lists the samples phase by phase, worker 0's first;
    spans[w, p] = (lo, hi, limit, p) is worker w's part of phase p.
    """
    n_phases = phase_starts.size - 1
    runs = np.empty(order.size, np.int64)
    spans = np.empty((workers, n_phases, 4), np.int64)
    worker_of = np.full(order.size, -1, np.int64)
    load = np.zeros(workers, np.int64)
    for p in range(n_phases):
        a, b = phase_starts[p], phase_starts[p + 1]
        load[:] = 0
        for i in range(a, b):
            g = groups[i]
            if worker_of[g] < 0:  # a group goes where the least work is, when it first
                worker_of[g] = np.argmin(load)  # shows up; later members follow it
            load[worker_of[g]] += 1
        start = a
        for w in range(workers):
            spans[w, p, 0] = start
            start += load[w]
            spans[w, p, 1] = start
            spans[w, p, 2] = limit
            spans[w, p, 3] = p
            load[w] = spans[w, p, 0]  # from here on: where worker w's next sample goes
        for i in range(a, b):
            w = worker_of[groups[i]]
            runs[load[w]] = order[i]
            load[w] += 1
        for i in range(a, b):
            worker_of[groups[i]] = -1
    return runs, spans


def _phased_plan(order, phase_starts, groups, workers, n_samples):
    runs, spans = _deal_phases(order, phase_starts, groups, workers, n_samples)
    return EpochPlan("phased", runs, 1, (tuple(spans),), barriers=phase_starts.size - 1)


class ColoredScheduler:
    """GraphLab's chromatic engine: colour the conflict graph of the samples, then
    run the colour classes one after another (a barrier between them); within a
    class no two samples share a coordinate, so workers cannot conflict and the
    result is serially equivalent and bitwise reproducible for a seed with any
    number of workers. The class order and the order within classes are drawn
    from the seed each epoch."""

    name = "colored"
    kind = "phased"  # one phase per colour class, barriers in compiled code

    min_class = 16  # refuse data whose colour classes would average fewer samples

    def prepare(self, objective, workers):
        start = time.perf_counter()
        if objective.conflicts is not None:  # e.g. GraphLab's edge consistency
            colors = color_graph(objective.conflicts, "dsatur")
        else:
            colors = self._color_supports(_needs_supports(objective, self.name))
        planner = _ColoredPlanner(colors, workers, objective.n_samples)
        planner.setup_seconds = time.perf_counter() - start
        return planner

    def _color_supports(self, supports):
        n = supports.n_samples
        busiest = int(np.bincount(supports.indices, minlength=1).max())
        if busiest * self.min_class > n:
            raise HogwildError(
                f"scheduler 'colored' needs at least {busiest} colours for these {n} samples "
                f"(one coordinate is in {busiest / n:.0%} of them), so colour classes would "
                f"average fewer than {self.min_class} samples and run nearly serially; use "
                "scheduler='cyclades'")
        return color_samples(supports)


class _ColoredPlanner:
    def __init__(self, colors, workers, n_samples):
        self.workers, self.n_samples = workers, n_samples
        self.by_color = np.argsort(colors, kind="stable").astype(np.int64)
        self.class_starts = np.concatenate([[0], np.cumsum(np.bincount(colors))]) \
            .astype(np.int64)

    def plan(self, rng, run_length=1):
        class_order = rng.permutation(self.class_starts.size - 1).astype(np.int64)
        order, starts, pieces = _shuffled_classes(self.by_color, self.class_starts,
                                                  class_order, self.workers,
                                                  rng.integers(2**62))
        return _phased_plan(order, starts, pieces, self.workers, self.n_samples)


@njit(nogil=True, cache=True)
def _shuffled_classes(by_color, class_starts, class_order, workers, seed):
    """The colour classes in ``class_order``, each in a random order (seeded):
    returns (samples, phase starts, piece of each position: every class is cut
    into one piece per worker, as its samples are independent)."""
    np.random.seed(seed)
    order = np.empty(by_color.size, np.int64)
    starts = np.empty(class_order.size + 1, np.int64)
    pieces = np.empty(by_color.size, np.int64)
    at = 0
    for p in range(class_order.size):
        starts[p] = at
        a, b = class_starts[class_order[p]], class_starts[class_order[p] + 1]
        size = b - a
        order[at:at + size] = by_color[a:b]
        for i in range(size - 1, 0, -1):  # Fisher-Yates
            j = np.random.randint(0, i + 1)
            order[at + i], order[at + j] = order[at + j], order[at + i]
        for i in range(size):
            pieces[at + i] = i * workers // size
        at += size
    starts[class_order.size] = at
    return order, starts, pieces


class CycladesScheduler:
    """CYCLADES (Pan et al., NIPS 2016): random batches of samples; the connected
    components of each batch's conflict graph (union-find over shared coordinates)
    are dealt whole to workers, and batches run one after another. Components
    never conflict and keep their order, so the run is serially equivalent and
    bitwise reproducible for a seed with any number of workers, without ever
    building the full conflict graph.

    The batches and their components are drawn once, in the first epoch, from
    ``serial``'s order for the seed and shuffle_block (so epoch 1 equals serial's
    bit for bit); each later epoch runs the same batches in a new random order.
    Finding components costs about as much as a light update (a rating, an edge),
    so redrawing them every epoch, as the paper does, would double the epoch.

    Batch size: from n / (2 (1 + d)), with d the mean number of other samples that
    share a coordinate with a sample (about one conflict per four samples), the
    batch doubles while, measured on random batches of this data, the largest
    component averages at most 1/16 of the batch: enough small pieces to share
    among many workers, and a size that depends on the data alone, so that runs
    with different worker counts draw the same batches. Data with a coordinate in
    most samples still forms one big component per batch, which runs on one worker.
    """

    name = "cyclades"
    kind = "phased"  # one phase per batch, barriers in compiled code
    largest_component = 1 / 16

    def prepare(self, objective, workers):
        supports = _needs_supports(objective, self.name)
        start = time.perf_counter()
        counts = np.bincount(supports.indices, minlength=supports.n_coordinates)
        n = supports.n_samples
        mean_conflicts = float(np.sum(counts.astype(np.float64) * (counts - 1))) / n
        batch = int(min(n, max(64, n / (2 * (1 + mean_conflicts)))))
        probe = np.random.default_rng(0).permutation(n).astype(np.int64)
        while 2 * batch <= n and self._largest_share(supports, probe, 2 * batch) \
                <= self.largest_component:
            batch *= 2
        planner = _CycladesPlanner(supports, workers, batch)
        planner.setup_seconds = time.perf_counter() - start
        return planner

    @staticmethod
    def _largest_share(supports, order, batch):
        """Mean over up to 64 batches of the largest component's share of its batch."""
        order = order[:min(order.size, 64 * batch) // batch * batch]
        groups = components_by_batch(supports.indptr, supports.indices,
                                     supports.n_coordinates, order, batch)
        return float(np.mean([np.bincount(groups[a:a + batch]).max()
                              for a in range(0, order.size, batch)])) / batch


class _CycladesPlanner:
    def __init__(self, supports, workers, batch):
        self.supports, self.workers, self.batch = supports, workers, batch
        self._order = None    # the first epoch's order, cut into batches at _starts
        self._batches = None  # (runs, spans, starts): the batches dealt to the workers

    def plan(self, rng, run_length=1):
        if self._batches is not None:
            runs, spans, starts = self._batches
            runs, spans = _reordered_phases(runs, spans, starts,
                                            rng.permutation(starts.size - 1))
            return EpochPlan("phased", runs, 1, (tuple(spans),), barriers=starts.size - 1)
        n = self.supports.n_samples
        order = (shuffled_runs(n, run_length, rng)[:, None] + np.arange(run_length)).ravel()
        return self._deal(order[order < n])

    def _deal(self, order):
        n = order.size
        starts = np.append(np.arange(0, n, self.batch, dtype=np.int64), n)
        if self.workers == 1:  # one worker runs each batch in order: no components needed
            groups = np.zeros(n, np.int64)
        else:
            supports = self.supports
            groups = components_by_batch(supports.indptr, supports.indices,
                                         supports.n_coordinates, order, self.batch)
        plan = _phased_plan(order, starts, groups, self.workers, n)
        self._order = order
        self._batches = (plan.runs, np.stack(plan.phases[0]), starts)
        return plan

    def state(self):
        """What a checkpoint keeps so that a resumed run, with any number of workers,
        draws the same batches: the first epoch's order."""
        return {} if self._order is None else {"order": self._order}

    def restore(self, state):
        self._deal(state["order"])


@njit(nogil=True, cache=True)
def _reordered_phases(runs, spans, starts, order):
    """The phased plan (runs, spans) with its phases in ``order``: phase q of the
    result is phase order[q] of the input, its samples moved along."""
    new_runs = np.empty_like(runs)
    new_spans = np.empty_like(spans)
    at = 0
    for q in range(order.size):
        p = order[q]
        a, b = starts[p], starts[p + 1]
        new_runs[at:at + b - a] = runs[a:b]
        for w in range(spans.shape[0]):
            new_spans[w, q, 0] = spans[w, p, 0] - a + at
            new_spans[w, q, 1] = spans[w, p, 1] - a + at
            new_spans[w, q, 2] = spans[w, p, 2]
            new_spans[w, q, 3] = q
        at += b - a
    return new_runs, new_spans


SCHEDULERS = {
    "hogwild": ShuffledScheduler("hogwild", "spans", single_worker=False),
    "locked": ShuffledScheduler("locked", "locked", single_worker=False),
    "serial": ShuffledScheduler("serial", "spans", single_worker=True),
    "blocked": BlockedScheduler(),
    "colored": ColoredScheduler(),
    "cyclades": CycladesScheduler(),
}


def get_scheduler(name):
    return choose(SCHEDULERS, name, "scheduler")
