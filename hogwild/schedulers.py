"""Schedulers decide which samples each worker runs in an epoch, and in what order.

A scheduler returns an EpochPlan and never runs kernels, so its invariants
(every sample exactly once per epoch, one span per worker) are testable alone.
Backends execute plans.

Determinism: ``serial`` is bitwise reproducible for a seed. ``hogwild`` and
``locked`` draw the same permutations for a seed, but with more than one worker
the interleaving of updates depends on thread timing, so results are
reproducible only in distribution.
"""
from dataclasses import dataclass

import numpy as np

from hogwild.errors import choose


@dataclass(frozen=True)
class EpochPlan:
    """order[start:stop] for each (start, stop) in spans is one worker's share."""

    order: np.ndarray
    spans: tuple
    locked: bool


def even_spans(n_items, parts):
    """Split range(n_items) into `parts` contiguous spans whose sizes differ by <= 1."""
    edges = np.linspace(0, n_items, parts + 1).round().astype(np.int64)
    return tuple((int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]))


class ShuffledScheduler:
    """A fresh random permutation each epoch, cut into one span per worker."""

    def __init__(self, name, locked, single_worker):
        self.name = name
        self.locked = locked
        self.single_worker = single_worker

    def workers_for(self, requested):
        return 1 if self.single_worker else requested

    def plan(self, n_samples, workers, rng, block=1):
        order = shuffled_blocks(n_samples, block, rng)
        return EpochPlan(order, even_spans(n_samples, self.workers_for(workers)), self.locked)


def shuffled_blocks(n_samples, block, rng):
    """A random order of the samples that keeps runs of ``block`` consecutive samples
    together: block=1 is a uniform permutation; larger blocks turn random row
    reads into sequential streams (several times faster on large sparse data) and
    are as random as the samples' stored order."""
    if block == 1:
        return rng.permutation(n_samples).astype(np.int64)
    starts = rng.permutation(-(-n_samples // block)).astype(np.int64) * block
    order = (starts[:, None] + np.arange(block, dtype=np.int64)[None, :]).ravel()
    return order[order < n_samples] if n_samples % block else order


SCHEDULERS = {
    "hogwild": ShuffledScheduler("hogwild", locked=False, single_worker=False),
    "locked": ShuffledScheduler("locked", locked=True, single_worker=False),
    "serial": ShuffledScheduler("serial", locked=False, single_worker=True),
}


def get_scheduler(name):
    return choose(SCHEDULERS, name, "scheduler")
