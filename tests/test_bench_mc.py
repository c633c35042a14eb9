"""scripts/bench_mc.py --quick writes a complete, well-formed report (no timing
thresholds: speed goals are checked by reading the full run, not by tests)."""
from hogwild.bench.peers import load_libmf


def test_quick_run_reports_every_configuration(quick_benchmark):
    bench, report, table = quick_benchmark("bench_mc")
    assert report["quick"] is True and report["machine"]["usable_cores"] >= 1
    (dataset,) = report["datasets"]
    assert dataset["dataset"] == "jumbo-2000x1500x100000" and dataset["n_train"] == 100_000
    ours = {label for label, *_ in bench.OUR_CONFIGS}
    peers = set(dataset["results"]) - ours
    assert ours <= set(dataset["results"])
    assert peers <= {"libmf-1", "libmf-2", "surprise-svd"}
    if load_libmf()[0] is not None:  # each LIBMF run is measured or reported as stalled
        for label in ("libmf-1", "libmf-2"):
            stalled = any(s.startswith(label) for s in dataset["peer_stalls"])
            assert (label in peers) != stalled, (label, dataset["peer_stalls"])
    for result in dataset["results"].values():
        assert result["ratings_per_s"] > 0 and 0 < result["test_rmse"] < 2
    assert {"hogwild_2_over_1", "blocked_2_over_1"} <= set(dataset["ratios"])
    assert "| blocked-2 |" in table


def test_a_stalled_libmf_fit_is_abandoned_not_waited_for():
    import time

    import numpy as np

    from hogwild.bench.peers import libmf_fit
    X = np.column_stack([np.arange(1000) % 50, np.arange(1000) % 40,
                         np.ones(1000)]).astype(np.float32)
    start = time.perf_counter()
    assert libmf_fit(X, rank=4, threads=2, epochs=3, l2=0.05, timeout=0.01) is None
    assert time.perf_counter() - start < 10


def test_libmf_predictions_fall_back_to_its_mean():
    import numpy as np

    from hogwild.bench.peers import libmf_predict
    P = np.array([[1.0, 2.0], [np.nan, np.nan]], np.float32)
    Q = np.array([[3.0, 1.0]], np.float32)
    out = libmf_predict(P, Q, 3.5, np.array([0, 1, -1]), np.array([0, 0, 0]))
    np.testing.assert_allclose(out, [5.0, 3.5, 3.5])
