"""An MPI job as a rank sees it: whether a launcher started this process, its rank
and the job's size (known before MPI starts), starting MPI (import_mpi), ending
the whole job on an uncaught exception, removing the names of Open MPI's
shared-memory segments, and the ranks' agreement on what they run."""
import atexit
import ctypes
import dataclasses
import os
import socket
import sys
import time

import numpy as np

from hogwild.backends.mpi.launcher import segment_folder, watch_launcher, watch_start
from hogwild.errors import HogwildError

RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")  # set by mpirun, srun
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
LOCAL_SIZE_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE")
SEGMENT_PREFIX = "sm_segment."  # Open MPI's shared-memory transport, one file per rank
SEGMENT_FOLDER_VARIABLE = "OMPI_MCA_btl_sm_backing_directory"  # where it makes them
STARTED_SOCKET_VARIABLE = "HOGWILD_STARTED_SOCKET"  # whom each rank tells MPI_Init is done
STARTED_CONNECT_SECONDS = 10  # a launcher stopped (SIGSTOP) does not hold a rank longer
OPEN_MPI_LIBRARY = "libmpi.so.40"  # its soname since Open MPI 3


def in_mpi_job():
    """Whether this process was started by an MPI launcher (mpirun, srun)."""
    return any(name in os.environ for name in RANK_VARIABLES + SIZE_VARIABLES)


def job_rank():
    """This process's rank in the MPI job that started it (0 outside one), known
    before MPI starts."""
    return _launcher_number(RANK_VARIABLES, 0)


def job_size():
    """The ranks of the MPI job that started this process (1 outside one)."""
    return _launcher_number(SIZE_VARIABLES, 1)


MEETING_SECONDS = 20  # how long a rank that failed waits for the others to fail too (a
# rank whose error is its own ends the job this much later)
_SURVIVORS = {}  # after ranks were lost: whether this process is the chief, and the
# survivors' communicator (see survived)


def job_chief():
    """Whether this process is the job's chief, who reports and writes: rank 0, or
    once ranks were lost (hogwild.backends.mpi.survival), the lowest survivor."""
    return _SURVIVORS.get("chief", job_rank() == 0)


def job_comm(MPI):
    """The job's communicator: COMM_WORLD, or once ranks were lost the survivors'."""
    return _SURVIVORS.get("comm") or MPI.COMM_WORLD


def survived(MPI, survivors, chief):
    """Record that ranks of this job were lost and this process goes on among
    ``survivors``, as their chief or not. A new chief whose stdout the command
    line silenced (as a rank other than 0's) gets it back: it reports from now on.
    At exit the survivors meet in a barrier of their own, and MPI_Finalize then
    skips its fence over the whole job, which can wait for the dead ranks for ever
    (PMIx counts them: open-mpi/ompi#11404; here about one run in 10 under load)."""
    if not _SURVIVORS:
        atexit.register(_finalize_among_survivors, MPI)  # (before mpi4py's MPI_Finalize)
    _SURVIVORS.update(chief=chief, comm=survivors)
    if chief and getattr(sys.stdout, "name", None) == os.devnull:
        silenced, sys.stdout = sys.stdout, sys.__stdout__
        silenced.close()


