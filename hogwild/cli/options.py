"""The command line's parser: one command per job, one parser per problem, and one
group of training options that every problem shares (hogwild.TrainingConfig's and
hogwild.RunControls' fields), with each problem's defaults taken from the library;
then the checks of numbers that need no data."""
import argparse
import math
import re

from hogwild.cli.values import integer, number
from hogwild.config import TRAINING_OPTIONS, TrainingConfig
from hogwild.options import TRAINING
from hogwild.schedulers import SCHEDULERS
from hogwild.errors import HogwildError, check_int
from hogwild.limits import MAX_EPOCHS
from hogwild.replication import HOT_MERGE_EVERY


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors are one line like every other error
    (argparse prints the whole usage first: 20 lines for 'run svm'), naming where
    to read the options; the subcommands' parsers are of this class too. A flag is
    taken only as written, never as the start of a longer one (--schedule would be
    --scheduler)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message):
        self.exit(2, f"hogwild: error: {message} (see '{self.prog} --help')\n")


def build_parser():
    from hogwild.datasets.registry import DEFAULT_SVM_DATASET, RATINGS_DATASETS, SVM_DATASETS

    parser = OneLineParser(prog="hogwild", description="Lock-free, shared-memory, "
                                     "asynchronous SGD (Hogwild!).")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="train an example problem")
    problems = run.add_subparsers(dest="problem", required=True, metavar="PROBLEM")
    svm = problems.add_parser(
        "svm", help="sparse linear SVM / logistic regression",
        description="Train a sparse linear classifier with Hogwild! SGD.")
    svm.add_argument("--data", default=DEFAULT_SVM_DATASET,
                     help=f"dataset name ({', '.join(SVM_DATASETS)}), a file of labelled rows "
                          "(svmlight, Vowpal Wabbit text or CSV/TSV columns; plain, gzip, "
                          "bzip2, xz or zstd; any size the disk holds: one larger than "
                          "memory trains from disk), a folder or glob pattern of such part "
                          "files (read as one; in an MPI job each rank reads its share of "
                          "those on its own host, or of one uncompressed file's bytes), "
                          "clicks:ROWSxFEATURESxNNZ for a "
                          "generated click log (power-law hashed features), or criteo:ROWS "
                          "for a generated log in Criteo's layout (default: "
                          f"{DEFAULT_SVM_DATASET}, shipped with hogwild)")
    svm.add_argument("--test", help="test file, read as the --data file is (default: the "
                                    "dataset's test split)")
    _add_reading_options(svm)
    svm.add_argument("--reg", type=number, default=None,
                     help="L2 strength: objective = mean loss + reg/2 ||w||^2 (default: from "
                          "the data, max(rows, features) / rows^2, at most 1e-4: 1e-6 for a "
                          "million rows of fewer features; with adaptive steps it applies "
                          "from the second epoch, the first seeing every row unseen)")
    svm.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=None,
                     help="AdaGrad steps per feature, as Vowpal Wabbit's adaptive updates: "
                          "rare features keep learning while frequent ones settle "
                          "(default: on with two classes, off with more)")
    svm.add_argument("--loss", default="hinge", help="hinge or logistic (default: hinge)")
    svm.add_argument("--multi-class", default="ovr",
                     help="with more than two classes: ovr (one-vs-rest in one pass; the "
                          "default) or multinomial (the softmax model; --loss logistic)")
    svm.add_argument("--no-intercept", dest="fit_intercept", action="store_false",
                     help="fit no intercept: the score is x . w alone (default: an "
                          "unregularised intercept, as scikit-learn's fit_intercept=True)")
    svm.add_argument("--save", help="write the fitted model to this .npz file "
                                    "(hogwild.problems.sparse_svm.SparseSVM.load reads it)")

    _add_training_options(svm, "svm")
    _add_mc_parser(problems, RATINGS_DATASETS)
    _add_implicit_parser(problems, RATINGS_DATASETS)
    _add_cuts_parser(problems)

    download = commands.add_parser(
        "download", help="download a rating dataset into the cache",
        description="Download a rating dataset (checksum verified) into the hogwild cache.")
    download.add_argument("name", help=f"one of: {', '.join(RATINGS_DATASETS)}")
    download.add_argument("--url", help="download from this mirror instead (file:// works; "
                                        "needs --sha256)")
    download.add_argument("--sha256", help="SHA-256 of the mirror's archive (required with "
                                           "--url)")

    stats = commands.add_parser(
        "stats", help="sparsity statistics (Omega, Delta, rho) of a problem's data",
        description="The Hogwild! paper's sparsity statistics of a problem's samples, and "
                    "what they predict for lock-free scaling.")
    stats.add_argument("problem", help="svm, mc or cuts")
    stats.add_argument("--data", default=None,
                       help="dataset name or file (default: a9a for svm, ml-1m for mc, "
                            "snap-facebook-combined for cuts)")
    stats.add_argument("--json", action="store_true", help="print one JSON object")

    commands.add_parser("datasets", help="list available datasets and their shapes")

    from hogwild.cli.probe import add_arguments as add_probe_arguments
    probe = commands.add_parser(
        "allreduce-probe", help="each Open MPI allreduce algorithm: measured against the "
                                "cost model, 1 KiB to 256 MiB",
        description="Measure the link (ping-pong, reduction), predict each Open MPI "
                    "allreduce algorithm's time by the alpha-beta-gamma model, measure it "
                    "(forced in turn), and report the model's choice against the fastest.")
    add_probe_arguments(probe)

    from hogwild.bench import add_arguments as add_bench_arguments  # imports the peers
    bench = commands.add_parser(
        "bench", help="benchmark thread scaling, schedulers and backends",
        description="Thread scaling, schedulers and backends on the three problems: JSON "
                    "lines, a Markdown report and plots in --out-dir.")
    add_bench_arguments(bench)
    return parser


