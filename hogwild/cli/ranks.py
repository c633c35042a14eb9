"""MPI jobs from the command line: ``--ranks N`` re-runs the command as a job of N
ranks on this machine under mpirun, and each rank of a job (``mpirun -n N hogwild
run ... --backend mpi``) prints only on rank 0 and ends the whole job on an error."""
import os
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from hogwild.backends.mpi import STARTED_SOCKET_VARIABLE, job_chief, remove_stale_sessions
from hogwild.backends.shared_memory import remove_stale_folders
from hogwild.errors import HogwildError
from hogwild.limits import check_workers, usable_cores
from hogwild.paths import process_ended


def find_mpirun():
    """mpirun beside this Python (Open MPI's wheel puts it there) or on PATH."""
    here = os.path.dirname(sys.executable)
    found = shutil.which("mpirun", path=os.pathsep.join([here, os.environ.get("PATH", "")]))
    if found is None:
        raise HogwildError("--ranks needs mpirun: pip install 'hogwild[mpi]' (mpi4py and "
                           "Open MPI's wheel, which brings mpirun)")
    return found


def fault_tolerance(mpirun):
    """mpirun's options that keep a job whose rank dies, so that the survivors go on
    (hogwild.backends.mpi.survival): Open MPI 5's ULFM; none for another MPI."""
    try:
        version = subprocess.run([mpirun, "--version"], capture_output=True, text=True,
                                 timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    release = re.search(r"\(Open MPI\) (\d+)\.", version)
    return ["--with-ft", "ulfm"] if release and int(release.group(1)) >= 5 else []


def without_ranks(argv):
    """The command line without its --ranks option."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--ranks":
            skip = True
        elif not arg.startswith("--ranks="):
            kept.append(arg)
    return kept


def check_session_folder():
    """Open MPI makes its session directory in TMPDIR (else /tmp) and, where it
    cannot, exits 213 with a banner of its own: say so first, in one line."""
    folder = os.environ.get("TMPDIR") or "/tmp"
    if os.path.isdir(folder) and not os.access(folder, os.W_OK | os.X_OK):
        raise HogwildError(f"--ranks: the temporary folder {folder} is not writable, and "
                           "Open MPI keeps its session files there: set TMPDIR to a "
                           "writable folder")


def launch(ranks, argv, oversubscribe=False):
    """Run ``hogwild ARGV`` (a ``run`` with ``--backend mpi``) as ``ranks`` ranks under
    mpirun and return its exit status. mpirun runs in its own session: the first
    Ctrl-C or SIGTERM here goes to the ranks, which stop after the epoch (rank 0
    checkpoints); a second ends the job at once, and so does the first while the
    ranks start (they could not stop together before MPI_Init). mpirun gets SIGTERM
    if this process dies. More ranks than this machine's cores are bounded as
    workers are (check_workers). A run survives a lost rank where mpirun offers
    ULFM (fault_tolerance)."""
    check_workers(ranks, oversubscribe, name="--ranks")
    check_session_folder()
    mpirun = find_mpirun()
    command = [mpirun, "-n", str(ranks)]
    if argv and argv[0] == "run":  # a lost rank's survivors go on training
        command += fault_tolerance(mpirun)
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    if ranks > usable_cores():
        command.append("--oversubscribe")
    # Open MPI binds each rank to one core when ranks <= cores, and a rank waiting in
    # MPI spins: one busy core (another job, a build) then stalls the whole job at
    # every exchange. Unbound ranks that yield while they wait: 30 epochs of a9a at 2
    # ranks beside a busy loop on one core took 1.37-1.41x the idle run's time, where
    # bound and spinning they took 1.74-1.77x (and 81-89 s against 6.5-11 s on
    # another host), with the same idle time.
    command += ["--bind-to", "none"]
    command += [sys.executable, "-m", "hogwild.cli", *without_ranks(argv)]
    if argv and argv[0] == "run":
        command += ["--backend", "mpi"]
    started = StartedRanks(ranks) if "--with-ft" in command else None  # (told past MPI_Init)
    job = subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent,
                           env={"OMPI_MCA_mpi_yield_when_idle": "1", **os.environ,
                                **({STARTED_SOCKET_VARIABLE: started.name} if started else {})})
    asked = []

    def forward(signum, frame):
        if asked or (started is not None and len(started.pids) < ranks):
            job.send_signal(signal.SIGTERM)  # again, or while the ranks start: end it now
        else:
            for pid in child_pids(job.pid):
                try:
                    os.kill(pid, signum)
                except ProcessLookupError:
                    pass
        asked.append(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        start = _watch_start(job, ranks, started, asked) if started is not None else None
        if start == "interrupted":
            job.wait()
            print("hogwild: interrupted while the MPI job started", file=sys.stderr)
            return 128 + asked[0]
        status = job.wait()
        if status and start == "ended":  # by mpirun alone, before any rank told us
            print(f"hogwild: error: mpirun failed (exit {status}) before any rank started; "
                  "its message is above", file=sys.stderr)
        return status
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)
        if started is not None:
            started.close()
        remove_stale_folders()  # what ranks that died with a killed mpirun left
        remove_stale_sessions()


class StartedRanks:
    """Which ranks are past MPI_Init: each connects to this abstract Unix socket
    (Linux: a name in no folder, gone with this process however it dies, so a
    killed launcher leaves nothing in /dev/shm or a temporary folder). Only this
    user's connections count (the kernel's peer credentials): the name is visible
    to every user of the host."""

    def __init__(self, ranks):
        self.name = f"hogwild-{os.getpid()}-{secrets.token_hex(8)}-started"
        self.pids = set()
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.bind("\0" + self.name)
        self._socket.listen(ranks)
        self._socket.setblocking(False)

    def accept(self):
        """Count the ranks that connected since the last call (by pid: a rank that
        connected and died since still counts)."""
        while True:
            try:
                connection, _ = self._socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            with connection:
                pid, uid, _ = struct.unpack("3i", connection.getsockopt(
                    socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
            if uid == os.getuid():
                self.pids.add(pid)

    def close(self):
        self._socket.close()


def _watch_start(job, ranks, started, asked):
    """Until every rank told ``started`` (a StartedRanks) it is past MPI_Init, end the
    job if a rank dies: mpirun keeps a fault-tolerant job whose rank dies, and the
    others would wait in MPI_Init for ever. A rank killed before this watch saw it
    is caught too: mpirun reaps it, and its count of reaped children's page faults
    (/proc's cminflt) rises. Returns "started", "interrupted" (a signal, ``asked``
    by forward, ended the start), "failed" (a rank died: said and ended here) or
    "ended" (the job ended before any rank told ``started``)."""
    reaped = _reaped_faults(job.pid)
    seen = {}  # pid: world rank, of the ranks mpirun started
    while job.poll() is None and len(started.pids) < ranks:
        if asked:
            return "interrupted"
        for pid in child_pids(job.pid):
            if seen.get(pid, "?") == "?":  # (not yet where mpirun forked it, before exec)
                seen[pid] = _world_rank(pid)
        started.accept()
        dead = [f"{'a rank' if rank == '?' else f'rank {rank}'} (pid {pid})"
                for pid, rank in seen.items() if process_ended(pid) and pid not in started.pids]
        if dead or _reaped_faults(job.pid) > reaped:
            if asked:
                return "interrupted"
            print(f"hogwild: error: {dead[0] if dead else 'a rank'} died while the MPI job "
                  "started; ending the job", file=sys.stderr, flush=True)
            job.terminate()
            try:
                job.wait(timeout=10)
            except subprocess.TimeoutExpired:
                job.kill()
            return "failed"
        time.sleep(0.05)
    started.accept()  # (the ranks that told it as the job ended)
    if asked and len(started.pids) < ranks:
        return "interrupted"
    return "started" if started.pids else "ended"


def _reaped_faults(pid):
    """The page faults of the children that process ``pid`` reaped (cminflt): it rises
    when one of them ended, however briefly it ran."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[8])
    except (OSError, IndexError, ValueError):
        return 0


