"""scripts/bench_implicit.py --quick writes a complete, well-formed report (no timing
thresholds: speed goals are checked by reading the full run, not by tests)."""


def test_quick_run_reports_every_configuration(quick_benchmark):
    bench, report, table = quick_benchmark("bench_implicit")
    assert report["quick"] is True and report["machine"]["usable_cores"] >= 1
    (dataset,) = report["datasets"]
    assert dataset["dataset"] == "planted-600x400" and dataset["epochs"] == 3
    labels = [label for label, _, _ in bench.configurations(bench.peers_available())]
    assert list(dataset["results"]) == labels
    assert {"hogwild-warp-1", "hogwild-warp-2", "hogwild-bpr-1", "hogwild-bpr-2"} <= set(labels)
    for label, result in dataset["results"].items():
        final = result["final"]
        assert 0 <= final["precision@10"] <= 1 and 0 <= final["auc"] <= 1, label
        assert len(result["curve"]) == 3 and result["train_seconds"] > 0
        seconds = [t for t, _ in result["curve"]]
        assert seconds == sorted(seconds), label  # training time only grows
    assert "rate_hogwild_warp_2_over_1" in dataset["ratios"]
    assert "| hogwild-warp-1 |" in table and "Target: precision@10 >=" in table
