"""MPI jobs from the command line: ``--ranks N`` re-runs the command as a job of N
ranks on this machine under mpirun, and each rank of a job (``mpirun -n N hogwild
run ... --backend mpi``) prints only on rank 0 and ends the whole job on an error."""
import os
import shutil
import signal
import subprocess
import sys

from hogwild.backends.mpi import remove_stale_sessions
from hogwild.backends.shared_memory import remove_stale_folders
from hogwild.errors import HogwildError
from hogwild.limits import check_workers, usable_cores


def find_mpirun():
    """mpirun beside this Python (Open MPI's wheel puts it there) or on PATH."""
    here = os.path.dirname(sys.executable)
    found = shutil.which("mpirun", path=os.pathsep.join([here, os.environ.get("PATH", "")]))
    if found is None:
        raise HogwildError("--ranks needs mpirun: pip install 'hogwild[mpi]' (mpi4py and "
                           "Open MPI's wheel, which brings mpirun)")
    return found


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


def launch(ranks, argv, oversubscribe=False):
    """Run ``hogwild ARGV`` (a ``run`` with ``--backend mpi``) as ``ranks`` ranks under
    mpirun and return its exit status. mpirun runs in its own session: the first Ctrl-C or SIGTERM
    here goes to the ranks, which stop after the epoch (rank 0 checkpoints); a
    second ends the job at once. mpirun gets SIGTERM if this process dies. More
    ranks than this machine's cores are bounded as workers are (check_workers)."""
    check_workers(ranks, oversubscribe, name="--ranks")
    command = [find_mpirun(), "-n", str(ranks)]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    if ranks > usable_cores():
        command.append("--oversubscribe")
    command += [sys.executable, "-m", "hogwild.cli", *without_ranks(argv)]
    if argv and argv[0] == "run":
        command += ["--backend", "mpi"]
    job = subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent)
    asked = []

    def forward(signum, frame):
        if asked:  # again: end the job now
            job.send_signal(signal.SIGTERM)
            return
        asked.append(signum)
        for pid in child_pids(job.pid):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return job.wait()
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)
        remove_stale_folders()  # what ranks that died with a killed mpirun left
        remove_stale_sessions()


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
