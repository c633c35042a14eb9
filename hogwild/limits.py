"""Bounds on a run that every backend and problem applies the same way: the usable
cores, the most workers per core, the most epochs."""
import os

from hogwild.errors import HogwildError, check_int


def usable_cores():
    """Cores this process may run on (respects affinity masks and cgroups' cpusets)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


MAX_EPOCHS = 1_000_000  # more is a typo (and epochs x samples could overflow int64)
OVERSUBSCRIBE_FACTOR = 4  # workers per usable core allowed without oversubscribe=True


def check_workers(workers, oversubscribe=False):
    """The number of CPU workers (default: the usable cores). More than
    OVERSUBSCRIBE_FACTOR per usable core is refused unless ``oversubscribe``:
    they would mostly wait for a core, and 1000 processes can exhaust memory."""
    if workers is None:
        return usable_cores()
    workers = check_int("workers", workers, 1)
    limit = OVERSUBSCRIBE_FACTOR * usable_cores()
    if workers > limit and not oversubscribe:
        raise HogwildError(f"workers={workers} is more than {OVERSUBSCRIBE_FACTOR} per usable "
                           f"core ({usable_cores()} here); use at most {limit}, or "
                           "oversubscribe=True (--oversubscribe) to run them anyway")
    return workers
