"""scripts/bench_recommend.py --quick writes a complete, well-formed report (no timing
thresholds: speed goals are checked by reading the full run, not by tests)."""


def test_quick_run_reports_fold_in_recommend_all_and_the_catalogue(quick_benchmark):
    _, report, table = quick_benchmark("bench_recommend")
    assert report["quick"] is True and report["machine"]["usable_cores"] >= 1
    assert set(report["fold_in"]) == {"implicit-warp", "implicit-bpr", "explicit-biased"}
    for name, section in report["fold_in"].items():
        assert set(section["seconds"]) == {"1", "2"} and section["users"] == 1000, name
        assert all(seconds > 0 for seconds in section["seconds"].values()), name
    warp = report["fold_in"]["implicit-warp"]
    assert 0 < warp["precision@10_folded"] <= 1 and 0 < warp["precision@10_full"] <= 1
    for loss in ("warp", "bpr"):
        grown = report["partial_fit"][loss]
        assert grown["new_users"] > 0 and grown["new_items"] > 0, loss
        assert grown["seconds"]["partial_fit"] > 0 and grown["seconds"]["retrain"] > 0, loss
        assert 0 < grown["precision@10"]["partial_fit"] <= 1, loss
    assert report["recommend_all"]["users"] == 1500
    big = report["catalogue"]
    assert big["users"] == big["timed_users"] == 2000 and big["exact"]["seconds"] > 0
    assert "left_out" in big["approximate"] or 0.5 < big["approximate"]["recall@10"] <= 1
    assert "- fold-in implicit-warp: 1000 users in" in table and "- catalogue:" in table
    assert "- partial_fit warp: second half (" in table
