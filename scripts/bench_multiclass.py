"""Multiclass benchmark: SparseSVM's defaults (one-vs-rest hinge in one lock-free
pass) at 1 and 2 workers next to scikit-learn's SGDClassifier (the same objective:
hinge, alpha = reg = 1e-4, one-vs-rest) and LinearSVC (its exact optimum), on
news20-bydate-multiclass (20 groups, TF-IDF) and scikit-learn's embedded digits (10
classes, 64 pixels, 70/30 stratified split; never used to choose a default).
Prints one JSON document (also --out); --plot draws test accuracy against
core-seconds.

    python scripts/bench_multiclass.py            # full run (about 2 minutes here)
    python scripts/bench_multiclass.py --quick    # digits only, one round

Method. Time to an accuracy is the wall-clock time of a whole fit of the first
epoch count k whose test accuracy reaches the target, each side measured the same
way: ours, a default 20-epoch run (the test accuracy after each epoch; the schedule
does not depend on the epochs asked, so its first k epochs are a fit of k epochs),
then, in the same round, a default fit with epochs=k timed from call to return
(input checks, the shuffle, compilation checks, the last epoch's exact objective
included); SGDClassifier's, a fit with max_iter=k and tol=None for each k (its step
schedule does not depend on max_iter either), and its default fit (tol=1e-3,
stopping by itself) timed as a user runs it. The curves' clocks (the plot) are
ours from the start of the 20-epoch fit to each epoch's end less the held-out
evaluation (EpochRecord.metric_seconds). Core-seconds are seconds times the
threads used. The target is the issue's 0.846 on news20 and LinearSVC's accuracy
less 0.01 elsewhere. Rounds interleave
the configurations (this machine drifts); figures are medians over rounds. Each
configuration fits one epoch before the rounds (first_one_epoch_fit_seconds): a
process's first fit loads numba's compiled loops from the cache, about 0.2 s here.
"""
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

from hogwild.bench.figures import panels, save
from hogwild.bench.machine import benchmark_arguments, machine_lines, publish, report_header
from hogwild.datasets.registry import SVM_DATASETS, load_svm_data
from hogwild.problems.sparse_svm import SparseSVM

REG, EPOCHS = 1e-4, 20
SGD_EPOCHS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20)
TARGETS = {"news20-bydate-multiclass": 0.846}  # the issue's; others: LinearSVC's - 0.01


def ours(data, workers, seed):
    """(training seconds after each epoch, test accuracy after each epoch) of one
    default 20-epoch run."""
    X, y, X_test, y_test = data
    clock = []
    started = time.perf_counter()
    model = SparseSVM(workers=workers, random_state=seed)
    model.fit(X, y, eval_set=(X_test, y_test),
              callback=lambda record: clock.append(time.perf_counter()))
    left_out = np.cumsum([r.metric_seconds for r in model.history_])
    return (list(np.array(clock) - started - left_out),
            [1.0 - r.metrics["test_error"] for r in model.history_])


def _int32_indices(X):
    """scikit-learn's sparse solvers take int32 index arrays only."""
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                         shape=X.shape)


def ours_to(data, workers, seed, curve, target):
    """The seconds of a whole default fit of the first epoch count whose accuracy in
    ``curve`` reaches ``target`` (None if none does)."""
    X, y = data[0], data[1]
    k = next((e for e, a in enumerate(curve[1], 1) if a >= target), None)
    if k is None:
        return None
    started = time.perf_counter()
    SparseSVM(workers=workers, epochs=k, random_state=seed).fit(X, y)
    return time.perf_counter() - started


def sgd_curve(data, seed):
    """SGDClassifier after each k of SGD_EPOCHS: (fit seconds, test accuracy)."""
    from sklearn.linear_model import SGDClassifier
    X, y, X_test, y_test = data
    seconds, accuracy = [], []
    for k in SGD_EPOCHS:
        started = time.perf_counter()
        model = SGDClassifier(alpha=REG, max_iter=k, tol=None, random_state=seed).fit(X, y)
        seconds.append(time.perf_counter() - started)
        accuracy.append(model.score(X_test, y_test))
    return seconds, accuracy