def _finalize_among_survivors(MPI):
    """The survivors' barrier, then Open MPI's ``async_mpi_finalize`` (an MCA
    parameter read at MPI_Init only, hence set in the library): no fence in
    MPI_Finalize. The barrier keeps what the fence is for (no rank leaves while
    another still needs its messages); a rank lost meanwhile is no reason to wait."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        _SURVIVORS["comm"].Barrier()
    except MPI.Exception:
        pass
    try:
        library = ctypes.CDLL(OPEN_MPI_LIBRARY, mode=os.RTLD_NOLOAD)  # (the one loaded)
        ctypes.c_bool.in_dll(library, "ompi_async_mpi_finalize").value = True
    except (OSError, ValueError):  # not Open MPI 3 to 5 (whose ULFM alone survives a loss)
        pass


def job_local_size():
    """The ranks of this job on this machine, as the launcher says (every rank of
    the job where it does not say: fewer threads rather than too many)."""
    return _launcher_number(LOCAL_SIZE_VARIABLES, job_size())


def _launcher_number(names, default):
    for name in names:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return default


def import_mpi():
    """mpi4py's MPI module (initialising MPI), or an error naming the extra. A
    process that no launcher started is a job of one rank ("singleton"), for which
    Open MPI's shared-memory transport is of no use and whose segment in /dev/shm
    no launcher would remove: it gets the loopback transport alone. A rank of a
    larger job puts the transport's segments in a private folder for its launcher
    (see segment_folder), watches its launcher (watch_launcher) and, under a
    user's own mpirun, this machine's other ranks while MPI starts
    (watch_start), and ends the whole job on an exception that
    nothing catches (abort_on_uncaught)."""
    starting = "mpi4py.MPI" not in sys.modules
    alone = starting and not in_mpi_job() and "OMPI_MCA_btl" not in os.environ
    folder = segment_folder() if starting and in_mpi_job() and job_size() > 1 \
        and SEGMENT_FOLDER_VARIABLE not in os.environ else None  # (unless the user chose)
    chosen = {"OMPI_MCA_btl": "self"} if alone else {}
    if folder is not None:
        chosen[SEGMENT_FOLDER_VARIABLE] = str(folder)
    if starting and in_mpi_job():
        watch_launcher(job_rank(), folder)
    started = watch_start(job_local_size()) if starting and in_mpi_job() \
        and job_size() > 1 and not os.environ.get(STARTED_SOCKET_VARIABLE) else None
    os.environ.update(chosen)  # for MPI_Init only: not for processes this one starts later
    try:
        from mpi4py import MPI
    except ImportError:
        raise HogwildError("backend 'mpi' needs mpi4py and an MPI library: pip install "
                           "'hogwild[mpi]' (mpi4py and Open MPI's wheel)") from None
    finally:
        for name in chosen:
            del os.environ[name]
        if started is not None:
            started()
    if starting and MPI.COMM_WORLD.Get_size() > 1:
        unlink_shared_segments(MPI, folder)
        abort_on_uncaught(MPI)
    if starting and os.environ.get(STARTED_SOCKET_VARIABLE):
        _tell_launcher(os.environ[STARTED_SOCKET_VARIABLE])
    return MPI


def _tell_launcher(name):
    """Tell the launcher (hogwild.cli.ranks.StartedRanks) that this rank is past
    MPI_Init by connecting to its abstract socket ``name``: a rank lost from now on
    is survived or ends the job by an error, where one lost before leaves the
    others waiting in MPI_Init."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(STARTED_CONNECT_SECONDS)
            connection.connect("\0" + name)
    except OSError:  # the launcher is gone, or on another host: it waits for no one
        pass


def abort_on_uncaught(MPI):
    """An exception that nothing catches on this rank ends every rank (MPI_Abort):
    returning would leave the others waiting in a collective for ever."""
    previous = sys.excepthook

    def abort(kind, value, traceback):
        previous(kind, value, traceback)
        print(f"hogwild: rank {MPI.COMM_WORLD.Get_rank()}: an uncaught {kind.__name__} ends "
              "the MPI job (MPI_Abort)", file=sys.stderr, flush=True)
        MPI.COMM_WORLD.Abort(1)
    sys.excepthook = abort


