"""The processes backend: the same results as threads, shared segments that only
this run can use, and nothing leaked or lost when a worker dies, a worker raises
or the parent gets Ctrl-C."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from hogwild import HogwildError, fit
from hogwild.backends.shared_memory import PREFIX, SegmentSet, attach, segments_root
from hogwild.checkpoint import load_checkpoint
from launchers import CONSOLE_SCRIPT
from test_checkpoint import pair_objective


def segment_folders(pid=None):
    """Names of the shared-memory folders a run in process ``pid`` (default: this
    one) made; other runs on the machine (a parallel test session) are not ours."""
    return {p.name for p in segments_root().glob(f"{PREFIX}{pid or os.getpid()}-*")}


@pytest.mark.parametrize("scheduler", ["serial", "colored", "cyclades", "locked", "hogwild"])
def test_processes_give_the_threads_results(scheduler):
    objective = pair_objective()
    options = dict(epochs=3, step=0.3, scheduler=scheduler, workers=2, seed=1)
    threads = fit(objective, **options)
    processes = fit(objective, backend="processes", **options)
    assert processes.backend == "processes" and processes.startup_seconds > 0
    if scheduler in ("hogwild", "locked"):  # racy interleavings: equal in distribution
        assert processes.objective == pytest.approx(threads.objective, rel=0.05)
    else:
        for a, b in zip(threads.params, processes.params):
            np.testing.assert_array_equal(a, b)
    assert [r.updates for r in processes.history] == [5000] * 3
    assert segment_folders() == set()  # the run's folder is gone


@pytest.mark.parametrize("grid", [None, 150])
def test_blocked_matrix_completion_matches_threads_bitwise(grid):
    """grid 150 needs 300 gates, more than the gate buffer the workers attach at
    start: they attach a larger one mid-run, before its file is unlinked."""
    from hogwild.datasets.jumbo import make_jumbo
    from hogwild.problems.matrix_completion import MatrixFactorization

    train, _, _ = make_jumbo(300, 200, 20_000, rank=3, seed=0, folder=None)
    fits = [MatrixFactorization(rank=8, epochs=3, scheduler="blocked", workers=2, random_state=0,
                                grid=grid, backend=backend).fit(train).user_factors_
            for backend in ("threads", "processes")]
    np.testing.assert_array_equal(fits[0], fits[1])


def test_a_worker_attaches_only_this_runs_segments(tmp_path):
    segments = SegmentSet(root=tmp_path)
    try:
        array, spec = segments.share(np.arange(10.0))
        shared, _ = attach(spec, segments.token)
        np.testing.assert_array_equal(shared, np.arange(10.0))
        assert oct(os.stat(spec.path).st_mode & 0o777) == "0o600"
        assert oct(os.stat(segments.folder).st_mode & 0o777) == "0o700"
        with pytest.raises(HogwildError, match=r"does not carry this run's token: refused"):
            attach(spec, b"x" * 16)
        from dataclasses import replace
        with pytest.raises(HogwildError, match=r"has 144 bytes, expected 152: refused"):
            attach(replace(spec, shape=(11,)), segments.token)
        os.chmod(spec.path, 0o644)
        with pytest.raises(HogwildError, match=r"is not owned by this user with mode 0600"):
            attach(spec, segments.token)
    finally:
        segments.close()
    assert not segments.folder.exists()


def test_folders_of_dead_runs_are_removed(tmp_path):
    stale = tmp_path / f"{PREFIX}999999999-abc"  # no such process
    stale.mkdir()
    (stale / "0-segment").write_bytes(b"x")
    mine = tmp_path / f"{PREFIX}{os.getpid()}-def"  # a live run's folder stays
    mine.mkdir()
    SegmentSet(root=tmp_path).close()
    assert not stale.exists() and mine.exists()


RUN = textwrap.dedent("""
    import multiprocessing, sys
    import numpy as np
    from hogwild import HogwildError, Objective, fit
    from hogwild.structure import Supports
    from hogwild.errors import Interrupted

    def update(e, params, data, step, epoch):
        if epoch == data[0][0] and e == 7:
            raise ValueError("sample 7 is poisoned")
        x = 0.0
        for i in range(400):  # a slow update, so that an epoch lasts a while
            x += np.sin(i * 0.001 + e)
        params[0][e % 1000] += step * x * 1e-6

    def loss(e, params, data):
        return 0.0

    def report(record):
        pids = " ".join(str(p.pid) for p in multiprocessing.active_children())
        print(f"epoch {record.epoch} pids {pids}", flush=True)

    if __name__ == "__main__":
        path, scheduler, poisoned, replication = sys.argv[1], sys.argv[2], \
            int(sys.argv[3]), sys.argv[4]
        n = 200_000
        objective = Objective(update, loss, (np.zeros(1000),), (np.array([poisoned]),), n,
                              name="slow", supports=Supports(np.arange(n + 1),
                                                             np.arange(n) % 1000, 1000))
        try:
            fit(objective, epochs=1000, step=0.1, workers=2, scheduler=scheduler,
                backend="processes", checkpoint=path, checkpoint_every=1, callback=report,
                replication=replication, merge_every=5000)
        except Interrupted as stop:
            print(f"interrupted after epoch {stop.epoch}; checkpoint {stop.checkpoint}",
                  file=sys.stderr)
            sys.exit(128 + stop.signum)
        except HogwildError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)
