"""colored: GraphLab's chromatic engine over the samples' conflict graph."""
import time

import numpy as np
from numba import njit

from hogwild.errors import HogwildError
from hogwild.schedulers.coloring import color_graph
from hogwild.schedulers.conflicts import color_samples
from hogwild.schedulers.plan import needs_supports, phased_plan


class ColoredScheduler:
    """GraphLab's chromatic engine: colour the conflict graph of the samples, then
    run the colour classes one after another (a barrier between them); within a
    class no two samples share a coordinate, so workers cannot conflict and the
    result is serially equivalent and bitwise reproducible for a seed with any
    number of workers. The class order and the order within classes are drawn
    from the seed each epoch."""

    name = "colored"
    kind = "phased"  # one phase per colour class, barriers in compiled code
    needs = ("supports",)  # or a conflict graph

    min_class = 16  # refuse data whose colour classes would average fewer samples

    def prepare(self, objective, workers):
        start = time.perf_counter()
        if objective.conflicts is not None:  # e.g. GraphLab's edge consistency
            colors = color_graph(objective.conflicts, "dsatur")
        else:
            colors = self._color_supports(needs_supports(objective, self.name))
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
        return phased_plan(order, starts, pieces, self.workers, self.n_samples)


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
