"""The ``hogwild`` command's entry point. It sits outside the package because
importing hogwild takes a second (numba): a Ctrl-C then, before the command's own
handling is in place, would end in a KeyboardInterrupt traceback. An import that
a Ctrl-C interrupts may also fail otherwise (numpy turns it into an ImportError,
"PyCapsule_Import could not import module datetime"), and one may swallow it: a
Ctrl-C seen during the imports ends the command whatever became of it. It ends
with os._exit: a KeyboardInterrupt inside an extension's PyRun_String (Cython
modules run one as they load) leaves a flag by which CPython, at a normal exit,
kills itself with SIGINT after printing, where the command promises exit 130."""
import os
import signal
import sys


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
    if interrupted:
        print("hogwild: interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)
    try:
        return command()  # which handles its own Ctrl-C once it has parsed the command
    except KeyboardInterrupt:
        print("hogwild: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