def _add_reading_options(parser):
    """How a file of labelled rows is read (hogwild.datasets.formats.Reading)."""
    group = parser.add_argument_group("reading a file of labelled rows")
    group.add_argument("--format", default="auto",
                       help="svmlight, vw (Vowpal Wabbit text) or csv (delimited columns; "
                            "TSV too); default: by the file's suffix, else its first line")
    group.add_argument("--hash-bits", type=integer, default=None,
                       help="vw and csv: hash features into 2^BITS weights, as Vowpal "
                            "Wabbit's -b (default: from the file's size, 18 for 1 MB up to "
                            "24 from 500 MB)")
    group.add_argument("-q", "--quadratic", action="append", default=[], metavar="AB",
                       help="vw: cross every feature of the namespaces starting with A with "
                            "each of those starting with B, as Vowpal Wabbit's -q AB "
                            "(repeatable; crossed as training reads them, not stored)")
    group.add_argument("--label", default=None,
                       help="csv: the label's column, by header name or position from 0 "
                            "(default: a column named label, click, clicked, target or y, "
                            "else the first)")
    group.add_argument("--weight-column", default=None,
                       help="csv: a column of importance weights (default: every row weighs 1)")
    group.add_argument("--numeric", default=None,
                       help="csv: comma-separated columns read as numbers (default: those "
                            "whose values on the first lines are all numbers)")
    group.add_argument("--categorical", default=None,
                       help="csv: comma-separated columns whose values are hashed as "
                            "categories (default: the columns not numeric)")
    group.add_argument("--skip-columns", default=None,
                       help="csv: comma-separated columns to leave out (an id, say)")
    group.add_argument("--separator", default=None,
                       help="csv: tab, comma, semicolon, pipe, space or the character "
                            "(default: read off the first lines)")
    group.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                       help="csv: the first line names the columns (default: read off the "
                            "first lines: a label that is not a number)")
    group.add_argument("--numeric-scale", default="log",
                       help="csv: log (a number x becomes sign(x) log(1 + |x|), for counts "
                            "over orders of magnitude; the default) or raw")


def reading_of(args):
    """The hogwild.datasets.formats.Reading of a run's reading options."""
    from hogwild.datasets.formats import Reading

    def columns(text):
        return None if text is None else tuple(c.strip() for c in text.split(",") if c.strip())

    return Reading(format=args.format, hash_bits=args.hash_bits,
                   quadratic=tuple(args.quadratic), label=args.label,
                   weight=args.weight_column, numeric=columns(args.numeric),
                   categorical=columns(args.categorical), skip=columns(args.skip_columns),
                   separator=args.separator, header=args.header,
                   numeric_scale=args.numeric_scale)


