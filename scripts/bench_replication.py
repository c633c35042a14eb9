"""Replication benchmark, judged by time to accuracy: for each problem, how soon a
run first reaches the final test metric of the 1-worker shared run (20 epochs),
per replication mode, scheduler and worker count, with epochs to that target and
time per epoch apart (hardware against statistical efficiency, as DimmWitted
separates them), and the peers (scikit-learn's SGDClassifier, LIBLINEAR, LIBMF)
where they have the metric. Prints one JSON document (also --out; --markdown
writes the tables, --plot a figure of test metric against update time).

    python scripts/bench_replication.py            # full run (about 10 minutes here)
    python scripts/bench_replication.py --quick    # a smoke run on small generated data
    python scripts/bench_replication.py --only cuts --rounds 9   # one workload

Method. Every configuration runs once per round with the round's seed, rounds
interleave the configurations, and each figure is the median over rounds. The
target is the median over rounds of the 1-worker shared run's final metric (lower
is better for all three: test error, test RMSE, rounded cut). Time is the update
phase (the engine's per-epoch timer, which includes merging the replicas). A
configuration's speedup is its median time to target against shared-1's, and
"sooner to the objective" the same for the 1-worker run's final training
objective (less noisy than a per-epoch test metric); "rate x" is its median
updates/s against shared-1's, the figure for the graph cuts: their rounded cut
and their relaxation's objective both start low and rise as labels separate, so
neither target means anything there (compare rates at their final cuts).
"Paired" figures compare each configuration with its 1-worker baseline (the same
scheduler's, else shared-1) round by round and take the median of the ratios.
Peers run once per round too, on one core (SGDClassifier epoch by epoch through
partial_fit; LIBLINEAR's dual solver to its tolerance) or two threads (LIBMF).
"""
import statistics
import sys
import time

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

# (label, workers, scheduler, options): the baseline first
REPLICATED = (("shared-1", 1, "hogwild", {}), ("shared-2", 2, "hogwild", {}),
              ("worker-2", 2, "hogwild", {"replication": "worker"}),
              ("hot-2", 2, "hogwild", {"replication": "hot"}),
              ("auto-2", 2, "hogwild", {"replication": "auto"}))
CONFIGS = {
    "svm": REPLICATED + (("worker-2-mixed", 2, "hogwild", {"replication": "worker",
                                                          "merge": "mixed",
                                                          "merge_every": 4096}),),
    "mc": REPLICATED[:2] + (("hot-2-sum", 2, "hogwild", {"replication": "hot",
                                                         "merge": "sum",
                                                         "hot_fraction": 0.001}),
                            ("blocked-1", 1, "blocked", {}), ("blocked-2", 2, "blocked", {}),
                            ("fpsgd-1", 1, "fpsgd", {}), ("fpsgd-2", 2, "fpsgd", {})),
    "cuts": REPLICATED[:4],
}
EPOCHS = 20


def time_to_target(result, target, curve="metric_per_epoch"):
    """(update seconds, epochs) when the run's ``curve`` first reaches ``target``,
    or (None, None) when it never does."""
    elapsed = 0.0
    for epoch, (seconds, value) in enumerate(zip(result["seconds_per_epoch"],
                                                 result[curve]), 1):
        elapsed += seconds
        if value <= target:
            return elapsed, epoch
    return None, None


def sgd_classifier_curve(X, y, X_test, y_test, epochs, seed):
    """scikit-learn's SGDClassifier (hinge, alpha 1e-4 as our reg, an intercept),
    one partial_fit per epoch: the seconds and test error after each."""
    from sklearn.linear_model import SGDClassifier

    model = SGDClassifier(loss="hinge", alpha=1e-4, random_state=seed)
    X64, classes = X.astype(np.float64), np.unique(y)
    seconds, errors = [], []
    for _ in range(epochs):
        start = time.perf_counter()
        model.partial_fit(X64, y, classes=classes)
        seconds.append(time.perf_counter() - start)
        errors.append(float(np.mean(model.predict(X_test) != y_test)))
    return {"metric_per_epoch": errors, "seconds_per_epoch": seconds,
            "metric_value": errors[-1], "updates_per_s": X.shape[0] * epochs / sum(seconds)}


