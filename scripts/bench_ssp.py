"""Stale synchronous parallel on Ray: convergence and traffic per staleness bound.

SVM (imdb-aclimdb, hinge, reg 1e-4) and matrix completion (MovieLens 1M, biased,
rank 32) with 2 node actors on a local Ray instance and staleness 0, 1, 4 and
inf, against the single-node engine (hogwild, 1 worker) on the same objective,
step and epochs. Prints one JSON document (also --out) and plots the objective
against wall time per staleness (--plot, PNG).

    python scripts/bench_ssp.py --out docs/bench_ssp.json --plot docs/bench_ssp.png
    python scripts/bench_ssp.py --quick     # small generated data, 3 epochs

Wall time per epoch includes waiting, pushes and pulls (the actors run on this one
machine, so "network" traffic goes through Ray's local object transfer), and
starts once the node actors are up and their kernels compiled (start-up is
reported apart).
Traffic: a push sends, per shard, the changed coordinates of a node's replica
since its last pull as int32 shard-local indices plus values, or all of the
shard's values where most changed; a dense push would always send every value.
``changed_fraction`` is the share of the parameters changed per push (from the
runs' own counts), so a sparse push is smaller than a dense one by about
1 / (2 * changed_fraction) where that share is small. Besides the default clocks
(a tenth of an epoch), one epoch with small clocks (SMALL_CLOCKS) shows the
sparse regime.
"""
import math
import sys
import warnings

from hogwild.bench.workloads import BUILDERS
from hogwild.backends.ray import SSPSettings, import_ray, start_local_ray
from hogwild.engine import fit
from hogwild.bench.machine import benchmark_arguments, describe_machine, publish

STALENESS = (0, 1, 4, None)
DECAY = 0.9
TOLERANCE = 0.02
SMALL_CLOCKS = {"svm": 100, "mc": 2000}  # updates per clock for the traffic runs


def run_problem(problem, quick, nodes, seed):
    workload = BUILDERS[problem](quick, nodes)
    objective, step = workload.objective()
    epochs = 3 if quick else 10
    single = fit(objective, epochs=epochs, step=step, decay=DECAY, workers=1, seed=seed)
    report = {"problem": problem, "dataset": workload.dataset, "epochs": epochs,
              "step": step, "decay": DECAY, "parameters": int(sum(p.size for p in
                                                                  objective.params)),
              "single_node": {"objective_per_epoch": [r.objective for r in single.history],
                              "seconds_per_epoch": [r.seconds for r in single.history]},
              "runs": []}
    for staleness in STALENESS:
        result = fit(objective, backend="ray",
                     distributed=SSPSettings(nodes=nodes, staleness=staleness), epochs=epochs,
                     step=step, decay=DECAY, seed=seed)
        info = result.distributed
        report["runs"].append({
            "staleness": "inf" if staleness is None else staleness,
            "objective_per_epoch": [r.objective for r in result.history],
            "seconds_per_epoch": [r.seconds for r in result.history],
            "startup_seconds": result.startup_seconds,
            "objective_over_single_node": result.objective / single.objective,
            "max_staleness": info["max_staleness"], "wait_seconds": info["wait_seconds"],
            **_traffic(result, report["parameters"])})
    small = fit(objective, backend="ray",
                distributed=SSPSettings(nodes=nodes, staleness=1,
                                        clock_every=SMALL_CLOCKS[problem]),
                epochs=1, step=step, decay=DECAY, seed=seed)
    report["small_clocks"] = {"staleness": 1, "epochs": 1,
                              **_traffic(small, report["parameters"])}
    return report


def _traffic(result, parameters):
    """Bytes per clock and what share of the parameters a push changed."""
    info = result.distributed
    pushes = info["pushes"]
    return {"clock_every": info["clock_every"], "clocks_per_epoch": info["clocks_per_epoch"],
            "pushed_bytes_per_clock": info["pushed_bytes"] / pushes,
            "pulled_bytes_per_clock": info["pulled_bytes"] / pushes,
            "dense_push_bytes_per_clock": info["dense_push_bytes"] / pushes,
            "changed_fraction": info["changed"] / pushes / parameters,
            "dense_over_sparse_push": info["dense_push_bytes"] / info["pushed_bytes"],
            "objective": result.objective}


def plot(report, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (pip install 'hogwild[plots]')",
              file=sys.stderr)
        return
    problems = report["problems"]
    fig, axes = plt.subplots(1, len(problems), figsize=(6 * len(problems), 4.2),
                             squeeze=False)
    for ax, problem in zip(axes[0], problems):
        single = problem["single_node"]
        ax.plot(_cumulative(single["seconds_per_epoch"]), single["objective_per_epoch"],
                color="black", linestyle="--", marker=".",
                label="single node, 1 worker (update phase)")
        for run in problem["runs"]:
            ax.plot(_cumulative(run["seconds_per_epoch"]), run["objective_per_epoch"],
                    marker="o", markersize=3, label=f"staleness {run['staleness']}")
        ax.set_title(f"{problem['problem']}: {problem['dataset']}, "
                     f"{report['nodes']} node actors")
        ax.set_xlabel("wall seconds after start-up (an epoch ends when every node has "
                      "finished it)")
        ax.set_ylabel("training objective")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _cumulative(values):
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


def main():
    parser = benchmark_arguments(__doc__.splitlines()[0], "small generated data, 3 epochs")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--plot", help="write the objective-vs-time plot (PNG) here")
    args = parser.parse_args()
    ray = import_ray()
    instance = start_local_ray(ray, max(2, args.nodes))  # this machine's alone, removed after
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few MovieLens test ids unseen in training
        problems = [run_problem(p, args.quick, args.nodes, args.seed) for p in ("svm", "mc")]
    instance.close()
    report = {"benchmark": "ssp", "quick": args.quick, "machine": describe_machine(("ray",)),
              "nodes": args.nodes, "tolerance": TOLERANCE, "problems": problems,
              "within_tolerance": all(run["objective_over_single_node"] <= 1 + TOLERANCE
                                      for p in problems for run in p["runs"])}
    publish(report, lambda r: "", args.out)
    if args.plot:
        plot(report, args.plot)
    return 0 if math.isfinite(problems[0]["runs"][0]["objective_over_single_node"]) else 1


if __name__ == "__main__":
    sys.exit(main())
