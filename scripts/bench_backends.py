"""Backend benchmark: threads vs processes at 2 workers on the sparse SVM
(news20-bydate) and matrix completion (MovieLens 1M, rank 32), with the processes
backend's worker start-up time. Prints one JSON document (also --out; --markdown
writes the table).

    python scripts/bench_backends.py            # full run (a few minutes here)
    python scripts/bench_backends.py --quick    # a smoke run on small generated data

Method. Throughput is the update phase only (the engine's per-epoch timer), which
for processes includes handing each epoch's spans to the workers and waiting for
their replies. Start-up is from starting the worker processes to every worker
having attached the shared arrays and loaded the compiled loops; the parent
compiles (or loads) them first, so this is the warm-cache start-up a user sees
from the second run on. Every configuration runs once per round, rounds
interleave the configurations, and each figure is the median over rounds.
"""
import sys

from hogwild.datasets.jumbo import make_jumbo
from hogwild.datasets.ratings import split_ratings
from hogwild.datasets.registry import RATINGS_DATASETS, SVM_DATASETS, load_ratings, \
    load_svm_data
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.bench.machine import benchmark_arguments, machine_lines, publish, report_header
from hogwild.bench.workloads import mc_run, medians, svm_run

BACKENDS = ("threads", "processes")
SCHEDULERS = ("hogwild", "serial")
WORKERS = 2
TARGET_RATIO = 0.9
TARGET_STARTUP_SECONDS = 2.0


def bench(name, description, run, rounds, seed):
    runs = {}
    for round_ in range(rounds):
        for scheduler in SCHEDULERS:
            for backend in BACKENDS:
                runs.setdefault(f"{scheduler}-{backend}", []).append(
                    run(scheduler, WORKERS, backend, seed + round_))
        print(f"  {name}: round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    results = {label: medians(values) for label, values in runs.items()}
    ratios = {f"{s}_processes_over_threads": results[f"{s}-processes"]["updates_per_s"]
              / results[f"{s}-threads"]["updates_per_s"] for s in SCHEDULERS}
    startup = max(results[f"{s}-processes"]["startup_seconds"] for s in SCHEDULERS)
    return {"workload": name, "description": description, "rounds": rounds,
            "results": results, "ratios": ratios, "startup_seconds": startup,
            "targets": {"processes_over_threads": TARGET_RATIO,
                        "startup_seconds": TARGET_STARTUP_SECONDS,
                        "met": min(ratios.values()) >= TARGET_RATIO
                        and startup < TARGET_STARTUP_SECONDS}}


def markdown(report):
    lines = machine_lines(report)
    for w in report["workloads"]:
        lines += [f"### {w['workload']}: {w['description']} (2 workers, median of "
                  f"{w['rounds']} rounds)", "",
                  "| configuration | updates/s | start-up s | objective |",
                  "|---|---:|---:|---:|"]
        for label, r in w["results"].items():
            lines.append(f"| {label} | {r['updates_per_s'] / 1e6:.2f} M | "
                         f"{r['startup_seconds']:.2f} | {r['objective']:.6g} |")
        lines += ["", "Processes / threads: " + ", ".join(
            f"{k} = {v:.3f}" for k, v in w["ratios"].items())
            + f"; worker start-up {w['startup_seconds']:.2f} s (targets: >= "
              f"{TARGET_RATIO}x, < {TARGET_STARTUP_SECONDS:g} s: "
              f"{'met' if w['targets']['met'] else 'not met'}).", ""]
    return "\n".join(lines)


def workloads(quick, seed):
    if quick:
        X, y = make_sparse_classification(4000, 3000, nnz_per_row=20, seed=seed)
        train, test, _ = make_jumbo(1000, 800, 50_000, rank=4, noise=0.5, seed=seed,
                                    folder=None)
        return [("svm-synthetic", "4,000 x 3,000 synthetic rows, hinge, 3 epochs",
                 svm_run(X[:3200], y[:3200], X[3200:], y[3200:], 3)),
                ("mc-jumbo", "1,000 x 800 planted rank 4, 50,000 ratings, rank 8, 3 epochs",
                 mc_run(train, test, 8, 3))]
    found = []
    if SVM_DATASETS["news20-bydate"].available():
        train, test = load_svm_data("news20-bydate")
        found.append(("svm-news20", "news20-bydate, hinge, reg 1e-4, 20 epochs",
                      svm_run(train.X, train.y, test.X, test.y, 20)))
    else:
        print("news20-bydate: not in the shared data folder, left out", file=sys.stderr)
    if RATINGS_DATASETS["ml-1m"].locate() is not None:
        train, test = split_ratings(load_ratings("ml-1m"), 0.2, seed=0)
        found.append(("mc-ml-1m", "MovieLens 1M (80/20 split, seed 0), biased, rank 32, "
                                  "20 epochs", mc_run(train, test, 32, 20)))
    else:
        print("ml-1m: not in the shared data folder, left out", file=sys.stderr)
    return found


def main(argv=None):
    args = benchmark_arguments(__doc__.split("\n")[0],
                               "a smoke run on small generated data").parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    report = report_header("bench_backends", args)
    report["workloads"] = [bench(name, description, run, rounds, args.seed)
                           for name, description, run in workloads(args.quick, args.seed)]
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
