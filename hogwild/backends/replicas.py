"""Model replication's copies and merges (the modes, rules and policy are
hogwild.replication's): workers update their own copies of some or all parameters, so
no cache line of those moves between cores while they work, and the copies are
merged into the shared parameters every ``merge_every`` updates of a worker and at
each epoch's end.

    worker  every parameter array replicated whole, one copy per worker
            (DimmWitted's per-core replication, Zhang and Re, VLDB 2014)
    hot     only the hot rows: those whose id is in more than ``hot_fraction`` of
            the samples, found from the objective's IdArrays (hogwild.structure);
            the rest stay shared and are written Hogwild!-style (HogWild++'s idea,
            Zhang, Hsieh and Akella, ICDM 2016, at row granularity). Arrays no
            IdArray indexes (an intercept) are replicated whole.

Hot rows work without any change to the objective's update: the engine gives each
worker its own copy of the id arrays in which a hot id r reads first + w * slots +
slot(r), rows appended to the parameter arrays (and to the data arrays the ids
also index, e.g. per-feature regularisation) after the shared rows. The engine
and the metrics see only the shared rows.

The merge, coordinate by coordinate, from the workers' changes since the last
merge: a coordinate one worker changed takes that worker's value exactly (no
update is lost where workers' samples do not overlap, and one worker is bitwise
the serial run); one several workers changed moves by the mean of their changes
(merge="mean", model averaging) or by their sum (merge="sum": every update
applied, as shared Hogwild! would, only later). merge="mixed" takes the mean on
hot rows and the sum on the rest (with "worker"; with "hot" it is "mean"):
averaging tames the stale pushes of the coordinates every worker moves, and a
rare coordinate keeps every update. On news20 SVM it needs 3-4 epochs to the
1-worker final error like "hot", where "worker" by the mean needs 8-9. Summed
changes suit unconstrained parameters: rows that an update keeps feasible (the
graph cuts' simplex rows) can leave their set when changes add. After a merge every copy equals
the shared value again. Each worker merges its own slice of the coordinates
between two barriers, so a merge costs 1/workers of a pass over the replicas.
"""
import math

import numpy as np
from numba import njit

from hogwild.backends.host import CACHE_LINE, aligned_copy
from hogwild.backends.reconcile import Reconciler, work_apart
from hogwild.errors import HogwildError
from hogwild.kernels.atomics import new_gates, open_gate, wait_for_gate
from hogwild.kernels.plans import run_share
from hogwild.replication import hot_rows, id_groups, row_counts

MERGE_BLOCK = 256  # values merged together: each of the merge's loops over a block
# runs over contiguous values (a row slice of the copies: indexing copies[w, first + i]
# makes numba wrap negative indices and stops the vectoriser), so the compiler
# vectorises it


@njit(nogil=True, cache=True, inline="always")
def _merge_block(base, copies, first, size, add_all, sums, total, count, last):
    """Merge values first..first+size-1 of ``copies`` (workers x values) around
    base[:size]: the merged values go to base[:size] and to every copy. ``sums``
    (one flag per value, or empty: ``add_all`` for all) says which values add the
    changes instead of averaging them. total, count and last are scratch of
    MERGE_BLOCK values."""
    for i in range(size):
        total[i] = 0.0
        count[i] = 0
        last[i] = base[i]
    for w in range(copies.shape[0]):
        copy = copies[w, first:first + size]
        for i in range(size):
            value = copy[i]
            changed = value != base[i]
            total[i] += value - base[i] if changed else 0.0
            count[i] += changed
            last[i] = value if changed else last[i]
    for i in range(size):
        add = add_all if sums.size == 0 else sums[first + i] != 0
        if count[i] > 1:
            base[i] = base[i] + (total[i] if add else total[i] / count[i])
        else:  # one worker changed it: its value exactly (none: the base)
            base[i] = last[i]
    for w in range(copies.shape[0]):
        copy = copies[w, first:first + size]
        for i in range(size):
            copy[i] = base[i]


