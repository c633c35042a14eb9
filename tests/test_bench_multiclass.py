"""scripts/bench_multiclass.py --quick writes a complete, well-formed report (no
timing thresholds: speed goals are checked by reading the full run, not by tests)."""
import pytest

pytest.importorskip("sklearn")


def test_quick_run_reports_every_configuration(quick_benchmark):
    bench, report, table = quick_benchmark("bench_multiclass")
    assert report["quick"] is True
    (dataset,) = report["datasets"]
    assert dataset["dataset"] == "digits" and dataset["n_classes"] == 10
    results = dataset["results"]
    assert list(results) == ["hogwild-1", "hogwild-2", "sgdclassifier-1",
                             "sgdclassifier-default", "linearsvc"]
    # digits' target is LinearSVC's accuracy less 0.01, and its default run reaches it
    assert dataset["target_accuracy"] == pytest.approx(results["linearsvc"]["final_accuracy"]
                                                       - 0.01)
    assert results["hogwild-1"]["final_accuracy"] >= dataset["target_accuracy"]
    for label in ("hogwild-1", "hogwild-2", "sgdclassifier-1"):
        r = results[label]
        seconds = [t for t, _ in r["curve"]]
        assert min(seconds) > 0, label
        if label.startswith("hogwild"):  # one run: its clock only grows (SGDClassifier's
            assert seconds == sorted(seconds), label  # points are separate fits)
        if r["seconds_to_target"] is not None:
            assert r["core_seconds_to_target"] == pytest.approx(r["seconds_to_target"]
                                                               * r["threads"])
    assert len(results["hogwild-1"]["curve"]) == bench.EPOCHS
    assert len(results["sgdclassifier-1"]["curve"]) == len(bench.SGD_EPOCHS)
    assert set(dataset["first_one_epoch_fit_seconds"]) == {"hogwild-1", "hogwild-2",
                                                           "sgdclassifier-1"}
    assert "| hogwild-1 | 1 |" in table and "Target: test accuracy >=" in table
