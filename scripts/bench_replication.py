"""Replication benchmark, judged by time to accuracy: for each problem, how soon a
run first reaches the final test metric of the 1-worker shared run (20 epochs),
per replication mode and worker count, with epochs to that target and time per
epoch apart (hardware against statistical efficiency, as DimmWitted separates
them). Prints one JSON document (also --out; --markdown writes the tables, --plot
a figure of test metric against update time per configuration).

    python scripts/bench_replication.py            # full run (several minutes here)
    python scripts/bench_replication.py --quick    # a smoke run on small generated data

Method. Every configuration runs once per round with the round's seed, rounds
interleave the configurations, and each figure is the median over rounds. The
target is the median over rounds of the 1-worker shared run's final metric (lower
is better for all three: test error, test RMSE, rounded cut). Time is the update
phase (the engine's per-epoch timer, which includes merging the replicas).
"""
import statistics
import sys

import numpy as np

from hogwild.bench.machine import benchmark_arguments, machine_lines, publish, report_header
from hogwild.bench.workloads import cuts_run, mc_run, svm_run
from hogwild.datasets.jumbo import make_jumbo
from hogwild.datasets.ratings import split_ratings
from hogwild.datasets.registry import (RATINGS_DATASETS, SVM_DATASETS, load_graph,
                                       load_ratings, load_svm_data)
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.paths import shared_data_dir
from hogwild.problems.graph_cuts import random_terminals

# (label, workers, replication, merge_every): the baseline first
CONFIGS = (("shared-1", 1, "shared", None), ("shared-2", 2, "shared", None),
           ("worker-2", 2, "worker", None), ("worker-2-merge-4096", 2, "worker", 4096))


def time_to_target(result, target):
    """(update seconds, epochs) when the run's metric first reaches ``target``, or
    (None, None) when it never does."""
    elapsed = 0.0
    for epoch, (seconds, value) in enumerate(zip(result["seconds_per_epoch"],
                                                 result["metric_per_epoch"]), 1):
        elapsed += seconds
        if value <= target:
            return elapsed, epoch
    return None, None


