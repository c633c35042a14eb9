"""scripts/bench_scaling.py --quick writes a complete, well-formed report (no timing
thresholds: speed goals are checked by reading the full run, not by tests)."""
def test_quick_run_reports_every_configuration(quick_benchmark):
    bench, report, table = quick_benchmark("bench_scaling")
    assert report["quick"] is True and report["machine"]["usable_cores"] >= 1
    assert report["compute_ceiling_2_over_1"] > 0
    assert [d["dataset"] for d in report["datasets"]] == ["a9a", "synthetic-20000x50000"]
    expected = {label for label, *_ in bench.OUR_CONFIGS} | {"sgdclassifier"}
    for dataset in report["datasets"]:
        assert set(dataset["results"]) == expected
        for result in dataset["results"].values():
            assert result["samples_per_s"] > 0 and 0 <= result["test_error"] <= 1
        assert set(dataset["ratios"]) >= {"hogwild_2_over_1", "hogwild_2_over_locked_2",
                                          "hogwild_1_over_sgdclassifier"}
    text = table
    assert "### a9a (32,561 x 123" in text and "| hogwild-2 |" in text
