"""A rank's watcher while its MPI job starts (see hogwild.backends.mpi.launcher.
watch_start), a process of its own with the standard library alone:

    python -I -S starting.py RANK_PID LAUNCHER_PID LOCAL_SIZE NAMESPACE SESSION RANK

It ends when its standard input does (the rank is past MPI_Init, or gone). Until
then, when the rank dies, or another rank of this machine (the processes whose
PMIX_NAMESPACE is NAMESPACE) dies or is not there for MISSING_SECONDS, the job
cannot start: the first of the job to see it (first_to_say: a file made once in
the launcher's SESSION folder decides) says so and sends the launcher SIGTERM.
"""
import os
import select
import signal
import sys
import time
from pathlib import Path

MISSING_SECONDS = 5  # a rank of this machine not there this long while MPI starts: gone
TICK_SECONDS = 0.1


def local_ranks(namespace):
    """{pid: rank} of this machine's live processes of the job (a zombie's
    environment reads empty: it counts as gone)."""
    mark = f"PMIX_NAMESPACE={namespace}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile, or another user's
            continue
        if mark in environment:
            rank = next((item[len(b"PMIX_RANK="):] for item in environment
                         if item.startswith(b"PMIX_RANK=")), b"?")
            found[int(entry.name)] = rank.decode(errors="replace")
    return found


def alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def failed_start(rank_pid, rank, local_size, namespace):
    """Who died ('rank N' or None) once the start failed; waits until then, or
    returns False when the rank is past MPI_Init."""
    seen, short_since = {}, None
    while not select.select([sys.stdin], [], [], TICK_SECONDS)[0]:
        if not alive(rank_pid):
            return f"rank {rank}"
        now = local_ranks(namespace)
        gone = sorted(rank for pid, rank in seen.items() if pid not in now)
        if gone:
            return f"rank {gone[0]}"
        seen.update(now)
        short_since = None if len(now) >= local_size else (short_since or time.monotonic())
        if short_since is not None and time.monotonic() - short_since >= MISSING_SECONDS:
            return "a rank of this machine"
    return False


def first_to_say(session):
    """Whether this process is the first of the job on this machine to say that its
    start failed (a file made once in the launcher's ``session`` folder): True
    where there is no such folder."""
    try:
        os.close(os.open(os.path.join(session, "hogwild-start-failed"),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:  # no session folder: each says it
        pass
    return True


def main():
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # the rank's to handle; this ends with it
    rank_pid, launcher, local_size = (int(arg) for arg in sys.argv[1:4])
    namespace, session, rank = sys.argv[4:7]
    who = failed_start(rank_pid, rank, local_size, namespace)
    if not who:
        return
    if not first_to_say(session):
        return
    try:
        os.write(2, f"hogwild: error: {who} died while the MPI job started; ending the "
                    "job\n".encode())
    except OSError:
        pass
    try:
        os.kill(launcher, signal.SIGTERM)
    except OSError:
        pass


if __name__ == "__main__":
    main()
