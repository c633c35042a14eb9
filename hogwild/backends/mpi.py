"""backend="mpi": synchronous data parallelism, the ranks' changes averaged by allreduce.

Every rank of an MPI job (``mpirun -n N python script.py``, ``mpirun -n N hogwild
run ...``) calls hogwild.fit with its own copy of the objective (loaded from its
own disk; no data goes through rank 0). Then:

- each rank owns a contiguous share of the samples and runs the local engine on it
  (the threads backend: hogwild, locked or serial plans, any replication mode);
- every ``sync_every`` local updates (default: once an epoch) the ranks average
  their parameter changes since the last sync: one dense allreduce of the change
  vector, or, where fewer bytes move that way, an allgather of the changed
  coordinates (indices and values), each rank adding them up in rank order. Either
  way every rank ends with the same parameters;
- the dense allreduce runs Open MPI's tuned algorithm that the alpha-beta-gamma
  model (hogwild.collectives) predicts fastest for the vector's size and the rank
  count, on the link costs a probe measures when the run starts (or the one asked
  for); predicted and measured times are in FitResult.distributed;
- rank 0 reports: progress, callbacks, metrics and checkpoints are its alone. The
  epoch's objective is the sum of every rank's loss over its share. A stop request
  (Ctrl-C, SIGTERM) on any rank stops every rank after the same epoch.

With one local update per rank between syncs this is synchronous minibatch SGD
with a minibatch of ``ranks`` samples. ``step_scaling="linear"`` (the default)
multiplies the step by the rank count (the linear scaling rule of Goyal et al.,
"Accurate, Large Minibatch SGD", 2017), optionally reached gradually over
``warmup_epochs``: the mean of the ranks' changes then moves about as far as one
process would in the same epochs. Without it ("none") each rank's progress is
divided by the ranks: MovieLens 1M at 2 ranks ends at test RMSE 0.881 instead of
0.855 after 20 epochs. "none" keeps a mean of feasible points feasible, which
suits constrained parameters (the graph cuts' simplex rows).

A rank that raises must end the job: a rank that returns from an error while the
others wait in a collective hangs the job at MPI_Finalize. The command line calls
MPI_Abort for every error; in a script, an exception that nothing catches does the
same (import_mpi installs an excepthook, as ``python -m mpi4py script.py`` would).
Ranks whose settings differ would enter different collectives: every rank compares
its run's settings (every field of its TrainingConfig and AllreduceSettings, the
objective's name and shapes) with rank 0's before the first collective of a fit,
and all fail with the same message naming the field and both values.

A rank whose launcher (mpirun) died exits within a second and removes the
launcher's session directory. Open MPI's shared-memory segments are made in a
folder of this user's for the launcher (``hogwild-PID-mpi-UID`` in /dev/shm) and
lose their names once every rank of a node has mapped them; a folder left by a
launcher killed before that, and its session directory (``ompi.PID`` in the
temporary folder), are removed by the next hogwild run that starts MPI or
launches ranks (their launcher's pid is gone).
"""
import ctypes
import dataclasses
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
from numba import njit

from hogwild.backends.base import HostBackend
from hogwild.backends.host import aligned_copy
from hogwild.backends.shared_memory import PREFIX, remove_stale_folders, segments_root
from hogwild.backends.sharding import (FlatLayout, node_samples, piece_plans, pieces_per_epoch,
                                      run_seed)
from hogwild.backends.threads import ThreadsBackend
from hogwild.collectives import (ALGORITHMS, DEFAULT_SEGMENT, LinkCosts, MeasuredLink, choose,
                                 predict)
from hogwild.errors import HogwildError, check_int
from hogwild.errors import choose as choose_name
from hogwild.limits import MAX_EPOCHS, usable_cores
from hogwild.paths import pid_alive
from hogwild.schedulers import get_scheduler

LOCAL_SCHEDULERS = ("hogwild", "locked", "serial")
ALGORITHM_CHOICES = ("auto", *ALGORITHMS)
EXCHANGES = ("auto", "dense", "sparse")
STEP_SCALINGS = ("linear", "none")
PROBE_SIZES = tuple(1 << k for k in range(10, 23, 2))  # bytes of the start-up probe, 1 KiB-4 MiB
PROBE_REPEATS = 9  # repeats per size up to 1 MiB (3 above); the median counts
RING_STEPS = 3  # ring steps back to back in a repeat of the link probe


RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")  # set by mpirun, srun
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
SEGMENT_PREFIX = "sm_segment."  # Open MPI's shared-memory transport, one file per rank
SEGMENT_FOLDER_VARIABLE = "OMPI_MCA_btl_sm_backing_directory"  # where it makes them


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
    (see segment_folder), watches its launcher (watch_launcher) and ends the whole
    job on an exception that nothing catches (abort_on_uncaught)."""
    starting = "mpi4py.MPI" not in sys.modules
    alone = starting and not in_mpi_job() and "OMPI_MCA_btl" not in os.environ
    folder = segment_folder() if starting and in_mpi_job() and job_size() > 1 \
        and SEGMENT_FOLDER_VARIABLE not in os.environ else None  # (unless the user chose)
    chosen = {"OMPI_MCA_btl": "self"} if alone else {}
    if folder is not None:
        chosen[SEGMENT_FOLDER_VARIABLE] = str(folder)
    if starting and in_mpi_job():
        watch_launcher(job_rank(), folder)
    os.environ.update(chosen)  # for MPI_Init only: not for processes this one starts later
    try:
        from mpi4py import MPI
    except ImportError:
        raise HogwildError("backend 'mpi' needs mpi4py and an MPI library: pip install "
                           "'hogwild[mpi]' (mpi4py and Open MPI's wheel)") from None
    finally:
        for name in chosen:
            del os.environ[name]
    if starting and MPI.COMM_WORLD.Get_size() > 1:
        unlink_shared_segments(MPI, folder)
        abort_on_uncaught(MPI)
    return MPI


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
    array shapes, and every field of the TrainingConfig and its AllreduceSettings
    but the threads of each rank."""
    fields = {"objective": objective.name, "samples": objective.n_samples,
              "params": [f"{p.dtype}{list(p.shape)}" for p in objective.params],
              "data": [f"{a.dtype}{list(a.shape)}" for a in objective.data]}
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


@dataclass(frozen=True)
class AllreduceSettings:
    """How the ranks synchronise (see the module docstring); the ranks themselves are
    the MPI job's."""

    sync_every: Optional[int] = None  # local updates of a rank between syncs; None: an epoch
    algorithm: str = "auto"           # Open MPI's allreduce algorithm; auto: the model's pick
    exchange: str = "auto"            # dense allreduce, sparse allgather, or the smaller
    step_scaling: str = "linear"      # the step times the ranks (Goyal et al.), or "none"
    warmup_epochs: float = 0.0        # with "linear": reach it linearly over these epochs

    def checked(self):
        """These settings validated, or a HogwildError naming the field."""
        if self.sync_every is not None:
            check_int("sync_every", self.sync_every, 1)
        choose_name(ALGORITHM_CHOICES, self.algorithm, "allreduce algorithm")
        choose_name(EXCHANGES, self.exchange, "exchange")
        choose_name(STEP_SCALINGS, self.step_scaling, "step_scaling")
        warmup = self.warmup_epochs
        if not (isinstance(warmup, (int, float)) and not isinstance(warmup, bool)
                and 0 <= warmup <= MAX_EPOCHS):
            raise HogwildError(f"warmup_epochs must be a number from 0 to {MAX_EPOCHS:,}, got "
                               f"{warmup!r}")
        if warmup and self.step_scaling == "none":
            raise HogwildError("warmup_epochs ramps the step up to the linear scaling rule's; "
                               "it needs step_scaling='linear'")
        return self


def step_factor(settings, ranks, syncs_done, syncs_per_epoch):
    """The factor of the schedule's step for the next piece of work: 1, or with the
    linear scaling rule ``ranks``, reached linearly over the warm-up epochs."""
    if settings.step_scaling == "none" or ranks == 1:
        return 1.0
    warmup = settings.warmup_epochs * syncs_per_epoch
    progress = 1.0 if syncs_done >= warmup else syncs_done / warmup
    return 1.0 + (ranks - 1) * progress


@njit(nogil=True, cache=True)
def apply_mean_of_changes(flat, base, scratch, indices, values, scale):
    """flat = base + scale * (the sum of the changes ``values`` at ``indices``, added in
    their order, in flat's precision: ``scale`` is of flat's dtype), at the indices
    only; then base = flat there. ``scratch`` is zero and stays so."""
    for k in range(indices.size):
        scratch[indices[k]] += values[k]
    for k in range(indices.size):
        i = indices[k]
        flat[i] = base[i] + scratch[i] * scale
    for k in range(indices.size):
        i = indices[k]
        base[i] = flat[i]
        scratch[i] = 0