def _world_rank(pid):
    """The MPI rank that mpirun gave process ``pid`` ('?' where it cannot be read)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return "?"
    for entry in environ:
        if entry.startswith(b"OMPI_COMM_WORLD_RANK="):
            return entry.split(b"=", 1)[1].decode()
    return "?"


def child_pids(pid):
    """The pids of a process's children (Linux /proc), i.e. mpirun's ranks."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                found += [int(child) for child in listing.read().split()]
    except OSError:
        pass
    return found


def _die_with_parent():
    """In mpirun's process before exec: SIGTERM when the launching process dies."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def reports_here():
    """Whether this process writes and reports a run's results: outside an MPI job,
    or as its chief (rank 0, or once ranks were lost the lowest survivor)."""
    return job_chief()


def say_error(message):
    """Print a hogwild error (``hogwild: error: MESSAGE``) once per job: in an MPI job
    of several ranks the ranks first meet (meet_before_exit), then rank 0 says each
    distinct message once, naming the ranks where not all share it (one bad
    --resume file was one line per rank). A rank whose error the others do not
    share says its own, before the caller aborts the job. Returns whether every
    rank stopped together."""
    from hogwild.backends.mpi import import_mpi, in_mpi_job, job_rank, job_size, \
        meet_before_exit

    if not in_mpi_job() or job_size() == 1:
        print(f"hogwild: error: {message}", file=sys.stderr, flush=True)
        return False
    if not meet_before_exit():
        print(f"hogwild: error: rank {job_rank()}: {message}", file=sys.stderr, flush=True)
        return False
    said = import_mpi().COMM_WORLD.allgather(message)  # every rank is here: it returns
    for text in dict.fromkeys(said) if job_rank() == 0 else ():
        ranks = [str(rank) for rank, theirs in enumerate(said) if theirs == text]
        who = "" if len(ranks) == len(said) else \
            f"rank{'s' if len(ranks) > 1 else ''} {', '.join(ranks)}: "
        print(f"hogwild: error: {who}{text}", file=sys.stderr, flush=True)
    return True


def abort_job(status):
    """End every rank of this MPI job (a rank that failed alone would leave the
    others waiting in a collective, or in MPI_Init): MPI_Abort, after starting MPI
    if it has not started yet. Nothing outside an MPI job of several ranks."""
    from hogwild.backends.mpi import import_mpi, in_mpi_job, job_size

    if not in_mpi_job() or job_size() == 1:
        return
    try:
        mpi = import_mpi()
    except HogwildError:  # no mpi4py: the launcher sees this rank exit
        return
    if mpi.Is_finalized():
        return
    sys.stdout.flush()
    sys.stderr.flush()
    mpi.COMM_WORLD.Abort(status)