def _problem_defaults(problem):
    """The library's own defaults of a problem's training options (the estimator's,
    or multiway_cut's CUT_TRAINING), so that the CLI declares none of its own, and
    the estimator's notes on them."""
    if problem == "cuts":
        from hogwild.problems.graph_cuts import CUT_TRAINING
        return {option.name: getattr(CUT_TRAINING, option.name) for option in TRAINING}, {}
    from hogwild.problems.matrix_completion import ImplicitFactorization, MatrixFactorization
    from hogwild.problems.sparse_svm import SparseSVM
    estimator = {"svm": SparseSVM, "mc": MatrixFactorization,
                 "implicit": ImplicitFactorization}[problem]
    defaults = estimator().get_params()
    return {option.name: defaults[option.parameter] for option in TRAINING}, \
        estimator.training_notes


VALUE_TYPES = {"int": integer, "seed": integer, "number": number}  # the rest: as typed


def _value_type(option):
    """The argparse type of an option's value: its kind's, passing its cli_words."""
    parse = VALUE_TYPES.get(option.kind, str)
    if not option.cli_words:
        return parse

    def parse_or_word(text):
        if text in option.cli_words:
            return text
        try:
            return parse(text)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"expected a number or {' or '.join(map(repr, option.cli_words))}, got "
                f"{text!r}") from None
    return parse_or_word


# The option table and the problems' notes on it are written for the Python API; on
# the command line, its parameter names are flags and its attribute names are the
# summary's (or --json's) fields. Applied in this order.
_API_WORDS = (
    (r"\b(" + "|".join(o.name for o in TRAINING if "_" in o.name) + r"|oversubscribe)\b",
     lambda match: "--" + match.group(1).replace("_", "-")),
    (r"; the (value|one) used is \w+_", r"; --json gives the \1 used"),
    (r"recorded as the estimators' seed_", "printed by --json as its seed"),
    (r" The estimators call it random_state, as scikit-learn does\.", ""),
    (r" \(([A-Z][A-Z_]+[A-Z]|hogwild\.[\w.]+)\)", ""),  # a constant's name
    (r"hogwild\.replication\.HOT_MERGE_EVERY", f"{HOT_MERGE_EVERY:,}"),
    (r"FitResult\.replicated|replicated_", "the summary"),
    (r"; an Objective of your own brings them as its validation Metric", ""),
    (r"\b(SparseSVM|MatrixFactorization|ImplicitFactorization) runs", "This problem runs"),
    (r"fit_intercept=False", "--no-intercept"),
    (r" unless shuffle_rows=False", " unless the data says they are in random order"),
    (r"\bNone: ", "default: "),
    (r"\. default: ", ". Default: "),
)


def in_users_words(text):
    """An option's help from the table, in the command line's words (_API_WORDS)."""
    for pattern, replacement in _API_WORDS:
        text = re.sub(pattern, replacement, text)
    return text


def add_training_flags(group, defaults, notes, table=TRAINING):
    """A flag per row of ``table`` (hogwild.options.TRAINING) with the help of the
    row, the problem's ``notes`` on it and its ``defaults``, but for the
    distributed settings: those are the ray and mpi backends' own flags."""
    for option in table:
        if option.kind == "settings":
            continue
        default = defaults[option.name]
        note = f" {notes[option.name]}" if option.name in notes else ""
        help_text = in_users_words(f"{option.help}{note}")
        if not (default is None and "default: " in help_text.lower()):
            help_text += f" (default: {'none' if default is None else default})"
        if option.kind == "bool":
            group.add_argument(option.flag, dest=option.name, action="store_true",
                               help=help_text.replace("%", "%%"))
        else:
            group.add_argument(option.flag, dest=option.name, type=_value_type(option),
                               help=help_text.replace("%", "%%"))


