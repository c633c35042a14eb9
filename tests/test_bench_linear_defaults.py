"""scripts/bench_linear_defaults.py --quick writes a complete, well-formed report (no
timing thresholds: the full run's figures are read, not tested)."""


def test_quick_run_reports_every_run(quick_benchmark):
    bench, report, table = quick_benchmark("bench_linear_defaults")
    assert report["quick"] is True
    (result,) = report["sets"]
    assert result["set"] == "clicks:20000x20000x400000 noise 0.5"
    peers = {"sgdclassifier"} | ({"vw-1", "vw-10"} if report["vowpalwabbit"] else set())
    assert set(result["peers"]) == peers
    assert result["target"] == min(p["test_error"] for p in result["peers"].values())
    for key in ("hogwild-1", "hogwild-2"):
        ours = result["ours"][key]
        assert len(ours["curve"]) == bench.EPOCHS and 0 < ours["test_error"] < 0.5
        assert ours["reg"] == 1 / 20_000 or ours["reg"] > 1 / 20_000  # max(n, p) / n^2
        assert ours["seconds_to_target"] is None or ours["seconds_to_target"] > 0
    assert "| clicks:20000x20000x400000 noise 0.5 |" in table
