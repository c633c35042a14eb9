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
import argparse
import dataclasses
import json
import os
import resource
import sys
import time
import warnings

import numpy as np

from hogwild.atomic import atomic_file
from hogwild.config import TRAINING_OPTIONS, TrainingConfig
from hogwild.errors import HogwildError, Interrupted, check_int


def _positive_or_auto(text):
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None


def build_parser():
    from hogwild.datasets.registry import DEFAULT_SVM_DATASET, RATINGS_DATASETS, SVM_DATASETS
    from hogwild.limits import usable_cores

    parser = argparse.ArgumentParser(prog="hogwild", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="train an example problem")
    problems = run.add_subparsers(dest="problem", required=True, metavar="PROBLEM")
    svm = problems.add_parser(
        "svm", help="sparse linear SVM / logistic regression",
        description="Train a sparse linear classifier with Hogwild! SGD.")
    svm.add_argument("--data", default=DEFAULT_SVM_DATASET,
                     help=f"dataset name ({', '.join(SVM_DATASETS)}) or svmlight file "
                          f"(default: {DEFAULT_SVM_DATASET}, shipped with hogwild)")
    svm.add_argument("--test", help="svmlight test file (default: the dataset's test split)")
    svm.add_argument("--reg", type=float, default=1e-4,
                     help="L2 strength: objective = mean loss + reg/2 ||w||^2 (default: 1e-4)")
    svm.add_argument("--loss", default="hinge", help="hinge or logistic (default: hinge)")
    svm.add_argument("--no-intercept", dest="fit_intercept", action="store_false",
                     help="fit no intercept: the score is x . w alone (default: an "
                          "unregularised intercept, as scikit-learn's fit_intercept=True)")
    svm.add_argument("--save", help="write the fitted model to this .npz file "
                                    "(hogwild.problems.sparse_svm.SparseSVM.load reads it)")

    _add_training_options(svm, "svm", usable_cores())
    _add_mc_parser(problems, usable_cores(), RATINGS_DATASETS)
    _add_cuts_parser(problems, usable_cores())

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

    from hogwild.bench import add_arguments as add_bench_arguments
    bench = commands.add_parser(
        "bench", help="benchmark thread scaling, schedulers and backends",
        description="Thread scaling, schedulers and backends on the three problems: JSON "
                    "lines, a Markdown report and plots in --out-dir.")
    add_bench_arguments(bench)
    return parser


def _problem_defaults(problem):
    """The library's own defaults of a problem's training options (the estimator's,
    or multiway_cut's CUT_TRAINING), so that the CLI declares none of its own."""
    if problem == "cuts":
        from hogwild.problems.graph_cuts import CUT_TRAINING
        defaults = dataclasses.asdict(CUT_TRAINING)
    else:
        from hogwild.problems.matrix_completion import MatrixFactorization
        from hogwild.problems.sparse_svm import SparseSVM
        defaults = (SparseSVM if problem == "svm" else MatrixFactorization)().get_params()
    return {name: defaults[name] for name in ("epochs", "step", "decay", "step_schedule",
                                              "scheduler", "shuffle_block")}


