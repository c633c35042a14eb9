"""scripts/bench_scaling.py --quick writes a complete, well-formed report (no timing
thresholds: speed goals are checked by reading the full run, not by tests)."""
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_scaling.py"


def load_script():
    spec = importlib.util.spec_from_file_location("bench_scaling", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_reports_every_configuration(tmp_path, capsys):
    bench = load_script()
    out, table = tmp_path / "report.json", tmp_path / "report.md"
    bench.main(["--quick", "--out", str(out), "--markdown", str(table)])
    report = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == report
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
    text = table.read_text()
    assert "### a9a (32,561 x 123" in text and "| hogwild-2 |" in text
