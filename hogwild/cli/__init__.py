"""The ``hogwild`` command line: run example problems, get and list datasets.

    hogwild run svm [--data NAME|PATH] [--test PATH] [--workers N] ...
    hogwild run mc [--data ml-1m|ml-100k|PATH|jumbo:ROWSxCOLSxNNZ] [--rank K] ...
    hogwild run implicit [--data ml-1m|ml-100k|PATH] [--loss warp|bpr] [--threshold 4] ...
    hogwild run cuts [--data GRAPH|IMAGE] [--labels D] [--terminals ...] [--out PATH] ...
    hogwild run svm|mc|cuts --ranks N ...      (an MPI job of N ranks: backend mpi)
    mpirun -n N hogwild run svm|mc|cuts --backend mpi ...
    hogwild download NAME
    hogwild stats svm|mc|cuts [--data ...]
    hogwild allreduce-probe --ranks N [--max-size 256MiB] [--plot PNG] ...
    hogwild bench [--quick] [--problems ...] [--workers 1,2] ...
    hogwild datasets

Errors caused by the input print one line, ``hogwild: error: ...``, and exit 2;
Ctrl-C (or SIGTERM, or SIGHUP) finishes the epoch, writes the checkpoint, says
where, and exits 130 (143, 129); a second one abandons the epoch, leaving the last
checkpoint.
In an MPI job rank 0 alone prints, the ranks first check that they run the same
command, any error on any rank (a usage error, a bug's exception, before or after
MPI starts) ends the whole job (MPI_Abort), and --ranks forwards the first Ctrl-C
to the ranks (under a bare mpirun, Ctrl-C ends the job at once: the last
checkpoint stays).
"""
import errno
import os
import resource
import sys
import tempfile
import traceback
import warnings

from hogwild.cli.commands import download, list_datasets, sparsity
from hogwild.cli.options import check_numbers, build_parser
from hogwild.cli.probe import run_probe
from hogwild.cli.ranks import abort_job, launch, say_error
from hogwild.cli.streams import guarded_streams
from hogwild.cli.run import run_cuts, run_implicit, run_mc, run_svm
from hogwild.backends.mpi import agree, check_summation_servers, first_to_say, import_mpi, \
    in_mpi_job, job_rank, job_size, rank_lost
from hogwild.datasets.outputs import check_outputs
from hogwild.errors import HogwildError, Interrupted
from hogwild.interrupts import interrupts_kept
from hogwild.kernels.compiler import check_compiler
from hogwild.paths import not_regular

__all__ = ["main", "build_parser"]


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"hogwild: warning: {message}", file=sys.stderr)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    with guarded_streams():
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as usage:  # --help, or a usage error argparse has printed
            if usage.code:
                abort_job(usage.code)  # the other ranks of an MPI job must not wait for this
            raise
        except HogwildError as exc:  # --help into a full disk
            print(f"hogwild: error: {exc}", file=sys.stderr)
            return 2
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _one_line_warning
            status = _dispatch(args, argv)
        if status and not getattr(args, "stopped_together", False):
            abort_job(status)  # else the other ranks would wait for this one for ever
        return status


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
    training, rather than after it: hogwild writes a file by renaming a new one
    over it (hogwild.atomic), so this makes one there and removes it."""
    if path is None:
        return
    try:
        if os.path.isdir(path):
            raise HogwildError(f"{option} {path}: it is a directory; give a file path")
        kind = not_regular(os.stat(path).st_mode) if os.path.exists(path) else None
    except OSError as error:  # a name too long, a loop of links
        raise HogwildError(f"{option} {path}: {error.strerror}") from None
    if kind is not None:  # never a device or FIFO
        raise HogwildError(f"{option} {path}: it is {kind}, not a regular file; give a file path")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise HogwildError(f"{option} {path}: the folder {folder} does not exist")
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as error:
        raise HogwildError(f"{option} {path}: the folder {folder} is not writable "
                           f"({error.strerror})") from None


def _check_working_folder():
    """A working folder deleted under the shell breaks every relative path, and
    numba's compiler (which names source files relative to it)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        raise HogwildError("the current folder no longer exists (it was deleted or moved "
                           "away): cd to a folder that exists") from None


def _check_outputs(args):
    """Every output option checked (_check_output), and none naming a file the run
    reads or another output's (a checkpoint may be the one --resume reads)."""
    plot = getattr(args, "plot", "none")
    outputs = {"--save": getattr(args, "save", None), "--out": getattr(args, "out", None),
               "--markdown": getattr(args, "markdown", None),
               "--plot": None if plot == "none" else plot,
               "--checkpoint": getattr(args, "checkpoint", None)}
    for option, path in outputs.items():
        _check_output(path, option)
    check_outputs(outputs, {option: getattr(args, option[2:], None)
                            for option in ("--data", "--test", "--resume", "--terminals")},
                  may_share={("--checkpoint", "--resume")})


def _mpi_command(args):
    """Whether the command runs as an MPI job."""
    return getattr(args, "backend", None) == "mpi" or args.command == "allreduce-probe"


