"""Allreduce: the MPI ranks' Reconciler. Every rank's parameters become the
base (the state after the last reconcile) plus the mean of the ranks' changes
since then: one dense allreduce of the change vector through the tuned
communicator, or, where fewer bytes move that way, an allgather of the changed
coordinates (indices and values) that every rank adds up in rank order. The
updates each rank ran since the last reconcile travel with the count of its
changed coordinates, so every rank knows the job's total (``updates``) with no
message of its own, and the survivors of a lost rank can agree on it. Summation
servers (the last ranks of the communicator, which take no samples) change
nothing and only help to add: the mean is over the ranks that train."""
import time

import numpy as np
from numba import njit

from hogwild.backends.reconcile import Reconciler


class Allreduce(Reconciler):
    """One rank's side: ``flat`` is the parameter vector its local engine updates
    (``params`` views of it, or copies when ``live`` is False), ``exchange`` the
    AllreduceSettings' ("auto", "dense" or "sparse"). ``reducer`` (the
    communicator whose allreduce runs the chosen algorithm) is set after the
    link probe; ``after`` is called once the parameters changed (the local
    engine's replicas reload them). ``servers``: how many of comm's last ranks are
    summation servers (their own parameters are not kept up to date)."""

    def __init__(self, MPI, comm, flat, params, layout, exchange, after, servers=0):
        self.MPI, self.comm, self.reducer = MPI, comm, comm
        self.ranks, self.servers = comm.Get_size(), servers
        self.flat, self.params, self.layout = flat, params, layout
        self.live = all(np.shares_memory(p, flat) for p in params)
        self.exchange, self.after = exchange, after
        self.base = flat.copy()
        self.delta = np.empty_like(flat)
        self.scratch = np.zeros_like(flat)
        self.index_dtype = np.int32 if flat.size < 2**31 else np.int64
        self.done = 0  # reconciles so far (every rank alike)
        self.pending = 0  # this rank's updates since the last reconcile
        self.updates = 0  # every rank's updates reconciled so far
        self.traffic = {kind: {"syncs": 0, "seconds": 0.0, "bytes": 0}
                        for kind in ("dense", "sparse")}

    def warm_up(self):
        """Compile (or load) the sparse exchange's kernel."""
        apply_mean_of_changes(self.flat, self.base, self.scratch,
                              np.zeros(0, self.index_dtype), self.flat[:0],
                              self.flat.dtype.type(1.0))

    @property
    def trainers(self):
        """The ranks whose changes are averaged: all but the summation servers."""
        return self.ranks - self.servers

    def use(self, comm, reducer, servers):
        """Go on with the ranks of ``comm`` (the survivors of a lost rank), the last
        ``servers`` of them serving, and ``reducer``, from the state in ``base``."""
        self.comm, self.reducer, self.ranks = comm, reducer, comm.Get_size()
        self.servers = servers
        self.flat[...] = self.base
        self._to_params()

    def _to_params(self):
        """The reconciled vector back into the parameters (where they are not its
        views), then the engine's hook."""
        if not self.live:
            for view, array in zip(self.layout.views(self.flat), self.params):
                array[...] = view
        self.after()

    def reconcile(self):
        if self.ranks == 1:
            self.done, self.updates, self.pending = self.done + 1, self.updates + self.pending, 0
            return True
        if not self.live:
            for view, array in zip(self.layout.views(self.flat), self.params):
                view[...] = array
        np.subtract(self.flat, self.base, out=self.delta)
        changed = np.flatnonzero(self.delta).astype(self.index_dtype)
        counts_and_updates = np.empty((self.ranks, 2), np.int64)
        self.comm.Allgather(np.array([changed.size, self.pending], np.int64),
                            counts_and_updates)
        counts = np.ascontiguousarray(counts_and_updates[:, 0])
        entry = self.flat.itemsize + changed.itemsize
        sparse = self.exchange == "sparse" or (
            self.exchange == "auto" and int(counts.sum()) * entry < self.flat.nbytes)
        moved, seconds = self._allgather(changed, counts) if sparse else self._allreduce()
        kind = self.traffic["sparse" if sparse else "dense"]
        kind["seconds"] += seconds
        kind["syncs"] += 1
        kind["bytes"] += moved
        self.done += 1
        self.updates += int(counts_and_updates[:, 1].sum())
        self.pending = 0
        self._to_params()
        return True

    def _allgather(self, changed, counts):
        """(bytes moved, seconds in the collectives) of the sparse exchange."""
        indices = np.empty(int(counts.sum()), self.index_dtype)
        values = np.empty(indices.size, self.flat.dtype)
        mine = np.ascontiguousarray(self.delta[changed])
        start = time.perf_counter()
        self.comm.Allgatherv(changed, [indices, counts])
        self.comm.Allgatherv(mine, [values, counts])
        seconds = time.perf_counter() - start
        apply_mean_of_changes(self.flat, self.base, self.scratch, indices, values,
                              self.flat.dtype.type(1.0 / self.trainers))
        return indices.nbytes + values.nbytes, seconds

    def _allreduce(self):
        """(bytes moved, seconds in the collective) of the dense exchange."""
        start = time.perf_counter()
        self.reducer.Allreduce(self.MPI.IN_PLACE, self.delta, op=self.MPI.SUM)
        seconds = time.perf_counter() - start
        self.delta *= self.flat.dtype.type(1.0 / self.trainers)
        np.add(self.base, self.delta, out=self.flat)
        self.base[...] = self.flat
        return self.flat.nbytes, seconds

    def measured_seconds(self):
        """The dense allreduce's mean time per reconcile, as the slowest rank saw it
        (a reconcile ends for all at once); None when none ran. A collective."""
        dense = self.traffic["dense"]
        measured = dense["seconds"] / dense["syncs"] if dense["syncs"] else None
        if measured is not None:
            measured = self.comm.allreduce(measured, op=self.MPI.MAX)
        return measured


@njit(nogil=True, cache=True)
def apply_mean_of_changes(flat, base, scratch, indices, values, scale):
    """flat = base + scale * (the sum of the changes ``values`` at ``indices``, added in
    their order, in flat's precision: ``scale`` is of flat's dtype), at the indices
    only; then base = flat there. ``scratch`` is zero and stays so."""
    for k in range(indices.size):
        scratch[indices[k]] += values[k]
    for k in range(indices.size):
        i = indices[k]
        flat[i] = base[i] + scratch[i] * scale
    for k in range(indices.size):
        i = indices[k]
        base[i] = flat[i]
        scratch[i] = 0