@njit(nogil=True, cache=True)
def merge_flat(target, copies, lo, hi, add_all, sums):
    """Merge values lo..hi-1 of ``copies`` (workers x values) into ``target``
    (values), and set every copy to the merged values. ``add_all``: sum the
    changes (else their mean); ``sums``, when not empty, says so value by value."""
    total = np.empty(MERGE_BLOCK, np.float64)
    count = np.empty(MERGE_BLOCK, np.int64)
    last = np.empty(MERGE_BLOCK, target.dtype)
    for first in range(lo, hi, MERGE_BLOCK):
        size = min(MERGE_BLOCK, hi - first)
        _merge_block(target[first:first + size], copies, first, size, add_all, sums, total,
                     count, last)


@njit(nogil=True, cache=True)
def merge_rows(target, ids, copies, lo, hi, add_all):
    """merge_flat for rows: ``copies`` (workers x units * width) of the rows ``ids``
    of ``target`` (rows x width), units (rows) lo..hi-1."""
    width = target.shape[1]
    rows = max(1, MERGE_BLOCK // width)
    base = np.empty(rows * width, target.dtype)
    total = np.empty(rows * width, np.float64)
    count = np.empty(rows * width, np.int64)
    last = np.empty(rows * width, target.dtype)
    for first in range(lo, hi, rows):
        block = min(rows, hi - first)
        for r in range(block):
            row = ids[first + r]
            for c in range(width):
                base[r * width + c] = target[row, c]
        _merge_block(base, copies, first * width, block * width, add_all, NO_FLAGS, total,
                     count, last)
        for r in range(block):
            row = ids[first + r]
            for c in range(width):
                target[row, c] = base[r * width + c]


NO_FLAGS = np.zeros(0, np.uint8)


def _rows(array):
    """``array`` as (rows, width), a view."""
    return array.reshape(array.shape[0], -1) if array.ndim > 1 else array.reshape(-1, 1)


def _lines_of_rows(array):
    """How many rows of ``array`` make whole cache lines."""
    row_bytes = array.itemsize * (array.size // max(array.shape[0], 1) if array.ndim else 1)
    return CACHE_LINE // math.gcd(CACHE_LINE, max(row_bytes, 1))


class _Entry:
    """One array's replicas: ``copies`` (workers x values, C-contiguous and maybe
    padded) of all ``units`` values of ``target`` (flattened), or with ``ids``, of
    its rows ``ids`` (``units`` of them, target's row width values each)."""

    def __init__(self, target, copies, units, ids=None, sums=NO_FLAGS):
        self.target, self.copies, self.units, self.ids = target, copies, units, ids
        self.sums = sums

    def merge(self, lo, hi, add_all):
        if self.ids is None:
            merge_flat(self.target, self.copies, lo, hi, add_all, self.sums)
        else:
            merge_rows(self.target, self.ids, self.copies, lo, hi, add_all)

    def reload(self):
        """Every copy takes the target's values (after a change from outside)."""
        if self.ids is None:
            self.copies[:, :self.units] = self.target[:self.units]
        else:
            rows = _rows(self.target)[self.ids]
            self.copies[:, :rows.size] = rows.reshape(-1)


class Replicas:
    """The parameters and data each worker runs on, and the merge between them."""

    def __init__(self, params, data, workers, mode="worker", merge="mean", id_arrays=(),
                 n_samples=1, hot_fraction=0.01, allocate=None, filled=False):
        """``allocate(shape, dtype)``: a zeroed, cache-line aligned array for each new
        array, in the order this constructor asks (the processes backend puts them in
        shared memory, and a child builds the same Replicas over the same segments).
        ``filled``: the arrays allocate returns already hold their values (a child's
        view of the parent's segments), so only the views are built."""
        self.workers, self.add_all, self._fill = workers, merge == "sum", not filled
        self._allocate = allocate or (lambda shape, dtype: aligned_copy(np.zeros(shape, dtype)))
        self.entries = []
        self.params = list(params)      # what the engine, metrics and checkpoints see
        worker_params = [list(params) for _ in range(workers)]
        self.worker_data = [list(data) for _ in range(workers)]
        self.copied_rows = {}          # params index -> (rows with copies, rows)
        grouped, cold = set(), {}
        if mode == "hot":
            for group in id_groups(id_arrays, len(params)):
                grouped.update(self._replicate_hot(group, params, data, worker_params,
                                                   n_samples, hot_fraction))
        elif merge == "mixed":  # whole copies: the cold rows' changes add up
            for group in id_groups(id_arrays, len(params)):
                counts = row_counts(group, params, data)
                for p in {p for ids in group for p in ids.params}:
                    cold[p] = ~hot_rows(counts, hot_fraction, n_samples)
        for p, array in enumerate(params):
            if p not in grouped:
                self._replicate_whole(p, array, worker_params, cold.get(p))
        self.params = tuple(self.params)
        self.worker_params = [tuple(x) for x in worker_params]
        self.worker_data = [tuple(x) for x in self.worker_data]

    def _replicate_whole(self, p, array, worker_params, cold_rows=None):
        """Copy params[p] whole for every worker; ``cold_rows`` (a flag per row):
        merge those rows by the sum of the changes (merge="mixed")."""
        rows = array.shape[0] if array.ndim else 1
        self.copied_rows[p] = (rows, rows)
        per_line = max(1, CACHE_LINE // array.itemsize)
        width = -(-max(array.size, 1) // per_line) * per_line
        rows = self._allocate((self.workers, width), array.dtype)
        if self._fill:
            rows[:, :array.size] = array.reshape(-1)
        for w in range(self.workers):
            worker_params[w][p] = rows[w, :array.size].reshape(array.shape)
        sums = NO_FLAGS if cold_rows is None else np.repeat(
            cold_rows, array.size // max(len(cold_rows), 1)).astype(np.uint8)
        self.entries.append(_Entry(array.reshape(-1), rows, array.size, sums=sums))

    def _replicate_hot(self, group, params, data, worker_params, n_samples, hot_fraction):
        """Give each worker its own copies of the hot rows of the group's arrays;
        returns the params indices it replicated."""
        members = sorted({p for ids in group for p in ids.params})
        indexed = sorted({d for ids in group for d in ids.data})
        counts = row_counts(group, params, data)
        rows = counts.size
        hot = np.flatnonzero(hot_rows(counts, hot_fraction, n_samples)).astype(np.int64)
        for p in members:
            self.copied_rows[p] = (hot.size, rows)
        if hot.size == 0:
            return members  # nothing hot: all shared, nothing to merge
        line = math.lcm(*(_lines_of_rows(params[p]) for p in members))
        first = -(-rows // line) * line
        slots = -(-hot.size // line) * line
        total = first + self.workers * slots
        for ids in group:
            if total - 1 > np.iinfo(data[ids.ids].dtype).max:
                raise HogwildError(f"data[{ids.ids}] ({data[ids.ids].dtype}) cannot hold "
                                   f"the replicas' row ids up to {total - 1}")
        for p in members:
            array = params[p]
            extended = self._allocate((total,) + array.shape[1:], array.dtype)
            copies = extended[first:].reshape((self.workers, slots) + array.shape[1:])
            if self._fill:
                extended[:rows] = array
                copies[:, :hot.size] = array[hot]
            self.params[p] = extended[:rows]
            for w in range(self.workers):
                worker_params[w][p] = extended
            self.entries.append(_Entry(_rows(extended[:rows]), extended[first:].reshape(
                self.workers, -1), hot.size, hot))
        for d in indexed:
            extended = self._allocate((total,) + data[d].shape[1:], data[d].dtype)
            if self._fill:
                extended[:rows] = data[d]
                extended[first:].reshape((self.workers, slots) + data[d].shape[1:])[
                    :, :hot.size] = data[d][hot]
            for w in range(self.workers):
                self.worker_data[w][d] = extended
        slot_of = np.full(rows, -1, np.int64)
        slot_of[hot] = np.arange(hot.size)
        for ids in group:
            column = data[ids.ids]
            if self._fill:
                slot = slot_of[column]
                at = np.flatnonzero(slot >= 0)
            for w in range(self.workers):
                mine = self._allocate(column.shape, column.dtype)
                if self._fill:
                    mine[...] = column
                    mine[at] = first + w * slots + slot[at]
                self.worker_data[w][ids.ids] = mine
        return members

    @classmethod
    def for_run(cls, settings, params, data, workers, n_samples, allocate=None, filled=False):
        """The Replicas of a run with ReplicationSettings ``settings`` (None for
        "shared"; see __init__ for the rest)."""
        if settings.mode == "shared":
            return None
        return cls(params, data, workers, settings.mode, settings.merge, settings.id_arrays,
                   n_samples, settings.hot_fraction, allocate, filled)

    def warm_up(self):
        """Compile (or load) the merge and the barrier before the first timed epoch
        (a merge now changes nothing)."""
        self.merge()
        meet(new_gates(1), 0, 1, 1)

    @property
    def merging(self):
        """Whether anything was copied (hot mode may find no hot row: then the run
        is shared Hogwild!, with no merge rounds)."""
        return bool(self.entries)

    def params_of(self, worker):
        """The parameter arrays worker ``worker`` updates."""
        return self.worker_params[worker]

    def data_of(self, worker):
        """The data arrays worker ``worker`` reads."""
        return self.worker_data[worker]

    def merge_part(self, part, parts):
        """Merge slice ``part`` of ``parts`` of every array's replicated units."""
        for entry in self.entries:
            entry.merge(entry.units * part // parts, entry.units * (part + 1) // parts,
                        self.add_all)

    def merge(self):
        """Merge every worker's changes into the shared parameters."""
        self.merge_part(0, 1)

    def reload(self):
        """Every worker's copies take the shared parameters' values: after these were
        changed from outside the workers (an allreduce between MPI ranks), which the
        next merge would otherwise take for the workers' changes undone."""
        for entry in self.entries:
            entry.reload()

    def describe(self, merge, merge_every):
        """How the copies merge and how many rows of each parameter array the
        workers have copies of (FitResult.replicated)."""
        return {"merge": merge, "merge_every": merge_every,
                "arrays": [{"params": p, "rows": rows, "copied_rows": copied}
                           for p, (copied, rows) in sorted(self.copied_rows.items())]}

    def run_rounds(self, loops, share, cut, rounds, on_round=None):
        """Worker share.worker's part of a replicated epoch: ``rounds`` rounds, in
        each its piece cut[k] of ``share``'s spans (none once its pieces run out) on
        its own copies, then a ReplicaMerge (at the gates of share.sync). The
        updates done, or -1 if the run was aborted. ``on_round(done)`` after each
        round (progress counters)."""
        me = share.worker
        none = np.zeros((0, share.spans.shape[1] if share.spans.ndim == 2 else 3), np.int64)
        params, data = self.params_of(me), self.data_of(me)
        done = [0]

        def run_piece(spans):
            updates = run_share(loops, share.piece(spans, done[0]), params, data)
            done[0] += max(updates, 0)
            return updates
        return work_apart([cut[k] if k < len(cut) else none for k in range(rounds)],
                          run_piece, ReplicaMerge(self, share.sync, me, share.workers),
                          on_round)


class ReplicaMerge(Reconciler):
    """A worker's side of merging the replicas: meet the others, merge its own
    slice of every replicated array, meet again (compiled barriers on ``gates``)."""

    def __init__(self, replicas, gates, worker, workers):
        self.replicas, self.gates, self.worker, self.workers = replicas, gates, worker, workers
        self.done = 0

    def reconcile(self):
        self.done += 1
        if not meet(self.gates, self.worker, self.workers, 2 * self.done - 1):
            return False
        self.replicas.merge_part(self.worker, self.workers)
        return meet(self.gates, self.worker, self.workers, 2 * self.done)

    def reload(self):
        self.replicas.reload()


@njit(nogil=True, cache=True)
def meet(gates, worker, workers, level):
    """A barrier: raise this worker's gate to ``level`` and wait until every
    worker's has; False if the run was aborted."""
    open_gate(gates, worker, level)
    for w in range(workers):
        if not wait_for_gate(gates, w, level):
            return False
    return True
