"""cyclades: connected components of the conflict graphs of random batches."""
import time

import numpy as np
from numba import njit

from hogwild.schedulers.conflicts import components_by_batch
from hogwild.schedulers.plan import EpochPlan, needs_supports, phased_plan, shuffled_runs


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
    needs = ("supports",)
    largest_component = 1 / 16

    def prepare(self, objective, workers):
        supports = needs_supports(objective, self.name)
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
        plan = phased_plan(order, starts, groups, self.workers, n)
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