def _add_training_options(parser, problem, cores):
    """The options every problem shares (hogwild.TrainingConfig's and
    hogwild.RunControls' fields, and the output form), with the same help text
    everywhere; each problem's defaults come from the library."""
    group = parser.add_argument_group("training options (the same for every problem)")
    group.add_argument("--epochs", type=int, help="passes over the samples (default: svm 20, "
                                                  "mc 20, cuts 200)")
    group.add_argument("--step", type=_positive_or_auto,
                       help="initial step (default: svm 'auto' = 0.2 / mean squared row norm; "
                            "mc 0.03 biased, 0.02 paper; cuts 0.1)")
    group.add_argument("--decay", type=float,
                       help="per-epoch step decay (default: svm 0.9, mc 0.9, cuts 0.98)")
    group.add_argument("--step-schedule", "--schedule", dest="step_schedule",
                       help="geometric (step * decay^epoch; the default), inverse "
                            "(step / (1 + decay * epoch)) or constant")
    group.add_argument("--workers", type=int, default=None,
                       help=f"worker threads (default: usable cores, here {cores})")
    group.add_argument("--oversubscribe", action="store_true",
                       help="allow more than 4 workers per usable core (they mostly wait "
                            "for a core; refused without this flag)")
    group.add_argument("--scheduler",
                       help="hogwild (lock-free; the default), locked (a spinlock per "
                            "update), serial, blocked (mc: conflict-free grid blocks), or the "
                            "conflict-free colored (colour classes of the conflict graph) and "
                            "cyclades (components of random batches)")
    group.add_argument("--shuffle-block", type=int,
                       help="shuffle in runs of this many samples (default: svm 16, mc 256, "
                            "cuts 1; 1 = uniform)")
    group.add_argument("--seed", type=int, default=None,
                       help="random seed of the training (default: none, a new order each "
                            "run)")
    group.add_argument("--backend", default="threads",
                       help="threads (default), processes (workers in separate processes "
                            "over shared memory), gpu (one NVIDIA GPU; --workers is then "
                            "CUDA streams) or ray (several nodes with a parameter server; "
                            "--workers is then threads per node, default 1)")
    group.add_argument("--streams", type=int, default=None,
                       help="with --backend gpu: CUDA streams (the workers; default: "
                            "--workers, else all usable cores)")
    group.add_argument("--device", type=int, default=None,
                       help="with --backend gpu: the CUDA device number (default 0)")
    group.add_argument("--ray-address", default=None,
                       help="with --backend ray: join this Ray cluster (e.g. HOST:6379); "
                            "default: start a local Ray instance")
    group.add_argument("--nodes", type=int, default=2,
                       help="with --backend ray: node actors (default 2)")
    group.add_argument("--staleness", default="0",
                       help="with --backend ray: how many clocks the fastest node may run "
                            "ahead of the slowest; 0 = bulk synchronous (default), inf = "
                            "asynchronous")
    group.add_argument("--clock-every", type=int, default=None,
                       help="with --backend ray: local updates per clock (push, wait, pull); "
                            "default: a tenth of a node's epoch")
    group.add_argument("--checkpoint",
                       help="checkpoint file, written on Ctrl-C and every --checkpoint-every "
                            "epochs (default: hogwild-PROBLEM-checkpoint.npz)")
    group.add_argument("--checkpoint-every", type=int, default=None,
                       help="also checkpoint every this many epochs and at the end")
    group.add_argument("--resume", default=None,
                       help="continue the run saved in this checkpoint (same data and "
                            "--seed); --epochs is the total")
    group.add_argument("--json", action="store_true",
                       help="print one JSON result on stdout instead of the text report")
    parser.set_defaults(checkpoint=f"hogwild-{problem}-checkpoint.npz",
                        **_problem_defaults(problem))


def _staleness(text):
    """--staleness as an int >= 0, or None for inf (asynchronous)."""
    staleness = text.strip().lower()
    if staleness in ("inf", "infinity", "none"):
        return None
    if staleness.isdigit():
        return int(staleness)
    raise HogwildError(f"--staleness: expected an integer >= 0 or inf, got {text!r}")


def _distributed(args):
    """The SSP settings of --backend ray (None for the other backends)."""
    if args.backend != "ray":
        return None
    return {"nodes": args.nodes, "staleness": _staleness(args.staleness),
            "clock_every": args.clock_every, "address": args.ray_address}


# Integer options and their bounds (None: unbounded), checked before any work, on
# every backend, so that a bad value is named even where the option is unused.
INT_OPTIONS = {"seed": (0, None), "terminal_seed": (0, None), "split_seed": (0, None),
               "streams": (1, None), "device": (0, None), "nodes": (1, None),
               "clock_every": (1, None), "checkpoint_every": (1, None),
               "shuffle_block": (1, 2**31 - 1), "grid": (1, 2**15),
               "jumbo_rank": (1, 2**15), "labels": (2, 2**15), "rounds": (1, None)}


def _check_numbers(args):
    """Every numeric option within its bounds (NaN and inf refused), or one line
    naming the option."""
    for name, (low, high) in INT_OPTIONS.items():
        if getattr(args, name, None) is not None:
            check_int("--" + name.replace("_", "-"), getattr(args, name), low, high)
    if getattr(args, "staleness", None) is not None:
        _staleness(args.staleness)
    if getattr(args, "test_fraction", None) is not None:  # also where jumbo data ignores it
        from hogwild.datasets.ratings import check_split
        check_split(args.test_fraction, args.split)
    for name in ("unary", "jumbo_noise"):
        value = getattr(args, name, None)
        if value is not None and not 0 <= value < float("inf"):
            raise HogwildError(f"--{name.replace('_', '-')} must be a finite number >= 0, "
                               f"got {value!r}")