def _add_training_options(parser, problem):
    """The options every problem shares, with the same help text everywhere: one
    flag per row of hogwild.options.TRAINING (the distributed settings as the ray
    and mpi backends' flags), then the GPU's, the run controls and the output form;
    each problem's defaults come from the library."""
    group = parser.add_argument_group("training options (the same for every problem)")
    defaults, notes = _problem_defaults(problem)
    add_training_flags(group, defaults, notes)
    group.add_argument("--streams", type=integer, default=None,
                       help="with --backend gpu: CUDA streams (the workers; default: "
                            "--workers, else all usable cores)")
    group.add_argument("--device", type=integer, default=None,
                       help="with --backend gpu: the CUDA device number (default 0)")
    group.add_argument("--ray-address", default=None,
                       help="with --backend ray: join this Ray cluster (e.g. HOST:6379); "
                            "default: start a local Ray instance")
    group.add_argument("--nodes", type=integer,
                       help="with --backend ray: node actors (default 2)")
    group.add_argument("--staleness",
                       help="with --backend ray: how many clocks the fastest node may run "
                            "ahead of the slowest; 0 = bulk synchronous (default), inf = "
                            "asynchronous")
    group.add_argument("--staleness-aware", action="store_true", default=None,
                       help="with --backend ray and --staleness >= 1 or inf: divide each "
                            "push by its staleness (the other nodes' pushes since its pull; "
                            "Zhang et al. 2016)")
    group.add_argument("--clock-every", type=integer, default=None,
                       help="with --backend ray: local updates per clock (push, wait, pull); "
                            "default: a tenth of a node's epoch")
    group.add_argument("--ranks", type=integer, default=None,
                       help="run as an MPI job of this many ranks on this machine (launches "
                            "mpirun; implies --backend mpi; more ranks than cores are "
                            "oversubscribed; a rank that dies once training began is "
                            "survived by the others, with Open MPI 5). Under mpirun, give "
                            "--backend mpi instead")
    group.add_argument("--sync-every", type=integer, default=None,
                       help="with --backend mpi: a rank's local updates between allreduces "
                            "of the ranks' changes (default: once an epoch; 1 = synchronous "
                            "minibatch SGD of one sample per rank)")
    group.add_argument("--allreduce",
                       help="with --backend mpi: Open MPI's allreduce algorithm: auto (the "
                            "cost model's pick for the measured links; the default), "
                            "basic_linear, nonoverlapping, recursive_doubling, ring, "
                            "segmented_ring, rabenseifner, or hierarchical (a reduce inside "
                            "each machine, the machines' leaders' allreduce over the network, "
                            "a broadcast inside each machine)")
    group.add_argument("--summation-servers", type=integer, default=None, metavar="K",
                       help="with --backend mpi: the job's last K ranks take no samples and "
                            "only add up the others' changes at each sync (BytePS's summation "
                            "service: for spare machines, whose links then carry part of the "
                            "traffic; at most as many as the ranks that train; default 0)")
    group.add_argument("--exchange",
                       help="with --backend mpi: dense (allreduce every coordinate), sparse "
                            "(allgather the changed ones) or auto (whichever moves fewer "
                            "bytes, at each sync; the default)")
    group.add_argument("--step-scaling",
                       help="with --backend mpi: linear (the step times the ranks, so that "
                            "the mean of their changes moves as far as one process would: "
                            "Goyal et al.'s linear scaling rule; the default) or none (the "
                            "plain mean; for constrained parameters such as the cuts' "
                            "simplex rows)")
    group.add_argument("--warmup-epochs", type=number,
                       help="with --step-scaling linear: reach the scaled step linearly over "
                            "this many epochs (default 0)")
    group.add_argument("--checkpoint",
                       help="checkpoint file, written on Ctrl-C and every --checkpoint-every "
                            "epochs (default: hogwild-PROBLEM-checkpoint.npz)")
    group.add_argument("--checkpoint-every", type=integer, default=None,
                       help="also checkpoint every this many epochs and at the end")
    group.add_argument("--resume", default=None,
                       help="continue the run saved in this checkpoint (same data and "
                            "--seed); --epochs is the total")
    group.add_argument("--json", action="store_true",
                       help="print one JSON result on stdout instead of the text report")
    parser.set_defaults(**defaults)


def _staleness(text):
    """--staleness as an int >= 0, or None for inf (asynchronous)."""
    staleness = text.strip().lower()
    if staleness in ("inf", "infinity", "none"):
        return None
    if staleness.isdigit():
        return int(staleness)
    raise HogwildError(f"--staleness: expected an integer >= 0 or inf, got {text!r}")


# The options of the backends with several nodes, and their defaults: given to a run
# on another backend, they are refused rather than ignored.
BACKEND_OPTIONS = {
    "ray": {"ray_address": None, "nodes": 2, "staleness": "0", "staleness_aware": False,
            "clock_every": None},
    "mpi": {"sync_every": None, "allreduce": "auto", "exchange": "auto",
            "step_scaling": "linear", "warmup_epochs": 0.0, "summation_servers": 0},
}