def sgd_default(data, seed):
    from sklearn.linear_model import SGDClassifier
    X, y, X_test, y_test = data
    started = time.perf_counter()
    model = SGDClassifier(random_state=seed).fit(X, y)
    return time.perf_counter() - started, model.score(X_test, y_test), int(model.n_iter_)


def linear_svc(data):
    from sklearn.svm import LinearSVC
    X, y, X_test, y_test = data
    started = time.perf_counter()
    model = LinearSVC(C=1.0 / (X.shape[0] * REG)).fit(X, y)
    return time.perf_counter() - started, model.score(X_test, y_test)


def time_to(seconds, accuracy, target):
    """The seconds at the first point reaching the target accuracy, or None."""
    return next((t for t, a in zip(seconds, accuracy) if a >= target), None)


def median_or_none(values):
    return None if None in values else statistics.median(values)


def first_fits(data):
    """One epoch of each before the rounds, timed: a process's first fit loads
    numba's compiled loops from the cache (scikit-learn's first fit its imports);
    later fits in the process do not pay it again."""
    from sklearn.linear_model import SGDClassifier
    X, y = data[0], data[1]
    seconds = {}
    for workers in (1, 2):
        started = time.perf_counter()
        SparseSVM(workers=workers, epochs=1, random_state=0).fit(X, y)
        seconds[f"hogwild-{workers}"] = time.perf_counter() - started
    started = time.perf_counter()
    SGDClassifier(alpha=REG, max_iter=1, tol=None, random_state=0).fit(X, y)
    seconds["sgdclassifier-1"] = time.perf_counter() - started
    return seconds


