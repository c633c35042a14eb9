"""The process that owns a driver's private local Ray instance (see
hogwild.backends.ray.cluster.LocalRay).

It runs in a session of its own, so the signals a terminal or a job scheduler sends
the driver's process group (Ctrl-C, ``kill -TERM -PGID``, a hang-up) reach the
driver alone, which stops after the epoch as it promises, and never Ray's services
under it. It lives exactly as long as the driver wants the instance: when its
standard input ends (the driver closed it, or died, SIGKILL included) it stops the
instance, kills whatever of it outlived that (Ray's agents outlive a dead raylet),
and removes the instance's folder, so nothing is left in TMPDIR or running.

    python -m hogwild.backends.ray.host FOLDER NUM_CPUS

prints the instance's address as one line on stdout once it is up, then waits.
"""
import os
import shutil
import signal
import sys
import time
from pathlib import Path

INSTANCE_VARIABLE = "HOGWILD_RAY_INSTANCE"  # set to the folder in every process of it
GONE_SECONDS = 10  # for the instance's processes to end after SIGKILL


def _stop(signum, frame):
    raise SystemExit(128 + signum)


def instance_processes(folder):
    """Pids of this user's processes started under the instance in ``folder``:
    those whose environment names it (each inherits the host's)."""
    mark = f"{INSTANCE_VARIABLE}={folder}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:  # ended meanwhile, or another user's
            continue
    return found


def kill_instance(folder):
    """SIGKILL every process left of the instance, and wait until they are gone
    (so none writes into the folder after it is removed)."""
    deadline = time.monotonic() + GONE_SECONDS
    while (left := instance_processes(folder)) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def main():
    folder, num_cpus = sys.argv[1], int(sys.argv[2])
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)  # a handler, not SIG_IGN: Ray's processes do not inherit it
    os.environ[INSTANCE_VARIABLE] = folder
    os.umask(0o077)  # the instance's files are this user's alone
    try:
        import ray
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False  # every service on 127.0.0.1 (Ray's own
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,  # switch)
                 log_to_driver=False, _temp_dir=folder)
        print(ray.get_runtime_context().gcs_address, flush=True)
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)  # Ray's messages for this (idle) driver go nowhere
        os.dup2(quiet, 2)
        sys.stdin.buffer.read()  # until the driver closes it or dies
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # the clean-up is not interrupted
        try:
            if "ray" in sys.modules and sys.modules["ray"].is_initialized():
                sys.modules["ray"].shutdown()
        finally:
            kill_instance(folder)
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except SystemExit as stopped:
        sys.exit(stopped.code)
    except BaseException as error:  # start-up failed: the driver shows this line
        print(f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
