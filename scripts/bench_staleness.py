"""Staleness-aware steps on Ray with a 4x straggler: training objective against time.

SVM (imdb-aclimdb, hinge, reg 1e-4) and matrix completion (MovieLens 1M, biased,
rank 32) on 2 node actors of a local Ray instance, node 1 slowed down 4x
(SSPSettings.slowdown), asynchronous (no staleness bound) and with a bound of 4
clocks, each with and without staleness_aware (a push divided by its staleness
tau, the other node's pushes applied since its pull; Zhang et al., IJCAI 2016);
and the same runs without a straggler as the reference. Rounds alternate the
configurations; medians per epoch are reported.

    python scripts/bench_staleness.py --out docs/bench_staleness.json \\
        --markdown docs/bench_staleness.md --plot docs/bench_staleness.png
    python scripts/bench_staleness.py --quick      # generated data, 3 epochs
"""
import statistics
import sys
import warnings

from hogwild.backends.ray import SSPSettings, import_ray, start_local_ray
from hogwild.bench.machine import benchmark_arguments, describe_machine, publish
from hogwild.bench.workloads import BUILDERS
from hogwild.engine import fit

DECAY = 0.9
STRAGGLER = 4.0
CONFIGS = [  # (name, staleness, staleness_aware, straggler)
    ("async", None, False, False),
    ("async, straggler", None, False, True),
    ("async, straggler, staleness-aware", None, True, True),
    ("bound 4, straggler", 4, False, True),
    ("bound 4, straggler, staleness-aware", 4, True, True),
]


def run_problem(problem, quick, rounds, seed):
    workload = BUILDERS[problem](quick, 2)
    objective, step = workload.objective()
    epochs = 3 if quick else 10
    runs = {name: [] for name, *_ in CONFIGS}
    for _ in range(rounds):
        for name, staleness, aware, straggler in CONFIGS:
            settings = SSPSettings(nodes=2, staleness=staleness, staleness_aware=aware,
                                   slowdown={1: STRAGGLER} if straggler else {})
            result = fit(objective, backend="ray", distributed=settings, epochs=epochs,
                         step=step, decay=DECAY, seed=seed)
            info = result.distributed
            runs[name].append({"objective": [r.objective for r in result.history],
                               "seconds": [r.seconds for r in result.history],
                               "mean_push_staleness": info["mean_push_staleness"],
                               "max_push_staleness": info["max_push_staleness"],
                               "scaled_pushes": info["scaled_pushes"],
                               "pushes": info["pushes"]})
    summary = []
    for name, staleness, aware, straggler in CONFIGS:
        done = runs[name]
        objective_per_epoch = [statistics.median(r["objective"][e] for r in done)
                               for e in range(epochs)]
        seconds_per_epoch = [statistics.median(r["seconds"][e] for r in done)
                             for e in range(epochs)]
        summary.append({"config": name, "staleness": "inf" if staleness is None else staleness,
                        "staleness_aware": aware, "straggler": STRAGGLER if straggler else 1,
                        "objective_per_epoch": objective_per_epoch,
                        "seconds_per_epoch": seconds_per_epoch,
                        "final_objective": objective_per_epoch[-1],
                        "wall_seconds": sum(seconds_per_epoch),
                        "mean_push_staleness": statistics.median(
                            r["mean_push_staleness"] for r in done),
                        "max_push_staleness": max(r["max_push_staleness"] for r in done),
                        "scaled_pushes": statistics.median(r["scaled_pushes"] for r in done),
                        "rounds": done})
    return {"problem": problem, "dataset": workload.dataset, "epochs": epochs, "step": step,
            "decay": DECAY, "configs": summary}


def markdown(report):
    lines = [f"Staleness-aware steps: 2 node actors on a local Ray instance, node 1 slowed "
             f"{STRAGGLER:g}x where marked; medians of {report['rounds']} alternating rounds.",
             ""]
    for problem in report["problems"]:
        base = problem["configs"][0]
        lines += [f"**{problem['problem']}** ({problem['dataset']}, {problem['epochs']} "
                  f"epochs, step {problem['step']:.4g} x {problem['decay']}^epoch):", "",
                  "| run | final objective | vs no straggler | wall s | push staleness "
                  "mean / max | pushes scaled |", "|---|---|---|---|---|---|"]
        for run in problem["configs"]:
            lines.append(f"| {run['config']} | {run['final_objective']:.5f} | "
                         f"{run['final_objective'] / base['final_objective']:.4f} | "
                         f"{run['wall_seconds']:.2f} | {run['mean_push_staleness']:.2f} / "
                         f"{run['max_push_staleness']} | {run['scaled_pushes']:g} |")
        lines.append("")
    return "\n".join(lines)


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = report["problems"]
    figure, axes = plt.subplots(1, len(problems), figsize=(6.5 * len(problems), 4.5),
                                squeeze=False)
    for ax, problem in zip(axes[0], problems):
        for k, run in enumerate(problem["configs"]):
            elapsed, times = 0.0, []
            for seconds in run["seconds_per_epoch"]:
                elapsed += seconds
                times.append(elapsed)
            ax.plot(times, run["objective_per_epoch"], "o-" if run["staleness_aware"]
                    else "s--", color=f"C{k}", markersize=3, label=run["config"])
        ax.set_yscale("log")
        ax.set_title(f"{problem['problem']}: {problem['dataset']}")
        ax.set_xlabel("wall seconds (median per epoch)")
        ax.set_ylabel("training objective")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main():
    parser = benchmark_arguments(__doc__.splitlines()[0], "small generated data, 3 epochs")
    parser.add_argument("--plot", help="write the objective-vs-time plot (PNG) here")
    parser.add_argument("--problems", default="svm,mc")
    args = parser.parse_args()
    ray = import_ray()
    instance = start_local_ray(ray, 2)  # this machine's alone, removed after
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few MovieLens test ids unseen in training
        problems = [run_problem(p, args.quick, args.rounds, args.seed)
                    for p in args.problems.split(",")]
    instance.close()
    report = {"benchmark": "staleness_aware", "quick": args.quick,
              "machine": describe_machine(("ray",)), "rounds": args.rounds,
              "straggler": STRAGGLER, "problems": problems}
    publish(report, markdown, args.out, args.markdown)
    if args.plot:
        plot(report, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