def _backend_options(args):
    """The ray and mpi backends' options as given, else their defaults."""
    return {name: default if getattr(args, name) is None else getattr(args, name)
            for options in BACKEND_OPTIONS.values() for name, default in options.items()}


def _distributed(args, backend=None):
    """The settings of --backend ray (SSP) or mpi (allreduce); None for the others
    (``backend``: those of that backend, whatever --backend says)."""
    backend = backend or args.backend
    option = _backend_options(args)
    if backend == "mpi":
        return {"sync_every": option["sync_every"], "algorithm": option["allreduce"],
                "exchange": option["exchange"], "step_scaling": option["step_scaling"],
                "warmup_epochs": option["warmup_epochs"],
                "summation_servers": option["summation_servers"]}
    if backend != "ray":
        return None
    return {"nodes": option["nodes"], "staleness": _staleness(option["staleness"]),
            "clock_every": option["clock_every"], "address": option["ray_address"],
            "staleness_aware": option["staleness_aware"]}


def _check_backend_options(args):
    """An option of the ray or mpi backend given to a run on another one is an error
    (`--nodes 8` without `--backend ray` would train on threads, quietly)."""
    backend = "mpi" if getattr(args, "ranks", None) is not None else args.backend
    for owner, names in BACKEND_OPTIONS.items():
        for name in names:
            if owner != backend and getattr(args, name) is not None:
                raise HogwildError(f"--{name.replace('_', '-')} is for --backend {owner}; "
                                   f"this run has --backend {backend}")


# Integer options besides the training options (whose bounds are
# hogwild.options.TRAINING's) and their bounds (None: unbounded), checked before any
# work, on every backend, so that a bad value is named even where the option is unused.
INT_OPTIONS = {"terminal_seed": (0, None), "split_seed": (0, None),
               "streams": (1, 4096), "device": (0, 1023), "nodes": (1, None),
               "clock_every": (1, None), "ranks": (1, 4096), "sync_every": (1, None),
               "checkpoint_every": (1, None), "grid": (1, 2**15),
               "jumbo_rank": (1, 2**15), "labels": (2, 2**15), "rounds": (1, None),
               "max_sampled": (1, 2**20), "k": (1, 2**20)}


# Number options at least 0 and at most this (inf: any finite number), checked likewise.
FLOAT_OPTIONS = {"unary": 1e6, "jumbo_noise": float("inf"), "warmup_epochs": MAX_EPOCHS}


def check_numbers(args):
    """Every numeric option within its bounds (NaN and inf refused), or one line
    naming the option."""
    for name, (low, high) in INT_OPTIONS.items():
        if getattr(args, name, None) is not None:
            check_int("--" + name.replace("_", "-"), getattr(args, name), low, high)
    if getattr(args, "staleness", None) is not None:
        _staleness(args.staleness)
    if getattr(args, "test_fraction", None) is not None:  # also where jumbo data ignores it
        from hogwild.datasets.ratings import check_split
        check_split(args.test_fraction, getattr(args, "split", "user"))
    for name, high in FLOAT_OPTIONS.items():
        value = getattr(args, name, None)
        if value is not None and not 0 <= value <= high:
            bounds = ">= 0" if high == float("inf") else f"from 0 to {high:g}"
            raise HogwildError(f"--{name.replace('_', '-')} must be a finite number {bounds}, "
                               f"got {value!r}")
    for name in ("streams", "device"):
        if getattr(args, name, None) is not None and args.backend != "gpu":
            raise HogwildError(f"--{name} is for --backend gpu (CUDA streams and devices); "
                               f"this run has --backend {args.backend}")
    if not math.isfinite(getattr(args, "threshold", 0.0)):
        raise HogwildError(f"--threshold must be a finite number, got {args.threshold!r}")
    if getattr(args, "connectivity", 4) not in (4, 8):  # an image's; checked for every input
        raise HogwildError(f"--connectivity must be 4 or 8, got {args.connectivity}")
    if hasattr(args, "exchange"):  # a training command: every option named, used or not
        from hogwild.backends import distributed_settings
        for backend in ("mpi", "ray"):
            distributed_settings(backend, _distributed(args, backend))
        _check_backend_options(args)
        given = {name: value for name, value in training_fields(args).items()
                 if value is not None and value != "auto"}  # the problem's own defaults
        if given.get("scheduler") not in SCHEDULERS:
            given.pop("scheduler", None)  # the problem names the ones it runs
        TrainingConfig(**{**given, "distributed": None})