""")


def start_run(tmp_path, scheduler="hogwild", poisoned=-1, replication="shared"):
    script = tmp_path / "run.py"
    script.write_text(RUN)
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "run.npz"),
                             scheduler, str(poisoned), replication], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for_epoch(process, epoch):
    """The worker pids, once ``epoch`` epochs are done."""
    for line in process.stdout:
        fields = line.split()
        if fields[:2] == ["epoch", str(epoch)]:
            return [int(pid) for pid in fields[3:]]
    raise AssertionError(f"the run ended before epoch {epoch}: {process.stderr.read()}")


@pytest.mark.parametrize("scheduler,replication", [
    ("hogwild", "shared"), ("locked", "shared"), ("cyclades", "shared"),
    ("hogwild", "worker")])  # a worker waiting at a merge barrier for the dead one
def test_a_killed_worker_stops_the_run_and_leaks_nothing(tmp_path, scheduler, replication):
    process = start_run(tmp_path, scheduler, replication=replication)
    (child,) = wait_for_epoch(process, 2)  # the parent is worker 0, the child worker 1
    time.sleep(0.05)  # into epoch 3
    killed_at = time.perf_counter()
    os.kill(child, signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    assert f"worker 1 (pid {child}) killed by signal SIGKILL in epoch 3" in err
    assert "the run was stopped and its shared memory removed" in err
    assert time.perf_counter() - killed_at < 10
    assert segment_folders(process.pid) == set()
    assert load_checkpoint(tmp_path / "run.npz").epoch == 2


@pytest.mark.parametrize("scheduler,replication", [
    ("hogwild", "shared"), ("locked", "shared"), ("hogwild", "worker")])
def test_an_exception_in_a_worker_reaches_the_parent(tmp_path, scheduler, replication):
    process = start_run(tmp_path, scheduler, poisoned=2, replication=replication)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1, err
    assert "ValueError: sample 7 is poisoned" in err  # from the parent's share or the child's
    assert segment_folders(process.pid) == set()
    assert load_checkpoint(tmp_path / "run.npz").epoch == 2


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("group", [False, True], ids=["parent", "group"])
def test_ctrl_c_sigterm_or_sighup_checkpoints_and_cleans_up(tmp_path, signum, group):
    """Sent to the parent, or to the whole process group as systemd, Kubernetes and
    Slurm stop a job (which ended the run with 'worker 1 killed by signal SIGTERM',
    the epoch lost): the workers leave the stopping to the parent."""
    process = start_run(tmp_path)
    (child,) = wait_for_epoch(process, 1)
    (os.killpg if group else os.kill)(process.pid, signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    again = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    assert f"hogwild: stopping after this epoch ({again} again to abandon it)" in err
    assert "Traceback" not in err and "killed by signal" not in err
    assert not pid_running(child)
    epoch = int(err.split("interrupted after epoch ")[1].split(";")[0])
    assert load_checkpoint(tmp_path / "run.npz").epoch == epoch >= 1
    assert segment_folders(process.pid) == set()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
@pytest.mark.parametrize("scheduler", ["hogwild", "locked"])
def test_a_stopped_worker_is_named_and_ends_the_run(tmp_path, scheduler):
    """A SIGSTOPped worker hung the run for ever (the parent waited for its reply,
    or, locked, for the lock it held)."""
    from hogwild.backends.process_watch import STOPPED_SECONDS

    process = start_run(tmp_path, scheduler)
    (child,) = wait_for_epoch(process, 2)
    os.kill(child, signal.SIGSTOP)
    stopped_at = time.monotonic()
    _, err = process.communicate(timeout=120)
    assert process.returncode == 2, err
    assert (f"worker 1 (pid {child}) was stopped (SIGSTOP or a debugger) for "
            f"{STOPPED_SECONDS:g} s in epoch ") in err
    assert time.monotonic() - stopped_at < STOPPED_SECONDS + 20
    assert not pid_running(child)
    assert segment_folders(process.pid) == set()
    assert load_checkpoint(tmp_path / "run.npz").epoch >= 2


def pid_running(pid):
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
@pytest.mark.parametrize("scheduler", ["hogwild", "locked", "cyclades"])
def test_children_die_with_a_killed_parent_and_leave_no_shared_memory(tmp_path, scheduler):
    """SIGKILL of the parent: the kernel kills its children (no orphan spins on a
    core), and no segment is left: they are anonymous memory files (memfd), which
    have no name in /dev/shm and go with the last process that maps them."""
    process = start_run(tmp_path, scheduler)
    (child,) = wait_for_epoch(process, 2)
    assert segment_folders(process.pid) == set()  # nothing named, even while it runs
    maps = Path(f"/proc/{child}/maps").read_text()
    assert f"/memfd:{PREFIX}" in maps  # the worker maps the parent's memory files
    time.sleep(0.05)  # into epoch 3
    process.kill()
    _, err = process.communicate(timeout=60)
    deadline = time.perf_counter() + 5
    while pid_running(child) and time.perf_counter() < deadline:
        time.sleep(0.02)
    assert not pid_running(child), "the worker outlived its parent"
    assert err == ""  # no traceback from an orphan
    assert load_checkpoint(tmp_path / "run.npz").epoch >= 2
    assert segment_folders(process.pid) == set()


def slow_update(e, params, data, step):
    x = 0.0
    for i in range(300):
        x += np.sin(i * 0.001 + e)
    params[0][e % 100] += step * x * 1e-6


def zero_loss(e, params, data):
    return 0.0


def test_progress_moves_during_epochs_from_the_workers_counters(monkeypatch):
    from hogwild import Objective
    from hogwild.backends import processes

    monkeypatch.setattr(processes, "CHUNK_SAMPLES", 5_000)  # the workers report often
    monkeypatch.setattr(processes, "POLL_SECONDS", 0.005)  # and the parent looks often
    seen = []
    objective = Objective(slow_update, zero_loss, (np.zeros(100),), (np.zeros(1),), 100_000)
    fit(objective, epochs=2, workers=2, backend="processes", seed=0,
        progress=lambda done, total: seen.append((done, total)))
    assert all(total == 200_000 for _, total in seen) and seen[-1][0] == 200_000
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert any(done % 100_000 for done, _ in seen), seen  # reports inside epochs


def test_a_normal_cli_run_is_clean(tmp_path):
    """No resource_tracker warning, no leftover segment, the same kind of result."""
    import json

    exe = CONSOLE_SCRIPT
    process = subprocess.Popen([exe, "run", "svm", "--epochs", "2", "--workers", "2",
                                "--backend", "processes", "--seed", "0", "--json"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert "resource_tracker" not in err and "leaked" not in err
    result = json.loads(out)
    assert result["workers"] == 2 and result["backend"] == "processes"
    assert result["startup_seconds"] > 0 and result["test_error"] < 0.2
    assert segment_folders(process.pid) == set()
    assert not list(tmp_path.iterdir())  # no checkpoint without Ctrl-C or --checkpoint-every