# --- Open MPI's tuned allreduce, its algorithm chosen at run time ----------------

def _libmpi():
    """The MPI library mpi4py loaded (found by name: it is already in the process)."""
    for name in ("libmpi.so.40", "libmpi.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _write_cvars(lib, values):
    """Set MPI_T control variables (ints); False where the library refuses one."""
    provided = ctypes.c_int()
    if lib.MPI_T_init_thread(0, ctypes.byref(provided)) != 0:
        return False
    for name, value in values.items():
        index, handle, count = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_int()
        if lib.MPI_T_cvar_get_index(name.encode(), ctypes.byref(index)) != 0 \
                or lib.MPI_T_cvar_handle_alloc(index, None, ctypes.byref(handle),
                                               ctypes.byref(count)) != 0:
            return False
        ok = lib.MPI_T_cvar_write(handle, ctypes.byref(ctypes.c_int(value))) == 0
        lib.MPI_T_cvar_handle_free(ctypes.byref(handle))
        if not ok:
            return False
    return True


def tuned_communicator(MPI, comm, algorithm, segment=DEFAULT_SEGMENT):
    """(a duplicate of ``comm`` whose allreduce runs Open MPI's tuned ``algorithm``,
    True), or (comm, False) where the library cannot be told (not Open MPI).
    Open MPI reads coll_tuned_allreduce_algorithm when a communicator is made, so
    the MPI_T control variables are set first (the run-time form of ``--mca
    coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm K``)."""
    lib = _libmpi() if MPI.Get_library_version().startswith("Open MPI") else None
    forced = lib is not None and _write_cvars(lib, {
        "coll_tuned_use_dynamic_rules": 1,
        "coll_tuned_allreduce_algorithm": ALGORITHMS[algorithm],
        "coll_tuned_allreduce_algorithm_segmentsize": segment})
    forced = comm.allreduce(int(forced), op=MPI.MIN) == 1  # every rank, or none
    return (comm.Dup(), True) if forced else (comm, False)


# --- the link's costs, measured ------------------------------------------------------

def measure_link(MPI, comm, sizes=PROBE_SIZES, repeats=PROBE_REPEATS):
    """The MeasuredLink of ``comm``, each pattern timed at each of ``sizes``: a
    message, half the median ping-pong round trip between ranks 0 and 1; an
    exchange round, every rank swapping with a partner (r xor 1, then r xor 2, ...,
    recursive doubling's rounds, back to back); a ring step, every rank sending
    to r + 1 while receiving from r - 1 (up to RING_STEPS steps back to back, as a
    ring runs them). A repeat is timed from a barrier by its slowest rank, divided
    by its rounds or steps; the median repeat counts. gamma is the time per byte
    of a float32 sum on rank 0. Every rank gets rank 0's figures."""
    rank, ranks = comm.Get_rank(), comm.Get_size()
    power = 1 << (ranks.bit_length() - 1)  # ranks past the largest power of two wait
    partners = [rank ^ (1 << k) for k in range(power.bit_length() - 1)] if rank < power else []
    right, left = (rank + 1) % ranks, (rank - 1) % ranks
    steps = min(ranks - 1, RING_STEPS)

    def ping_pong(buffer, incoming):
        if rank == 0:
            comm.Send(buffer, dest=1, tag=7)
            comm.Recv(buffer, source=1, tag=7)
        elif rank == 1:
            comm.Recv(buffer, source=0, tag=7)
            comm.Send(buffer, dest=0, tag=7)

    def exchange_rounds(buffer, incoming):
        for partner in partners:
            comm.Sendrecv(buffer, dest=partner, sendtag=8, recvbuf=incoming, source=partner,
                          recvtag=8)

    def ring_steps(buffer, incoming):
        for _ in range(steps):
            comm.Sendrecv(buffer, dest=right, sendtag=9, recvbuf=incoming, source=left,
                          recvtag=9)

    times = {}
    for name, pattern, per in (("ping_pong", ping_pong, 2),
                               ("exchange", exchange_rounds, power.bit_length() - 1),
                               ("ring", ring_steps, steps)):
        times[name] = []
        for size in sizes:
            buffer, incoming = np.zeros(size, np.uint8), np.zeros(size, np.uint8)
            rounds = []
            for _ in range((repeats if size <= 1 << 20 else 3) + 1):  # the first warms up
                comm.Barrier()
                start = time.perf_counter()
                pattern(buffer, incoming)
                rounds.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
            times[name].append(float(np.median(rounds[1:])) / per)
    costs = None
    if rank == 0:
        a = np.ones(1 << 18, np.float32)  # 1 MiB
        b = np.ones_like(a)
        sums = []
        for _ in range(repeats):
            start = time.perf_counter()
            np.add(a, b, out=a)
            sums.append(time.perf_counter() - start)
        costs = MeasuredLink(tuple(sizes), tuple(times["ping_pong"]),
                             tuple(times["exchange"]), tuple(times["ring"]),
                             min(sums) / a.nbytes)
    return comm.bcast(costs, root=0)


def probe_sizes(smallest=1 << 10, largest=1 << 28, factor=4):
    """Message sizes in bytes, ``smallest`` to ``largest`` by ``factor``."""
    sizes = [smallest]
    while sizes[-1] * factor <= largest:
        sizes.append(sizes[-1] * factor)
    return sizes


def time_algorithms(MPI, comm, sizes, costs, budget=0.25, progress=None):
    """{algorithm: {size: seconds of one allreduce}}, measured: each of Open MPI's
    algorithms forced on its own communicator (tuned_communicator), on float32
    vectors of each size, repeated for about ``budget`` seconds by the model's
    prediction (at least three times, after one untimed), each repeat from a
    barrier and timed by its slowest rank; the median repeat counts (a busy host's
    hiccup moves a mean). The algorithms take turns repeat by repeat, in an order
    that rotates, so that a host's slow spell or a link's state (a token bucket
    refilled by an idle spell) falls on all of them alike. ``progress()`` after
    each size."""
    ranks = comm.Get_size()
    reducers = {}
    try:
        for algorithm in ALGORITHMS:
            reducer, forced = tuned_communicator(MPI, comm, algorithm)
            if not forced:
                raise HogwildError("the allreduce probe forces Open MPI's tuned algorithms; "
                                   f"this MPI is {MPI.Get_library_version().splitlines()[0]}")
            reducers[algorithm] = reducer
        measured = {algorithm: {} for algorithm in ALGORITHMS}
        for size in sizes:
            vector = np.zeros(max(size // 4, 1), np.float32)
            repeats = {algorithm: int(min(50, max(3, budget / max(
                predict(algorithm, ranks, vector.nbytes, costs), 1e-6))))
                for algorithm in ALGORITHMS}
            seconds = {algorithm: [] for algorithm in ALGORITHMS}
            for reducer in reducers.values():
                reducer.Allreduce(MPI.IN_PLACE, vector, op=MPI.SUM)
            order = list(ALGORITHMS)
            for k in range(max(repeats.values())):
                for algorithm in order[k % len(order):] + order[:k % len(order)]:
                    if k < repeats[algorithm]:
                        reducer = reducers[algorithm]
                        reducer.Barrier()
                        start = time.perf_counter()
                        reducer.Allreduce(MPI.IN_PLACE, vector, op=MPI.SUM)
                        seconds[algorithm].append(time.perf_counter() - start)
            for algorithm, times in seconds.items():
                times = np.asarray(times)
                slowest = np.empty_like(times)
                comm.Allreduce(times, slowest, op=MPI.MAX)
                measured[algorithm][size] = float(np.median(slowest))
            if progress is not None:
                progress()
    finally:
        for reducer in reducers.values():
            reducer.Free()
    return measured


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
    if os.getppid() == launcher:
        return False
    try:
        with open(f"/proc/{launcher}/stat") as status:
            return status.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:  # gone (or no /proc to ask: then it is watched as a parent)
        return True


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


# --- the backend -----------------------------------------------------------------------

class MPIBackend(HostBackend):
    """One rank's side of a synchronous data-parallel run (see the module docstring)."""

    name = "mpi"
    schedulers = LOCAL_SCHEDULERS
    replication_modes = ThreadsBackend.replication_modes
    plans_itself = True

    @classmethod
    def agree(cls, config, objective):
        """Every rank's run settings equal rank 0's (run_fields): the first collective
        of a fit, so that ranks that differ fail together instead of waiting."""
        agree(import_mpi().COMM_WORLD, "the run", run_fields(config, objective))

    @classmethod
    def requested_workers(cls, config):
        """Threads per rank: the usable cores shared among this machine's ranks. A
        collective (every rank, whatever its own ``workers``)."""
        MPI = import_mpi()
        local = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
        ranks_here = local.Get_size()
        local.Free()
        return config.workers if config.workers is not None \
            else max(1, usable_cores() // ranks_here)

    @classmethod
    def checkpoint_settings(cls, config):
        settings = config.distributed
        return {"backend": "mpi", "ranks": import_mpi().COMM_WORLD.Get_size(),
                "sync_every": settings.sync_every, "step_scaling": settings.step_scaling,
                "warmup_epochs": settings.warmup_epochs}

    @classmethod
    def open(cls, workers, config, source):
        return cls(workers, config, source)

    def __init__(self, workers, config, source):
        self.MPI = MPI = import_mpi()
        self.comm = MPI.COMM_WORLD
        self.rank, self.ranks = self.comm.Get_rank(), self.comm.Get_size()
        self.reports = self.rank == 0
        self.settings, self.workers, self.epochs = config.distributed, workers, config.epochs
        self.seed = run_seed(config.seed)
        self.run_length = config.shuffle_block
        self.scheduler = get_scheduler(config.scheduler)
        self.local = ThreadsBackend.open(workers, config, source)
        self.replication = self.local.replication
        self.reducer, self.forced = self.comm, False
        self.traffic = {"dense": {"syncs": 0, "seconds": 0.0, "bytes": 0},
                        "sparse": {"syncs": 0, "seconds": 0.0, "bytes": 0}}
        self.syncs_done = 0
        self.steps_applied = []  # (updates, step) of each piece of the last epoch

    def worker_count(self, planned):
        return self.ranks * planned

    def share(self, params, data, n_samples):
        if self.ranks > n_samples:
            raise HogwildError(f"{self.ranks} ranks for {n_samples} samples: at most one "
                               "rank per sample")
        self.n, self.data = n_samples, data
        self.layout = FlatLayout(params, "mpi")
        self.first, self.last = node_samples(n_samples, self.ranks, self.rank)
        self.planner = self.scheduler.planner(self.last - self.first, self.workers)
        self.pieces = pieces_per_epoch(n_samples, self.ranks, self.settings.sync_every)
        self.flat = aligned_copy(self.layout.flatten(params))
        self.comm.Bcast(self.flat, root=0)  # every rank starts from rank 0's parameters
        self.base = self.flat.copy()
        self.delta = np.empty_like(self.flat)
        self.scratch = np.zeros_like(self.flat)
        self.index_dtype = np.int32 if self.flat.size < 2**31 else np.int64
        self.params, data = self.local.share(self.layout.views(self.flat), data, n_samples)
        self.live = all(np.shares_memory(p, self.flat) for p in self.params)
        return self.params, data

    def replicated(self):
        return self.local.replicated()

    def warm_up(self, loops, params, data, scheduler, objective):
        """Compile (or load) the local loops and the sync, measure the link and pick
        the allreduce algorithm."""
        began = time.perf_counter()
        self.local.warm_up(loops, params, data, scheduler, objective)
        apply_mean_of_changes(self.flat, self.base, self.scratch,
                              np.zeros(0, self.index_dtype), self.flat[:0],
                              self.flat.dtype.type(1.0))
        self.costs = measure_link(self.MPI, self.comm) if self.ranks > 1 else LinkCosts(0, 0, 0)
        self.choice, self.predictions = choose(self.ranks, self.flat.nbytes, self.costs)
        self.algorithm = self.choice if self.settings.algorithm == "auto" \
            else self.settings.algorithm
        if self.ranks > 1:
            self.reducer, self.forced = tuned_communicator(self.MPI, self.comm, self.algorithm)
        self.startup_seconds = time.perf_counter() - began

    def run_epoch(self, loops, plan, params, data, step, epoch):
        """The rank's share of the epoch in ``pieces`` pieces, a sync after each."""
        updates = 0
        self.steps_applied = []
        for piece in piece_plans(self.planner, self.n, self.ranks, self.rank, self.pieces,
                                 epoch, self.seed, self.run_length):
            factor = step_factor(self.settings, self.ranks, self.syncs_done, self.pieces)
            done = self.local.run_epoch(loops, piece, params, data, step * factor, epoch)
            self.steps_applied.append((done, step * factor))
            updates += done
            self._sync()
        return self.comm.allreduce(updates)

    def applied_step(self, step):
        """The schedule's step times the linear scaling rule's factor: the mean over
        the epoch's updates where a warm-up changed it between pieces (every rank
        applies the same factors)."""
        total = sum(done for done, _ in self.steps_applied)
        if total == 0:
            return self.steps_applied[-1][1] if self.steps_applied else step
        return sum(done * applied for done, applied in self.steps_applied) / total

    def _sync(self):
        """Average the ranks' changes since the last sync; every rank's parameters
        become base + their mean."""
        self.syncs_done += 1
        if self.ranks == 1:
            return
        if not self.live:
            for view, array in zip(self.layout.views(self.flat), self.params):
                view[...] = array
        np.subtract(self.flat, self.base, out=self.delta)
        changed = np.flatnonzero(self.delta).astype(self.index_dtype)
        counts = np.empty(self.ranks, np.int64)
        self.comm.Allgather(np.array([changed.size], np.int64), counts)
        entry = self.flat.itemsize + changed.itemsize
        sparse = self.settings.exchange == "sparse" or (
            self.settings.exchange == "auto" and int(counts.sum()) * entry < self.flat.nbytes)
        if sparse:
            indices = np.empty(int(counts.sum()), self.index_dtype)
            values = np.empty(indices.size, self.flat.dtype)
            mine = np.ascontiguousarray(self.delta[changed])
            start = time.perf_counter()
            self.comm.Allgatherv(changed, [indices, counts])
            self.comm.Allgatherv(mine, [values, counts])
            seconds = time.perf_counter() - start
            apply_mean_of_changes(self.flat, self.base, self.scratch, indices, values,
                                  self.flat.dtype.type(1.0 / self.ranks))
            moved = indices.nbytes + values.nbytes
        else:
            start = time.perf_counter()
            self.reducer.Allreduce(self.MPI.IN_PLACE, self.delta, op=self.MPI.SUM)
            seconds = time.perf_counter() - start
            self.delta *= self.flat.dtype.type(1.0 / self.ranks)
            np.add(self.base, self.delta, out=self.flat)
            self.base[...] = self.flat
            moved = self.flat.nbytes
        kind = self.traffic["sparse" if sparse else "dense"]
        kind["seconds"] += seconds
        kind["syncs"] += 1
        kind["bytes"] += moved
        if not self.live:
            for view, array in zip(self.layout.views(self.flat), self.params):
                array[...] = view
        self.local.params_changed()

    def loss_sum(self, loops, params, data, n):
        """The training data's: every rank's loss over its share, summed over the
        ranks. Any other data's (a metric's, on rank 0): on this rank alone."""
        if data is not self.data:
            return super().loss_sum(loops, params, data, n)
        last = min(self.last, n)
        mine = loops.sum_loss(params, data, self.first, last) if last > self.first else 0.0
        return self.comm.allreduce(mine)

    def stop_agreed(self, requested):
        """Whether any rank was asked to stop (every rank stops after the same epoch)."""
        return bool(self.comm.allreduce(int(requested), op=self.MPI.MAX))

    def export(self, params):
        return tuple(np.array(p) for p in params)

    def report(self):
        """The ranks, the syncs (dense or sparse), the link's measured costs and the
        allreduce algorithm with its predicted and measured time per sync."""
        dense = self.traffic["dense"]
        measured = dense["seconds"] / dense["syncs"] if dense["syncs"] else None
        if measured is not None:  # the slowest rank's view: the sync ends for all at once
            measured = self.comm.allreduce(measured, op=self.MPI.MAX)
        return {
            "ranks": self.ranks, "rank": self.rank, "threads_per_rank": self.workers,
            "sync_every": self.settings.sync_every, "syncs_per_epoch": self.pieces,
            "syncs": self.syncs_done, "exchange": self.settings.exchange,
            "dense": dict(dense), "sparse": dict(self.traffic["sparse"]),
            "step_scaling": self.settings.step_scaling,
            "warmup_epochs": self.settings.warmup_epochs,
            "message_bytes": int(self.flat.nbytes),
            "link": self.costs.figures(),
            "algorithm": self.algorithm,
            "algorithm_by": "model" if self.settings.algorithm == "auto" else "user",
            "algorithm_forced": self.forced, "model_choice": self.choice,
            "predicted_seconds": self.predictions,
            "predicted_sync_seconds": self.predictions[self.algorithm],
            "measured_sync_seconds": measured}

    def close(self):
        self.local.close()
        if self.reducer is not self.comm:
            self.reducer.Free()
            self.reducer = self.comm
