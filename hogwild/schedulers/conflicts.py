"""Which samples conflict: the coordinates each sample's update touches.

Two samples conflict when their supports share a coordinate. The ``colored``
scheduler colours the conflict graph; ``cyclades`` finds connected components of
the conflict graph of small random batches (Pan et al., NIPS 2016), which never
needs the whole graph.
"""
import numpy as np
from numba import njit

from hogwild.errors import HogwildError
from hogwild.schedulers.coloring import color_graph
from hogwild.structure import Graph


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
def components_by_batch(indptr, indices, n_coordinates, order, batch):
    """Connected components of the conflict graphs of consecutive batches of
    ``order`` (positions a..a+batch-1 form one batch), by union-find over shared
    coordinates: linear in the nonzeros. Returns, for every position, the root of
    its component as a position within its batch (0..batch-1).
    """
    n = order.size
    parent = np.empty(n, np.int64)  # positions, roots inside the same batch
    holder = np.full(n_coordinates, -1, np.int64)  # last position that touched c
    for i in range(n):
        parent[i] = i
        first = i - i % batch
        e = order[i]
        for k in range(indptr[e], indptr[e + 1]):
            c = indices[k]
            j = holder[c]
            holder[c] = i
            if j >= first:  # touched earlier in this batch: join the components
                ri = _find(parent, i)
                rj = _find(parent, j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    groups = np.empty(n, np.int64)
    for i in range(n):
        groups[i] = _find(parent, i) - (i - i % batch)
    return groups


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


@njit(nogil=True, cache=True)
def _greedy_by_coordinates(indptr, indices, n_coordinates, order):
    """Greedy colouring of the conflict graph in ``order`` without building it:
    a sample takes the smallest colour that no earlier sample on any of its
    coordinates has (a bitset of used colours per coordinate), which is the
    greedy colouring of the materialised graph in that order."""
    colors = np.full(indptr.size - 1, -1, np.int32)
    words = 1
    used = np.zeros((n_coordinates, words), np.uint64)
    one = np.uint64(1)
    for e in order:
        color = -1
        for w in range(words):
            taken = np.uint64(0)
            for k in range(indptr[e], indptr[e + 1]):
                taken |= used[indices[k], w]
            if taken != ~np.uint64(0):
                bit = 0
                while (taken >> np.uint64(bit)) & one:
                    bit += 1
                color = 64 * w + bit
                break
        if color < 0:  # every colour so far is taken: double the bitsets
            color = 64 * words
            grown = np.zeros((n_coordinates, 2 * words), np.uint64)
            grown[:, :words] = used
            used = grown
            words *= 2
        colors[e] = color
        for k in range(indptr[e], indptr[e + 1]):
            used[indices[k], color // 64] |= one << np.uint64(color % 64)
    return colors


def color_samples(supports, max_pairs=2_000_000):
    """A proper colouring of the samples' conflict graph (int32 colours 0..k-1).

    Small graphs (up to ``max_pairs`` sample pairs sharing a coordinate) are
    built and coloured by DSATUR; larger ones, such as the line graph of a social
    network whose edges are the samples, greedily in largest-first order (by the
    sum of the sample's coordinate counts) straight from the supports, in time
    linear in the nonzeros times colours / 64.
    """
    total, counts = _pair_count(supports.indptr, supports.indices, supports.n_coordinates)
    if total <= max_pairs:
        return color_graph(conflict_graph(supports), "dsatur")
    weight = np.bincount(_sample_of_nonzeros(supports), weights=counts[supports.indices],
                         minlength=supports.n_samples)
    order = np.argsort(-weight, kind="stable").astype(np.int64)
    colors = _greedy_by_coordinates(supports.indptr, supports.indices,
                                    supports.n_coordinates, order)
    check_sample_coloring(supports, colors)
    return colors


def _sample_of_nonzeros(supports):
    return np.repeat(np.arange(supports.n_samples), np.diff(supports.indptr))


def check_sample_coloring(supports, colors):
    """Raise a HogwildError unless no coordinate is touched by two samples of one
    colour (linear in the nonzeros: the conflict graph is never built)."""
    colors = np.asarray(colors, np.int64)
    pairs = np.unique(np.stack([supports.indices, _sample_of_nonzeros(supports)], axis=1),
                      axis=0)
    keyed = pairs[:, 0] * (int(colors.max(initial=0)) + 1) + colors[pairs[:, 1]]
    order = np.argsort(keyed, kind="stable")
    clash = np.flatnonzero(np.diff(keyed[order]) == 0)
    if clash.size:
        a, b = pairs[order[clash[0]], 1], pairs[order[clash[0] + 1], 1]
        raise HogwildError(f"improper colouring: samples {a} and {b} share coordinate "
                           f"{pairs[order[clash[0]], 0]} and colour {colors[a]}")


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
    if n == 0 or supports.indices.size == 0:
        raise HogwildError(f"the {n} samples touch no coordinate (no features, no edges): "
                           "there is no sparsity to measure")
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
