"""scripts/scaling_model.py: the model's algebra (no timing): it reproduces its
2-worker calibration, 1 worker is the 1-worker run, and contention and merges
bound the speedups where the docstring says."""
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def model():
    path = Path(__file__).resolve().parent.parent / "scripts" / "scaling_model.py"
    spec = spec_from_file_location("scaling_model", path)
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


INPUTS = {"n": 100_000, "D": 50_000, "t1": 100e-9, "tp": 110e-9, "c": 60e-9,
          "tau": 2e-9, "beta": 1e-6, "H": 1_000, "cc": 10e-9, "pi": 20e-6, "L": 80e-9,
          "delta": 0.3, "hot_fraction": 0.01}


def test_two_workers_reproduce_the_calibration(model):
    n, tp = INPUTS["n"], INPUTS["tp"]
    times = model.predict(INPUTS, 2)
    assert times["shared"] == pytest.approx(n * (tp + INPUTS["c"]) / 2)
    assert times["worker"] == pytest.approx(n * tp / 2 + INPUTS["D"] * INPUTS["tau"]
                                            + 2 * INPUTS["beta"])
    rounds = -(-n // (2 * model.HOT_MERGE_EVERY))
    assert times["hot"] == pytest.approx(
        n * (tp + INPUTS["cc"]) / 2
        + rounds * (INPUTS["H"] * INPUTS["tau"] + 2 * INPUTS["beta"] + INPUTS["pi"]))
    assert set(model.predict(INPUTS, 1).values()) == {n * INPUTS["t1"]}


def test_contention_and_merges_bound_the_speedups(model):
    n, t1 = INPUTS["n"], INPUTS["t1"]
    many = model.predict(INPUTS, 10_000)
    # shared: the busiest row's writes are serialised -> at most t1 / (delta L);
    # worker: the merge pass stays
    assert n * t1 / many["shared"] == pytest.approx(t1 / (INPUTS["delta"] * INPUTS["L"]))
    four = model.predict(INPUTS, 4)["shared"]  # below the bound: contention 2c (W-1)/W
    assert four == pytest.approx(n * (INPUTS["tp"] + INPUTS["c"] * 1.5) / 4)
    assert n * t1 / many["worker"] < n * t1 / (INPUTS["D"] * INPUTS["tau"])
    speedups = [n * t1 / model.predict(INPUTS, w)["hot"] for w in (2, 4, 8)]
    assert speedups == sorted(speedups)
