"""The command's standard streams. A full disk or a failing device behind stdout
(``> /dev/full``) is one error line and exit 2, not a traceback; behind stderr,
which carries progress and diagnostics, a failed write is dropped, so the run
still ends and reports on stdout. A character that stdout's encoding lacks
(PYTHONIOENCODING=ascii, a non-ASCII path) is escaped, as stderr escapes it. A
stream the command was started without (a closed descriptor: Python then has
None there) is an error on stdout's first write, and the null device for stderr,
so that no line meant for stderr lands in stdout (print's file=None is stdout)."""
import contextlib
import os
import sys

from hogwild.errors import HogwildError


class _Guarded:
    """``stream`` whose write and flush errors end the command (``name`` "stdout")
    or are dropped (stderr). A closed pipe on stdout stays BrokenPipeError: the
    command stops quietly there (hogwild datasets | head)."""

    def __init__(self, stream, name):
        self._stream, self._name = stream, name

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as error:
            self._failed(error)
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except OSError as error:
            self._failed(error)

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def _failed(self, error):
        if self._name == "stdout" and isinstance(error, BrokenPipeError):
            raise error
        _silence(self._stream)
        if self._name == "stdout":
            raise HogwildError(f"cannot write to standard output ({error.strerror or error})")


class _Closed:
    """Where a closed standard stream was: every write fails."""

    def write(self, text):
        raise OSError("it is closed")

    def flush(self):
        pass


def _silence(stream):
    """Point ``stream``'s descriptor at the null device, so that what it still holds
    (and the flush at exit) goes nowhere instead of failing again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass


@contextlib.contextmanager
def guarded_streams():
    """sys.stdout and sys.stderr guarded while the command runs, then put back."""
    previous = sys.stdout, sys.stderr
    with contextlib.suppress(AttributeError, ValueError):  # None, or not a text stream
        sys.stdout.reconfigure(errors="backslashreplace")
    sys.stdout = _Guarded(sys.stdout if sys.stdout is not None else _Closed(), "stdout")
    sys.stderr = _Guarded(sys.stderr if sys.stderr is not None else open(os.devnull, "w"),
                          "stderr")
    try:
        yield
    finally:
        sys.stdout, sys.stderr = previous
