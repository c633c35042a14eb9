"""Which samples conflict: the coordinates each sample's update touches.

Two samples conflict when their supports share a coordinate. The ``colored``
scheduler colours the conflict graph; ``cyclades`` finds connected components of
the conflict graph of small random batches (Pan et al., NIPS 2016), which never
needs the whole graph.
"""
from dataclasses import dataclass

import numpy as np
from numba import njit

from hogwild.coloring import Graph
from hogwild.errors import HogwildError


@dataclass(frozen=True)
class Supports:
    """Sample e touches coordinates indices[indptr[e]:indptr[e + 1]] (ids in
    0..n_coordinates-1, one id space for all of the objective's parameters)."""

    indptr: np.ndarray
    indices: np.ndarray
    n_coordinates: int

    @property
    def n_samples(self):
        return self.indptr.size - 1

    @classmethod
    def from_csr(cls, matrix):
        """Rows of a scipy.sparse CSR matrix: a sample touches its nonzero columns."""
        return cls(np.asarray(matrix.indptr, np.int64), np.asarray(matrix.indices, np.int64),
                   int(matrix.shape[1]))

    @classmethod
    def from_keys(cls, *keys):
        """Each sample touches one coordinate per key array (e.g. a rating's user row
        and item row); key arrays get disjoint id ranges."""
        n = len(keys[0])
        offset = 0
        columns = []
        for key in keys:
            key = np.asarray(key, np.int64)
            columns.append(key + offset)
            offset += int(key.max()) + 1 if key.size else 0
        indices = np.stack(columns, axis=1).ravel()
        return cls(np.arange(0, len(keys) * n + 1, len(keys), dtype=np.int64), indices, offset)


@njit(nogil=True, cache=True)
def _pair_count(indptr, indices, n_coordinates):
    counts = np.zeros(n_coordinates, np.int64)
    for k in range(indices.size):
        counts[indices[k]] += 1
    total = 0
    for c in counts:
        total += c * (c - 1) // 2
    return total, counts


@njit(nogil=True, cache=True)
def _conflict_pairs(indptr, indices, counts, total):
    """All (sample, sample) pairs that share a coordinate (with repeats)."""
    n_coordinates = counts.size
    start = np.zeros(n_coordinates + 1, np.int64)
    for c in range(n_coordinates):
        start[c + 1] = start[c] + counts[c]
    fill = start[:-1].copy()
    holders = np.empty(indices.size, np.int64)
    for e in range(indptr.size - 1):
        for k in range(indptr[e], indptr[e + 1]):
            c = indices[k]
            holders[fill[c]] = e
            fill[c] += 1
    u = np.empty(total, np.int64)
    v = np.empty(total, np.int64)
    m = 0
    for c in range(n_coordinates):
        for a in range(start[c], start[c + 1]):
            for b in range(a + 1, start[c + 1]):
                u[m] = holders[a]
                v[m] = holders[b]
                m += 1
    return u, v


def conflict_graph(supports, max_pairs=20_000_000):
    """The graph on samples with an edge wherever two samples share a coordinate.

    Its size is sum over coordinates of (samples touching it)^2 / 2 before
    duplicates are removed; data where one coordinate is in most samples (a
    common word) make it nearly complete, and then this raises a HogwildError
    pointing to the ``cyclades`` scheduler instead of exhausting memory.
    """
    total, counts = _pair_count(supports.indptr, supports.indices, supports.n_coordinates)
    if total > max_pairs:
        busiest = int(counts.max())
        raise HogwildError(
            f"the conflict graph of these {supports.n_samples} samples would list {total:,} "
            f"sample pairs (one coordinate is in {busiest} samples, "
            f"{busiest / supports.n_samples:.0%}); colouring it is impractical, use "
            "scheduler='cyclades'")
    u, v = _conflict_pairs(supports.indptr, supports.indices, counts, total)
    return Graph.from_edges(supports.n_samples, u, v)


@njit(nogil=True, cache=True)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(nogil=True, cache=True)
def batch_components(indptr, indices, batch, owner, parent):
    """Connected components of the conflict graph of the samples in ``batch``, by
    union-find over their shared coordinates: linear in the batch's nonzeros.

    ``owner`` (one slot per coordinate, all -1 on entry and on return) and
    ``parent`` (one slot per batch position) are scratch arrays. Returns the
    component root (a batch position) of every batch position.
    """
    b = batch.size
    for i in range(b):
        parent[i] = i
    for i in range(b):
        e = batch[i]
        for k in range(indptr[e], indptr[e + 1]):
            c = indices[k]
            if owner[c] < 0:
                owner[c] = i
            else:
                ri = _find(parent, i)
                rj = _find(parent, owner[c])
                if ri != rj:
                    if ri < rj:
                        parent[rj] = ri
                    else:
                        parent[ri] = rj
    roots = np.empty(b, np.int64)
    for i in range(b):
        roots[i] = _find(parent, i)
        e = batch[i]
        for k in range(indptr[e], indptr[e + 1]):
            owner[indices[k]] = -1
    return roots
