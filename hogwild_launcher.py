"""The ``hogwild`` command's entry point. It sits outside the package because
importing hogwild takes a second (numba): a Ctrl-C then, before the command's own
handling is in place, would end in a KeyboardInterrupt traceback."""
import sys


def main():
    try:
        from hogwild.cli import main as command

        return command()
    except KeyboardInterrupt:  # during the imports; the command handles its own
        print("hogwild: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
