"""The set-up phases of a run (reading the data, mapping ids, laying it out,
drawing initial values, starting workers and compiling): each timed, and
announced to whoever listens (the CLI's progress bar), without passing a logger
through every layer: code marks a phase with ``with phase("layout"):`` and a
caller that wants the times runs it inside ``with recording(PhaseLog()) as log:``.
"""
import contextlib
import contextvars
import os
import time

_current = contextvars.ContextVar("hogwild_phase_log", default=None)


class PhaseLog:
    """Seconds per phase in the order they first ran (a phase run twice adds up),
    and ``on_start(name)`` called as each one starts. ``training_started`` is the
    time.perf_counter() at which the first epoch began (None until then), and
    ``epochs_ended`` the time.perf_counter() at which each epoch ended."""

    def __init__(self, on_start=None):
        self.seconds = {}
        self.on_start = on_start
        self.training_started = None
        self.epochs_ended = []


@contextlib.contextmanager
def recording(log):
    """Record the phases run inside the block (in this thread) into ``log``."""
    token = _current.set(log)
    try:
        yield log
    finally:
        _current.reset(token)


@contextlib.contextmanager
def phase(name):
    """Time the block as set-up phase ``name`` when someone records phases."""
    log = _current.get()
    if log is None:
        yield
        return
    if log.on_start is not None:
        log.on_start(name)
    start = time.perf_counter()
    try:
        yield
    finally:
        log.seconds[name] = log.seconds.get(name, 0.0) + time.perf_counter() - start


def training_starts():
    """Note that the first epoch begins now (the engine calls it once per run)."""
    log = _current.get()
    if log is not None and log.training_started is None:
        log.training_started = time.perf_counter()
        if log.on_start is not None:
            log.on_start("training")


def epoch_ends():
    """Note that an epoch ended now (the engine calls it on every process of a run,
    so that one that becomes an MPI job's chief knows every epoch's time)."""
    log = _current.get()
    if log is not None:
        log.epochs_ended.append(time.perf_counter())


def seconds_since_launch(moment=None):
    """Seconds from this process's start (as the kernel recorded it, so that the
    interpreter's own start-up and the imports count) to ``moment`` (a
    time.perf_counter() value; default now). None where the start is unknown."""
    moment = time.perf_counter() if moment is None else moment
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    age = up - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time in ticks
    return age - (time.perf_counter() - moment)
