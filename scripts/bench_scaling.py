"""Thread-scaling benchmark of the sparse SVM: hogwild, locked and serial at 1 and 2
workers, next to scikit-learn's SGDClassifier, on real text data and large synthetic
text-like sets. Prints one JSON document (also written to --out).

    python scripts/bench_scaling.py               # full run (about 10 minutes here)
    python scripts/bench_scaling.py --quick       # a one-minute smoke run

Method. Throughput is measured on the update phase only (the engine's per-epoch
timer; evaluation excluded). This machine's cores are shared virtual CPUs whose speed
drifts, so every configuration of a dataset runs once per round, rounds interleave
the configurations, and each figure is the median over rounds; ratios are taken
between medians from the same run. SGDClassifier has no per-epoch timer, so its
epoch time is the marginal cost (fit(E epochs) - fit(1 epoch)) / (E - 1), which
leaves out its one-off input conversion (each fit is timed twice and the faster
kept). A pure-compute loop on 1 and 2 threads gives the machine's own ceiling for a
2-worker speedup.
"""
import statistics
import sys

from hogwild.datasets.registry import SVM_DATASETS, load_svm_data
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.bench.machine import (benchmark_arguments, compute_ceiling, describe_machine,
                             machine_lines, publish)
from hogwild.bench.peers import sgd_classifier_peer
from hogwild.problems.sparse_svm import SparseSVM, as_csr, binary_labels

# (name, scheduler, workers, shuffle_block)
OUR_CONFIGS = (
    ("serial", "serial", 1, 16),
    ("hogwild-1", "hogwild", 1, 16),
    ("hogwild-2", "hogwild", 2, 16),
    ("locked-1", "locked", 1, 16),
    ("locked-2", "locked", 2, 16),
    ("hogwild-uniform-1", "hogwild", 1, 1),
    ("hogwild-uniform-2", "hogwild", 2, 1),
)


def ours(X, y, X_test, y_test, scheduler, workers, block, epochs, reg, step, seed):
    model = SparseSVM(reg=reg, epochs=epochs, step=step, scheduler=scheduler,
                      workers=workers, shuffle_block=block, random_state=seed)
    model.fit(X, y, eval_set=(X_test, y_test))
    history = model.history_
    seconds = sum(r.seconds for r in history)
    return {"samples_per_s": sum(r.updates for r in history) / seconds,
            "objective": history[-1].objective,
            "test_error": history[-1].metrics["test_error"]}


def sgd_classifier(X, y, X_test, y_test, epochs, reg, seed):
    labels, _ = binary_labels(y_test, X_test.shape[0])
    measured = sgd_classifier_peer(X, y, X_test, labels, "hinge", reg, epochs, seed)
    return {"samples_per_s": measured["updates_per_s"], "test_error": measured["test_error"]}


def epochs_to_reach(X, y, X_test, y_test, target_error, max_epochs, reg, step, seed):
    """The first epoch after which hogwild at 1 worker has test error <= target_error
    (same schedule as the timed runs), or None within max_epochs."""
    model = SparseSVM(reg=reg, epochs=max_epochs, step=step, workers=1, random_state=seed)
    model.fit(X, y, eval_set=(X_test, y_test))
    return next((r.epoch for r in model.history_
                 if r.metrics["test_error"] <= target_error + 1e-12), None)


