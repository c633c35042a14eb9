"""Graph colouring for conflict-free (GraphLab-style chromatic) scheduling.

Vertices of one colour share no edge, so their updates can run in parallel with
no possible conflict. Graphs are undirected, in CSR form (``indptr`` int64,
``indices`` int32, both directions stored, no self loops, no duplicates), as
``Graph`` holds them.

Algorithms (all compiled, O(V + E) except DSATUR's O((V + E) log V)):
  greedy in a vertex order, each vertex taking the smallest colour no neighbour
  has: ``natural`` (index order), ``largest_first`` (decreasing degree),
  ``smallest_last`` (Matula-Beck degeneracy order: at most degeneracy + 1
  colours); and ``dsatur`` (Brelaz 1979: next the vertex with the most distinct
  neighbour colours, ties by degree).
``check_coloring`` verifies a colouring (used by the tests and after every
colouring the engine makes).
"""
import numpy as np
from numba import njit

from hogwild.errors import HogwildError, choose

ALGORITHMS = ("natural", "largest_first", "smallest_last", "dsatur")


# --- compiled colouring ---------------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def _smallest_free_color(indptr, indices, colors, v, seen_by):
    """The smallest colour no coloured neighbour of v has (seen_by[c] == v marks
    colour c as taken for v, so the scratch array needs no clearing)."""
    for k in range(indptr[v], indptr[v + 1]):
        c = colors[indices[k]]
        if c >= 0:
            seen_by[c] = v
    c = 0
    while seen_by[c] == v:
        c += 1
    return c


@njit(nogil=True, cache=True)
def _greedy(indptr, indices, order):
    n = indptr.size - 1
    colors = np.full(n, -1, np.int32)
    seen_by = np.full(n + 1, -1, np.int64)  # seen_by[c] == v: a neighbour of v has c
    for v in order:
        colors[v] = _smallest_free_color(indptr, indices, colors, v, seen_by)
    return colors


