"""scripts/bench_mf_family.py --quick writes a complete, well-formed report (no timing
or quality thresholds: the defaults are judged by reading the full run)."""
from hogwild.bench.libmf_native import default_library


def test_quick_run_reports_ours_and_libmf_on_a_planted_matrix(quick_benchmark):
    bench, report, table = quick_benchmark("bench_mf_family")
    (dataset,) = report["datasets"]
    assert dataset["dataset"] == "quick" and dataset["epochs"] == 3
    assert dataset["n_ratings"] == 600 * 50 and dataset["noise_floor"] == 0.5
    assert 0.5 < dataset["mean_rmse"] < 1.5  # unit signal plus noise 0.5: about 1.118
    results = dataset["results"]
    expected = {"hogwild-1", "hogwild-2"} | (set(bench.LIBMF) if default_library() else set())
    assert set(results) == expected
    for label, result in results.items():
        if "failed" in result:  # LIBMF's scheduler stalled: reported, not waited for
            assert label.startswith("libmf"), label
            continue
        assert len(result["test_rmse"]) == len(result["epoch_seconds"]) == 3, label
        assert result["final_rmse"] == result["test_rmse"][-1] or label.startswith("hogwild")
        seconds = result["seconds_to_target"]
        assert seconds is None or 0 < seconds <= sum(result["epoch_seconds"]) + 1e-9
    assert "| quick | 30,000 | 0.50 |" in table
