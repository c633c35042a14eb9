"""Scaling model of the replication modes, for the core counts this machine lacks.

From figures measured here at 1 and 2 workers, predict each mode's epoch-time
speedup at 4 to 64 workers. Prints one JSON document (also --out; --markdown writes
the tables).

    python scripts/scaling_model.py            # the shared data sets (about 2 minutes)
    python scripts/scaling_model.py --quick    # small generated data
    python scripts/scaling_model.py --measure  # also measure every worker count this
                                               # machine has, beside the prediction

Measured per workload (medians of interleaved rounds; n samples per epoch, D
parameter coordinates, H hot rows' coordinates, R(W) merge rounds per epoch):
    t1      time per update, 1 worker, shared                  (shared-1 epochs)
    tp      time per update of each of 2 workers on private    (sharing_cost's
            copies, no merging: the kernel without contention   "2 private")
    c       extra time per update from sharing, 2 workers      (shared-2 epochs)
    cc      the same for the cold rows only ("hot", merged     (hot-2, merge_every n)
            once an epoch)
    tau     merge time per replicated coordinate, per merge     (2 threads merging
            (copies last written by the other core)             the worker copies)
    L       a contended write: one cache line handed from one   (compiled ping-pong)
            core to another
    delta   the largest fraction of samples naming one row      (the sparsity report)
    beta    one barrier of 2 workers                            (a compiled loop)
    pi      the rest of a merge round (hand-offs in Python)     (hot-2, default merge)

Model at W workers, each update costing tp plus the contention of its shared
writes. A shared line is last written elsewhere with probability (W-1)/W (uniform
access over the W cores), so contention grows as c * 2 (W-1)/W; and the writes to
one line are serialised, so the hottest shared row, named by delta n samples an
epoch, takes at least delta n L whatever W (for "hot" the hottest shared row is
named by at most hot_fraction n). A merge pass is split W ways but each
coordinate reads W copies, so it costs about D tau whatever W; a barrier of W
workers polls W gates, beta W/2:
    shared  T(W) = max(n (tp + c 2(W-1)/W) / W,  delta n L)
    worker  T(W) = n tp / W + D tau + 2 beta W/2
    hot     T(W) = max(n (tp + cc 2(W-1)/W) / W,  hot_fraction n L)
                   + R(W) (H tau + 2 beta W/2 + pi)
and speedup(W) = n t1 / T(W). Assumptions, stated where they can fail: one socket
(uniform cache-line transfer cost; a second socket's lines cost 2-3x more); the
per-core kernel speed of 2 workers holds at W (no memory-bandwidth limit: the
report's "traffic" is the share of one thread's measured bandwidth that one worker
would use if nothing were cached, and W workers need W times that); samples of
equal cost; and the same statistics (epochs to a target) in every mode, which
bench_replication measures and this does not. At W = 2 the model reproduces its
own inputs; it is tested only where a machine with more cores runs
bench_replication.
"""
import statistics
import sys
import time

import numpy as np
from numba import njit

from hogwild.backends.replicas import Replicas, meet
from hogwild.replication import (HOT_MERGE_EVERY, ReplicationSettings, hot_share, id_groups,
                                 row_counts)
from hogwild.backends.threads import ThreadsBackend
from hogwild.bench.machine import (benchmark_arguments, machine_lines, publish, report_header,
                                   timed_threads)
from hogwild.bench.suite import memory_bandwidth, sharing_cost
from hogwild.bench.workloads import BUILDERS
from hogwild.backends.host import aligned_copy
from hogwild.kernels.atomics import new_gates, open_gate, wait_for_gate
from hogwild.kernels.compiler import compile_loops
from hogwild.limits import usable_cores
from hogwild.schedulers import SCHEDULERS
from hogwild.steps import EpochSteps

WORKER_COUNTS = (1, 2, 4, 8, 16, 32, 64)
HOT_FRACTION = 0.01


