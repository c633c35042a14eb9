"""The structure of a problem's samples, which schedulers use to run them without
conflicts: which coordinates each sample touches (Supports), how samples are
grouped into a grid of independent blocks (BlockLayout), and a graph of vertices
(Graph). An Objective declares them; nothing here knows about schedulers."""
from dataclasses import dataclass

import numpy as np
from numba import njit

from hogwild.errors import HogwildError, check_int


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

    def checked(self):
        """These supports, or a HogwildError where they do not describe samples
        (indptr must rise from 0 to the number of indices, the indices lie in
        0..n_coordinates-1): the schedulers index arrays with them."""
        indptr, indices = np.asarray(self.indptr), np.asarray(self.indices)
        if indptr.ndim != 1 or indptr.size < 1 or indptr[0] != 0 or \
                indptr[-1] != indices.size or (np.diff(indptr) < 0).any():
            raise HogwildError("supports: indptr must rise from 0 to the number of indices")
        if indices.size and (indices.min() < 0 or indices.max() >= self.n_coordinates):
            raise HogwildError(f"supports: coordinate ids must be in 0..{self.n_coordinates - 1}")
        return self

    @classmethod
    def from_csr(cls, matrix):
        """Rows of a scipy.sparse CSR matrix: a sample touches its nonzero columns."""
        return cls(np.asarray(matrix.indptr, np.int64), np.asarray(matrix.indices, np.int64),
                   int(matrix.shape[1]))

    @classmethod
    def from_edges(cls, n_vertices, u, v):
        """Sample k is an edge touching vertices u[k] and v[k] (one id space)."""
        indices = np.stack([np.asarray(u, np.int64), np.asarray(v, np.int64)], axis=1).ravel()
        return cls(np.arange(0, indices.size + 1, 2, dtype=np.int64), indices, int(n_vertices))

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


@dataclass(frozen=True)
class IdArray:
    """``data[ids]`` holds row ids (one per sample, e.g. a rating's user, or one per
    nonzero, e.g. a CSR row's feature columns) of the parameter arrays ``params``
    and of the read-only data arrays ``data`` (e.g. per-feature regularisation)
    that the update reads at the same id. Declared on an Objective, it lets
    replication="hot" give each worker its own copies of the hot rows without
    changing the update: list every array the ids index, or the update reads past
    their end."""

    ids: int
    params: tuple
    data: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "data", tuple(self.data))
        if not self.params:
            raise HogwildError("an IdArray indexes at least one params array")


@dataclass(frozen=True)
class BlockLayout:
    """Samples stored grouped into a grid x grid array of blocks: block (i, j) is
    samples offsets[i * grid + j] : offsets[i * grid + j + 1]. Samples in blocks
    that share neither a row nor a column of the grid never touch the same
    parameters (e.g. ratings of disjoint user and item groups)."""

    grid: int
    offsets: np.ndarray

    def block(self, i, j):
        k = i * self.grid + j
        return int(self.offsets[k]), int(self.offsets[k + 1])


def block_layout(row_keys, col_keys, grid, rng):
    """Group samples into a grid of blocks by two keys (a rating's user and item).

    Keys are relabelled in a random order and cut into ``grid`` contiguous label
    ranges, one per grid row (column); samples are in random order within each
    block. Returns (order, row_labels, col_labels, layout): store the samples as
    ``data[order]`` with their keys replaced by ``row_labels[key]`` and
    ``col_labels[key]``. Then each block is contiguous (workers stream it) and
    the parameter rows of different grid rows are in disjoint memory ranges, so
    workers on different blocks share no cache line (not even of small per-key
    arrays such as biases).
    """
    grid = check_int("grid", grid, 1)
    row_keys = np.asarray(row_keys, dtype=np.int64)
    col_keys = np.asarray(col_keys, dtype=np.int64)

    def relabel(keys):
        n_keys = int(keys.max()) + 1 if keys.size else 1
        labels = rng.permutation(n_keys)
        return labels, labels * grid // n_keys

    row_labels, row_block = relabel(row_keys)
    col_labels, col_block = relabel(col_keys)
    shuffled = rng.permutation(row_keys.size)
    block_ids = row_block[row_keys[shuffled]] * grid + col_block[col_keys[shuffled]]
    by_block = np.argsort(block_ids, kind="stable")
    offsets = np.searchsorted(block_ids[by_block], np.arange(grid * grid + 1))
    return (shuffled[by_block], row_labels, col_labels,
            BlockLayout(grid, offsets.astype(np.int64)))


@dataclass(frozen=True)
class Graph:
    """An undirected graph in CSR form: the neighbours of v are
    indices[indptr[v]:indptr[v + 1]], each edge stored in both directions."""

    indptr: np.ndarray
    indices: np.ndarray

    @property
    def n_vertices(self):
        return self.indptr.size - 1

    @property
    def n_edges(self):
        return self.indices.size // 2

    def degrees(self):
        return np.diff(self.indptr)

    def edges(self):
        """(u, v): every edge once, with u < v (int64 arrays)."""
        u = np.repeat(np.arange(self.n_vertices), np.diff(self.indptr))
        keep = u < self.indices
        return u[keep], self.indices[keep].astype(np.int64)

    @classmethod
    def from_edges(cls, n_vertices, u, v):
        """The simple undirected graph of the edge list (u[k], v[k]): directions,
        duplicates and self loops are dropped."""
        u = np.asarray(u, np.int64)
        v = np.asarray(v, np.int64)
        if u.size and (min(u.min(), v.min()) < 0 or max(u.max(), v.max()) >= n_vertices):
            raise HogwildError(f"edge endpoints must be in 0..{n_vertices - 1}")
        keep = u != v
        a = np.concatenate([u[keep], v[keep]])
        b = np.concatenate([v[keep], u[keep]])
        keys = np.unique(a * n_vertices + b)
        a, b = np.divmod(keys, n_vertices)
        indptr = np.zeros(n_vertices + 1, np.int64)
        np.cumsum(np.bincount(a, minlength=n_vertices), out=indptr[1:])
        return cls(indptr, b.astype(np.int32))

    def square(self):
        """The distance-2 graph: u ~ v when they are neighbours or share one
        (GraphLab's full consistency colours this graph)."""
        u, v = _two_hop_pairs(self.indptr, self.indices)
        return Graph.from_edges(self.n_vertices, u, v)


@njit(nogil=True, cache=True)
def _two_hop_pairs(indptr, indices):
    n = indptr.size - 1
    count = 0
    for v in range(n):
        for k in range(indptr[v], indptr[v + 1]):
            w = indices[k]
            count += 1 + indptr[w + 1] - indptr[w]
    u_out = np.empty(count, np.int64)
    v_out = np.empty(count, np.int64)
    m = 0
    for v in range(n):
        for k in range(indptr[v], indptr[v + 1]):
            w = indices[k]
            u_out[m] = v
            v_out[m] = w
            m += 1
            for q in range(indptr[w], indptr[w + 1]):
                u_out[m] = v
                v_out[m] = indices[q]
                m += 1
    return u_out, v_out
