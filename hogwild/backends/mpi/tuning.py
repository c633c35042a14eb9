"""Open MPI's tuned allreduce with its algorithm chosen at run time, through the
MPI_T control variables (ctypes on the library mpi4py loaded)."""
import ctypes

from hogwild.collectives import ALGORITHMS, DEFAULT_SEGMENT

BINOMIAL_REDUCE, BINOMIAL_BCAST = 5, 6  # Open MPI's coll_tuned_{reduce,bcast}_algorithm


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
    coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm K``).
    Two more are set with it, for every communicator made after: han's priority
    to 0, since on a communicator over several nodes Open MPI's han (priority 35
    against tuned's 30) would run its own hierarchical allreduce whatever tuned
    was told (measured on emulated nodes: every "forced" algorithm then took the
    same time); and binomial trees for reduce and broadcast, the halves of
    "nonoverlapping", which tuned's fixed rules would otherwise pick by size
    (chains and pipelines the model does not price)."""
    lib = _libmpi() if MPI.Get_library_version().startswith("Open MPI") else None
    forced = lib is not None and _write_cvars(lib, {
        "coll_han_priority": 0,  # han would take a communicator over nodes from tuned
        "coll_tuned_use_dynamic_rules": 1,
        "coll_tuned_reduce_algorithm": BINOMIAL_REDUCE,  # nonoverlapping's two halves,
        "coll_tuned_bcast_algorithm": BINOMIAL_BCAST,    # as the model prices them
        "coll_tuned_allreduce_algorithm": ALGORITHMS[algorithm],
        "coll_tuned_allreduce_algorithm_segmentsize": segment})
    forced = comm.allreduce(int(forced), op=MPI.MIN) == 1  # every rank, or none
    return (comm.Dup(), True) if forced else (comm, False)
