"""scripts/bench_defaults.py --quick writes a complete, well-formed report (no
quality or timing thresholds here: the full run is read, README and docs)."""


def test_quick_run_reports_ratings_and_svm_defaults(quick_benchmark):
    bench, report, table = quick_benchmark("bench_defaults")
    assert report["quick"] is True and report["peers"] == []
    (ratings,) = report["ratings"]
    assert ratings["dataset"] == "jumbo-600x400x20000" and not ratings["tuned_on"]
    assert set(ratings["test_rmse"]) == {"hogwild", "hogwild-paper"}
    assert 0 < ratings["test_rmse"]["hogwild"] < 2
    assert 0 <= ratings["items_with_at_most_2_ratings"] <= 1
    (svm,) = report["svm"]
    assert set(svm["test_error"]) == {"hogwild", "hogwild --no-intercept",
                                      "hogwild --loss logistic"}
    assert 0.05 < svm["empty_test_rows"] < 0.12 and 0.01 < svm["positive_test_rows"] < 0.06
    assert set(svm["intercept_update_time_ratio_2_workers"]) == {"hinge", "logistic"}
    assert min(svm["intercept_update_time_ratio_2_workers"].values()) > 0
    assert "| jumbo-600x400x20000 (not tuned on) |" in table
    assert "| rare-3% quick (not tuned on) |" in table
