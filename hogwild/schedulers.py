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
from dataclasses import dataclass

import numpy as np

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

    def __init__(self, name, locked, single_worker):
        self.name = name
        self.locked = locked
        self.single_worker = single_worker
        self.gated = False

    def workers_for(self, requested, blocks=None):
        return 1 if self.single_worker else requested

    def plan(self, n_samples, workers, rng, block=1, blocks=None):
        runs = shuffled_runs(n_samples, block, rng)
        spans = even_spans(runs.size, self.workers_for(workers))
        phase = tuple(np.array([(lo, hi, n_samples)], np.int64) for lo, hi in spans)
        return EpochPlan(runs, block, (phase,), self.locked)


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

    @staticmethod
    def _layout(blocks):
        if blocks is None:
            raise HogwildError("scheduler 'blocked' needs an objective with a block layout "
                               "(Objective(..., blocks=...), see hogwild.schedulers."
                               "block_layout); matrix completion builds one")
        return blocks

    def workers_for(self, requested, blocks=None):
        return min(requested, self._layout(blocks).grid)

    def plan(self, n_samples, workers, rng, block=1, blocks=None):
        layout = self._layout(blocks)
        if int(layout.offsets[-1]) != n_samples:
            raise HogwildError(f"block layout covers {int(layout.offsets[-1])} samples, "
                               f"the objective has {n_samples}")
        g = layout.grid
        workers = self.workers_for(workers, layout)
        rotations = rng.permutation(g)
        relabel = rng.permutation(g)
        offsets = layout.offsets
        shares = [[] for _ in range(workers)]
        for level, shift in enumerate(rotations):
            for i in range(g):
                j = int(relabel[(i + shift) % g])
                k = i * g + j  # block (i, j) is run k: samples offsets[k]..offsets[k+1]-1
                # gates: grid row i is gate i, grid column j is gate g + j
                shares[i * workers // g].append((k, k + 1, int(offsets[k + 1]), i, g + j,
                                                 level))
        phase = tuple(np.array(share, np.int64).reshape(-1, 6) for share in shares)
        return EpochPlan(offsets[:-1], n_samples, (phase,), locked=False, gates=2 * g)


SCHEDULERS = {
    "hogwild": ShuffledScheduler("hogwild", locked=False, single_worker=False),
    "locked": ShuffledScheduler("locked", locked=True, single_worker=False),
    "serial": ShuffledScheduler("serial", locked=False, single_worker=True),
    "blocked": BlockedScheduler(),
}


def get_scheduler(name):
    return choose(SCHEDULERS, name, "scheduler")