def _training(args):
    """The TrainingConfig fields of the shared options (the estimators' parameters
    of the same names)."""
    return {name: getattr(args, name) for name in TRAINING_OPTIONS if name != "distributed"} \
        | {"distributed": _distributed(args)}


def _controls(args):
    """The RunControls fields of the shared options (the CLI checkpoints on Ctrl-C
    only, unless --checkpoint-every is given)."""
    return {"checkpoint": args.checkpoint, "checkpoint_every": args.checkpoint_every,
            "resume": args.resume}


def _add_mc_parser(problems, cores, rating_datasets):
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
    mc.add_argument("--test-fraction", type=float, default=0.2,
                    help="ratings held out for testing (default: 0.2)")
    mc.add_argument("--split", default="rating",
                    help="rating (random ratings) or user (per-user holdout); default: rating")
    mc.add_argument("--split-seed", type=int, default=0,
                    help="seed of the train/test split (default: 0)")
    mc.add_argument("--rank", type=int, default=32, help="factors per row (default: 32)")
    mc.add_argument("--model", default="biased",
                    help="biased (default: mean + user/item biases + L_u . R_v, regularised "
                         "per rating, as Surprise's SVD) or paper (the Hogwild! paper's "
                         "L_u . R_v with a degree-scaled regulariser, no biases)")
    mc.add_argument("--reg", type=float, default=None,
                    help="mu (default: 0.06 biased, per rating; 10 paper, per row)")
    mc.add_argument("--init-scale", type=float, default=None,
                    help="factors start N(0, s^2) (default: 0.03 biased, 0.1 paper)")
    mc.add_argument("--bias-reg", type=float, default=None, help="mu of the biases (default: reg)")
    mc.add_argument("--grid", type=int, default=None,
                    help="blocks per side for --scheduler blocked (default: 8, or 2 x workers)")
    mc.add_argument("--jumbo-rank", type=int, default=10,
                    help="planted rank of jumbo: data (default: 10)")
    mc.add_argument("--jumbo-noise", type=float, default=0.5,
                    help="noise of jumbo: data, the best achievable RMSE (default: 0.5)")
    mc.add_argument("--factor-dtype", default="float32",
                    help="float32, or float16 to store the factors in half precision "
                         "(--backend gpu only; default: float32)")
    mc.add_argument("--save", help="write the fitted model to this .npz file")
    _add_training_options(mc, "mc", cores)


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif")


def _add_cuts_parser(problems, cores):
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
    cuts.add_argument("--labels", type=int, default=2, help="number of labels D (default: 2)")
    cuts.add_argument("--terminals", default=None,
                      help="graphs: 'random' (default; one vertex per label drawn by "
                           "--terminal-seed), 'random:K' (K per label) or 'ID:LABEL,ID:LABEL,...' "
                           "with the file's vertex ids. Images: 'auto' (default; darkest "
                           "pixels label 0 ... brightest the last) or a seed image of the same "
                           "size (0 = free, other gray levels = labels in increasing order)")
    cuts.add_argument("--terminal-seed", type=int, default=0,
                      help="seed of random terminals and auto seeds (default: 0)")
    cuts.add_argument("--connectivity", type=int, default=4, help="images: 4 or 8 (default: 4)")
    cuts.add_argument("--unary", type=float, default=1.0,
                      help="images: weight of the seed intensity model against the boundary "
                           "(default: 1; 0 = boundary only)")
    cuts.add_argument("--out", help="write the labels: a PNG for an image, 'id label' lines "
                                    "for a graph")
    _add_training_options(cuts, "cuts", cores)


