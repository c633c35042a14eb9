"""The README's custom-objective example, and the engine guide's vertex program,
run and do what they say."""
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parent.parent / "README.md"
ENGINE = README.parent / "docs" / "engine.md"  # the engine's guide, linked from the README


def readme_example():
    text = README.read_text()
    marker = text.index("<!-- README example: run by tests/test_readme.py -->")
    return re.search(r"```python\n(.*?)```", text[marker:], re.S).group(1)


def test_custom_objective_example_recovers_the_planted_weights(capsys):
    namespace = {"__name__": "readme_example"}
    exec(compile(readme_example(), str(README), "exec"), namespace)
    result, w_true = namespace["result"], namespace["w_true"]
    assert result.workers == 2 and len(result.history) == 30
    assert result.objective < 1e-10
    np.testing.assert_allclose(result.params[0], w_true, atol=1e-4)
    assert capsys.readouterr().out.startswith("objective ")


def test_vertex_program_example_computes_pagerank(capsys):
    """The PageRank vertex program matches SciPy's direct solution of the same system."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    text = ENGINE.read_text()
    marker = text.index("<!-- README vertex program: run by tests/test_readme.py -->")
    code = re.search(r"```python\n(.*?)```", text[marker:], re.S).group(1)
    namespace = {"__name__": "readme_vertex_program"}
    exec(compile(code, str(ENGINE), "exec"), namespace)
    graph, ranks = namespace["graph"], namespace["ranks"]
    n = graph.n_vertices
    A = sp.csr_matrix((np.ones(graph.indices.size), graph.indices, graph.indptr), (n, n))
    system = sp.identity(n) - 0.85 * A @ sp.diags(1.0 / np.maximum(graph.degrees(), 1))
    expected = spsolve(system.tocsc(), np.full(n, 0.15 / n))
    np.testing.assert_allclose(ranks, expected, rtol=1e-6)
    assert "ms colouring; top vertex" in capsys.readouterr().out
