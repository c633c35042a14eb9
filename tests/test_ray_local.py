"""backend "ray" on a local instance, as a user's machine treats it: the driver's
stdout carries hogwild's output alone, a lost node is said on stderr; whatever
TMPDIR is, the run starts; nothing is left in TMPDIR or the home folder, or
running, after a run. (A driver killed, or stopped by SIGTERM or SIGHUP of its
whole process group: scripts/fault_injection.py's "ray" family, which
tests/test_fault_injection.py runs.)

Each run gets a private TMPDIR and HOME of its own, so what is judged is only what
this test's run made.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="backend 'ray' needs Ray (hogwild[distributed])")

from launchers import CONSOLE_SCRIPT  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from ray_faults import cmdline, instance_pids  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")


@pytest.fixture
def private(tmp_path):
    """(env, tmpdir, home): a short TMPDIR of this test's own (tmp_path's path is
    too long for Ray's sockets, which is tested apart) and an empty HOME."""
    tmpdir = Path(tempfile.mkdtemp(prefix="hw-"))
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(TMPDIR=str(tmpdir), HOME=str(home))
    yield env, tmpdir, home
    shutil.rmtree(tmpdir, ignore_errors=True)


def hogwild(*args):
    if CONSOLE_SCRIPT is None:
        pytest.fail("the hogwild console script is neither beside this Python nor on PATH")
    return [CONSOLE_SCRIPT, "run", "svm", "--backend", "ray", "--nodes", "2", "--seed", "0",
            *args]


def assert_nothing_left(tmpdir, home):
    assert instance_pids(tmpdir) == [], [cmdline(p) for p in instance_pids(tmpdir)]
    assert sorted(p.name for p in tmpdir.iterdir()) == []
    assert sorted(p.name for p in home.iterdir()) == []  # no ~/.ray/auth_token


def test_a_run_prints_json_alone_and_leaves_nothing(private, tmp_path):
    env, tmpdir, home = private
    done = subprocess.run(hogwild("--epochs", "2", "--json"), capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["backend"] == "ray"
    assert "Token authentication" not in done.stderr  # the run brings its own token
    assert_nothing_left(tmpdir, home)


def test_a_long_tmpdir_still_starts(tmp_path):
    """Ray's socket paths under TMPDIR must stay within 107 bytes; a TMPDIR of 27
    characters was already an OSError traceback."""
    long = tmp_path / ("t" * 60)
    long.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    done = subprocess.run(hogwild("--epochs", "1", "--json"), capture_output=True, text=True,
                          env={**env, "TMPDIR": str(long)}, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["epochs_run"] == 1


def start(env, cwd, epochs):
    """A run in a process group (and session) of its own, once its first epoch ended."""
    proc = subprocess.Popen(hogwild("--epochs", str(epochs)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            start_new_session=True)
    first = proc.stdout.readline()
    if not re.match(r"epoch +1/", first):
        proc.kill()
        pytest.fail(f"no first epoch: {first!r} {proc.communicate()[1][-2000:]}")
    return proc


def test_a_lost_node_is_restarted_and_said_on_stderr_only(private, tmp_path):
    env, tmpdir, home = private
    proc = start(env, tmp_path, epochs=25)
    nodes = [pid for pid in instance_pids(tmpdir) if b"ray::NodeWorker" in cmdline(pid)]
    assert nodes, [cmdline(p) for p in instance_pids(tmpdir)]
    os.kill(max(nodes), signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert re.search(r"^hogwild: node \d died at clock \d+ \(epoch \d+\); restarted from "
                     r"that clock$", err, re.M), err[-2000:]
    lines = out.splitlines()  # after the first epoch's, which start read
    assert all(re.match(r"epoch +\d+/25 ", line) for line in lines[:-1]), out[-2000:]
    assert re.match(r"done: hogwild x \d+ workers \(restarted: node \d at clock \d+\) on ",
                    lines[-1]), lines[-1]
    assert_nothing_left(tmpdir, home)
