"""Ctrl-C, SIGTERM and SIGHUP: during training they stop the run after the current
epoch (stop_after_epoch); during start-up a Ctrl-C ends it at once, and must not be
lost (interrupts_kept). A signal the process inherited as ignored (nohup's SIGHUP,
a background job's SIGINT) stays ignored.

numba compiles through llvmlite, whose Python code is not safe against an
exception raised between two of its lines: a half-made wrapper's __del__ fails
("Exception ignored ... has no attribute '_owned'"), an LLVM object handed over may
be freed twice (a Ctrl-C 0.8 s after launch once ended in SIGSEGV), and LLVM calls
llvmlite's object-cache hooks through ctypes, where an exception is printed
("Exception ignored on calling ctypes callback function") and dropped, so the run
would train to its end. While start-up runs, SIGINT raises KeyboardInterrupt at
once, or, inside llvmlite, as its outermost frame returns; it is also remembered,
so that one swallowed on the way is raised where start-up ends.
"""
import contextlib
import os
import signal
import sys
import threading

from hogwild.errors import Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_remembered = []  # SIGINTs delivered while interrupts_kept's handler was in place


def _llvmlite_package():
    llvmlite = sys.modules.get("llvmlite")
    return None if llvmlite is None else os.path.dirname(llvmlite.__file__) + os.sep


def _in_llvmlite(frame, package):
    """Whether ``frame`` or one of its callers runs llvmlite's Python code."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(package):
            return True
        frame = frame.f_back
    return False


def _raise_leaving_llvmlite(frame, event, arg):
    """A profile function (this thread's): KeyboardInterrupt as the outermost
    llvmlite frame returns, raised in its caller."""
    if event != "return":
        return
    package = _llvmlite_package()
    if frame.f_code.co_filename.startswith(package) and not _in_llvmlite(frame.f_back,
                                                                         package):
        sys.setprofile(None)
        raise KeyboardInterrupt


def _raise_and_remember(signum, frame):
    _remembered.append(signum)
    package = _llvmlite_package()
    if package is not None and _in_llvmlite(frame, package):
        sys.setprofile(_raise_leaving_llvmlite)
        return
    raise KeyboardInterrupt


def _raise_if_swallowed():
    if _remembered:
        _remembered.clear()
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts_kept():
    """Inside the block (in the main thread, where SIGINT has Python's default
    handler), a Ctrl-C that something swallowed is raised again as
    KeyboardInterrupt when the block (or a block nested in it) starts or ends;
    one that leaves a block as KeyboardInterrupt is not raised again."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    outermost = previous is signal.default_int_handler
    if outermost:
        _remembered.clear()
        signal.signal(signal.SIGINT, _raise_and_remember)
    try:
        _raise_if_swallowed()
        try:
            yield
        except KeyboardInterrupt:
            _remembered.clear()  # delivered: whoever catches it has it
            raise
        _raise_if_swallowed()
    finally:
        if outermost:
            signal.signal(signal.SIGINT, previous)
            _remembered.clear()
            if sys.getprofile() is _raise_leaving_llvmlite:
                sys.setprofile(None)


class StopRequest:
    """Which stop signal arrived first, if any (``signum``)."""

    def __init__(self):
        self.signum = None

    def is_set(self):
        return self.signum is not None


@contextlib.contextmanager
def stop_after_epoch(announce=True):
    """While training: the first Ctrl-C, SIGTERM or SIGHUP asks to stop after the
    current epoch (the returned request's ``is_set``), a second one interrupts at once;
    ``announce``: say so on stderr (the reporting process alone: every rank of an
    MPI job gets the signal). Only the main thread can install signal handlers;
    elsewhere both signals keep their usual effect. A Ctrl-C of the start-up that
    something swallowed is raised first (see interrupts_kept)."""
    requested = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield requested
        return
    _raise_if_swallowed()

    def handler(signum, frame):
        if requested.is_set():
            raise Interrupted(None, signum=signum)
        requested.signum = signum
        if announce:
            again = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
            print(f"hogwild: stopping after this epoch ({again} again to abandon it)",
                  file=sys.stderr, flush=True)

    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS
                if signal.getsignal(signum) != signal.SIG_IGN}
    try:
        yield requested
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)
