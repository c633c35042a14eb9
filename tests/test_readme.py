"""The README's custom-objective example runs and does what it says."""
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parent.parent / "README.md"


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
