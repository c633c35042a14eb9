"""Schedulers decide which samples each worker runs in an epoch, and in what order.

A scheduler returns an EpochPlan and never runs kernels, so its invariants
(every sample exactly once per epoch, no conflicting blocks in one phase) are
testable alone. Backends execute plans.

Determinism: ``serial`` is bitwise reproducible for a seed, and so is
``blocked`` for a seed and a block layout, whatever the number of workers and
the thread timing (concurrent blocks never touch the same parameters, and each
block waits for the blocks before it on its row and column); ``fpsgd`` runs the
same conflict-free blocks in an order set by thread timing (no waiting for a slow
block), so it is reproducible only in distribution.
``hogwild`` and ``locked`` draw the same permutations for a seed, but with more
than one worker the interleaving of updates depends on thread timing, so
results are reproducible only in distribution.
"""
from hogwild.errors import choose
from hogwild.schedulers.blocked import BlockedScheduler, FreeBlocksScheduler
from hogwild.schedulers.colored import ColoredScheduler
from hogwild.schedulers.cyclades import CycladesScheduler
from hogwild.schedulers.plan import EpochPlan, even_spans, shuffled_runs
from hogwild.schedulers.shuffled import ShuffledScheduler

SCHEDULERS = {
    "hogwild": ShuffledScheduler("hogwild", "spans", single_worker=False),
    "locked": ShuffledScheduler("locked", "locked", single_worker=False),
    "serial": ShuffledScheduler("serial", "spans", single_worker=True),
    "blocked": BlockedScheduler(),
    "fpsgd": FreeBlocksScheduler(),
    "colored": ColoredScheduler(),
    "cyclades": CycladesScheduler(),
}


def get_scheduler(name):
    """The scheduler called ``name`` (one of SCHEDULERS)."""
    return choose(SCHEDULERS, name, "scheduler")


__all__ = ["SCHEDULERS", "get_scheduler", "EpochPlan", "even_spans", "shuffled_runs"]
