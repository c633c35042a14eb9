"""The ``hogwild`` command line: run example problems and list datasets.

    hogwild run svm [--data NAME|PATH] [--test PATH] [--workers N] ...
    hogwild datasets

Errors caused by the input print one line, ``hogwild: error: ...``, and exit 2;
Ctrl-C exits 130.
"""
import argparse
import json
import sys
import time
import warnings

from hogwild.errors import HogwildError


def _positive_or_auto(text):
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None


def build_parser():
    from hogwild.datasets.registry import DEFAULT_SVM_DATASET, SVM_DATASETS
    from hogwild.engine import usable_cores

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
    svm.add_argument("--workers", type=int, default=None,
                     help=f"worker threads (default: usable cores, here {usable_cores()})")
    svm.add_argument("--epochs", type=int, default=20, help="passes over the data (default: 20)")
    svm.add_argument("--step", type=_positive_or_auto, default="auto",
                     help="initial step size, or 'auto' = 0.2 / mean squared row norm")
    svm.add_argument("--decay", type=float, default=0.9,
                     help="per-epoch step decay (default: 0.9)")
    svm.add_argument("--schedule", default="geometric",
                     help="step schedule: geometric (step * decay^epoch), inverse "
                          "(step / (1 + decay * epoch)) or constant")
    svm.add_argument("--reg", type=float, default=1e-4,
                     help="L2 strength: objective = mean loss + reg/2 ||w||^2 (default: 1e-4)")
    svm.add_argument("--loss", default="hinge", help="hinge or logistic (default: hinge)")
    svm.add_argument("--scheduler", default="hogwild",
                     help="hogwild (lock-free), locked (a spinlock per update) or serial")
    svm.add_argument("--shuffle-block", type=int, default=16,
                     help="shuffle in runs of this many rows (default: 16; 1 = uniform)")
    svm.add_argument("--seed", type=int, default=None, help="random seed")
    svm.add_argument("--json", action="store_true",
                     help="print one JSON result on stdout instead of the text report")

    commands.add_parser("datasets", help="list available datasets and their shapes")
    return parser


def _progress(total, enabled):
    """A tqdm bar over epochs on stderr when tqdm is installed (pip install hogwild[cli])."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="epoch", file=sys.stderr, leave=False, disable=None)


def _epoch_line(record, epochs):
    test = record.metrics.get("test_error")
    test_text = f"  test error {100 * test:6.2f}%" if test is not None else ""
    return (f"epoch {record.epoch:>3}/{epochs}  objective {record.objective:.6f}{test_text}"
            f"  {record.updates_per_s / 1e6:7.3f} M updates/s  ({record.seconds:.3f} s)")


def run_svm(args):
    from hogwild.datasets.registry import load_svm_data
    from hogwild.problems.sparse_svm import SparseSVM

    started = time.perf_counter()
    train, test = load_svm_data(args.data, args.test)
    model = SparseSVM(loss=args.loss, reg=args.reg, epochs=args.epochs, step=args.step,
                      decay=args.decay, step_schedule=args.schedule, workers=args.workers,
                      scheduler=args.scheduler, shuffle_block=args.shuffle_block,
                      seed=args.seed)
    bar = _progress(args.epochs, enabled=not args.json)

    def report(record):
        if bar is not None:
            bar.update(1)
            bar.write(_epoch_line(record, args.epochs), file=sys.stdout)
        elif not args.json:
            print(_epoch_line(record, args.epochs), flush=True)

    try:
        model.fit(train.X, train.y, eval_set=(test.X, test.y) if test else None,
                  callback=report)
    finally:
        if bar is not None:
            bar.close()
    history = model.history_
    update_seconds = sum(r.seconds for r in history)
    updates = sum(r.updates for r in history)
    result = {
        "problem": "svm", "data": str(args.data), "n_samples": train.X.shape[0],
        "n_features": train.X.shape[1], "nnz": int(train.X.nnz), "loss": args.loss,
        "reg": args.reg, "step": model.step_, "decay": args.decay, "schedule": args.schedule,
        "scheduler": args.scheduler, "workers": model.workers_, "epochs": args.epochs,
        "seed": args.seed, "objective": history[-1].objective,
        "train_error": 1.0 - model.score(train.X, train.y),
        "test_error": history[-1].metrics.get("test_error"),
        "update_seconds": update_seconds, "updates_per_s": updates / update_seconds,
        "nonzeros_per_s": args.epochs * train.X.nnz / update_seconds,
        "wall_seconds": time.perf_counter() - started,
        "history": [{"epoch": r.epoch, "step": r.step, "seconds": r.seconds,
                     "objective": r.objective, **r.metrics} for r in history],
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
          f"({update_seconds:.2f} s), {result['wall_seconds']:.2f} s wall")


def list_datasets(args):
    from hogwild.datasets.registry import SVM_DATASETS, load_svm_data
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


def _dispatch(args):
    try:
        if args.command == "datasets":
            list_datasets(args)
        else:
            run_svm(args)
    except HogwildError as exc:
        print(f"hogwild: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hogwild: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
