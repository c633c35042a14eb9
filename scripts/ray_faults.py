"""The "ray" family of scripts/fault_injection.py: `hogwild run svm --backend ray
--nodes 2` (a local Ray instance, the embedded data set) hit once its first epoch
ended by

    kill-driver    SIGKILL of the driver: nothing of the instance may be left
    sigterm-group  SIGTERM of its whole process group (systemd, Kubernetes, Slurm):
                   the epoch finished, a checkpoint, exit 143
    sighup-group   SIGHUP of it (a closed terminal): the same, exit 129
    kill-node      SIGKILL of a node actor's process: restarted, the run ends (exit
                   0) with stdout hogwild's alone

Each trial runs with a TMPDIR and HOME of its own, so that what is left there
(leftover_dirs: any entry; a local instance writes nothing to ~/.ray) and the
instance's processes still running afterwards (orphans) are the trial's alone.
A checkpoint left must load and resume (resume_diffs: a resumed run that fails).
"""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from hogwild.backends.ray import INSTANCE_VARIABLE

FAULTS = ("kill-driver", "sigterm-group", "sighup-group", "kill-node")
EXPECTED_STATUS = {"kill-driver": -9, "sigterm-group": 143, "sighup-group": 129,
                   "kill-node": 0}
GONE_SECONDS = 60  # for the host to remove a killed driver's instance


def command(checkpoint, epochs, resume=None):
    return [sys.executable, "-m", "hogwild.cli", "run", "svm", "--backend", "ray", "--nodes",
            "2", "--seed", "0", "--epochs", str(epochs), "--checkpoint", str(checkpoint)] + (
        ["--resume", str(resume)] if resume else [])


def instance_pids(tmpdir):
    """This user's processes of a Ray instance whose folder is under ``tmpdir``."""
    mark = f"{INSTANCE_VARIABLE}={tmpdir}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.name.isdigit() and any(item.startswith(mark) for item in environment):
            found.append(int(entry.name))
    return found


def cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def trial(rng, fault, folder, hang_seconds, counts):
    """Run one trial; returns its record (counts of each kind of failure)."""
    from hogwild.checkpoint import load_checkpoint

    tmpdir, home = folder / "tmp", folder / "home"
    tmpdir.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(TMPDIR=str(tmpdir), HOME=str(home))
    checkpoint = folder / "run.npz"
    record = {"backend": "ray", "scheduler": "hogwild", "fault": fault,
              **dict.fromkeys(counts, 0)}
    epochs = 12 if fault == "kill-node" else 100000
    with open(folder / "stderr", "w") as stderr:
        process = subprocess.Popen(command(checkpoint, epochs), stdout=subprocess.PIPE,
                                   stderr=stderr, text=True, env=env, cwd=folder,
                                   start_new_session=True)
    first = process.stdout.readline()
    time.sleep(rng.uniform(0, 0.3))  # a moment of the next epoch
    if fault == "kill-driver":
        process.kill()
    elif fault == "kill-node":
        nodes = [pid for pid in instance_pids(tmpdir) if b"ray::NodeWorker" in cmdline(pid)]
        if nodes:
            os.kill(max(nodes), signal.SIGKILL)
    else:
        os.killpg(process.pid, {"sigterm-group": signal.SIGTERM,
                                "sighup-group": signal.SIGHUP}[fault])
    try:
        out, _ = process.communicate(timeout=hang_seconds)
    except subprocess.TimeoutExpired:
        record["hangs"] = 1
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
    record["status"] = process.returncode
    record["wrong_exits"] = int(process.returncode != EXPECTED_STATUS[fault])
    err = (folder / "stderr").read_text()
    record["tracebacks"] = int("Traceback" in err)
    if fault == "kill-node":  # stdout carries hogwild's lines alone
        lines = (first + out).splitlines()
        record["wrong_answers"] = int(not lines or not all(
            re.match(r"epoch +\d+/", line) for line in lines[:-1])
            or not lines[-1].startswith("done: "))
    deadline = time.monotonic() + GONE_SECONDS
    while (instance_pids(tmpdir) or any(tmpdir.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    record["orphans"] = len(instance_pids(tmpdir))
    left = [str(p.relative_to(folder)) for p in (*tmpdir.iterdir(), *home.iterdir())]
    record["leftover_dirs"] = len(left)
    if any(record[name] for name in counts):
        record["stderr"] = err[-500:]
        record["left"] = left
    if fault == "kill-node" or not checkpoint.exists():
        return record
    try:
        saved = load_checkpoint(checkpoint)
    except Exception:  # noqa: BLE001 - counted
        record["corrupt"] = 1
        return record
    record["checkpoint_epoch"] = saved.epoch
    resumed = subprocess.run(command(folder / "resumed.npz", saved.epoch + 1, checkpoint),
                             capture_output=True, text=True, env=env, cwd=folder,
                             timeout=hang_seconds * 2)
    record["resume_diffs"] = int(resumed.returncode != 0)
    if resumed.returncode:
        record["stderr"] = resumed.stderr[-500:]
    return record
