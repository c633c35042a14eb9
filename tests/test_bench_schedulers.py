"""scripts/bench_schedulers.py --quick writes a complete, well-formed report (no
timing thresholds), and its conflict-free runs keep serial's objective."""


def test_quick_run_reports_every_scheduler_and_workload(quick_benchmark):
    bench, report, table = quick_benchmark("bench_schedulers")
    assert report["quick"] is True
    workloads = {w["workload"]: w for w in report["workloads"]}
    assert set(workloads) == {"svm-synthetic", "mc-jumbo", "cuts-random"}
    for name, w in workloads.items():
        expected = {label for label, *_ in bench.configs(
            ("hogwild", "locked", "colored", "cyclades")
            + (("blocked",) if name == "mc-jumbo" else ()))}
        refused = {label for label in expected if label.split("-")[0] in w["refused"]}
        assert set(w["results"]) == expected - refused, name
        for label, result in w["results"].items():
            assert result["updates_per_s"] >= result["end_to_end_per_s"] > 0
            assert len(result["objective_per_epoch"]) == 3
        # cyclades' first epoch is serial's, and 1 and 2 workers agree in every epoch
        cyclades = [w["results"][f"cyclades-{k}"]["objective_per_epoch"] for k in (1, 2)]
        assert cyclades[0] == cyclades[1], name
        assert cyclades[0][0] == w["results"]["serial"]["objective_per_epoch"][0], name
        assert w["target"]["required"] == 1.5
    # the synthetic text has a feature in 42% of the rows: colored refuses it, saying why
    assert "use scheduler='cyclades'" in workloads["svm-synthetic"]["refused"]["colored"]
    assert "| cyclades-2 |" in table and "Best conflict-free at 2 workers" in table
