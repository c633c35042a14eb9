"""scripts/bench_replication.py --quick writes a complete, well-formed report (no
timing thresholds): time to the 1-worker shared run's final metric, per mode."""
import pytest


def test_quick_run_reports_time_to_target_for_every_mode(quick_benchmark):
    bench, report, table = quick_benchmark("bench_replication")
    workloads = {w["workload"]: w for w in report["workloads"]}
    assert set(workloads) == {"svm-synthetic", "mc-jumbo"}
    for name, w in workloads.items():
        problem = name.split("-")[0]
        assert set(w["results"]) == {label for label, *_ in bench.CONFIGS[problem]}
        base = w["results"]["shared-1"]
        # the baseline reaches its own final metric, at its last epoch at the latest
        assert base["final_metric"] == pytest.approx(w["target"])
        assert base["time_to_target"] is not None and base["epochs_to_target"] <= 3
        assert base["sooner_than_shared_1"] == pytest.approx(1.0)
        assert base["final_objective"] == pytest.approx(w["objective_target"])
        assert base["objective_sooner_than_shared_1"] == pytest.approx(1.0)
        for result in w["results"].values():
            assert result["updates_per_s"] > 0 and len(result["metric_per_epoch"]) == 3
            assert result["rate_over_shared_1"] == pytest.approx(
                result["updates_per_s"] / base["updates_per_s"])
    assert {"fpsgd-2", "blocked-2", "hot-2-sum"} <= set(workloads["mc-jumbo"]["results"])
    assert "| worker-2 |" in table and "| auto-2 |" in table and "time to target" in table


def test_time_to_target_is_the_first_epoch_at_or_below_it():
    from importlib.util import module_from_spec, spec_from_file_location
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "bench_replication.py"
    spec = spec_from_file_location("bench_replication", path)
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    result = {"seconds_per_epoch": [1.0, 2.0, 3.0], "metric_per_epoch": [0.5, 0.3, 0.2]}
    assert module.time_to_target(result, 0.3) == (3.0, 2)
    assert module.time_to_target(result, 0.1) == (None, None)
