"""Ctrl-C and SIGTERM: during training they stop the run after the current epoch
(stop_after_epoch); during start-up a Ctrl-C ends it at once, and must not be lost
(interrupts_kept).

numba's compiler calls back into Python through ctypes (llvmlite's object cache),
and an exception raised inside such a callback is printed ("Exception ignored on
calling ctypes callback function") and dropped: a Ctrl-C that lands while a kernel
compiles or loads would be lost, and the run would train to its end. While
start-up runs, SIGINT still raises KeyboardInterrupt at once, and is also
remembered, so that one swallowed on the way is raised again where start-up ends.
"""
import contextlib
import signal
import sys
import threading

from hogwild.errors import Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_remembered = []  # SIGINTs delivered while interrupts_kept's handler was in place


def _raise_and_remember(signum, frame):
    _remembered.append(signum)
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


class StopRequest:
    """Which stop signal arrived first, if any (``signum``)."""

    def __init__(self):
        self.signum = None

    def is_set(self):
        return self.signum is not None


@contextlib.contextmanager
def stop_after_epoch(announce=True):
    """While training: the first Ctrl-C or SIGTERM asks to stop after the current
    epoch (the returned request's ``is_set``), a second one interrupts at once;
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

    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield requested
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)
