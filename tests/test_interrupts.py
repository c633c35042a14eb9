"""A Ctrl-C during start-up that something swallows (numba's compiler calls back
into Python through ctypes, where an exception is printed and dropped) still ends
the run: once in a few tries a Ctrl-C a second after launch was lost and the run
trained all its epochs, exit 0."""
import ctypes
import signal
import sys
import time

import pytest

from hogwild.interrupts import interrupts_kept


def _interrupted():
    """SIGINT to this thread (raise(3): the main thread, whatever other threads the
    session started, so that Python's handler runs here and not after a loaded
    host gets round to another thread), then wait for the handler's exception."""
    signal.raise_signal(signal.SIGINT)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the handler's KeyboardInterrupt ends it
        pass
    raise AssertionError("SIGINT was not handled within 10 s")


@ctypes.CFUNCTYPE(None)
def _callback_interrupted():
    """A C callback (as llvmlite's object cache notifier) during which Ctrl-C lands."""
    _interrupted()


def test_a_ctrl_c_that_a_ctypes_callback_swallows_is_raised_where_start_up_ends(monkeypatch):
    ignored = []  # what Python printed as "Exception ignored on calling ctypes callback"
    monkeypatch.setattr(sys, "unraisablehook", lambda raised: ignored.append(raised.exc_type))
    _callback_interrupted()  # unprotected: swallowed, as in the lost runs
    assert ignored == [KeyboardInterrupt]
    with pytest.raises(KeyboardInterrupt):
        with interrupts_kept():
            _callback_interrupted()
    assert ignored == [KeyboardInterrupt] * 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_that_reached_its_catcher_is_not_raised_twice():
    with interrupts_kept():
        with pytest.raises(KeyboardInterrupt):
            with interrupts_kept():  # nested, as fit inside the command line
                _interrupted()
    # reached here: the block ended without raising it again
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
