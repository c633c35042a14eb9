"""scripts/bench_backends.py --quick writes a complete, well-formed report (no
timing thresholds)."""


def test_quick_run_reports_both_backends(quick_benchmark):
    bench, report, table = quick_benchmark("bench_backends")
    workloads = {w["workload"]: w for w in report["workloads"]}
    assert set(workloads) == {"svm-synthetic", "mc-jumbo"}
    for w in workloads.values():
        assert set(w["results"]) == {f"{s}-{b}" for s in bench.SCHEDULERS
                                     for b in bench.BACKENDS}
        for label, result in w["results"].items():
            assert result["updates_per_s"] > 0
            assert (result["startup_seconds"] > 0) == label.endswith("processes")
        # serial is deterministic: both backends reach the same objective
        assert w["results"]["serial-threads"]["objective"] == \
            w["results"]["serial-processes"]["objective"]
        assert set(w["ratios"]) == {"hogwild_processes_over_threads",
                                    "serial_processes_over_threads"}
    assert "| hogwild-processes |" in table and "worker start-up" in table
