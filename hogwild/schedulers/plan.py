"""What a scheduler returns and what every scheduler uses to make one: the
EpochPlan, run orders and spans, and the dealing of phased plans' groups."""
from dataclasses import dataclass

import numpy as np
from numba import njit

from hogwild.errors import HogwildError, choose
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
    gates: int = 0  # gated and free: the gates of its blocks (see hogwild.kernels.plans)
    barriers: int = 0  # phased: that many phases with compiled barriers between them, all
    # in phases[0] (the phase column)

    def __post_init__(self):
        choose(PLAN_KINDS, self.kind, "plan kind")


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


def needs_supports(objective, name):
    """The objective's Supports, or an error naming the scheduler that needs them."""
    supports = objective.sample_supports()
    if supports is None:
        raise HogwildError(f"scheduler {name!r} needs the samples' supports "
                           "(Objective(..., supports=hogwild.structure.Supports...)); the "
                           "sparse SVM and matrix completion give them")
    return supports


@njit(nogil=True, cache=True)
def deal_phases(order, phase_starts, groups, workers, limit):
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


def phased_plan(order, phase_starts, groups, workers, n_samples):
    """The phased EpochPlan of deal_phases' runs and spans."""
    runs, spans = deal_phases(order, phase_starts, groups, workers, n_samples)
    return EpochPlan("phased", runs, 1, (tuple(spans),), barriers=phase_starts.size - 1)
