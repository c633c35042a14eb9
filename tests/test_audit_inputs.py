"""scripts/audit_inputs.py --quick (issue 28): one case in 12 of the generated bad
input over the command line and the API, each in a fresh process, ends as a
one-line error (or runs, where the case is valid): no traceback, raw exception,
hang, crash, silent accept or refusal of good input. The full run (over a
thousand cases) is in docs/audit_inputs.json."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "audit_inputs.py"


@pytest.mark.timeout(900)
def test_quick_audit_finds_no_failure(tmp_path):
    pytest.importorskip("PIL", reason="the audit's image cases need Pillow")
    out = tmp_path / "audit.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["failures"] == dict.fromkeys(report["failures"], 0), report["failed_cases"]
    assert report["cases"] >= 80 and report["api_cases"] >= 10
    assert report["outcomes"]["error"] > report["outcomes"]["ok"] > 0
