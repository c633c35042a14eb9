"""The structure of a problem's samples, which schedulers use to run them without
conflicts: which coordinates each sample touches (Supports), how samples are
grouped into a grid of independent blocks (BlockLayout), and a graph of vertices
(Graph). An Objective declares them; nothing here knows about schedulers."""
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit

from hogwild.errors import HogwildError, check_int
from hogwild.limits import usable_cores


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
    ``col_labels[key]``. Then each block is contiguous (workers stream it) and the
    parameter rows of different grid rows are in disjoint memory ranges, so
    workers on different blocks share no cache line (not even of small per-key
    arrays such as biases). blocked_copy stores the samples themselves in this
    layout without the order (the same arrangement for the same rng).
    """
    order = np.arange(np.asarray(row_keys).size, dtype=np.int64)
    _, _, order, row_labels, col_labels, layout = blocked_copy(row_keys, col_keys, order,
                                                               grid, rng)
    return order, row_labels, col_labels, layout


def blocked_copy(row_keys, col_keys, values, grid, rng, row_index=None, col_index=None):
    """(rows, cols, values, row_labels, col_labels, layout): samples given as two
    keys and a value each, stored in block_layout's arrangement with their keys
    replaced by labels (int32): the same as gathering by block_layout's order.

    ``row_index``/``col_index``: int32 tables from a raw key to its dense index
    (-1 for keys that do not occur), so that raw ids are laid out without a dense
    copy of them first; the labels (``row_labels[dense index]``) then permute the
    dense indices. Without a table the keys are dense indices.

    Compiled and on every core, the result the same for any number of them: each
    core counts and then scatters a contiguous part of the samples (a stable
    counting sort), then shuffles whole blocks, each from a SplitMix64 stream of
    its own. Besides the copy it takes 2 bytes a sample (the block ids): 10^8
    ratings are laid out in seconds, at 26 bytes a rating at the peak.
    """
    grid = check_int("grid", grid, 1)
    row_keys, col_keys = _as_keys(row_keys), _as_keys(col_keys)
    values = np.ascontiguousarray(values)
    n = row_keys.size
    row_labels, row_key_labels, row_block = _relabel(row_keys, row_index, grid, rng)
    col_labels, col_key_labels, col_block = _relabel(col_keys, col_index, grid, rng)
    seed = int(rng.integers(2 ** 63))
    n_blocks = grid * grid
    parts = [(n * p // _PARTS, n * (p + 1) // _PARTS) for p in range(_PARTS)]
    block_ids = np.empty(n, np.int16 if n_blocks <= 2 ** 15 else np.int32)
    counts = np.zeros((_PARTS, n_blocks), np.int64)
    _on_cores([lambda p=p, lo=lo, hi=hi: _block_ids(row_keys, col_keys, row_block, col_block,
                                                     grid, block_ids, lo, hi, counts[p])
               for p, (lo, hi) in enumerate(parts)])
    offsets = np.zeros(n_blocks + 1, np.int64)
    np.cumsum(counts.sum(axis=0), out=offsets[1:])
    fills = offsets[:-1] + np.cumsum(counts, axis=0) - counts  # where each part starts
    rows, cols = np.empty(n, np.int32), np.empty(n, np.int32)
    out = np.empty(n, values.dtype)
    _on_cores([lambda p=p, lo=lo, hi=hi: _scatter(
        block_ids, lo, hi, fills[p], row_keys, col_keys, values, row_key_labels,
        col_key_labels, rows, cols, out) for p, (lo, hi) in enumerate(parts)])
    _on_cores([lambda p=p: _shuffle_blocks(offsets, seed, p, _PARTS, rows, cols, out)
               for p in range(_PARTS)])
    return rows, cols, out, row_labels, col_labels, BlockLayout(grid, offsets)


_PARTS = usable_cores()  # the work's parts, one per core; the result does not depend on it


def _on_cores(jobs):
    """Run the jobs (compiled, GIL-free functions) on a thread each."""
    if len(jobs) == 1:
        jobs[0]()
        return
    with ThreadPoolExecutor(len(jobs)) as pool:
        for done in [pool.submit(job) for job in jobs]:
            done.result()


def _relabel(keys, index, grid, rng):
    """(labels, key_labels, key_block): a random permutation of the dense indices,
    each key's label (int32), and its grid row or column (int16 where it fits, so
    that the tables of 10^7 keys stay in cache)."""
    n_keys = (int(index.max()) if index is not None else int(keys.max())) + 1 \
        if keys.size else 1
    labels = rng.permutation(n_keys)
    key_labels = labels if index is None else np.where(index >= 0, labels[index], 0)
    key_block = (key_labels * grid // n_keys).astype(np.int16 if grid <= 2 ** 15 else np.int32)
    return labels, key_labels.astype(np.int32), key_block


def _as_keys(keys):
    """Keys as a contiguous int32 or int64 array, without a copy where they are one."""
    keys = np.asarray(keys)
    if keys.dtype not in (np.int32, np.int64):
        keys = keys.astype(np.int64)
    return np.ascontiguousarray(keys)


@njit(nogil=True, cache=True)
def _block_ids(row_keys, col_keys, row_block, col_block, grid, out, lo, hi, counts):
    """Samples lo..hi-1's blocks, row-major, and how many fall in each block."""
    for k in range(lo, hi):
        b = row_block[row_keys[k]] * grid + col_block[col_keys[k]]
        out[k] = b
        counts[b] += 1


@njit(nogil=True, cache=True)
def _scatter(block_ids, lo, hi, fill, row_keys, col_keys, values, row_key_labels,
             col_key_labels, rows, cols, out):
    """Samples lo..hi-1 to their blocks in input order, keys relabelled (``fill``:
    where this part's samples of each block go)."""
    for k in range(lo, hi):
        b = block_ids[k]
        at = fill[b]
        fill[b] = at + 1
        rows[at] = row_key_labels[row_keys[k]]
        cols[at] = col_key_labels[col_keys[k]]
        out[at] = values[k]


@njit(nogil=True, cache=True)
def _splitmix64(state):
    """(next state, a 64-bit random number): Steele, Lea and Flood's SplitMix64."""
    state = (state + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@njit(nogil=True, cache=True)
def _shuffle_blocks(offsets, seed, part, parts, rows, cols, out):
    """Fisher-Yates within blocks part, part + parts, ..., each from a stream of its
    own (so that the result depends on ``seed`` alone, not on who shuffles)."""
    for b in range(part, offsets.size - 1, parts):
        state, _ = _splitmix64(np.uint64(seed) ^ (np.uint64(b) * np.uint64(0xD1B54A32D192ED03)))
        first = offsets[b]
        for i in range(offsets[b + 1] - first - 1, 0, -1):
            state, r = _splitmix64(state)
            j = first + np.int64(r % np.uint64(i + 1))
            k = first + i
            rows[k], rows[j] = rows[j], rows[k]
            cols[k], cols[j] = cols[j], cols[k]
            out[k], out[j] = out[j], out[k]


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
