"""The ``hogwild`` command line: run example problems, get and list datasets.

    hogwild run svm [--data NAME|PATH] [--test PATH] [--workers N] ...
    hogwild run mc [--data ml-1m|ml-100k|PATH|jumbo:ROWSxCOLSxNNZ] [--rank K] ...
    hogwild run cuts [--data GRAPH|IMAGE] [--labels D] [--terminals ...] [--out PATH] ...
    hogwild download NAME
    hogwild stats svm|mc|cuts [--data ...]
    hogwild bench [--quick] [--problems ...] [--workers 1,2] ...
    hogwild datasets

Errors caused by the input print one line, ``hogwild: error: ...``, and exit 2;
Ctrl-C (or SIGTERM) finishes the epoch, writes the checkpoint, says where, and
exits 130 (143); a second one abandons the epoch, leaving the last checkpoint.
"""
import os
import sys
import warnings

from hogwild.cli.commands import download, list_datasets, sparsity
from hogwild.cli.options import check_numbers, build_parser
from hogwild.cli.run import run_cuts, run_mc, run_svm
from hogwild.errors import HogwildError, Interrupted

__all__ = ["main", "build_parser"]


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"hogwild: warning: {message}", file=sys.stderr)


def main(argv=None):
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _one_line_warning
        return _dispatch(args)


def _use_gpu(args):
    """--streams and --device of --backend gpu, checked before any data is loaded."""
    from hogwild.backends.gpu import check_gpu

    cuda = check_gpu()
    if args.streams is not None:
        args.workers = args.streams
    if args.device is not None:
        count = len(cuda.gpus)
        if not 0 <= args.device < count:
            raise HogwildError(f"--device {args.device}: this machine has {count} CUDA "
                               f"device(s), numbered 0..{count - 1}")
        cuda.select_device(args.device)


def _check_output(path, option):
    """Refuse an output file whose folder is missing or unwritable before any
    training, rather than after it."""
    if path is None:
        return
    if os.path.isdir(path):
        raise HogwildError(f"{option} {path}: it is a directory; give a file path")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise HogwildError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise HogwildError(f"{option} {path}: the folder {folder} is not writable")


def _dispatch(args):
    try:
        check_numbers(args)
        if getattr(args, "backend", None) == "gpu":
            _use_gpu(args)
        _check_output(getattr(args, "save", None), "--save")
        _check_output(getattr(args, "out", None), "--out")
        _check_output(getattr(args, "checkpoint", None), "--checkpoint")
        if args.command == "datasets":
            list_datasets(args)
        elif args.command == "bench":
            from hogwild.bench import main as run_bench
            run_bench(args)
        elif args.command == "download":
            download(args)
        elif args.command == "stats":
            sparsity(args)
        elif args.problem == "mc":
            run_mc(args)
        elif args.problem == "cuts":
            run_cuts(args)
        else:
            run_svm(args)
    except HogwildError as exc:
        print(f"hogwild: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print("hogwild: error: out of memory; use smaller data (or a machine with more "
              "memory)", file=sys.stderr)
        return 1
    except Interrupted as stop:
        where = (f"; checkpoint written to {stop.checkpoint} (continue with --resume "
                 f"{stop.checkpoint})") if stop.checkpoint else ""
        when = f" after epoch {stop.epoch}" if stop.epoch is not None else ""
        print(f"hogwild: interrupted{when}{where}", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print("hogwild: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (hogwild datasets | head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0