def training_fields(args):
    """The TrainingConfig fields of the shared options."""
    return {name: getattr(args, name) for name in TRAINING_OPTIONS if name != "distributed"} \
        | {"distributed": _distributed(args)}


def estimator_fields(args):
    """training_fields under the estimators' parameter names (random_state)."""
    names = {option.name: option.parameter for option in TRAINING}
    return {names[name]: value for name, value in training_fields(args).items()}


def control_fields(args):
    """The RunControls fields of the shared options (the CLI checkpoints on Ctrl-C
    only, unless --checkpoint-every is given, by default into the working folder:
    checked as the run starts only where --checkpoint names it, so that a read-only
    folder refuses no run that is never interrupted)."""
    return {"checkpoint": args.checkpoint or f"hogwild-{args.problem}-checkpoint.npz",
            "checkpoint_every": args.checkpoint_every, "resume": args.resume}


def _add_mc_parser(problems, rating_datasets):
    mc = problems.add_parser(
        "mc", help="matrix completion (recommender ratings)",
        description="Factorise a rating matrix with Hogwild! SGD: the biased model (mean + "
                    "user and item biases + L_u . R_v, as Surprise's SVD and LIBMF users "
                    "expect), or --model paper (L_u . R_v with the Hogwild! paper's "
                    "degree-scaled regulariser).")
    mc.add_argument("--data", default="ml-1m",
                    help=f"dataset name ({', '.join(rating_datasets)}), a 'user item rating' "
                         "file, or jumbo:ROWSxCOLSxNNZ for a planted low-rank matrix "
                         "(default: ml-1m)")
    mc.add_argument("--test", help="test ratings file (default: split off --test-fraction)")
    mc.add_argument("--test-fraction", type=number, default=0.2,
                    help="ratings held out for testing (default: 0.2)")
    mc.add_argument("--split", default="rating",
                    help="rating (random ratings) or user (per-user holdout); default: rating")
    mc.add_argument("--split-seed", type=integer, default=0,
                    help="seed of the train/test split (default: 0)")
    mc.add_argument("--rank", type=integer, default=32, help="factors per row (default: 32)")
    mc.add_argument("--model", default="biased",
                    help="biased (default: mean + user/item biases + L_u . R_v, regularised "
                         "per rating, as Surprise's SVD) or paper (the Hogwild! paper's "
                         "L_u . R_v with a degree-scaled regulariser, no biases)")
    mc.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=None,
                    help="LIBMF's per-row adaptive rates: each user's and item's step falls "
                         "with its squared gradients, in units of the ratings' standard "
                         "deviation (default: on for the biased model)")
    mc.add_argument("--reg", type=number, default=None,
                    help="mu (default: 0.05 x the ratings' standard deviation with adaptive "
                         "rates, per rating; 0.06 biased without; 10 paper, per row)")
    mc.add_argument("--init-scale", type=number, default=None,
                    help="factors start N(0, s^2) (default: 0.02 x the square root of the "
                         "ratings' standard deviation with adaptive rates; 0.03 biased "
                         "without; 0.1 paper)")
    mc.add_argument("--bias-reg", type=number, default=None,
                    help="mu of the biases (default: 0.05 with adaptive rates, else reg)")
    mc.add_argument("--grid", type=integer, default=None,
                    help="blocks per side for --scheduler blocked or fpsgd (default: 8, or 2 x "
                         "workers, or more on large matrices: about 1 MiB of factor rows a "
                         "block side, at least 1,000 ratings a block)")
    mc.add_argument("--jumbo-rank", type=integer, default=10,
                    help="planted rank of jumbo: data (default: 10)")
    mc.add_argument("--jumbo-noise", type=number, default=0.5,
                    help="noise of jumbo: data, the best achievable RMSE (default: 0.5)")
    mc.add_argument("--factor-dtype", default="float32",
                    help="float32, or float16 to store the factors in half precision "
                         "(--backend gpu only; default: float32)")
    mc.add_argument("--save", help="write the fitted model to this .npz file")
    _add_training_options(mc, "mc")