def epoch_seconds(objective, step, workers, replication, merge_every, rounds, rng):
    """Median update-phase seconds of ``rounds`` epochs of the threads backend."""
    loops = compile_loops(objective.update, objective.loss, objective.fastmath)
    planner = SCHEDULERS["hogwild"].planner(objective.n_samples, workers)
    settings = ReplicationSettings(replication, merge_every, "mean", HOT_FRACTION,
                                   objective.id_arrays)
    with ThreadsBackend(workers, settings) as backend:
        params, data = backend.share(tuple(aligned_copy(p) for p in objective.params),
                                     objective.data, objective.n_samples)
        backend.warm_up(loops, params, data, SCHEDULERS["hogwild"])
        times = []
        for epoch in range(rounds + 1):  # the first warms caches and pages
            plan = planner.plan(rng, 16)
            start = time.perf_counter()
            backend.run_epoch(loops, plan, params, data, EpochSteps(np.array([step])), epoch)
            times.append(time.perf_counter() - start)
        replicated = backend.replicated()
    return statistics.median(times[1:]), replicated


@njit(nogil=True)
def _hand_over(gates, me, rounds):
    for k in range(rounds):
        if not wait_for_gate(gates, 0, 2 * k + me):
            return
        open_gate(gates, 0, 2 * k + me + 1)


def line_transfer_seconds(rounds=50_000, repeats=7):
    """L: two threads hand one cache line back and forth (each waits for the
    other's write, then writes); the time of one hand-over, median of ``repeats``."""
    _hand_over(new_gates(1), 0, 1)  # compile
    times = []
    for _ in range(repeats):
        gates = new_gates(1)
        times.append(timed_threads([(_hand_over, (gates, me, rounds)) for me in (0, 1)])
                     / (2 * rounds))
    return statistics.median(times)


def merge_seconds(params, repeats=5):
    """tau: 2 threads each dirty their whole copy of every array, then merge their
    halves at once (so half the lines they read were last written by the other
    core); the best time of one merge, per coordinate."""
    replicas = Replicas(params, (), 2, "worker", "mean")
    best = float("inf")
    for _ in range(repeats):
        def dirty(w):
            for copy in replicas.params_of(w):
                copy += 1
        timed_threads([(dirty, (w,)) for w in range(2)])
        best = min(best, timed_threads([(replicas.merge_part, (w, 2)) for w in range(2)]))
    return best / sum(p.size for p in params)


def busiest_row_fraction(objective):
    """delta over the rows the objective's id arrays name (the Hogwild! paper's
    Delta, at row granularity)."""
    groups = id_groups(objective.id_arrays, len(objective.params))
    busiest = max(row_counts(g, objective.params, objective.data).max() for g in groups)
    return float(busiest) / objective.n_samples


def barrier_seconds(crossings=5_000, repeats=7):
    """One barrier of 2 threads (compiled meet, one call per crossing as in a merge
    round), median of ``repeats`` averages over ``crossings``."""
    meet(new_gates(2), 0, 1, 1)  # compile

    def cross(gates, worker):
        for level in range(1, crossings + 1):
            meet(gates, worker, 2, level)
    times = []
    for _ in range(repeats):
        gates = new_gates(2)
        times.append(timed_threads([(cross, (gates, w)) for w in (0, 1)]) / crossings)
    return statistics.median(times)


