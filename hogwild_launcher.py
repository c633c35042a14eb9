"""The ``hogwild`` command's entry point. It sits outside the package because
importing hogwild takes a second (numba): a Ctrl-C then, before the command's own
handling is in place, would end in a KeyboardInterrupt traceback. An import that
a Ctrl-C interrupts may also fail otherwise (numpy turns it into an ImportError,
"PyCapsule_Import could not import module datetime"), and one may swallow it: a
Ctrl-C seen during the imports ends the command whatever became of it.

A KeyboardInterrupt that passed through an extension's PyRun_String (compiled
modules may run one as they load, here or in a later import) leaves CPython a
record by which it kills itself with SIGINT at exit, after "hogwild: interrupted",
where the command promises exit 130: each Ctrl-C exit clears that record first
(_forget_interrupted_pyrun)."""
import signal
import sys


def _forget_interrupted_pyrun():
    """CPython resets its unhandled-KeyboardInterrupt record at the start of every
    PyRun_String: run one of nothing."""
    try:
        import ctypes
        ctypes.pythonapi.PyRun_SimpleString(b"")
    except (ImportError, AttributeError, OSError):  # not CPython: no such record
        pass


def main():
    interrupted = []

    def interrupt(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
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
    if status in (130, 143):
        _forget_interrupted_pyrun()
    return status


if __name__ == "__main__":
    sys.exit(main())