def _add_implicit_parser(problems, rating_datasets):
    implicit = problems.add_parser(
        "implicit", help="implicit-feedback recommender (WARP or BPR ranking)",
        description="Rank items per user from implicit feedback (which items each user "
                    "interacted with) by matrix factorisation with Hogwild! SGD and negative "
                    "sampling: WARP (as LightFM) or BPR (as implicit). Ratings >= "
                    "--threshold are the interactions; each user's are split "
                    "train/test, and precision@k, recall@k, ndcg@k and AUC are reported on "
                    "the held-out ones.")
    implicit.add_argument("--data", default="ml-1m",
                          help=f"dataset name ({', '.join(rating_datasets)}) or a 'user item "
                               "rating' file (default: ml-1m)")
    implicit.add_argument("--threshold", type=number, default=4.0,
                          help="ratings >= this are interactions (default: 4, MovieLens' 4 and "
                               "5 stars)")
    implicit.add_argument("--test-fraction", type=number, default=0.2,
                          help="each user's interactions held out for testing (default: 0.2)")
    implicit.add_argument("--split-seed", type=integer, default=0,
                          help="seed of the per-user train/test split (default: 0)")
    implicit.add_argument("--rank", type=integer, default=32,
                          help="factors per user and item (default: 32)")
    implicit.add_argument("--loss", default="warp",
                          help="warp (default; LightFM's rank-weighted loss) or bpr (implicit's "
                               "Bayesian personalised ranking)")
    implicit.add_argument("--reg", type=number, default=None,
                          help="L2 on the rows each step touches (default: 0.6 warp, 0.03 bpr, "
                               "0.2 with adaptive steps)")
    implicit.add_argument("--init-scale", type=number, default=None,
                          help="factors start N(0, s^2) (default: 0.01 warp and adaptive, 0.1 bpr)")
    implicit.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=None,
                          help="per-row AdaGrad steps, as LightFM's adagrad: rarely seen "
                               "users and items keep large steps (default: on for warp where "
                               "users and items average fewer than 25 interactions)")
    implicit.add_argument("--max-sampled", type=integer, default=10,
                          help="WARP's draws per step before it gives up (default: 10)")
    implicit.add_argument("--k", type=integer, default=10,
                          help="the cut-off of precision@k, recall@k and ndcg@k (default: 10)")
    implicit.add_argument("--save", help="write the fitted model to this .npz file "
                                         "(ImplicitFactorization.load reads it)")
    _add_training_options(implicit, "implicit")


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif")


def _add_cuts_parser(problems):
    from hogwild.datasets.registry import GRAPH_DATASETS

    cuts = problems.add_parser(
        "cuts", help="graph cuts (multiway cut; image segmentation)",
        description="Minimum multiway cut by Hogwild! SGD on the simplex relaxation, "
                    "rounded to labels: on a graph, or on an image's pixel grid with seed "
                    "pixels as terminals.")
    cuts.add_argument("--data", default="snap-facebook-combined",
                      help=f"graph name ({', '.join(GRAPH_DATASETS)}), random:VERTICESxEDGES, "
                           "a DIMACS (.col) or edge-list ('u v [weight]') file, or an image "
                           f"({', '.join(IMAGE_SUFFIXES)}; needs Pillow) "
                           "(default: snap-facebook-combined)")
    cuts.add_argument("--labels", type=integer, default=None,
                      help="number of labels D (default: 2, or a seed image's number of gray "
                           "levels)")
    cuts.add_argument("--terminals", default=None,
                      help="graphs: 'random' (default; one vertex per label drawn by "
                           "--terminal-seed), 'random:K' (K per label) or 'ID:LABEL,ID:LABEL,...' "
                           "with the file's vertex ids. Images: 'auto' (default; darkest "
                           "pixels label 0 ... brightest the last) or a seed image of the same "
                           "size (0 = free, other gray levels = labels in increasing order)")
    cuts.add_argument("--terminal-seed", type=integer, default=0,
                      help="seed of random terminals and auto seeds (default: 0)")
    cuts.add_argument("--connectivity", type=integer, default=4, help="images: 4 or 8 (default: 4)")
    cuts.add_argument("--unary", type=number, default=1.0,
                      help="images: weight of the seed intensity model against the boundary "
                           "(default: 1; 0 = boundary only)")
    cuts.add_argument("--out", help="write the labels: a PNG for an image, 'id label' lines "
                                    "for a graph")
    _add_training_options(cuts, "cuts")
