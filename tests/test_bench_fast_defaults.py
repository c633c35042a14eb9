"""scripts/bench_fast_defaults.py --quick writes a complete, well-formed report (no
timing thresholds: speed goals are checked by reading the full run)."""


def test_quick_run_reports_each_configuration_and_what_ran(quick_benchmark):
    bench, report, table = quick_benchmark("bench_fast_defaults")
    (workload,) = report["workloads"]
    assert (workload["problem"], workload["data"]) == ("svm", "a9a")
    results = workload["results"]
    assert set(results) == set(bench.configurations("svm"))
    assert results["defaults-1-worker"]["configuration"]["workers"] == 1
    assert results["worker-mixed"]["configuration"]["replication"] == "worker"
    assert results["defaults-1-worker"]["sooner_than_one_worker"] == 1.0
    for result in results.values():
        assert 0 < result["final_metric"] < 0.5 and result["update_seconds"] > 0
    assert "| defaults |" in table
