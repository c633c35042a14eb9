"""The processes backend's parent side of its children's lives: starting them with
the stop signals blocked, seeing one stopped (SIGSTOP, a debugger), and turning a
child's death or its error message into the parent's exception."""
import contextlib
import multiprocessing.resource_tracker as resource_tracker
import pickle
import signal
import threading

from hogwild.errors import HogwildError
from hogwild.interrupts import STOP_SIGNALS

HEARTBEAT_SECONDS = 1.0  # how often the watchdog looks for a stopped child
STOPPED_SECONDS = 10.0  # a child stopped this long, while the parent runs, ends the run


def is_stopped(pid):
    """Whether process ``pid`` is stopped (by a signal or a tracer), from Linux's
    /proc; False where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


@contextlib.contextmanager
def born_with_stop_signals_blocked():
    """Children started inside hold the stop signals (SIGINT, SIGTERM, SIGHUP)
    blocked from their first instruction (a signal mask survives fork and exec)
    until worker_main ignores them, so that a Ctrl-C while they import numpy and
    numba is the parent's alone, not a KeyboardInterrupt traceback in each child,
    and a SIGTERM sent to the whole process group does not kill them. The parent's
    own disposition is never SIG_IGN here: another of its threads (numba's,
    multiprocessing's) may be handed a process-wide SIGINT, and would discard it. A
    Ctrl-C of this moment is kept and raised once the block ends, so that no child
    is left half started.
    multiprocessing's resource tracker is started first: its start unblocks SIGINT
    on its way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    resource_tracker.ensure_running()
    kept = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: kept.append(signum))
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # runs the handlers
        signal.signal(signal.SIGINT, previous)
        if kept:
            signal.raise_signal(kept[0])


def death_message(w, process, epoch, stopped):
    """The one line naming how worker ``w`` was lost (``stopped``: by the watchdog,
    for staying stopped) and when."""
    if stopped:
        how = f"was stopped (SIGSTOP or a debugger) for {STOPPED_SECONDS:g} s"
    else:
        process.join(timeout=1)
        code = process.exitcode
        how = (f"killed by signal {signal.Signals(-code).name}"
               if code is not None and code < 0 else f"exited with status {code}")
    when = f"in epoch {epoch + 1}" if epoch is not None else "while starting"
    return (f"worker {w} (pid {process.pid}) {how} {when}; the run was stopped and its "
            "shared memory removed")


def raise_remote(w, message):
    """Raise in the parent the exception a child sent, with the child's traceback as
    a note (a HogwildError naming it where its type cannot be rebuilt here)."""
    _, payload, text = message
    try:
        exc = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - an exception type the parent cannot rebuild
        exc = HogwildError(f"worker {w} failed: {text.strip().splitlines()[-1]}")
    exc.add_note(f"raised in worker process {w}:\n{text}")
    raise exc