@njit(nogil=True, cache=True)
def _smallest_last_order(indptr, indices):
    """Degeneracy order (repeatedly remove a vertex of minimum remaining degree),
    reversed: colouring greedily in this order uses at most degeneracy + 1 colours.
    Bucket queue, O(V + E)."""
    n = indptr.size - 1
    degree = indptr[1:] - indptr[:-1]
    max_degree = degree.max() if n else 0
    # doubly linked lists of vertices per current degree
    head = np.full(max_degree + 1, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    prv = np.full(n, -1, np.int64)
    for v in range(n):
        d = degree[v]
        nxt[v] = head[d]
        if head[d] >= 0:
            prv[head[d]] = v
        head[d] = v
    removed = np.zeros(n, np.bool_)
    order = np.empty(n, np.int64)
    low = 0
    for step in range(n):
        while head[low] < 0:
            low += 1
        v = head[low]
        head[low] = nxt[v]
        if nxt[v] >= 0:
            prv[nxt[v]] = -1
        removed[v] = True
        order[n - 1 - step] = v
        for k in range(indptr[v], indptr[v + 1]):
            w = indices[k]
            if removed[w]:
                continue
            d = degree[w]  # move w from bucket d to d - 1
            if prv[w] >= 0:
                nxt[prv[w]] = nxt[w]
            else:
                head[d] = nxt[w]
            if nxt[w] >= 0:
                prv[nxt[w]] = prv[w]
            degree[w] = d - 1
            prv[w] = -1
            nxt[w] = head[d - 1]
            if head[d - 1] >= 0:
                prv[head[d - 1]] = w
            head[d - 1] = w
        if low > 0:
            low -= 1
    return order


@njit(nogil=True, cache=True)
def _heap_push(keys, items, size, key, item):
    i = size
    keys[i] = key
    items[i] = item
    while i > 0:
        parent = (i - 1) // 2
        if keys[parent] >= keys[i]:
            break
        keys[parent], keys[i] = keys[i], keys[parent]
        items[parent], items[i] = items[i], items[parent]
        i = parent
    return size + 1


@njit(nogil=True, cache=True)
def _heap_pop(keys, items, size):
    """Remove the max; returns (key, item, new size)."""
    key, item = keys[0], items[0]
    size -= 1
    keys[0], items[0] = keys[size], items[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        best = left
        if left + 1 < size and keys[left + 1] > keys[left]:
            best = left + 1
        if keys[i] >= keys[best]:
            break
        keys[i], keys[best] = keys[best], keys[i]
        items[i], items[best] = items[best], items[i]
        i = best
    return key, item, size


@njit(nogil=True, cache=True)
def _dsatur(indptr, indices):
    """DSATUR with a lazy max-heap keyed by (saturation, degree, -index) and a
    per-vertex bitset of the colours its neighbours have."""
    n = indptr.size - 1
    degree = indptr[1:] - indptr[:-1]
    max_degree = degree.max() if n else 0
    words = (max_degree + 1 + 63) // 64 + 1
    nbr_colors = np.zeros((n, words), np.uint64)
    saturation = np.zeros(n, np.int64)
    colors = np.full(n, -1, np.int32)
    scale_sat = (max_degree + 1) * (n + 1)
    keys = np.empty(n + indices.size + 1, np.int64)
    items = np.empty(n + indices.size + 1, np.int64)
    size = 0
    for v in range(n):
        size = _heap_push(keys, items, size, degree[v] * (n + 1) + (n - v), v)
    seen_by = np.full(max_degree + 2, -1, np.int64)
    while size > 0:
        key, v, size = _heap_pop(keys, items, size)
        if colors[v] >= 0 or key != saturation[v] * scale_sat + degree[v] * (n + 1) + (n - v):
            continue  # already coloured, or a stale entry
        c = _smallest_free_color(indptr, indices, colors, v, seen_by)
        colors[v] = c
        word, bit = c // 64, np.uint64(1) << np.uint64(c % 64)
        for k in range(indptr[v], indptr[v + 1]):
            w = indices[k]
            if colors[w] < 0 and (nbr_colors[w, word] & bit) == 0:
                nbr_colors[w, word] |= bit
                saturation[w] += 1
                size = _heap_push(keys, items, size,
                                  saturation[w] * scale_sat + degree[w] * (n + 1) + (n - w), w)
    return colors


@njit(nogil=True, cache=True)
def _first_conflict(indptr, indices, colors):
    """(u, v) of the first edge whose ends share a colour, or (-1, -1)."""
    for u in range(indptr.size - 1):
        if colors[u] < 0:
            return u, u
        for k in range(indptr[u], indptr[u + 1]):
            if colors[indices[k]] == colors[u]:
                return u, indices[k]
    return -1, -1


def color_graph(graph, algorithm="dsatur"):
    """Colours 0..k-1 (int32, one per vertex) of a proper colouring of ``graph``."""
    choose(ALGORITHMS, algorithm, "colouring algorithm")
    indptr, indices = graph.indptr, graph.indices
    if algorithm == "dsatur":
        bitset_bytes = graph.n_vertices * ((int(graph.degrees().max(initial=0)) + 64) // 64 + 1) * 8
        if bitset_bytes > 2**30:
            raise HogwildError(f"dsatur would need {bitset_bytes / 2**30:.1f} GiB of colour "
                               "bitsets for this graph; use smallest_last")
        colors = _dsatur(indptr, indices)
    else:
        if algorithm == "natural":
            order = np.arange(graph.n_vertices, dtype=np.int64)
        elif algorithm == "largest_first":
            order = np.argsort(-graph.degrees(), kind="stable").astype(np.int64)
        else:
            order = _smallest_last_order(indptr, indices)
        colors = _greedy(indptr, indices, order)
    check_coloring(graph, colors)
    return colors


def check_coloring(graph, colors):
    """Raise a HogwildError naming the first bad vertex or edge unless ``colors``
    gives every vertex a colour >= 0 and no edge two equal colours."""
    colors = np.asarray(colors)
    if colors.shape != (graph.n_vertices,):
        raise HogwildError(f"colouring has {colors.size} entries for {graph.n_vertices} "
                           "vertices")
    u, v = _first_conflict(graph.indptr, graph.indices, colors.astype(np.int32))
    if u >= 0:
        if u == v:
            raise HogwildError(f"vertex {u} has no colour ({colors[u]})")
        raise HogwildError(f"improper colouring: edge ({u}, {v}) has colour {colors[u]} "
                           "at both ends")
