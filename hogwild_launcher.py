"""The ``hogwild`` command's entry point. It sits outside the package because
importing hogwild takes a second (numba): a Ctrl-C then, before the command's own
handling is in place, would end in a KeyboardInterrupt traceback. SIGTERM and
SIGHUP (how systemd, Kubernetes and Slurm stop a job; a closed terminal) do what a
Ctrl-C does at the moment they arrive, and the command exits 143 or 129 for them. An import that
a Ctrl-C interrupts may also fail otherwise (numpy turns it into an ImportError,
"PyCapsule_Import could not import module datetime"), and one may swallow it: a
Ctrl-C seen during the imports ends the command whatever became of it.

A KeyboardInterrupt that passed through an extension's PyRun_String (compiled
modules may run one as they load, here or in a later import) leaves CPython a
record by which it kills itself with SIGINT at exit, after "hogwild: interrupted",
where the command promises exit 130: each Ctrl-C exit clears that record first
(_forget_interrupted_pyrun)."""
import atexit
import gc
import os
import signal
import sys
import threading


def _forget_interrupted_pyrun():
    """CPython resets its unhandled-KeyboardInterrupt record at the start of every
    PyRun_String: run one of nothing."""
    try:
        import ctypes
        ctypes.pythonapi.PyRun_SimpleString(b"")
    except (ImportError, AttributeError, OSError):  # not CPython: no such record
        pass


def _stop_signals_as_ctrl_c(received):
    """From now on SIGTERM and SIGHUP, unless inherited as ignored (nohup), do what
    SIGINT's handler of the moment does: a KeyboardInterrupt during start-up, data
    making or saving (whose clean-up runs), a stop after the epoch while training
    (hogwild.interrupts installs its handler for all three there). Each is
    appended to ``received``."""
    def as_ctrl_c(signum, frame):
        received.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # SIGINT ignored or default: SIGTERM still stops
            raise KeyboardInterrupt
        handler(signum, frame)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, as_ctrl_c)


GC_YOUNG_OBJECTS = 50_000  # Python's default, 700, collects ~30 times as often

_guard = None  # (Ctrl-Cs seen, stop signals seen, SIGINT's handler before) once guarded


def guard_start_up(raise_at_once=True):
    """Keep a Ctrl-C, SIGTERM or SIGHUP that lands while hogwild imports from becoming
    a traceback: it is recorded, and ``main`` ends the command with exit 130 (143,
    129). raise_at_once=False only records it, for imports that no code of ours
    surrounds: runpy's import of the hogwild package under ``python -m hogwild.cli``,
    whose ``__main__`` then calls ``main``."""
    global _guard
    if _guard is None:
        # Start-up (the imports, then numba's first compiled call) makes some 10^5
        # objects that live as long as the command: the cyclic collector's passes
        # among them took 0.25 s of a run's 1.3 s start (median of 10). Rarer
        # young-object collections still bound what garbage cycles hold.
        gc.set_threshold(GC_YOUNG_OBJECTS, *gc.get_threshold()[1:])
        received = []
        _stop_signals_as_ctrl_c(received)
        _guard = ([], received, signal.getsignal(signal.SIGINT))
    interrupted = _guard[0]

    def interrupt(signum, frame):
        interrupted.append(signum)
        if raise_at_once:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    return _guard


def main():
    interrupted, received, previous = guard_start_up()
    try:
        from hogwild.cli import main as command
    except BaseException:
        if not interrupted:
            raise
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        if interrupted:
            raise KeyboardInterrupt
        status = command()  # which handles its own Ctrl-C once it has parsed the command
    except KeyboardInterrupt:
        print("hogwild: interrupted", file=sys.stderr)
        status = 130
    if status == 130 and received:  # the interrupt was a SIGTERM's or a SIGHUP's
        status = 128 + received[0]
    if status in (129, 130, 143):
        _forget_interrupted_pyrun()
    _ignore_stop_signals()
    return _exit_now(status)


def _ignore_stop_signals():
    """SIGTERM and SIGHUP ignored once the command has its exit status: nothing is
    left to stop but Python's teardown (the exit functions, MPI_Finalize), which
    they would break with a KeyboardInterrupt traceback, or, once the interpreter
    has put back the default handlers, kill by the signal (status -15) after the
    run ended well."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_IGN)


def _exit_now(status):
    """Exit at once where nothing but Python's teardown is left: the exit functions
    run and the output is flushed, then the process ends without freeing numba's
    and LLVM's objects one by one (0.3-0.8 s of a short run). Not in an MPI rank
    or beside Ray, whose own exits run at teardown, nor while a thread runs."""
    if threading.active_count() > 1 or "mpi4py.MPI" in sys.modules or "ray" in sys.modules:
        return status
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a closed pipe or stream: exit normally
        return status
    os._exit(status if isinstance(status, int) else 0 if status is None else 1)


if __name__ == "__main__":
    sys.exit(main())
