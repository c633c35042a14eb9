"""GraphLab-style vertex programs: PageRank as an edge-consistent vertex program
converges to SciPy's direct solution; the chromatic schedule is bitwise
reproducible across worker counts; each consistency model colours as GraphLab's."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from hogwild import HogwildError, fit
from hogwild.structure import Graph
from hogwild.schedulers.coloring import check_coloring
from hogwild.schedulers.conflicts import conflict_graph
from hogwild.vertex_programs import neighbors, vertex_program

DAMPING = 0.85


def pagerank_update(v, state, graph, step):
    """Gauss-Seidel PageRank: rank_v = (1 - d) / n + d sum_u rank_u / deg_u."""
    rank, inv_degree, constants = state[0], graph[3], graph[4]
    total = 0.0
    for u in neighbors(graph, v):
        total += rank[u] * inv_degree[u]
    rank[v] = constants[1] + constants[0] * total


def pagerank_residual(v, state, graph):
    rank, inv_degree, constants = state[0], graph[3], graph[4]
    total = 0.0
    for u in neighbors(graph, v):
        total += rank[u] * inv_degree[u]
    return (rank[v] - constants[1] - constants[0] * total) ** 2


def random_graph(n=3000, m=15000, seed=0):
    rng = np.random.default_rng(seed)
    graph = Graph.from_edges(n, rng.integers(0, n, m), rng.integers(0, n, m))
    keep = graph.degrees() > 0  # PageRank here needs no dangling vertices
    relabel = np.cumsum(keep) - 1
    u, v = graph.edges()
    return Graph.from_edges(int(keep.sum()), relabel[u], relabel[v])


def pagerank_program(graph, consistency="edge"):
    n = graph.n_vertices
    inv_degree = 1.0 / graph.degrees()
    constants = np.array([DAMPING, (1 - DAMPING) / n])
    return vertex_program(graph, pagerank_update, (np.full(n, 1.0 / n),), consistency,
                          loss=pagerank_residual, vertex_data=(inv_degree, constants),
                          name="pagerank")


def scipy_pagerank(graph):
    n = graph.n_vertices
    A = sp.csr_matrix((np.ones(graph.indices.size), graph.indices, graph.indptr), (n, n))
    system = sp.identity(n) - DAMPING * A @ sp.diags(1.0 / graph.degrees())
    return spsolve(system.tocsc(), np.full(n, (1 - DAMPING) / n))


@pytest.mark.parametrize("scheduler,consistency", [
    ("colored", "edge"), ("colored", "full"), ("cyclades", "edge"), ("serial", "edge"),
    ("hogwild", "edge")])
def test_pagerank_vertex_program_converges_to_the_direct_solution(scheduler, consistency):
    graph = random_graph()
    result = fit(pagerank_program(graph, consistency), epochs=60, workers=2,
                 scheduler=scheduler, seed=0)
    expected = scipy_pagerank(graph)
    np.testing.assert_allclose(result.params[0], expected, rtol=1e-6, atol=0)
    assert result.history[-1].objective < 1e-20


def test_edge_consistent_schedule_is_bitwise_reproducible_across_workers():
    graph = random_graph(seed=1)
    runs = [fit(pagerank_program(graph), epochs=3, workers=w, scheduler="colored",
                seed=4).params[0] for w in (1, 2)]
    np.testing.assert_array_equal(runs[0], runs[1])


def test_consistency_models_colour_like_graphlab():
    """vertex: one colour; edge: a proper colouring of the graph; full: of its square."""
    from hogwild.schedulers import get_scheduler

    graph = random_graph(n=400, m=1200, seed=2)
    colors = {}
    for model in ("vertex", "edge", "full"):
        planner = get_scheduler("colored").prepare(pagerank_program(graph, model), 2)
        colors[model] = np.repeat(np.arange(planner.class_starts.size - 1),
                                  np.diff(planner.class_starts))[np.argsort(planner.by_color)]
    assert colors["vertex"].max() == 0
    check_coloring(graph, colors["edge"])
    check_coloring(graph.square(), colors["full"])
    with pytest.raises(HogwildError):  # an edge colouring is not a distance-2 colouring
        check_coloring(graph.square(), colors["edge"])
    # full consistency's supports are closed neighbourhoods: they conflict within distance 2
    square = conflict_graph(pagerank_program(graph, "full").supports)
    np.testing.assert_array_equal(square.indptr, graph.square().indptr)


def test_vertex_program_input_errors():
    graph = random_graph(n=50, m=100)
    with pytest.raises(HogwildError, match="unknown consistency model 'strong'; choose one "
                                           "of: vertex, edge, full"):
        vertex_program(graph, pagerank_update, (np.zeros(graph.n_vertices),), "strong")
    with pytest.raises(HogwildError, match=r"weights must have one entry per stored edge "
                                           rf"\({graph.indices.size}\), got shape \(3,\)"):
        vertex_program(graph, pagerank_update, (np.zeros(graph.n_vertices),),
                       weights=np.ones(3))
    with pytest.raises(HogwildError, match="graph must be a hogwild.structure.Graph, got list"):
        vertex_program([], pagerank_update, (np.zeros(3),))
