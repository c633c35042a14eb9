"""backend "ray" on a local instance, as a user's machine and job scheduler treat it:
the driver's stdout carries hogwild's output alone; whatever TMPDIR is, the run
starts; nothing is left in TMPDIR or the home folder, or running, after a run that
ended, was stopped by a signal to its whole process group, or was killed.

Each run gets a private TMPDIR and HOME of its own, so what is judged is only what
this test's run made.
"""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="backend 'ray' needs Ray (hogwild[distributed])")

from hogwild.backends.ray.host import INSTANCE_VARIABLE  # noqa: E402
from launchers import CONSOLE_SCRIPT  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")

GONE_SECONDS = 60  # for the host to remove a killed driver's instance


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
    subprocess.run(["rm", "-rf", str(tmpdir)], check=False)


def hogwild(*args):
    if CONSOLE_SCRIPT is None:
        pytest.fail("the hogwild console script is neither beside this Python nor on PATH")
    return [CONSOLE_SCRIPT, "run", "svm", "--backend", "ray", "--nodes", "2", "--seed", "0",
            *args]


def instance_pids(tmpdir):
    """This user's processes of a Ray instance whose folder is under ``tmpdir``."""
    mark = f"{INSTANCE_VARIABLE}={tmpdir}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # not a process, ended meanwhile, or another user's
            continue
        if entry.name.isdigit() and any(item.startswith(mark) for item in environment):
            found.append(int(entry.name))
    return found


def cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def assert_nothing_left(tmpdir, home, wait=0):
    deadline = time.monotonic() + wait
    while (instance_pids(tmpdir) or any(tmpdir.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
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


def start(env, cwd, epochs=100000):
    """A run in a process group (and session) of its own, once its first epoch ended."""
    proc = subprocess.Popen(hogwild("--epochs", str(epochs)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            start_new_session=True)
    first = proc.stdout.readline()
    if not re.match(r"epoch +1/", first):
        proc.kill()
        pytest.fail(f"no first epoch: {first!r} {proc.communicate()[1][-2000:]}")
    return proc


@pytest.mark.parametrize("signum,status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_to_the_whole_process_group_stops_after_the_epoch(private, tmp_path, signum,
                                                                  status):
    """How systemd, Kubernetes and Slurm stop a job, and a closed terminal: Ray's
    services must not die under the driver, which checkpoints and exits."""
    env, tmpdir, home = private
    proc = start(env, tmp_path)
    os.killpg(proc.pid, signum)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == status, err[-2000:]
    assert re.search(r"hogwild: interrupted after epoch \d+; checkpoint written to "
                     r"hogwild-svm-checkpoint.npz", err), err[-2000:]
    assert "Traceback" not in err
    assert_nothing_left(tmpdir, home)


def test_a_killed_driver_leaves_no_process_or_file(private, tmp_path):
    env, tmpdir, home = private
    proc = start(env, tmp_path)
    assert instance_pids(tmpdir), "the probe sees no process of the instance"
    proc.kill()
    proc.wait()
    assert_nothing_left(tmpdir, home, wait=GONE_SECONDS)


def test_a_lost_node_is_restarted_and_said_on_stderr_only(private, tmp_path):
    env, tmpdir, home = private
    proc = start(env, tmp_path, epochs=25)
    nodes = [pid for pid in instance_pids(tmpdir) if "ray::NodeWorker" in cmdline(pid)]
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