def bench_dataset(name, X, y, X_test, y_test, epochs, rounds, reg, step, seed, with_peer):
    X = as_csr(X)
    runs = {}
    for round_ in range(rounds):
        for label, scheduler, workers, block in OUR_CONFIGS:
            runs.setdefault(label, []).append(
                ours(X, y, X_test, y_test, scheduler, workers, block, epochs, reg, step,
                     seed + round_))
        if with_peer:
            runs.setdefault("sgdclassifier", []).append(
                sgd_classifier(X, y, X_test, y_test, epochs, reg, seed + round_))
        print(f"  {name}: round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    nnz_per_row = X.nnz / X.shape[0]
    results = {}
    for label, values in runs.items():
        rate = statistics.median(v["samples_per_s"] for v in values)
        results[label] = {
            "samples_per_s": rate, "nonzeros_per_s": rate * nnz_per_row,
            "test_error": statistics.median(v["test_error"] for v in values),
            "samples_per_s_per_round": [v["samples_per_s"] for v in values]}
        if "objective" in values[0]:
            results[label]["objective"] = statistics.median(v["objective"] for v in values)
    ratios = {
        "hogwild_2_over_1": results["hogwild-2"]["samples_per_s"]
        / results["hogwild-1"]["samples_per_s"],
        "hogwild_2_over_locked_2": results["hogwild-2"]["samples_per_s"]
        / results["locked-2"]["samples_per_s"],
        "hogwild_uniform_2_over_1": results["hogwild-uniform-2"]["samples_per_s"]
        / results["hogwild-uniform-1"]["samples_per_s"],
    }
    if with_peer:
        ratios["hogwild_1_over_sgdclassifier"] = results["hogwild-1"]["samples_per_s"] \
            / results["sgdclassifier"]["samples_per_s"]
        ratios["test_error_hogwild_1_minus_sgdclassifier"] = \
            results["hogwild-1"]["test_error"] - results["sgdclassifier"]["test_error"]
        # Equal quality: epochs hogwild-1 needs to reach SGDClassifier's test error after
        # `epochs` epochs; its speed ratio scaled by epochs / needed (None: not reached
        # within 3x the epochs).
        needed = epochs_to_reach(X, y, X_test, y_test, results["sgdclassifier"]["test_error"],
                                 3 * epochs, reg, step, seed)
        ratios["hogwild_1_epochs_to_sgdclassifier_error"] = needed
        ratios["hogwild_1_over_sgdclassifier_at_equal_error"] = None if needed is None \
            else ratios["hogwild_1_over_sgdclassifier"] * epochs / needed
    return {"dataset": name, "n_samples": X.shape[0], "n_features": X.shape[1],
            "nnz": int(X.nnz), "epochs": epochs, "rounds": rounds, "reg": reg, "step": step,
            "results": results, "ratios": ratios}


def synthetic(n_samples, n_features, seed):
    X, y = make_sparse_classification(n_samples=n_samples + n_samples // 10,
                                      n_features=n_features, seed=seed)
    return X[:n_samples], y[:n_samples], X[n_samples:], y[n_samples:]


def markdown(report):
    """The report as Markdown tables: one row per configuration and dataset."""
    lines = machine_lines(report)
    for d in report["datasets"]:
        lines += [f"### {d['dataset']} ({d['n_samples']:,} x {d['n_features']:,}, "
                  f"{d['nnz']:,} nonzeros; reg {d['reg']:g}, step {d['step']}, "
                  f"{d['epochs']} epochs, median of {d['rounds']} rounds)", "",
                  "| configuration | samples/s | nonzeros/s | test error | objective |",
                  "|---|---:|---:|---:|---:|"]
        for label, r in d["results"].items():
            objective = f"{r['objective']:.5f}" if "objective" in r else "-"
            lines.append(f"| {label} | {r['samples_per_s'] / 1e6:.2f} M | "
                         f"{r['nonzeros_per_s'] / 1e6:.0f} M | {100 * r['test_error']:.2f}% | "
                         f"{objective} |")
        lines += ["", "Ratios: " + ", ".join(
            f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}"
            for k, v in d["ratios"].items()), ""]
    return "\n".join(lines)


def main(argv=None):
    args = benchmark_arguments(__doc__.split("\n")[0], "a one-minute smoke run").parse_args(argv)
    try:
        import sklearn  # noqa: F401
        with_peer = True
    except ImportError:
        print("scikit-learn not installed: SGDClassifier left out (pip install "
              "hogwild[bench])", file=sys.stderr)
        with_peer = False

    report = {"benchmark": "bench_scaling", "quick": args.quick,
              "machine": describe_machine(("scikit-learn", "liblinear-official")),
              "compute_ceiling_2_over_1": compute_ceiling(0.3 if args.quick else 1.0),
              "datasets": []}
    real = ["a9a"] if args.quick else ["news20-bydate", "imdb-aclimdb"]
    for name in real:
        if not SVM_DATASETS[name].available():
            print(f"{name}: not in the shared data folder, skipped", file=sys.stderr)
            continue
        train, test = load_svm_data(name)
        report["datasets"].append(bench_dataset(
            name, train.X, train.y, test.X, test.y, epochs=3 if args.quick else 10,
            rounds=1 if args.quick else args.rounds, reg=1e-4, step="auto", seed=args.seed,
            with_peer=with_peer))
    sizes = [(20_000, 50_000)] if args.quick else [(1_000_000, 50_000), (1_000_000, 1_000_000)]
    for n_samples, n_features in sizes:
        name = f"synthetic-{n_samples}x{n_features}"
        print(f"{name}: generating", file=sys.stderr, flush=True)
        X, y, X_test, y_test = synthetic(n_samples, n_features, args.seed)
        report["datasets"].append(bench_dataset(
            name, X, y, X_test, y_test, epochs=2 if args.quick else 3,
            rounds=1 if args.quick else args.rounds, reg=1e-6, step="auto", seed=args.seed,
            with_peer=with_peer))
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