def svm_peers(X, y, X_test, y_test, epochs):
    from hogwild.bench.peers import liblinear_peer

    def sgdclassifier(seed):
        return sgd_classifier_curve(X, y, X_test, y_test, epochs, seed)

    def liblinear(seed):
        result = liblinear_peer(X, y, X_test, y_test, 1e-4)
        return {"metric_per_epoch": [result["test_error"]],
                "seconds_per_epoch": [result["fit_seconds"]],
                "metric_value": result["test_error"]}
    return {"sgdclassifier-1": sgdclassifier, "liblinear-1": liblinear}


def mc_peers(train, test, epochs):
    from hogwild.bench.peers import dense_triples, libmf_fit, libmf_predict, load_libmf

    if load_libmf()[0] is None:
        return {}
    X, test_users, test_items = dense_triples(train, test)

    def libmf(seed):  # LIBMF's own defaults but k = 32 and L2 0.05, as docs/bench_mc
        fitted = libmf_fit(X, 32, 2, epochs, 0.05)
        if fitted is None:
            return None
        seconds, _, P, Q, b = fitted
        predicted = libmf_predict(P, Q, b, test_users, test_items)
        rmse = float(np.sqrt(np.mean((predicted - test.values) ** 2)))
        return {"metric_per_epoch": [rmse], "seconds_per_epoch": [seconds],
                "metric_value": rmse}
    return {"libmf-2": libmf}


