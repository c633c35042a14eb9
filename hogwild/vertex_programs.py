"""GraphLab-style vertex programs (Low et al., VLDB 2012) on the engine.

A vertex program is an update over one vertex and its neighbours, written like any
objective's update but with the vertex as the sample:

    def update(v, state, graph, step):      # state: the params tuple
        total = 0.0
        for k in range(graph[0][v], graph[0][v + 1]):   # or: neighbors(graph, v)
            total += state[0][graph[1][k]] * graph[2][k]
        state[0][v] = ...

``graph`` is the data tuple (indptr, indices, weights, *vertex_data): the CSR of
the graph, each edge in both directions, its edge weights, then any read-only
arrays the program needs. ``neighbors(graph, v)`` and ``edge_weights(graph, v)``
return the slices for v.

The consistency model says what an update may touch, and so which vertices may
run at the same time under the ``colored`` scheduler (GraphLab's chromatic
engine) and ``cyclades``:
  - "vertex": reads and writes only v's own state: any vertices may run together
    (one colour).
  - "edge": writes v's state and reads its neighbours': adjacent vertices never
    run together (a proper colouring of the graph); vertices two apart may.
  - "full": may also write its neighbours' state: vertices within distance 2
    never run together (a colouring of the square of the graph).
Under ``hogwild`` there is no such guarantee: neighbours may race, as in Hogwild!.
"""
import numpy as np
from numba import njit

from hogwild.structure import Graph, Supports
from hogwild.errors import HogwildError, choose
from hogwild.objective import Objective

CONSISTENCY_MODELS = ("vertex", "edge", "full")


@njit(nogil=True, cache=True, inline="always")
def neighbors(graph, v):
    """The neighbours of vertex v (a view of the graph's indices)."""
    return graph[1][graph[0][v]:graph[0][v + 1]]


@njit(nogil=True, cache=True, inline="always")
def edge_weights(graph, v):
    """The weights of v's edges, in the order of neighbors(graph, v)."""
    return graph[2][graph[0][v]:graph[0][v + 1]]


def _no_loss(v, state, graph):
    return 0.0


def vertex_program(graph, update, state, consistency="edge", loss=None, weights=None,
                   vertex_data=(), name="vertex-program"):
    """An Objective whose samples are the vertices of ``graph`` (a
    hogwild.structure.Graph), for hogwild.fit with any scheduler.

    update(v, state, graph, step) and loss(v, state, graph) follow the module
    docstring; loss (default: 0) is summed over vertices for the epoch's objective.
    state: the arrays the program updates in place (one row per vertex, say; integer
    state such as labels or counts is allowed);
    weights: one per stored edge entry (graph.indices order; default 1.0);
    vertex_data: extra read-only arrays, appended to the graph tuple.
    """
    choose(CONSISTENCY_MODELS, consistency, "consistency model")
    if not isinstance(graph, Graph):
        raise HogwildError(f"graph must be a hogwild.structure.Graph, got {type(graph).__name__}")
    n = graph.n_vertices
    if weights is None:
        weights = np.ones(graph.indices.size, np.float64)
    weights = np.ascontiguousarray(weights)
    if weights.shape != graph.indices.shape:
        raise HogwildError(f"weights must have one entry per stored edge "
                           f"({graph.indices.size}), got shape {weights.shape}")
    vertices = np.arange(n, dtype=np.int64)
    if consistency == "vertex":
        supports, conflicts = Supports(np.arange(n + 1, dtype=np.int64), vertices, n), None
    else:
        # the closed neighbourhood: what a "full" update may write. Under "edge", two
        # vertices that only share a neighbour may run together: colour the graph.
        degrees = graph.degrees()
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(degrees + 1, out=indptr[1:])
        indices = np.empty(indptr[-1], np.int64)
        indices[indptr[:-1]] = vertices
        inner = np.ones(indptr[-1], bool)
        inner[indptr[:-1]] = False
        indices[inner] = graph.indices
        supports = Supports(indptr, indices, n)
        conflicts = graph if consistency == "edge" else None
    data = (graph.indptr, graph.indices.astype(np.int64), weights) + tuple(vertex_data)
    return Objective(update, loss or _no_loss, state, data, n, name=name, supports=supports,
                     conflicts=conflicts, integer_params=True)  # labels, colours, counts
