"""Fast-path defaults: does a run with only --data use the fast configuration, and
how much sooner does it reach what one worker reaches? Prints one JSON document
(also --out).

    python scripts/bench_fast_defaults.py             # imdb, news20 and MovieLens 1M
    python scripts/bench_fast_defaults.py --quick     # a smoke run on the shipped a9a

Each configuration is its own `hogwild run PROBLEM --data NAME --json` process:
the defaults (every usable core; the SVM's replication "auto", matrix completion's
scheduler "blocked"), the defaults at --workers 1, and for comparison the SVM's
whole copies merged "mixed" (`--replication worker --merge mixed`, the short run's
default from issue 31 to issue 42) and matrix completion before issue 31
(`--scheduler hogwild`). Rounds interleave
the configurations and use seed = round. Time to target: the training seconds
(the update phases, EpochRecord.seconds, summed) at the first epoch whose test
error (test RMSE) is at most the one-worker run's final one in the same round;
"sooner" is the one-worker run's time to its own final metric over the
configuration's, per round, and the figure is the median over rounds. Wall
seconds (the whole process) are reported beside it.
"""
import json
import statistics
import subprocess
import sys

from hogwild.bench.machine import (benchmark_arguments, compute_ceiling, describe_machine,
                                   machine_lines, publish)
from hogwild.datasets.registry import RATINGS_DATASETS, SVM_DATASETS

# (problem, data, the metric in the JSON history, the configurations: label -> flags)
WORKLOADS = (
    ("svm", "imdb-aclimdb", "test_error"),
    ("svm", "news20-bydate", "test_error"),
    ("svm", "clicks:1000000x1000000x20000000", "test_error"),
    ("mc", "ml-1m", "test_rmse"),
)
COMPARED = {"svm": ("worker-mixed", ["--replication", "worker", "--merge", "mixed"]),
            "mc": ("before-issue-31", ["--scheduler", "hogwild"])}


def configurations(problem):
    label, flags = COMPARED[problem]
    return {"defaults": [], "defaults-1-worker": ["--workers", "1"], label: flags}


def run(problem, data, flags, seed):
    command = [sys.executable, "-m", "hogwild.cli", "run", problem, "--data", data, "--json",
               "--seed", str(seed), "--checkpoint-every", "1000000", *flags]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def time_to(history, metric, target):
    elapsed = 0.0
    for epoch in history:
        elapsed += epoch["seconds"]
        if epoch[metric] <= target:
            return elapsed
    return None


def bench(problem, data, metric, rounds, seed):
    runs = {label: [] for label in configurations(problem)}
    for round_ in range(rounds):
        for label, flags in configurations(problem).items():
            runs[label].append(run(problem, data, flags, seed + round_))
        print(f"  {data}: round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    results = {}
    for label, results_of_label in runs.items():
        sooner, reached = [], 0
        for one, this in zip(runs["defaults-1-worker"], results_of_label):
            target = one["history"][-1][metric]
            base, mine = time_to(one["history"], metric, target), \
                time_to(this["history"], metric, target)
            if mine is not None:
                reached += 1
                sooner.append(base / mine)
        results[label] = {
            "configuration": {key: results_of_label[0].get(key) for key in
                              ("workers", "scheduler", "replication", "replicated")},
            "final_metric": statistics.median(r["history"][-1][metric]
                                              for r in results_of_label),
            "update_seconds": statistics.median(r["update_seconds"] for r in results_of_label),
            "wall_seconds": statistics.median(r["wall_seconds"] for r in results_of_label),
            "reached_one_worker_final_in_rounds": reached,
            "sooner_than_one_worker_per_round": sooner,
            "sooner_than_one_worker": statistics.median(sooner) if sooner else None,
        }
    return {"problem": problem, "data": data, "metric": metric, "rounds": rounds,
            "results": results}


def markdown(report):
    lines = machine_lines(report)
    for w in report["workloads"]:
        lines += [f"### hogwild run {w['problem']} --data {w['data']} ({w['metric']}, median "
                  f"of {w['rounds']} rounds)", "",
                  "| configuration | workers | scheduler | replication | final | update s | "
                  "wall s | sooner to the 1-worker final |",
                  "|---|---:|---|---|---:|---:|---:|---:|"]
        for label, r in w["results"].items():
            c = r["configuration"]
            sooner = "not reached" if r["sooner_than_one_worker"] is None \
                else f"{r['sooner_than_one_worker']:.2f}x"
            replication = c["replication"] + (f" ({c['replicated']['merge']})"
                                              if c.get("replicated") and c["replication"]
                                              != "shared" else "")
            lines.append(f"| {label} | {c['workers']} | {c['scheduler']} | {replication} | "
                         f"{r['final_metric']:.4f} | {r['update_seconds']:.3f} | "
                         f"{r['wall_seconds']:.2f} | {sooner} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    args = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on the shipped a9a")
    args = args.parse_args(argv)
    report = {"benchmark": "bench_fast_defaults", "quick": args.quick,
              "machine": describe_machine(),
              "compute_ceiling_2_over_1": compute_ceiling(0.3 if args.quick else 1.0),
              "workloads": []}
    workloads = (("svm", "a9a", "test_error"),) if args.quick else WORKLOADS
    for problem, data, metric in workloads:
        available = data.startswith("clicks:") or (
            SVM_DATASETS[data].available() if problem == "svm"
            else RATINGS_DATASETS[data].locate() is not None)
        if not available:
            print(f"{data}: not in the shared data folder; left out", file=sys.stderr)
            continue
        report["workloads"].append(bench(problem, data, metric, 1 if args.quick
                                         else args.rounds, args.seed))
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