def bench(name, description, problem, build, peers, rounds, seed):
    """build(**options) -> run(scheduler, workers, backend, seed); peers: label ->
    peer(seed) -> its curve (or None when it failed)."""
    configs = CONFIGS[problem]
    runs = {label: build(**options) for label, _, _, options in configs}
    results = {label: [] for label, *_ in configs}
    peer_results = {label: [] for label in peers}
    for round_ in range(rounds):
        for label, workers, scheduler, _ in configs:
            results[label].append(runs[label](scheduler, workers, "threads", seed + round_))
        for label, peer in peers.items():
            outcome = peer(seed + round_)
            if outcome is not None:
                peer_results[label].append(outcome)
        print(f"  {name}: round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    target = statistics.median(r["metric_value"] for r in results["shared-1"])
    objective = statistics.median(r["objective"] for r in results["shared-1"])
    summary = {label: summarise(values, target, objective)
               for label, values in results.items()}
    summary.update({label: summarise(values, target, objective)
                    for label, values in peer_results.items() if values})
    base = summary["shared-1"]
    for result in summary.values():
        for key, sooner in (("time_to_target", "sooner_than_shared_1"),
                            ("time_to_objective", "objective_sooner_than_shared_1")):
            reached = result.get(key)
            result[sooner] = base[key] / reached if base[key] and reached else None
        rate = result.get("updates_per_s")
        result["rate_over_shared_1"] = rate / base["updates_per_s"] if rate else None
    everything = {**results, **peer_results}
    for label, result in summary.items():
        result.update(paired(label, everything, target))
    return {"workload": name, "description": description, "rounds": rounds,
            "metric": results["shared-1"][0]["metric"], "target": target,
            "objective_target": objective,
            "peers": sorted(peer_results), "results": summary}


def paired(label, results, target):
    """A configuration against its 1-worker baseline round by round (the same
    scheduler's 1-worker run, blocked-1 for blocked-2, else shared-1), the medians
    of the rounds' ratios: a slow spell of the host moves both runs of a round
    less than it moves one configuration's median. Empty when the rounds do not
    pair (a peer that failed in some)."""
    baseline = label.split("-")[0] + "-1"
    baseline = baseline if baseline in results else "shared-1"
    ours, theirs = results[label], results[baseline]
    if label == baseline or len(ours) != len(theirs):
        return {}
    rates = [a["updates_per_s"] / b["updates_per_s"] for a, b in zip(ours, theirs)
             if a.get("updates_per_s") and b.get("updates_per_s")]
    times = [(time_to_target(b, target)[0], time_to_target(a, target)[0])
             for a, b in zip(ours, theirs)]
    sooner = [b / a for b, a in times if a and b]
    return {"paired_with": baseline,
            "paired_rate_x": statistics.median(rates) if rates else None,
            "paired_sooner_x": statistics.median(sooner) if sooner else None,
            "rounds_paired_sooner": len(sooner)}


def summarise(values, target, objective):
    """One configuration's rounds: medians, and the first round's curve. Ours also
    get the time to the 1-worker run's final training objective, a target that the
    noise of a per-epoch test metric does not move."""
    reached = [time_to_target(r, target) for r in values]
    seconds = [s for s, _ in reached if s is not None]
    summary = {
        "final_metric": statistics.median(r["metric_value"] for r in values),
        "seconds_per_epoch": statistics.median(
            statistics.median(r["seconds_per_epoch"]) for r in values),
        "rounds_reaching_target": len(seconds),
        "time_to_target": statistics.median(seconds) if seconds else None,
        "epochs_to_target": statistics.median(e for _, e in reached if e is not None)
        if seconds else None,
        "metric_per_epoch": values[0]["metric_per_epoch"],
        "seconds_per_epoch_first_round": values[0]["seconds_per_epoch"]}
    if "updates_per_s" in values[0]:
        summary["updates_per_s"] = statistics.median(r["updates_per_s"] for r in values)
        summary["updates_per_s_per_round"] = [r["updates_per_s"] for r in values]
    if "objective" in values[0]:
        summary["final_objective"] = statistics.median(r["objective"] for r in values)
        reached = [time_to_target(r, objective, "objective_per_epoch")[0] for r in values]
        reached = [s for s in reached if s is not None]
        summary["time_to_objective"] = statistics.median(reached) if reached else None
    return summary


def workloads(quick, seed):
    """(name, description, problem, build, peers) for each workload whose data is here."""
    epochs = 3 if quick else EPOCHS
    if quick:
        X, y = make_sparse_classification(3000, 2000, nnz_per_row=20, seed=seed)
        train, test, _ = make_jumbo(1000, 800, 50_000, rank=4, noise=0.5, seed=seed,
                                    folder=None)
        return [("svm-synthetic", "3,000 x 2,000 synthetic rows, hinge, 3 epochs", "svm",
                 lambda **o: svm_run(X[:2400], y[:2400], X[2400:], y[2400:], epochs, **o),
                 {}),
                ("mc-jumbo", "1,000 x 800 planted rank 4, rank 8, 3 epochs", "mc",
                 lambda **o: mc_run(train, test, 8, epochs, **o), {})]
    found = []
    for data in ("imdb-aclimdb", "news20-bydate"):
        if not SVM_DATASETS[data].available():
            print(f"{data}: not in the shared data folder, left out", file=sys.stderr)
            continue
        train, test = load_svm_data(data)
        found.append((f"svm-{data}", f"{data}, hinge, reg 1e-4, {epochs} epochs", "svm",
                      lambda train=train, test=test, **o: svm_run(
                          train.X, train.y, test.X, test.y, epochs, **o),
                      svm_peers(train.X, train.y, test.X, test.y, epochs)))
    if RATINGS_DATASETS["ml-1m"].locate() is not None:
        ratings_train, ratings_test = split_ratings(load_ratings("ml-1m"), 0.2, seed=0)
        found.append(("mc-ml-1m", f"MovieLens 1M (80/20, seed 0), biased, rank 32, {epochs} "
                      "epochs", "mc",
                      lambda **o: mc_run(ratings_train, ratings_test, 32, epochs, **o),
                      mc_peers(ratings_train, ratings_test, epochs)))
    if (shared_data_dir() / "snap-facebook-combined").is_dir():
        n, u, v, w, _ = load_graph("snap-facebook-combined")
        terminals = random_terminals(n, 8)
        found.append(("cuts-facebook", f"snap-facebook-combined, 8 labels, {epochs} epochs",
                      "cuts", lambda **o: cuts_run(n, u, v, w, terminals, 8, epochs, **o), {}))
    return found


def _figure(value, fmt):
    return "-" if value is None else fmt.format(value)


def markdown(report):
    lines = machine_lines(report)
    for w in report["workloads"]:
        lines += [f"### {w['workload']}: {w['description']} (median of {w['rounds']} "
                  f"rounds; target: {w['metric']} {w['target']:.5g}, the 1-worker shared "
                  "run's final)", "",
                  "| configuration | updates/s | rate x | s/epoch | final metric | "
                  "time to target | epochs to target | sooner than shared-1 | "
                  "sooner to the objective | paired with | paired rate x | "
                  "paired sooner |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
        for label, r in w["results"].items():
            rate = r.get("updates_per_s")
            lines.append(
                f"| {label} | {_figure(rate and rate / 1e6, '{:.2f} M')} | "
                f"{_figure(r['rate_over_shared_1'], '{:.2f}x')} | "
                f"{r['seconds_per_epoch'] * 1e3:.2f} ms | {r['final_metric']:.5g} | "
                f"{_figure(r['time_to_target'], '{:.4g} s') if r['time_to_target'] else 'never'}"
                f" | {_figure(r['epochs_to_target'], '{}')} | "
                f"{_figure(r['sooner_than_shared_1'], '{:.2f}x')} | "
                f"{_figure(r.get('objective_sooner_than_shared_1'), '{:.2f}x')} | "
                f"{r.get('paired_with', '-')} | "
                f"{_figure(r.get('paired_rate_x'), '{:.2f}x')} | "
                f"{_figure(r.get('paired_sooner_x'), '{:.2f}x')} |")
        lines.append("")
    return "\n".join(lines)


def plot(report, path):
    """Test metric against cumulative update time (first round), one line per
    configuration and peer (a peer with one figure is a point), one panel per
    workload."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    count = len(report["workloads"])
    figure, axes = plt.subplots(1, count, figsize=(4.8 * count, 3.8), squeeze=False)
    for ax, w in zip(axes[0], report["workloads"]):
        for label, r in w["results"].items():
            times = np.cumsum(r["seconds_per_epoch_first_round"])
            style = dict(marker="*", markersize=10, linestyle="none") \
                if len(times) == 1 else dict(marker=".")
            ax.plot(times, r["metric_per_epoch"], label=label, **style)
        ax.axhline(w["target"], color="gray", linestyle=":", linewidth=1)
        ax.set(title=w["workload"], xlabel="update time (s)", ylabel=w["metric"],
               xscale="log")
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on small generated data")
    parser.add_argument("--plot", help="also write the figure (PNG; needs matplotlib)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only the workloads whose name starts with NAME "
                             "(svm-imdb, svm-news20, mc, cuts; repeatable)")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    chosen = [w for w in workloads(args.quick, args.seed)
              if not args.only or w[0].startswith(tuple(args.only))]
    if not chosen:
        parser.error(f"no workload here starts with {', '.join(args.only)}")
    report = report_header("bench_replication", args)
    report["workloads"] = [bench(name, description, problem, build, peers, rounds, args.seed)
                           for name, description, problem, build, peers in chosen]
    publish(report, markdown, args.out, args.markdown)
    if args.plot:
        plot(report, args.plot)


if __name__ == "__main__":
    main()