def bench(name, description, build, rounds, seed):
    """build(replication, merge_every) -> run(scheduler, workers, backend, seed)."""
    runs = {label: build(replication, merge_every)
            for label, _, replication, merge_every in CONFIGS}
    results = {label: [] for label, *_ in CONFIGS}
    for round_ in range(rounds):
        for label, workers, _, _ in CONFIGS:
            results[label].append(runs[label]("hogwild", workers, "threads", seed + round_))
        print(f"  {name}: round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    target = statistics.median(r["metric_value"] for r in results["shared-1"])
    summary = {}
    for label, values in results.items():
        reached = [time_to_target(r, target) for r in values]
        seconds = [s for s, _ in reached if s is not None]
        summary[label] = {
            "final_metric": statistics.median(r["metric_value"] for r in values),
            "updates_per_s": statistics.median(r["updates_per_s"] for r in values),
            "seconds_per_epoch": statistics.median(
                statistics.median(r["seconds_per_epoch"]) for r in values),
            "rounds_reaching_target": len(seconds),
            "time_to_target": statistics.median(seconds) if seconds else None,
            "epochs_to_target": statistics.median(e for _, e in reached if e is not None)
            if seconds else None,
            "metric_per_epoch": values[0]["metric_per_epoch"],
            "seconds_per_epoch_first_round": values[0]["seconds_per_epoch"]}
    base = summary["shared-1"]["time_to_target"]
    for result in summary.values():
        reached = result["time_to_target"]
        result["sooner_than_shared_1"] = base / reached if base and reached else None
    return {"workload": name, "description": description, "rounds": rounds,
            "metric": results["shared-1"][0]["metric"], "target": target,
            "results": summary}


def workloads(quick, seed):
    """(name, description, build) for each workload whose data is here."""
    epochs = 3 if quick else 20
    if quick:
        X, y = make_sparse_classification(3000, 2000, nnz_per_row=20, seed=seed)
        train, test, _ = make_jumbo(1000, 800, 50_000, rank=4, noise=0.5, seed=seed,
                                    folder=None)
        return [("svm-synthetic", "3,000 x 2,000 synthetic rows, hinge, 3 epochs",
                 lambda r, m: svm_run(X[:2400], y[:2400], X[2400:], y[2400:], epochs,
                                      replication=r, merge_every=m)),
                ("mc-jumbo", "1,000 x 800 planted rank 4, rank 8, 3 epochs",
                 lambda r, m: mc_run(train, test, 8, epochs, replication=r, merge_every=m))]
    found = []
    for data in ("imdb-aclimdb", "news20-bydate"):
        if not SVM_DATASETS[data].available():
            print(f"{data}: not in the shared data folder, left out", file=sys.stderr)
            continue
        train, test = load_svm_data(data)
        found.append((f"svm-{data}", f"{data}, hinge, reg 1e-4, 20 epochs",
                      lambda r, m, train=train, test=test: svm_run(
                          train.X, train.y, test.X, test.y, epochs, replication=r,
                          merge_every=m)))
    if RATINGS_DATASETS["ml-1m"].locate() is not None:
        ratings_train, ratings_test = split_ratings(load_ratings("ml-1m"), 0.2, seed=0)
        found.append(("mc-ml-1m", "MovieLens 1M (80/20, seed 0), biased, rank 32, 20 epochs",
                      lambda r, m: mc_run(ratings_train, ratings_test, 32, epochs,
                                          replication=r, merge_every=m)))
    if (shared_data_dir() / "snap-facebook-combined").is_dir():
        n, u, v, w, _ = load_graph("snap-facebook-combined")
        terminals = random_terminals(n, 8)
        found.append(("cuts-facebook", "snap-facebook-combined, 8 labels, 20 epochs",
                      lambda r, m: cuts_run(n, u, v, w, terminals, 8, epochs,
                                            replication=r, merge_every=m)))
    return found


def markdown(report):
    lines = machine_lines(report)
    for w in report["workloads"]:
        lines += [f"### {w['workload']}: {w['description']} (median of {w['rounds']} "
                  f"rounds; target: {w['metric']} {w['target']:.5g}, the 1-worker shared "
                  "run's final)", "",
                  "| configuration | updates/s | s/epoch | final metric | time to target | "
                  "epochs to target | sooner than shared-1 |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for label, r in w["results"].items():
            reach = (f"{r['time_to_target']:.4g} s" if r["time_to_target"] is not None
                     else "never")
            epochs = r["epochs_to_target"] if r["epochs_to_target"] is not None else "-"
            sooner = (f"{r['sooner_than_shared_1']:.2f}x" if r["sooner_than_shared_1"]
                      else "-")
            lines.append(f"| {label} | {r['updates_per_s'] / 1e6:.2f} M | "
                         f"{r['seconds_per_epoch'] * 1e3:.2f} ms | {r['final_metric']:.5g} | "
                         f"{reach} | {epochs} | {sooner} |")
        lines.append("")
    return "\n".join(lines)


def plot(report, path):
    """Test metric against cumulative update time (first round), one line per
    configuration, one panel per workload."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    count = len(report["workloads"])
    figure, axes = plt.subplots(1, count, figsize=(4.5 * count, 3.5), squeeze=False)
    for ax, w in zip(axes[0], report["workloads"]):
        for label, r in w["results"].items():
            ax.plot(np.cumsum(r["seconds_per_epoch_first_round"]), r["metric_per_epoch"],
                    marker=".", label=label)
        ax.axhline(w["target"], color="gray", linestyle=":", linewidth=1)
        ax.set(title=w["workload"], xlabel="update time (s)", ylabel=w["metric"])
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on small generated data")
    parser.add_argument("--plot", help="also write the figure (PNG; needs matplotlib)")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    report = report_header("bench_replication", args)
    report["workloads"] = [bench(name, description, build, rounds, args.seed)
                           for name, description, build in workloads(args.quick, args.seed)]
    publish(report, markdown, args.out, args.markdown)
    if args.plot:
        plot(report, args.plot)


if __name__ == "__main__":
    main()