def _progress_bar(enabled, unit):
    """A tqdm bar over updates on stderr when tqdm is installed (pip install
    hogwild[cli]); the processes backend moves it during epochs too."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=None, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
                disable=None)


def _epoch_line(record, epochs, unit="updates"):
    test = record.metrics.get("test_error")
    test_text = f"  test error {100 * test:6.2f}%" if test is not None else ""
    if "test_rmse" in record.metrics:
        test_text = f"  test RMSE {record.metrics['test_rmse']:.4f}"
    if "rounded_cut" in record.metrics:
        test_text = f"  rounded cut {record.metrics['rounded_cut']:.6g}"
    return (f"epoch {record.epoch:>3}/{epochs}  objective {record.objective:.6f}{test_text}"
            f"  {record.updates_per_s / 1e6:7.3f} M {unit}/s  ({record.seconds:.3f} s)")


def _train_with_progress(args, train, unit="updates"):
    """Run train(callback, progress) under a progress bar over updates, with a line
    per epoch (none with --json)."""
    bar = _progress_bar(enabled=not args.json, unit=unit)

    def report(record):
        if bar is not None:
            bar.write(_epoch_line(record, args.epochs, unit), file=sys.stdout)
        elif not args.json:
            print(_epoch_line(record, args.epochs, unit), flush=True)

    def progress(done, total):
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        train(report, progress)
    finally:
        if bar is not None:
            bar.close()


def _history(history):
    return [{"epoch": r.epoch, "step": r.step, "seconds": r.seconds,
             "objective": r.objective, **r.metrics} for r in history]


def run_svm(args):
    from hogwild.datasets.registry import load_svm_data
    from hogwild.problems.sparse_svm import SparseSVM

    started = time.perf_counter()
    train, test = load_svm_data(args.data, args.test)
    model = SparseSVM(loss=args.loss, reg=args.reg, fit_intercept=args.fit_intercept,
                      **_training(args))
    _train_with_progress(args, lambda report, progress: model.fit(
        train.X, train.y, eval_set=(test.X, test.y) if test else None, callback=report,
        progress=progress, **_controls(args)))
    if args.save:
        model.save(args.save)
    history = model.history_
    update_seconds = sum(r.seconds for r in history)
    updates = sum(r.updates for r in history)
    result = {
        "problem": "svm", "data": str(args.data), "n_samples": train.X.shape[0],
        "n_features": train.X.shape[1], "nnz": int(train.X.nnz), "loss": args.loss,
        "reg": args.reg, "fit_intercept": args.fit_intercept,
        "intercept": float(model.intercept_[0]), "step": model.step_, "decay": args.decay,
        "schedule": args.step_schedule,
        "scheduler": args.scheduler, "backend": args.backend, "workers": model.workers_,
        "distributed": model.distributed_,
        "startup_seconds": model.startup_seconds_, "epochs": args.epochs,
        "seed": args.seed, "objective": history[-1].objective,
        "train_error": 1.0 - model.score(train.X, train.y),
        "test_error": history[-1].metrics.get("test_error"),
        "update_seconds": update_seconds, "updates_per_s": updates / update_seconds,
        "nonzeros_per_s": args.epochs * train.X.nnz / update_seconds,
        "wall_seconds": time.perf_counter() - started,
        "history": _history(history),
    }
    if args.json:
        print(json.dumps(result))
        return
    test_text = (f", test error {100 * result['test_error']:.2f}%"
                 if result["test_error"] is not None else "")
    print(f"done: {args.scheduler} x {model.workers_} workers on {args.data} "
          f"({train.X.shape[0]} x {train.X.shape[1]}, {train.X.nnz} nonzeros): "
          f"objective {result['objective']:.6f}, train error "
          f"{100 * result['train_error']:.2f}%{test_text}; "
          f"{result['updates_per_s'] / 1e6:.2f} M updates/s, "
          f"{result['nonzeros_per_s'] / 1e6:.1f} M nonzeros/s in the update phase "
          f"({update_seconds:.2f} s), {result['wall_seconds']:.2f} s wall" +
          (f"; model saved to {args.save}" if args.save else ""))


def _mc_data(args):
    """(train, test, description, ratings stored in random order?)."""
    from hogwild.datasets.jumbo import make_jumbo, parse_jumbo_spec
    from hogwild.datasets.ratings import read_ratings, split_ratings
    from hogwild.datasets.registry import load_ratings

    if args.data.startswith("jumbo:"):
        rows, cols, nnz = parse_jumbo_spec(args.data)
        train, test, info = make_jumbo(rows, cols, nnz, rank=args.jumbo_rank,
                                       noise=args.jumbo_noise, progress=not args.json)
        return train, test, (f"planted rank {info['rank']}, noise {info['noise']:g} (the best "
                             f"achievable RMSE)"), True
    ratings = load_ratings(args.data)
    if args.test is not None:
        return ratings, read_ratings(args.test), f"test file {args.test}", False
    train, test = split_ratings(ratings, args.test_fraction, args.split_seed, args.split)
    return train, test, (f"{args.split} split {1 - args.test_fraction:.0%}/"
                         f"{args.test_fraction:.0%}, seed {args.split_seed}"), False


def run_mc(args):
    from hogwild.problems.matrix_completion import MatrixFactorization

    started = time.perf_counter()
    train, test, split_text, stored_random = _mc_data(args)
    model = MatrixFactorization(
        rank=args.rank, model=args.model, reg=args.reg, init_scale=args.init_scale,
        bias_reg=args.bias_reg, grid=args.grid, shuffle_ratings=not stored_random,
        factor_dtype=args.factor_dtype, **_training(args))
    _train_with_progress(args, lambda report, progress: model.fit(
        train, eval_set=test, callback=report, progress=progress, **_controls(args)),
        unit="ratings")
    if args.save:
        model.save(args.save)
    history = model.history_
    update_seconds = sum(r.seconds for r in history)
    result = {
        "problem": "mc", "data": str(args.data), "split": split_text,
        "n_ratings": len(train), "n_test": len(test), "n_users": len(model.user_ids_),
        "n_items": len(model.item_ids_), "rank": args.rank, "model": model.model,
        "reg": model.reg if model.reg is not None else None, "step": model.step_,
        "decay": args.decay, "scheduler": args.scheduler, "backend": args.backend,
        "workers": model.workers_, "distributed": model.distributed_,
        "startup_seconds": model.startup_seconds_,
        "epochs": args.epochs, "seed": args.seed, "objective": history[-1].objective,
        "test_rmse": history[-1].metrics["test_rmse"], "update_seconds": update_seconds,
        "ratings_per_s": sum(r.updates for r in history) / update_seconds,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "wall_seconds": time.perf_counter() - started, "history": _history(history),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"done: {args.scheduler} x {model.workers_} workers, {model.model} rank {args.rank} "
          f"on {args.data} ({len(train):,} ratings, {result['n_users']:,} users x "
          f"{result['n_items']:,} items; {split_text}): test RMSE {result['test_rmse']:.4f}; "
          f"{result['ratings_per_s'] / 1e6:.2f} M ratings/s in the update phase "
          f"({update_seconds:.2f} s), {result['wall_seconds']:.2f} s wall, peak memory "
          f"{result['peak_rss_bytes'] / 2**20:.0f} MiB" +
          (f"; model saved to {args.save}" if args.save else ""))


def _graph_terminals(spec, n_labels, ids, seed):
    """{vertex index: label} from --terminals for a graph (see its help)."""
    spec = spec or "random"
    if spec == "random" or spec.startswith("random:"):
        per_label = 1
        if spec != "random":
            tail = spec[len("random:"):]
            per_label = int(tail) if tail.isdigit() and int(tail) > 0 else 0
            if per_label < 1:
                raise HogwildError(f"--terminals {spec!r}: expected random:K with K >= 1")
        if per_label * n_labels > ids.size:
            raise HogwildError(f"--terminals {spec!r}: {per_label * n_labels} terminals but "
                               f"the graph has {ids.size} vertices")
        from hogwild.problems.graph_cuts import random_terminals
        return random_terminals(ids.size, n_labels, per_label, seed)
    index = {int(vertex_id): i for i, vertex_id in enumerate(ids)}
    terminals = {}
    for item in spec.split(","):
        vertex, _, label = item.strip().partition(":")
        if not (vertex.strip().isdigit() and label.strip().isdigit()):
            raise HogwildError(f"--terminals: expected ID:LABEL, got {item.strip()!r}")
        if int(vertex) not in index:
            raise HogwildError(f"--terminals: vertex {vertex.strip()} is not in the graph")
        given = terminals.setdefault(index[int(vertex)], int(label))
        if given != int(label):
            raise HogwildError(f"--terminals: vertex {int(vertex)} is given two labels, "
                               f"{given} and {int(label)}")
    return terminals


def run_cuts(args):
    from hogwild.datasets.registry import load_graph
    from hogwild.problems.graph_cuts import (cut_weight, exact_two_label_cut, multiway_cut,
                                             nearest_terminal_labels)
    from hogwild.problems import segmentation

    started = time.perf_counter()
    n_labels = args.labels  # bounded by _check_numbers
    fit_options = dict(config=TrainingConfig(**_training(args)), **_controls(args))
    result = {"problem": "cuts", "data": str(args.data), "labels": n_labels,
              "scheduler": args.scheduler, "backend": args.backend, "epochs": args.epochs,
              "seed": args.seed}
    image_input = str(args.data).lower().endswith(IMAGE_SUFFIXES)
    if image_input:
        image = segmentation.read_gray(args.data)
        if args.terminals in (None, "auto"):
            seeds = segmentation.auto_seeds(image, n_labels, seed=args.terminal_seed)
        else:
            seeds = segmentation.read_seeds(args.terminals, image.shape)
        holder = {}
        _train_with_progress(args, lambda report, progress: holder.update(zip(
            ("labels", "fit"), segmentation.segment(
                image, seeds, connectivity=args.connectivity, unary=args.unary,
                callback=report, progress=progress, **fit_options))), unit="edges")
        labels, fit = holder["labels"], holder["fit"]
        n_edges = fit.history[0].updates  # pixel links and intensity links
        result.update(width=image.shape[1], height=image.shape[0],
                      seed_pixels=int((seeds >= 0).sum()))
        if args.out:
            segmentation.write_labels(labels, args.out)
    else:
        n, u, v, w, ids = load_graph(args.data, seed=args.terminal_seed)
        terminals = _graph_terminals(args.terminals, n_labels, ids, args.terminal_seed)
        holder = {}
        _train_with_progress(args, lambda report, progress: holder.update(fit=multiway_cut(
            n, u, v, w, terminals, n_labels, callback=report, progress=progress,
            **fit_options)), unit="edges")
        fit = holder["fit"]
        n_edges = u.size
        result.update(vertices=n, terminals=len(terminals), baseline_cut=cut_weight(
            u, v, w.astype(np.float32), nearest_terminal_labels(n, u, v, terminals)))
        if n_labels == 2:
            result["exact_min_cut"] = exact_two_label_cut(n, u, v, w, terminals)
        if args.out:
            with atomic_file(args.out, "w") as out:
                out.writelines(f"{vertex_id} {label}\n"
                               for vertex_id, label in zip(ids.tolist(), fit.labels.tolist()))
    history = fit.history
    update_seconds = sum(r.seconds for r in history)
    result.update(edges=int(n_edges), workers=fit.workers, cut=fit.cut,
                  relaxation=fit.relaxation, setup_seconds=fit.setup_seconds,
                  update_seconds=update_seconds,
                  edges_per_s=sum(r.updates for r in history) / update_seconds,
                  wall_seconds=time.perf_counter() - started, out=args.out,
                  history=_history(history))
    if args.json:
        print(json.dumps(result))
        return
    references = []
    if result.get("exact_min_cut") is not None:
        references.append(f"exact minimum cut {result['exact_min_cut']:.6g} (SciPy maximum flow)")
    if "baseline_cut" in result:
        references.append(f"nearest-terminal baseline {result['baseline_cut']:.6g}")
    print(f"done: {args.scheduler} x {fit.workers} workers, {n_labels} labels on {args.data} "
          f"({n_edges:,} edges): rounded cut {fit.cut:.6g}"
          + (f" ({'; '.join(references)})" if references else "")
          + f", relaxation {fit.relaxation:.6g}; {result['edges_per_s'] / 1e6:.2f} M edges/s "
          f"in the update phase ({update_seconds:.2f} s), {result['wall_seconds']:.2f} s wall"
          + (f"; labels written to {args.out}" if args.out else ""))


def sparsity(args):
    from hogwild.structure import Supports
    from hogwild.schedulers.conflicts import reading, sparsity_stats
    from hogwild.errors import choose

    choose(("svm", "mc", "cuts"), args.problem, "problem")
    if args.problem == "svm":
        from hogwild.datasets.registry import DEFAULT_SVM_DATASET, load_svm_data
        data = args.data or DEFAULT_SVM_DATASET
        supports = Supports.from_csr(load_svm_data(data)[0].X)
    elif args.problem == "mc":
        from hogwild.datasets.registry import load_ratings
        data = args.data or "ml-1m"
        ratings = load_ratings(data)
        supports = Supports.from_keys(np.unique(ratings.users, return_inverse=True)[1],
                                      np.unique(ratings.items, return_inverse=True)[1])
    else:
        from hogwild.datasets.registry import load_graph
        data = args.data or "snap-facebook-combined"
        n, u, v, _, _ = load_graph(data)
        supports = Supports.from_edges(n, u, v)
    stats = sparsity_stats(supports)
    stats.update(problem=args.problem, data=data, reading=reading(stats))
    if args.json:
        print(json.dumps(stats))
        return
    how = "exact" if stats["rho_exact"] else f"max over {stats['rho_samples']:,} sampled samples"
    print(f"{args.problem} on {data}: {stats['samples']:,} samples, "
          f"{stats['coordinates']:,} coordinates\n"
          f"  Omega (largest support)                {stats['omega']}\n"
          f"  Delta (most samples on one coordinate) {stats['delta']:.4f}\n"
          f"  rho   (most conflicts of one sample)   {stats['rho']:.4f} ({how})\n"
          f"  {stats['reading']}")


def download(args):
    from hogwild.datasets.registry import download_dataset

    path = download_dataset(args.name, url=args.url, sha256=args.sha256)
    print(f"{args.name}: ratings in {path}")


def list_datasets(args):
    from hogwild.datasets.ratings import read_ratings
    from hogwild.datasets.registry import (GRAPH_DATASETS, RATINGS_DATASETS, SVM_DATASETS,
                                           load_graph, load_svm_data)
    from hogwild.datasets.svmlight import cached_files
    from hogwild.paths import cache_dir, shared_data_dir

    print(f"shared data folder: {shared_data_dir()} (set HOGWILD_DATA to change)")
    print(f"cache folder: {cache_dir()} (set HOGWILD_CACHE_DIR to change)")
    print(f"{'name':<15} {'where':<8} {'train rows x features':<24} {'nonzeros':>10} "
          f"{'test rows':>10}  description")
    for spec in SVM_DATASETS.values():
        if not spec.available():
            print(f"{spec.name:<15} {spec.where:<8} {'(absent)':<24} {'':>10} {'':>10}  "
                  f"{spec.description}")
            continue
        train, test = load_svm_data(spec.name)
        shape = f"{train.X.shape[0]} x {train.X.shape[1]}"
        print(f"{spec.name:<15} {spec.where:<8} {shape:<24} {train.X.nnz:>10} "
              f"{test.X.shape[0]:>10}  {spec.description}")
    print(f"\n{'rating data':<15} {'where':<10} {'ratings':>11} {'users':>8} {'items':>7}  "
          "description")
    for spec in RATINGS_DATASETS.values():
        path = spec.locate()
        if path is None:
            print(f"{spec.name:<15} {'(absent)':<10} {'':>11} {'':>8} {'':>7}  "
                  f"{spec.description}; hogwild download {spec.name}")
            continue
        where = "downloaded" if path == spec.downloaded_path() else "shared"
        ratings = read_ratings(path)
        print(f"{spec.name:<15} {where:<10} {len(ratings):>11,} "
              f"{np.unique(ratings.users).size:>8,} {np.unique(ratings.items).size:>7,}  "
              f"{spec.description}")
    print(f"\n{'graph':<23} {'where':<10} {'vertices':>9} {'edges':>9}  description")
    for name, (relative, description) in GRAPH_DATASETS.items():
        if not (shared_data_dir() / relative).is_file():
            print(f"{name:<23} {'(absent)':<10} {'':>9} {'':>9}  {description}")
            continue
        n, u, _, _, _ = load_graph(name)
        print(f"{name:<23} {'shared':<10} {n:>9,} {u.size:>9,}  {description}")
    print()
    entries = cached_files()
    size = sum(entry["bytes"] for entry in entries)
    print(f"binary cache: {len(entries)} parsed files, {size / 2**20:.1f} MiB in "
          f"{cache_dir() / 'datasets'}")
    for entry in sorted(entries, key=lambda entry: entry["source"]):
        shape = f"{entry['rows']} x {entry['max_index'] + 1}"
        base = "zero" if entry["zero_based"] else "one"
        print(f"  {shape:<24} {entry['nnz']:>10} nonzeros, {base}-based: {entry['source']}")


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
        _check_numbers(args)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