def bench(name, data, rounds, seed):
    first = first_fits(data)
    exact = [linear_svc(data)]
    target = TARGETS.get(name, exact[0][1] - 0.01)
    runs = {"hogwild-1": [], "hogwild-2": [], "sgdclassifier-1": []}
    whole_fits = {"hogwild-1": [], "hogwild-2": []}
    defaults = []
    for round_ in range(rounds):
        for workers in (1, 2):
            curve = ours(data, workers, seed + round_)
            runs[f"hogwild-{workers}"].append(curve)
            whole_fits[f"hogwild-{workers}"].append(
                ours_to(data, workers, seed + round_, curve, target))
        runs["sgdclassifier-1"].append(sgd_curve(data, seed + round_))
        defaults.append(sgd_default(data, seed + round_))
        exact.append(linear_svc(data))
        print(f"  {name}: round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    exact_accuracy = exact[0][1]
    results = {}
    for label, curves in runs.items():
        threads = 2 if label.endswith("-2") else 1
        reached = whole_fits.get(label) or [time_to(s, a, target) for s, a in curves]
        to_target = median_or_none(reached)
        epochs = SGD_EPOCHS if label.startswith("sgd") else range(1, EPOCHS + 1)
        results[label] = {
            "threads": threads,
            "final_accuracy": statistics.median(a[-1] for _, a in curves),
            "seconds_to_target": to_target,
            "core_seconds_to_target": None if to_target is None else to_target * threads,
            "epochs_to_target": median_or_none(
                [next((e for e, a in zip(epochs, acc) if a >= target), None)
                 for _, acc in curves]),
            "reached_target_in_rounds": sum(t is not None for t in reached),
            # the first round's curve, for the plot: (core-seconds, accuracy) per epoch
            "curve": [[t * threads, a] for t, a in zip(*curves[0])],
        }
    results["sgdclassifier-default"] = {
        "threads": 1, "final_accuracy": statistics.median(d[1] for d in defaults),
        "fit_seconds": statistics.median(d[0] for d in defaults),
        "epochs_run": statistics.median(d[2] for d in defaults)}
    results["linearsvc"] = {"threads": 1, "final_accuracy": exact_accuracy,
                            "fit_seconds": statistics.median(e[0] for e in exact[1:])}

    def per_core(slow, fast):
        a, b = results[slow]["core_seconds_to_target"], results[fast]["core_seconds_to_target"]
        return a / b if a and b else None

    ratios = {"sgdclassifier_over_hogwild_1_per_core": per_core("sgdclassifier-1", "hogwild-1"),
              "sgdclassifier_over_hogwild_2_per_core": per_core("sgdclassifier-1", "hogwild-2"),
              "hogwild_1_over_2_seconds": (results["hogwild-1"]["seconds_to_target"] or 0)
              / (results["hogwild-2"]["seconds_to_target"] or float("inf"))}
    return {"dataset": name, "n_train": int(data[0].shape[0]), "n_test": int(data[2].shape[0]),
            "n_features": int(data[0].shape[1]), "n_classes": int(np.unique(data[1]).size),
            "rounds": rounds, "target_accuracy": target, "results": results,
            "first_one_epoch_fit_seconds": first,
            "ratios": {k: v for k, v in ratios.items() if v}}


def digits(seed=0):
    """scikit-learn's embedded digits, pixels scaled to [0, 1], split 70/30 by class."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        (X / 16).astype(np.float32), y, test_size=0.3, random_state=seed, stratify=y)
    return (_int32_indices(sp.csr_matrix(X_train)), y_train,
            _int32_indices(sp.csr_matrix(X_test)), y_test)


def markdown(report):
    lines = machine_lines(report)
    for d in report["datasets"]:
        lines += [f"### {d['dataset']} ({d['n_train']:,} training / {d['n_test']:,} test rows, "
                  f"{d['n_features']:,} features, {d['n_classes']} classes; median of "
                  f"{d['rounds']} rounds)", "",
                  f"Target: test accuracy >= {d['target_accuracy']:.4f}.", "",
                  "| configuration | threads | final accuracy | s to target | core-s to target "
                  "| epochs to target | fit s |", "|---|---:|---:|---:|---:|---:|---:|"]
        for label, r in d["results"].items():
            to_target = r.get("seconds_to_target")
            cells = ["-", "-", "-"] if "fit_seconds" in r else (
                ["not reached"] * 3 if to_target is None else
                [f"{to_target:.4f}", f"{r['core_seconds_to_target']:.4f}",
                 f"{r['epochs_to_target']:g}"])
            fit = f"{r['fit_seconds']:.4f}" if "fit_seconds" in r else "-"
            lines.append(f"| {label} | {r['threads']} | {r['final_accuracy']:.4f} | "
                         + " | ".join(cells) + f" | {fit} |")
        lines += ["", "Ratios: " + ", ".join(f"{k} = {v:.2f}" for k, v in d["ratios"].items()),
                  ""]
    return "\n".join(lines)


def plot(report, path):
    from matplotlib.ticker import NullFormatter
    datasets = report["datasets"]
    figure, axes = panels(len(datasets))
    for axis, d in zip(axes, datasets):
        for label, r in d["results"].items():
            if "curve" in r:
                seconds, accuracy = zip(*r["curve"])
                axis.plot(seconds, accuracy, marker=".", label=label)
        axis.axhline(d["target_accuracy"], color="gray", linewidth=0.8)
        axis.set_xscale("log")
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set(title=f"{d['dataset']}: {d['n_classes']} classes",
                 xlabel="core-seconds of training (log)", ylabel="test accuracy")
        axis.legend(fontsize=8)
    save(figure, path)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "digits only, one round")
    parser.add_argument("--plot", help="also draw test accuracy against core-seconds here")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", module="sklearn")  # LinearSVC's convergence notes
    report = {**report_header("bench_multiclass", args, ("scikit-learn",)), "datasets": []}
    rounds = 1 if args.quick else args.rounds
    if not args.quick:
        name = "news20-bydate-multiclass"
        if SVM_DATASETS[name].available():
            train, test = load_svm_data(name)
            data = (_int32_indices(train.X), train.y, _int32_indices(test.X), test.y)
            report["datasets"].append(bench(name, data, rounds, args.seed))
        else:
            print(f"{name}: not in the shared data folder: left out", file=sys.stderr)
    report["datasets"].append(bench("digits", digits(), rounds, args.seed))
    publish(report, markdown, args.out, args.markdown)
    if args.plot:
        plot(report, args.plot)


if __name__ == "__main__":
    main()
