"""The launcher (mpirun) from a rank's side: its pid, a watch that ends the rank
when the launcher dies, a watch over this machine's other ranks while MPI starts,
and the removal of what a killed launcher leaves (its session directory, the
folder of its ranks' shared-memory segments)."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hogwild.backends.shared_memory import PREFIX, remove_stale_folders, segments_root
from hogwild.paths import pid_alive, process_ended

def segment_folder():
    """A folder of this user's for Open MPI's shared-memory segments on this node,
    named for the launcher (every rank of a node has the same one), so that a
    sweep can tell a dead job's (remove_stale_folders); None where it cannot be
    made this user's alone (Open MPI then uses /dev/shm itself)."""
    launcher = launcher_pid()
    remove_stale_folders()
    remove_stale_sessions()
    folder = segments_root() / f"{PREFIX}{launcher}-mpi-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() \
            or stat.S_IMODE(info.st_mode) != 0o700:
        return None
    return folder


def remove_stale_sessions():
    """Remove this user's session directories of Open MPI launchers that are gone
    (``ompi.PID`` in the temporary folder, PMIx's files: a launcher killed by SIGKILL
    leaves its own, and its ranks cannot remove it when they die starting)."""
    for session in Path(tempfile.gettempdir()).glob("ompi.*"):
        launcher = session.name[len("ompi."):]
        try:
            if launcher.isdigit() and session.lstat().st_uid == os.getuid() \
                    and stat.S_ISDIR(session.lstat().st_mode) and not pid_alive(int(launcher)):
                shutil.rmtree(session, ignore_errors=True)
        except OSError:
            continue


_WATCHING = []  # the launcher watch, started once per process


def launcher_pid():
    """The pid of this rank's launcher (mpirun, or Open MPI's daemon on another node):
    the one its PMIx session directory is named for (``ompi.PID``), which stays
    right when a wrapper script stands between, or when the launcher has died
    already; else this process's parent."""
    session = os.path.basename(os.environ.get("PMIX_SERVER_TMPDIR", ""))
    tail = session.rsplit(".", 1)[-1]
    return int(tail) if session.startswith("ompi.") and tail.isdigit() else os.getppid()


def _launcher_gone(launcher):
    """Whether the launcher has died: it is no longer this process's parent, and it
    no longer runs (gone, or a zombie nobody has reaped)."""
    return os.getppid() != launcher and process_ended(launcher)


def watch_launcher(rank, folder=None):
    """Exit when the launcher (mpirun) dies: its job is gone, and an orphan would
    wait in a collective for ever. A launcher killed by SIGKILL leaves its session
    directory (the PMIx server's files, mapped by its ranks) and, before its ranks
    unlinked them, the shared-memory segments in ``folder`` behind; the first
    rank to notice removes both."""
    if _WATCHING:
        return
    launcher = launcher_pid()

    def watch():
        while not _launcher_gone(launcher):
            time.sleep(0.1)
        session = os.environ.get("PMIX_SERVER_TMPDIR", "")
        if os.path.basename(session).endswith(f".{launcher}"):  # that launcher's own
            shutil.rmtree(session, ignore_errors=True)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        try:
            print(f"hogwild: rank {rank}: the MPI launcher (pid {launcher}) died; exiting",
                  file=sys.stderr, flush=True)
        except OSError:  # its pipe went with it
            pass
        os._exit(1)
    _WATCHING.append(threading.Thread(target=watch, daemon=True, name="hogwild-launcher"))
    _WATCHING[0].start()



def watch_start(local_size):
    """Under a user's own mpirun (--ranks' launcher watches its ranks itself), a
    process watching this rank until it is past MPI_Init (hogwild.backends.mpi.
    starting): a rank of this machine that dies before, or is not there, would
    leave the others waiting in MPI_Init for ever under ULFM (and mpirun exits 0
    when ranks die by a signal), so the first watcher to see it says so in one
    line and stops the launcher (SIGTERM: it ends the job and exits 1). Returns
    the function to call once MPI has started (None where nothing watches). A
    thread cannot watch: mpi4py holds the interpreter's lock in MPI_Init."""
    namespace = os.environ.get("PMIX_NAMESPACE")
    if not namespace or not Path("/proc").is_dir():
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMIX_", "OMPI_"))}
    try:
        watcher = subprocess.Popen(
            [sys.executable, "-I", "-S", str(Path(__file__).with_name("starting.py")),
             str(os.getpid()), str(launcher_pid()), str(local_size), namespace,
             os.environ.get("PMIX_SERVER_TMPDIR", ""), str(job_rank_number())],
            stdin=subprocess.PIPE, env=env)
    except OSError:  # no process to spare: the job starts unwatched
        return None

    def started():
        watcher.stdin.close()
        watcher.wait()
    return started


def job_rank_number():
    return os.environ.get("PMIX_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "?"))
