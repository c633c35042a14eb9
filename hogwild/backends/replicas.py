"""replication="worker": each worker updates its own copy of the parameters, so no
cache line moves between cores while they work (DimmWitted's per-core replication,
Zhang and Re, VLDB 2014); the copies are merged into the shared parameters every
``merge_every`` updates of a worker and at the end of each epoch.

The merge, coordinate by coordinate: the average of the changes of the workers
that changed it since the last merge. A coordinate only one worker touched gets
that worker's value exactly (so no update is lost where workers' samples do not
overlap, and one worker is bitwise the serial run); a hot coordinate every worker
moved gets the mean of their moves. After a merge every copy equals the shared
parameters again.
"""
import numpy as np
from numba import njit

from hogwild.backends.host import CACHE_LINE, aligned_copy


@njit(nogil=True, cache=True)
def merge_rows(shared, rows):
    """Merge the workers' rows of one parameter array (flattened) into ``shared``,
    then set every row to the merged values."""
    workers = rows.shape[0]
    for i in range(shared.size):
        base = shared[i]
        total = 0.0
        count = 0
        last = 0
        for w in range(workers):
            if rows[w, i] != base:
                total += rows[w, i] - base
                count += 1
                last = w
        if count == 1:
            shared[i] = rows[last, i]
        elif count > 1:
            shared[i] = base + total / count
        for w in range(workers):
            rows[w, i] = shared[i]


class Replicas:
    """One copy of every parameter array per worker, each row padded to whole cache
    lines (no two workers' copies share one)."""

    def __init__(self, params, workers):
        self.rows = []
        self.copies = [[] for _ in range(workers)]
        for array in params:
            per_line = max(1, CACHE_LINE // array.itemsize)
            width = -(-max(array.size, 1) // per_line) * per_line
            rows = aligned_copy(np.zeros((workers, width), array.dtype))
            rows[:, :array.size] = array.reshape(-1)
            self.rows.append(rows)
            for w in range(workers):
                self.copies[w].append(rows[w, :array.size].reshape(array.shape))
        self.copies = [tuple(copy) for copy in self.copies]
        self.merge(params)  # changes nothing; compiles (or loads) the merge before timing

    def of(self, worker):
        """The parameter arrays worker ``worker`` updates."""
        return self.copies[worker]

    def merge(self, params):
        """Merge every worker's changes into ``params`` (see the module docstring)."""
        for array, rows in zip(params, self.rows):
            merge_rows(array.reshape(-1), rows[:, :array.size])
