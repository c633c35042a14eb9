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


@njit(nogil=True, cache=True)
def _conflict_degrees(indptr, indices, holders_start, holders, samples, mark):
    """For each sample in ``samples``: how many other samples share a coordinate
    with it (each counted once). ``mark`` is scratch, one slot per sample, all -1."""
    out = np.empty(samples.size, np.int64)
    for i in range(samples.size):
        e = samples[i]
        count = 0
        for k in range(indptr[e], indptr[e + 1]):
            c = indices[k]
            for q in range(holders_start[c], holders_start[c + 1]):
                f = holders[q]
                if f != e and mark[f] != i:
                    mark[f] = i
                    count += 1
        out[i] = count
    return out


@njit(nogil=True, cache=True)
def _holders(indptr, indices, counts):
    """CSR of coordinate -> samples touching it."""
    start = np.zeros(counts.size + 1, np.int64)
    for c in range(counts.size):
        start[c + 1] = start[c] + counts[c]
    fill = start[:-1].copy()
    holders = np.empty(indices.size, np.int64)
    for e in range(indptr.size - 1):
        for k in range(indptr[e], indptr[e + 1]):
            holders[fill[indices[k]]] = e
            fill[indices[k]] += 1
    return start, holders


def sparsity_stats(supports, max_exact=20_000, seed=0):
    """The Hogwild! paper's sparsity statistics of the samples' supports:

    omega: the largest support (coordinates one update touches);
    delta: the largest fraction of samples that touch one coordinate;
    rho:   the largest fraction of samples that conflict with one sample.

    rho is exact for up to ``max_exact`` samples; above that it is the maximum
    over ``max_exact`` samples drawn at random (seeded), a lower bound that the
    report marks as sampled.
    """
    n = supports.n_samples
    sizes = np.diff(supports.indptr)
    counts = np.bincount(supports.indices, minlength=supports.n_coordinates)
    start, holders = _holders(supports.indptr, supports.indices, counts)
    exact = n <= max_exact
    samples = np.arange(n) if exact else np.sort(
        np.random.default_rng(seed).choice(n, max_exact, replace=False))
    degrees = _conflict_degrees(supports.indptr, supports.indices, start, holders,
                                samples.astype(np.int64), np.full(n, -1, np.int64))
    return {"samples": n, "coordinates": supports.n_coordinates,
            "omega": int(sizes.max()), "mean_support": float(sizes.mean()),
            "delta": float(counts.max()) / n,
            "rho": float(degrees.max()) / n, "mean_conflict_fraction": float(degrees.mean()) / n,
            "rho_exact": exact, "rho_samples": int(samples.size)}


def reading(stats):
    """One line on what the statistics predict for lock-free scaling."""
    rho, delta = stats["rho"], stats["delta"]
    if rho < 0.01 and delta < 0.01:
        return ("very sparse: updates rarely collide (the paper's condition for near-linear "
                "speedup, though traffic on shared cache lines can still limit a real "
                "machine), and conflict-free batches stay small")
    if delta >= 0.1:
        return (f"a coordinate is in {delta:.0%} of the samples: every worker writes it, so "
                "Hogwild! scaling is limited by cache-line traffic on it, and conflict-free "
                "schedules serialise (use cyclades, not colored)")
    return (f"moderately sparse (each sample conflicts with up to {rho:.1%} of the others): "
            "Hogwild! collisions are infrequent; conflict-free batches stay small")