def _rank_of_a_job(args):
    """Whether this process is one rank of an MPI job of several that runs a command
    that trains or probes: MPI starts before anything else, and the ranks must
    agree on what they run."""
    return in_mpi_job() and job_size() > 1 and args.command in ("run", "allreduce-probe")


def _runs_here(args):
    """Whether this process runs the command itself: not when --ranks N asks for an
    MPI job that it must launch (inside one, N is checked).
    Ranks other than 0 print nothing on stdout."""
    ranks = getattr(args, "ranks", None)
    if ranks is not None and not in_mpi_job():
        if getattr(args, "backend", "mpi") not in ("threads", "mpi"):
            raise HogwildError(f"--ranks runs backend mpi; got --backend {args.backend}")
        check_summation_servers(getattr(args, "summation_servers", None) or 0, ranks)
        return False
    if ranks is not None and ranks != job_size():
        raise HogwildError(f"--ranks {ranks}: this MPI job has {job_size()} ranks")
    if _rank_of_a_job(args) and not _mpi_command(args):
        raise HogwildError(f"this process is rank {job_rank()} of an MPI job of {job_size()} "
                           f"ranks, which would each train alone with --backend "
                           f"{args.backend}: give --backend mpi (or run without mpirun)")
    if _mpi_command(args) and job_rank() != 0:  # (back if it becomes the chief: job_chief)
        sys.stdout = open(os.devnull, "w")
    return True


def _dispatch(args, argv=()):
    try:
        with interrupts_kept():  # a Ctrl-C that numba's compiler swallows still ends it
            if _rank_of_a_job(args) or (_mpi_command(args) and in_mpi_job()):
                # MPI starts before anything is checked or read: a rank that then fails
                # ends the job (MPI_Abort), where one that exited before MPI_Init would
                # leave the others waiting in it
                MPI = import_mpi()
                if _rank_of_a_job(args):
                    agree(MPI.COMM_WORLD, "the command", {
                        "command": args.command, "problem": getattr(args, "problem", None),
                        "backend": getattr(args, "backend", None)})
            check_compiler()
            _check_working_folder()
            check_numbers(args)
            if not _runs_here(args):
                return launch(args.ranks, argv, args.oversubscribe)
            if getattr(args, "backend", None) == "gpu":
                _use_gpu(args)
            _check_outputs(args)
            if args.command == "datasets":
                list_datasets(args)
            elif args.command == "bench":
                from hogwild.bench import main as run_bench
                run_bench(args)
            elif args.command == "download":
                download(args)
            elif args.command == "stats":
                sparsity(args)
            elif args.command == "allreduce-probe":
                run_probe(args)
            elif args.problem == "mc":
                run_mc(args)
            elif args.problem == "implicit":
                run_implicit(args)
            elif args.problem == "cuts":
                run_cuts(args)
            else:
                run_svm(args)
    except HogwildError as exc:  # once per job; ranks that fail alike exit unaborted
        args.stopped_together = say_error(str(exc))
        return 2
    except MemoryError:
        print("hogwild: error: out of memory; use smaller data (or a machine with more "
              "memory)", file=sys.stderr)
        return 1
    except OSError as exc:  # the machine's limits, not a bug: one line
        if exc.errno == errno.ENAMETOOLONG:  # a path the file system cannot hold
            print(f"hogwild: error: {_where()}{exc.filename}: {exc.strerror} (a name in a "
                  "path takes at most 255 bytes)", file=sys.stderr)
            return 2
        if exc.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        print(f"hogwild: error: {_where()}{exc.strerror} (this process may open {limit} "
              "files): raise the limit (ulimit -n), or use fewer workers or --backend "
              "threads", file=sys.stderr)
        return 2
    except Interrupted as stop:
        where = (f"; checkpoint written to {stop.checkpoint} (continue with --resume "
                 f"{stop.checkpoint})") if stop.checkpoint else ""
        when = f" after epoch {stop.epoch}" if stop.epoch is not None else ""
        # in an MPI job every rank stops after the same epoch, and rank 0 says so
        args.stopped_together = stop.epoch is not None
        if not (_mpi_command(args) and job_rank() and args.stopped_together):
            print(f"hogwild: interrupted{when}{where}", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print("hogwild: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (hogwild datasets | head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # a bug: in an MPI job, said with the rank, then MPI_Abort
        if not (in_mpi_job() and job_size() > 1):
            raise
        if "mpi4py.MPI" in sys.modules and rank_lost(import_mpi(), exc):
            # every rank meets it and exits: one says it, and no MPI_Abort banner follows
            args.stopped_together = True
            if first_to_say(os.environ.get("PMIX_SERVER_TMPDIR", "")):
                print(f"hogwild: error: a rank died before the first epoch ({exc}); the job "
                      "ends (its ranks survive a lost rank once training began)",
                      file=sys.stderr)
            return 1
        # one write: lines written apart can be lost when MPI_Abort ends the job (the
        # launcher stops forwarding output), and the error line is the one that matters
        sys.stderr.write("".join(traceback.format_exception(exc))
                         + f"hogwild: error: {_where()}{type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        return 1
    return 0


def _where():
    """'rank N: ' in an MPI job of several ranks, else nothing."""
    return f"rank {job_rank()}: " if in_mpi_job() and job_size() > 1 else ""