def measure(objective, step, rounds):
    """The model's inputs for one objective (see the module docstring)."""
    rng = np.random.default_rng(0)
    n = objective.n_samples
    cost = sharing_cost(objective, step, seconds=0.5, rounds=rounds)
    tp = 2 / cost["updates_per_s"]["2 private"]
    timed = {label: [] for label in ("shared-1", "shared-2", "worker-2", "hot-2-epoch",
                                     "hot-2")}
    replicated = {}
    for _ in range(rounds):
        for label, workers, mode, merge in (("shared-1", 1, "shared", None),
                                            ("shared-2", 2, "shared", None),
                                            ("worker-2", 2, "worker", None),
                                            ("hot-2-epoch", 2, "hot", n),
                                            ("hot-2", 2, "hot", HOT_MERGE_EVERY)):
            if mode == "hot" and not objective.id_arrays:
                continue
            seconds, replicated[label] = epoch_seconds(objective, step, workers, mode, merge,
                                                       3, rng)
            timed[label].append(seconds)
    epoch = {label: statistics.median(v) for label, v in timed.items() if v}
    beta = barrier_seconds()
    coordinates = sum(p.size for p in objective.params)
    inputs = {"n": n, "D": coordinates, "tp": tp, "beta": beta,
              "t1": epoch["shared-1"] / n,
              "c": max(2 * epoch["shared-2"] / n - tp, 0.0),
              "tau": merge_seconds(objective.params), "L": line_transfer_seconds(),
              "delta": busiest_row_fraction(objective), "hot_fraction": HOT_FRACTION}
    if "hot-2" in epoch:
        hot_rows = {a["params"]: a["copied_rows"] for a in replicated["hot-2"]["arrays"]}
        width = {p: a.size // max(a.shape[0], 1) if a.ndim else 1
                 for p, a in enumerate(objective.params)}
        inputs["H"] = sum(rows * width[p] for p, rows in hot_rows.items())
        inputs["hot_share"] = hot_share(objective, HOT_FRACTION)
        once = inputs["H"] * inputs["tau"] + 2 * beta
        inputs["cc"] = max(2 * (epoch["hot-2-epoch"] - once) / n - tp, 0.0)
        rounds_2 = -(-n // (2 * HOT_MERGE_EVERY))
        inputs["pi"] = max((epoch["hot-2"] - n * (tp + inputs["cc"]) / 2) / rounds_2
                           - once, 0.0)
    return inputs, epoch, cost


def predict(inputs, workers):
    """Predicted epoch seconds per mode at ``workers`` (the module docstring's model)."""
    n, tp, W, L = inputs["n"], inputs["tp"], workers, inputs["L"]
    if W == 1:
        one = n * inputs["t1"]
        return {"shared": one, "worker": one, **({"hot": one} if "cc" in inputs else {})}
    spread = 2 * (W - 1) / W
    barrier = 2 * inputs["beta"] * W / 2
    times = {"shared": max(n * (tp + inputs["c"] * spread) / W, inputs["delta"] * n * L),
             "worker": n * tp / W + inputs["D"] * inputs["tau"] + barrier}
    if "cc" in inputs:
        rounds = -(-n // (W * HOT_MERGE_EVERY))
        rounds = rounds if inputs["H"] else 0  # nothing hot: a shared run, no rounds
        times["hot"] = (max(n * (tp + inputs["cc"] * spread) / W,
                            inputs["hot_fraction"] * n * L)
                        + rounds * (inputs["H"] * inputs["tau"] + barrier + inputs["pi"]))
    return times


def measured_speedups(objective, step, rounds, max_workers):
    """Epoch speedup over shared-1 of each mode at every worker count up to
    ``max_workers``: the medians of ``rounds`` interleaved rounds (the check of the
    model on a machine with the cores)."""
    rng = np.random.default_rng(1)
    counts = [w for w in WORKER_COUNTS if w <= max_workers]
    modes = ("shared", "worker", "hot") if objective.id_arrays else ("shared", "worker")
    timed = {(w, m): [] for w in counts for m in modes if w > 1 or m == "shared"}
    for _ in range(rounds):
        for workers, mode in timed:
            merge = HOT_MERGE_EVERY if mode == "hot" else None
            timed[workers, mode].append(
                epoch_seconds(objective, step, workers, mode, merge, 3, rng)[0])
    base = statistics.median(timed[1, "shared"])
    rows = []
    for workers in counts:
        row = {"workers": workers}
        row.update({m: base / statistics.median(timed[workers, m]) if workers > 1
                    else 1.0 for m in modes})
        rows.append(row)
    return rows


def workloads(quick):
    """(name, objective, step, bytes per update) for each workload."""
    found = []
    for problem in ("svm", "mc", "cuts"):
        w = BUILDERS[problem](quick, 2)
        objective, step = w.objective()
        found.append((f"{problem}-{w.dataset}", objective, step, w.bytes_per_update))
    if not quick:
        from hogwild.datasets.registry import SVM_DATASETS, load_svm_data
        from hogwild.problems.sparse_svm import as_csr, auto_step, binary_labels, svm_objective

        if SVM_DATASETS["news20-bydate"].available():
            train, _ = load_svm_data("news20-bydate")
            csr = as_csr(train.X)
            labels, _ = binary_labels(train.y, csr.shape[0])
            nnz = csr.nnz / csr.shape[0]
            found.insert(1, ("svm-news20-bydate", svm_objective(csr, labels, "hinge", 1e-4, 0),
                             auto_step(csr), 16 * nnz + 16))
    return found


def markdown(report):
    lines = machine_lines(report)
    lines += [f"One-thread memory bandwidth: {report['bandwidth_1'] / 1e9:.1f} GB/s.", ""]
    for w in report["workloads"]:
        i = w["inputs"]
        lines += [f"### {w['workload']}", "",
                  f"n = {i['n']:,}, D = {i['D']:,}; t1 = {i['t1'] * 1e9:.1f} ns, "
                  f"tp = {i['tp'] * 1e9:.1f} ns, c = {i['c'] * 1e9:.1f} ns, "
                  f"tau = {i['tau'] * 1e9:.2f} ns, L = {i['L'] * 1e9:.0f} ns, "
                  f"delta = {i['delta']:.3f}, beta = {i['beta'] * 1e6:.2f} us"
                  + (f"; H = {i['H']:,} ({i['hot_share']:.0%} of the ids on hot rows), "
                     f"cc = {i['cc'] * 1e9:.1f} ns, pi = {i['pi'] * 1e6:.1f} us"
                     if "cc" in i else "") + ".", "",
                  f"Traffic: one worker, uncached, would use {w['traffic']:.0%} of one "
                  "thread's memory bandwidth.", "",
                  "| workers | " + " | ".join(w["modes"]) + " |",
                  "|---:|" + "---:|" * len(w["modes"])]
        for row in w["predicted"]:
            lines.append(f"| {row['workers']} | "
                         + " | ".join(f"{row[m]:.2f}x" for m in w["modes"]) + " |")
        measured = w["measured_2"]
        lines += ["", "Measured at 2 workers (epoch speedup over shared-1): "
                  + ", ".join(f"{k} {v:.2f}x" for k, v in measured.items()) + ".", ""]
        if "measured" in w:
            lines += ["Measured at each worker count (predicted in brackets):", "",
                      "| workers | " + " | ".join(w["modes"]) + " |",
                      "|---:|" + "---:|" * len(w["modes"])]
            predicted = {row["workers"]: row for row in w["predicted"]}
            for row in w["measured"]:
                guess = predicted[row["workers"]]
                lines.append(f"| {row['workers']} | " + " | ".join(
                    f"{row[m]:.2f}x ({guess[m]:.2f}x)" for m in w["modes"]) + " |")
            lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "small generated data")
    parser.add_argument("--measure", action="store_true",
                        help="also measure each mode at every worker count up to this "
                             "machine's usable cores, beside the prediction")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    report = report_header("scaling_model", args)
    report["bandwidth_1"] = memory_bandwidth(1, 64 if args.quick else 256)
    report["workloads"] = []
    for name, objective, step, bytes_per_update in workloads(args.quick):
        inputs, epoch, cost = measure(objective, step, rounds)
        modes = list(predict(inputs, 1))
        predicted = []
        for workers in WORKER_COUNTS:
            times = predict(inputs, workers)
            row = {"workers": workers}
            row.update({m: inputs["n"] * inputs["t1"] / times[m] for m in modes})
            predicted.append(row)
        base = epoch["shared-1"]
        report["workloads"].append({
            "workload": name, "inputs": inputs, "modes": modes, "predicted": predicted,
            "traffic": bytes_per_update / inputs["t1"] / report["bandwidth_1"],
            "measured_epoch_seconds": epoch, "sharing_cost": cost,
            "measured_2": {k: base / v for k, v in epoch.items() if k != "shared-1"}})
        if args.measure:
            report["workloads"][-1]["measured"] = measured_speedups(
                objective, step, rounds, usable_cores())
        print(f"  {name} done", file=sys.stderr, flush=True)
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