def meet_before_exit(seconds=MEETING_SECONDS):
    """After this rank said its error: wait (at most ``seconds``) until every rank of
    the job gets here too, so that each says its own and all exit together, with
    nothing to abort. Returns whether they all came. A launcher (mpirun) ends the
    whole job when the first rank fails, and MPI_Abort from the first to fail
    ended the others before their errors were out (a rank slower to start on a
    loaded machine printed nothing). A rank whose error the others do not share
    waits the ``seconds`` out, then returns False (the caller aborts the job)."""
    try:
        MPI = import_mpi()
    except HogwildError:  # no mpi4py: nothing to meet with
        return False
    meeting = MPI.COMM_WORLD.Ibarrier()
    deadline = time.monotonic() + seconds
    while not meeting.Test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def agree(comm, what, fields):
    """Check that every rank's ``fields`` (a dict) equal rank 0's: ranks that differ
    would enter different collectives and wait for each other for ever. Every rank
    raises the same HogwildError, naming the first field that differs and both
    values. A collective: every rank calls it."""
    everyone = comm.allgather(fields)
    for rank, theirs in enumerate(everyone[1:], 1):
        for key in [*everyone[0], *(k for k in theirs if k not in everyone[0])]:
            ours, other = everyone[0].get(key), theirs.get(key)
            if ours != other:
                raise HogwildError(f"the MPI ranks disagree on {what}: rank 0 has "
                                   f"{key}={ours!r}, rank {rank} has {key}={other!r}")


def run_fields(config, objective):
    """What the ranks of one run must agree on: the objective's name, samples and
    array shapes (where each rank holds its own samples, the parameters' shapes and
    the data's types alone), and every field of the TrainingConfig and its
    AllreduceSettings but the threads of each rank."""
    own = config.distributed is not None and config.distributed.samples == "own"
    fields = {"objective": objective.name,
              "params": [f"{p.dtype}{list(p.shape)}" for p in objective.params],
              "data": [f"{a.dtype}" + ("" if own else f"{list(a.shape)}")
                       for a in objective.data]}
    if not own:
        fields["samples"] = objective.n_samples
    for settings, skip in ((config, ("workers", "oversubscribe", "distributed")),
                           (config.distributed, ())):
        for field in dataclasses.fields(settings):
            if field.name not in skip:
                fields[field.name] = _comparable(getattr(settings, field.name))
    return fields


def _comparable(value):
    """A value that compares equal on two ranks when it means the same (a
    Generator's repr holds its address)."""
    if value is None or isinstance(value, (bool, int, float, str, tuple)):
        return value
    if isinstance(value, np.random.Generator):
        return "a numpy Generator"
    return repr(value)


def unlink_shared_segments(MPI, folder=None):
    """Remove the names of Open MPI's shared-memory segments as soon as every rank
    of this node has mapped every other's (the memory lives on until the last rank
    unmaps it). mpirun removes them when a job ends, but one killed by SIGKILL
    leaves 16 MiB per rank in /dev/shm for good. A message between every pair of
    a node's ranks makes each map its peers' segments (Open MPI may map them
    lazily, at the first message); after a barrier no rank needs a name again, and
    after another the segments' ``folder`` (see segment_folder) goes too.
    Collective over COMM_WORLD: every rank calls it, right after MPI_Init."""
    node = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        me, size = node.Get_rank(), node.Get_size()
        if size == 1:
            return
        peers = [peer for peer in range(size) if peer != me]
        token, incoming = np.zeros(1, np.uint8), np.zeros((size, 1), np.uint8)
        requests = [node.Irecv(incoming[peer], source=peer, tag=17) for peer in peers]
        requests += [node.Isend(token, dest=peer, tag=17) for peer in peers]
        MPI.Request.Waitall(requests)
        node.Barrier()
        for path in _mapped_segments():
            try:
                os.unlink(path)
            except OSError:  # a peer was first, or it is not ours to remove
                pass
        node.Barrier()
    finally:
        node.Free()
        if folder is not None:
            try:
                folder.rmdir()
            except OSError:  # a peer was first
                pass


def _mapped_segments():
    """The files of Open MPI's shared-memory segments that this process maps."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(maxsplit=5)[5].strip() for line in maps
                     if len(line.split(maxsplit=5)) == 6}
    except OSError:  # not Linux
        return []
    return sorted(p for p in paths if os.path.basename(p).startswith(SEGMENT_PREFIX))

