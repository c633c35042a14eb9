"""``hogwild bench``: thread scaling, schedulers and backends on the three problems,
written as JSON lines, a Markdown report and plots (matplotlib, if installed).

    hogwild bench --quick                       # one minute, small generated data
    hogwild bench --problems svm,mc --workers 1,2 --schedulers hogwild,locked,serial

Each configuration (problem, dataset, backend, scheduler, workers) runs once per
round, rounds interleave the configurations, and every figure is the median over
rounds, so slow drift of a shared machine hits every configuration alike; ratios
are taken between medians of the same run. Throughput is the update phase (the
engine's per-epoch timer).

The report also says how close each run is to this machine's memory bandwidth: a
STREAM-like triad measures it, and each problem's bytes per update (if nothing
were cached) turn it into a bandwidth-bound rate.
"""
import json
import math
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

from hogwild.backends.gpu import SCHEDULERS as GPU_SCHEDULERS, check_gpu
from hogwild.schedulers.conflicts import sparsity_stats
from hogwild.backends.host import aligned_copy
from hogwild.limits import check_workers, peak_resident_bytes, usable_cores
from hogwild.errors import HogwildError, check_int, choose
from hogwild.kernels.compiler import compile_loops
from hogwild.bench.machine import (compute_ceiling, describe_machine, progress_bar,
                                   timed_threads)
from hogwild.bench.workloads import BUILDERS, medians

PROBLEMS = ("svm", "mc", "cuts")
BENCH_BACKENDS = ("threads", "processes", "gpu")


def sharing_cost(objective, step, seconds=1.0, rounds=3, run_length=16):
    """What sharing one parameter copy costs the hogwild kernel, as updates/s of 1
    worker, of 2 workers on one shared copy (Hogwild!) and of 2 workers on a private
    copy each (no cache-line traffic between cores: a ceiling, not a valid fit);
    medians of interleaved rounds of about ``seconds`` each. Measured after 2 serial
    epochs, where updates look like a training run's rather than a cold start's."""
    loops = compile_loops(objective.update, objective.loss, objective.fastmath)
    n = objective.n_samples
    runs = np.arange(0, n, run_length, dtype=np.int64)
    np.random.default_rng(0).shuffle(runs)
    whole = [np.array([[0, runs.size, n]], np.int64)]
    halves = [np.array([[0, runs.size // 2, n]], np.int64),
              np.array([[runs.size // 2, runs.size, n]], np.int64)]
    trained = tuple(aligned_copy(p) for p in objective.params)
    steps = np.array([step], np.float64)  # one step for the whole epoch
    for epoch in range(2):
        loops.run_spans(runs, whole[0], run_length, trained, objective.data, steps, 0, 1,
                        epoch)

    def rate(spans, private, epochs):
        copies = [tuple(aligned_copy(p) for p in trained)]
        copies += [tuple(aligned_copy(p) for p in trained) if private else copies[0]
                   for _ in spans[1:]]

        def work(i):
            for epoch in range(epochs):
                loops.run_spans(runs, spans[i], run_length, copies[i], objective.data, steps,
                                0, 1, 2 + epoch)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(spans))]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return n * epochs / (time.perf_counter() - start)

    epochs = max(1, round(seconds * rate(whole, False, 1) / n))
    modes = {"1": (whole, False), "2 shared": (halves, False), "2 private": (halves, True)}
    rates = {mode: [] for mode in modes}
    for _ in range(rounds):
        for mode, (spans, private) in modes.items():
            rates[mode].append(rate(spans, private, epochs))
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    return {"updates_per_s": medians, "per_round": rates, "epochs_per_round": epochs,
            "shared_2_over_1": medians["2 shared"] / medians["1"],
            "private_2_over_1": medians["2 private"] / medians["1"]}


def memory_bandwidth(threads=1, megabytes=256, repeats=3):
    """STREAM-like triad a = b + 3 c over float64 arrays of ``megabytes`` in all,
    split among ``threads`` nogil threads: the best of ``repeats``, in bytes/s,
    counting 24 bytes per element (read b and c, write a)."""
    from numba import njit

    @njit(nogil=True)
    def triad(a, b, c):
        for i in range(a.size):
            a[i] = b[i] + 3.0 * c[i]

    n = megabytes * 2**20 // 24
    a, b, c = np.zeros(n), np.ones(n), np.ones(n)
    triad(a[:8], b[:8], c[:8])
    edges = np.linspace(0, n, threads + 1).astype(int)
    best = math.inf
    for _ in range(repeats):
        best = min(best, timed_threads([(triad, (a[lo:hi], b[lo:hi], c[lo:hi]))
                                        for lo, hi in zip(edges[:-1], edges[1:])]))
    return 24 * n / best


def run_benchmark(problems, schedulers, backends, worker_counts, rounds, quick, seed=0,
                  progress=True, peers=False):
    """(header, records): the machine and one record per configuration."""
    header = {"type": "machine", "quick": quick, "machine": describe_machine(),
              "bandwidth_bytes_per_s": {str(t): memory_bandwidth(t, 64 if quick else 256)
                                        for t in sorted({1, *worker_counts})}}
    workloads = [BUILDERS[p](quick, max(worker_counts)) for p in problems]
    header["sparsity"] = {w.problem: sparsity_stats(w.supports) for w in workloads}
    if max(worker_counts) >= 2:
        header["sharing_cost"] = {
            w.problem: sharing_cost(*w.objective(), seconds=0.1 if quick else 1.0,
                                    rounds=1 if quick else rounds) for w in workloads}
    configs = [(w, s, b, k) for w in workloads for s in schedulers for b in backends
               for k in (worker_counts if s != "serial" else [1])
               if b != "gpu" or s in GPU_SCHEDULERS]  # the GPU runs hogwild and serial
    if peers:  # a peer is a "scheduler" of the "peer" backend
        configs += [(w, name, "peer", threads) for w in workloads
                    for name, (threads, _) in w.peers.items()]
    runs = {}
    ceilings = []  # measured once a round: how much a second core gives right now
    bar = progress_bar(len(configs) * rounds, "run", progress)
    for round_ in range(rounds):
        ceilings.append(compute_ceiling(0.1 if quick else 0.5))
        for workload, scheduler, backend, workers in configs:
            key = (workload.problem, scheduler, backend, workers)
            run = workload.peers[scheduler][1] if backend == "peer" else \
                lambda seed: workload.run(scheduler, workers, backend, seed)
            runs.setdefault(key, []).append(run(seed + round_))
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    header["compute_ceiling_2_over_1"] = statistics.median(ceilings)
    header["compute_ceiling_per_round"] = ceilings
    bandwidth = header["bandwidth_bytes_per_s"]
    records = []
    for workload, scheduler, backend, workers in configs:
        values = runs[(workload.problem, scheduler, backend, workers)]
        summary = medians(values)
        bound = bandwidth[str(workers)] / workload.bytes_per_update
        records.append({
            "type": "result", "problem": workload.problem, "dataset": workload.dataset,
            "unit": workload.unit, "backend": backend, "scheduler": scheduler,
            "workers": workers, "rounds": rounds, **summary,
            "bytes_per_update": workload.bytes_per_update,
            "bandwidth_bound_updates_per_s": bound,
            "fraction_of_bandwidth_bound": (summary["updates_per_s"] / bound
                                            if math.isfinite(summary["updates_per_s"])
                                            else None),
            "peak_rss_bytes": peak_resident_bytes()})
    for record in records:
        base = next((r for r in records if r["problem"] == record["problem"]
                     and r["scheduler"] == record["scheduler"]
                     and r["backend"] == record["backend"] and r["workers"] == 1), None)
        record["speedup_over_1_worker"] = (record["updates_per_s"] / base["updates_per_s"]
                                           if base and record["backend"] != "peer" else None)
    for record in records:  # ours at the most workers against each peer of the problem
        if record["backend"] != "peer":
            continue
        ours = max((r for r in records if r["problem"] == record["problem"]
                    and r["scheduler"] == "hogwild" and r["backend"] == "threads"),
                   key=lambda r: r["workers"], default=None)
        if ours is not None:
            record["hogwild"] = {
                "workers": ours["workers"], "update_seconds": ours["update_seconds"],
                "its_fit_seconds_over_our_update_seconds":
                    record["update_seconds"] / ours["update_seconds"],
                "our_updates_per_s_over_its": (ours["updates_per_s"] / record["updates_per_s"]
                                               if math.isfinite(record["updates_per_s"])
                                               else None),
                "our_metric_minus_its": ours["metric_value"] - record["metric_value"],
                "our_seconds_to_its_metric": _seconds_to_reach(ours, record["metric_value"])}
            reach = record["hogwild"]["our_seconds_to_its_metric"]
            record["hogwild"]["its_fit_seconds_over_our_seconds_to_its_metric"] = \
                record["update_seconds"] / reach if reach else None
    return header, records


def _seconds_to_reach(ours, target):
    """Update-phase seconds until our metric (lower is better: error, RMSE, cut) is
    at most ``target``: equal quality; None if our run never gets there."""
    elapsed = 0.0
    for seconds, value in zip(ours["seconds_per_epoch"], ours["metric_per_epoch"]):
        elapsed += seconds
        if value <= target + 1e-12:
            return elapsed
    return None


def paper_table(header, records):
    """The shape of the Hogwild! paper's Figure 2: per problem, the sparsity
    statistics and the time of the run's epochs for hogwild and locked at the most
    workers and for serial, with the objective and test metric of each."""
    lines = ["| problem | data | Omega | rho | Delta | scheduler | workers | seconds | "
             "objective | test metric |", "|---|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for problem, stats in header["sparsity"].items():
        rows = [r for r in records if r["problem"] == problem and r["backend"] == "threads"]
        most = max((r["workers"] for r in rows), default=1)
        for scheduler in ("hogwild", "locked", "serial"):
            row = next((r for r in rows if r["scheduler"] == scheduler and
                        r["workers"] == (1 if scheduler == "serial" else most)), None)
            if row is None:
                continue
            lines.append(f"| {problem} | {row['dataset']} | {stats['omega']} | "
                         f"{stats['rho']:.3g} | {stats['delta']:.3g} | {scheduler} | "
                         f"{row['workers']} | {row['update_seconds']:.3g} | "
                         f"{row['objective']:.6g} | {row['metric']} {row['metric_value']:.4g} |")
    return lines


def markdown(header, records):
    m = header["machine"]
    lines = [f"Machine: {m['cpu']}, {m['usable_cores']} usable cores, {m['memory_gib']} GiB; "
             f"{', '.join(f'{k} {v}' for k, v in m['versions'].items())}.",
             f"Pure-compute ceiling for 2 threads vs 1 (a nogil loop on no shared data, once "
             f"a round; median): {header['compute_ceiling_2_over_1']:.2f}x, rounds "
             f"{', '.join(f'{c:.2f}' for c in header['compute_ceiling_per_round'])}. "
             "Memory bandwidth (triad): " +
             ", ".join(f"{b / 1e9:.1f} GB/s with {t} thread{'s' * (t != '1')}"
                       for t, b in header["bandwidth_bytes_per_s"].items()) + ".", "",
             "\"Of bandwidth bound\" is updates/s over this machine's triad bandwidth (at "
             "the same thread count) divided by the bytes one update would move if none of "
             "its parameters were in cache; above 100% they mostly are.", ""]
    if "sharing_cost" in header:
        lines += ["What sharing one parameter copy costs (the hogwild kernel alone, 2 workers "
                  "over 1; \"private\" gives each worker its own copy, so no cache line moves "
                  "between cores: a ceiling, not a valid fit):", "",
                  "| problem | 2 workers, shared | 2 workers, private copies |",
                  "|---|---:|---:|"]
        lines += [f"| {problem} | {cost['shared_2_over_1']:.2f}x | "
                  f"{cost['private_2_over_1']:.2f}x |"
                  for problem, cost in header["sharing_cost"].items()] + [""]
    lines += ["### In the shape of the Hogwild! paper's Figure 2", ""]
    lines += paper_table(header, records) + [""]
    for problem in dict.fromkeys(r["problem"] for r in records):
        rows = [r for r in records if r["problem"] == problem]
        first = rows[0]
        lines += [f"### {problem}: {first['dataset']} ({first['epochs']} epochs, median of "
                  f"{first['rounds']} rounds)", "",
                  f"| scheduler | backend | workers | {first['unit']}/s | speedup vs 1 | "
                  f"of bandwidth bound | objective | {first['metric']} |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            speedup = f"{r['speedup_over_1_worker']:.2f}x" if r["speedup_over_1_worker"] \
                else "-"
            rate = f"{r['updates_per_s'] / 1e6:.2f} M" if math.isfinite(r["updates_per_s"]) \
                else "-"
            share = f"{r['fraction_of_bandwidth_bound']:.0%}" \
                if r["fraction_of_bandwidth_bound"] is not None else "-"
            objective = f"{r['objective']:.6g}" if math.isfinite(r["objective"]) else "-"
            lines.append(f"| {r['scheduler']} | {r['backend']} | {r['workers']} | {rate} | "
                         f"{speedup} | {share} | {objective} | {r['metric_value']:.4g} |")
        peer_rows = [r for r in rows if "hogwild" in r]
        if peer_rows:
            ours = peer_rows[0]["hogwild"]
            metric = first["metric"]
            lines += ["", f"Peers against hogwild (threads, {ours['workers']} workers, update "
                          f"phase {ours['update_seconds']:.3g} s). Equal quality: its whole "
                          f"fit over our time to reach its final {metric}.", "",
                      f"| peer | workers | its fit | our updates/s over its | {metric} ours "
                      "minus its | at equal quality |", "|---|---:|---:|---:|---:|---:|"]
            for r in peer_rows:
                versus = r["hogwild"]
                rate = f"{versus['our_updates_per_s_over_its']:.2f}x" \
                    if versus["our_updates_per_s_over_its"] else "-"
                equal = f"{versus['its_fit_seconds_over_our_seconds_to_its_metric']:.2f}x" \
                    if versus["our_seconds_to_its_metric"] else "never reached"
                lines.append(f"| {r['scheduler']} | {r['workers']} | "
                             f"{r['update_seconds']:.3g} s | {rate} | "
                             f"{versus['our_metric_minus_its']:+.4f} | {equal} |")
        lines.append("")
    return "\n".join(lines)


def plot(header, records, folder):
    """speedup.png, throughput.png and objective.png in ``folder``; [] without
    matplotlib (pip install hogwild[plots])."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots (pip install 'hogwild[plots]')",
              file=sys.stderr)
        return []
    problems = list(dict.fromkeys(r["problem"] for r in records))
    counts = sorted({r["workers"] for r in records if r["backend"] != "peer"})
    written = []

    def panels():
        fig, axes = plt.subplots(1, len(problems), figsize=(5 * len(problems), 4),
                                 squeeze=False)
        return fig, zip(axes[0], problems)

    def save(fig, name):
        fig.tight_layout()
        path = Path(folder) / f"{name}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)

    for name, value in (("speedup", lambda r: r["speedup_over_1_worker"]),
                        ("throughput", lambda r: r["updates_per_s"] / 1e6)):
        fig, axes = panels()
        for ax, problem in axes:
            rows = [r for r in records if r["problem"] == problem and r["backend"] != "peer"
                    and r["scheduler"] != "serial"]
            series = {}
            for r in rows:
                series.setdefault(f"{r['scheduler']} ({r['backend']})", []).append(r)
            for label, group in series.items():
                group.sort(key=lambda r: r["workers"])
                ax.plot([r["workers"] for r in group], [value(r) for r in group], marker="o",
                        label=label)
            if name == "speedup":
                ax.plot(counts, counts, linestyle="--", color="grey", label="ideal (linear)")
                cost = header.get("sharing_cost", {}).get(problem)
                if cost:
                    ax.plot([2], [cost["private_2_over_1"]], marker="*", markersize=12,
                            linestyle="none", color="black",
                            label="kernel on private copies (ceiling)")
                ax.set_ylim(bottom=0)
                ax.set_ylabel("speedup over 1 worker (update phase)")
            else:
                for r in records:
                    if r["problem"] == problem and r["backend"] == "peer" and \
                            math.isfinite(r["updates_per_s"]):
                        ax.plot([r["workers"]], [value(r)], marker="s", linestyle="none",
                                label=f"{r['scheduler']} (peer)")
                ax.set_yscale("log")
                plain = matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}")
                ax.yaxis.set_major_formatter(plain)
                low, high = ax.get_ylim()  # label minor ticks only within one decade
                ax.yaxis.set_minor_formatter(plain if high < 10 * low else
                                             matplotlib.ticker.NullFormatter())
                ax.set_ylabel(f"million {rows[0]['unit']} per second (log)")
            ax.set_title(f"{problem}: {rows[0]['dataset']}")
            ax.set_xticks(counts)
            ax.set_xlabel("workers")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        save(fig, name)
    fig, axes = panels()
    for ax, problem in axes:
        rows = [r for r in records if r["problem"] == problem and r["objective_per_epoch"]]
        for r in rows:  # peers have no per-epoch objective
            ax.plot(np.cumsum(r["seconds_per_epoch"]), r["objective_per_epoch"],
                    marker=".", label=f"{r['scheduler']} ({r['backend']}) x{r['workers']}")
        ax.set_title(f"{problem}: {rows[0]['dataset']}")
        ax.set_xlabel("update-phase seconds")
        ax.set_ylabel("training objective")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, "objective")
    return written


def _names(text, allowed, what):
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise HogwildError(f"--{what}s: expected a comma-separated list of {', '.join(allowed)}; "
                           f"got {text!r}")
    for name in names:
        choose(allowed, name, what)
    return names


def _counts(text):
    try:
        counts = sorted({int(part) for part in text.split(",")})
    except ValueError:
        counts = []
    if not counts or counts[0] < 1:
        raise HogwildError(f"--workers: expected a comma-separated list of counts >= 1, "
                           f"got {text!r}")
    check_workers(counts[-1])  # the same bound as a run's
    return counts


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true",
                        help="a one-minute smoke run on small generated data")
    parser.add_argument("--problems", default="svm,mc,cuts",
                        help="comma-separated: svm, mc, cuts (default: all)")
    parser.add_argument("--schedulers", default="hogwild,locked,serial",
                        help="comma-separated schedulers (default: hogwild,locked,serial)")
    parser.add_argument("--backends", default="threads",
                        help="comma-separated: threads, processes, gpu (needs an NVIDIA GPU; "
                             "runs hogwild and serial only) (default: threads)")
    parser.add_argument("--workers", default=None,
                        help="comma-separated worker counts (default: 1..usable cores)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds per configuration (default: 3; 1 with --quick)")
    parser.add_argument("--peers", action="store_true",
                        help="also run the installed peers: scikit-learn's SGDClassifier "
                             "(hinge, log_loss) and LIBLINEAR for svm, Surprise's SVD for mc, "
                             "the PyTorch Hogwild! pattern for both (at the most workers)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default="bench-results",
                        help="where results.jsonl, report.md and the plots go "
                             "(default: bench-results)")


def main(args):
    """Run the benchmark described by parsed ``args``; returns the output folder."""
    from hogwild.schedulers import SCHEDULERS

    problems = _names(args.problems, PROBLEMS, "problem")
    schedulers = _names(args.schedulers, SCHEDULERS, "scheduler")
    backends = _names(args.backends, BENCH_BACKENDS, "backend")
    if "gpu" in backends:
        check_gpu()
    counts = _counts(args.workers) if args.workers else list(range(1, usable_cores() + 1))
    if args.quick and not args.workers:
        counts = [1, 2]
    rounds = (1 if args.quick else 3) if args.rounds is None else \
        check_int("rounds", args.rounds, 1)
    header, records = run_benchmark(problems, schedulers, backends, counts, rounds,
                                    args.quick, args.seed, progress=True, peers=args.peers)
    folder = Path(args.out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "results.jsonl", "w") as out:
        for line in [header] + records:
            out.write(json.dumps(line) + "\n")
    (folder / "report.md").write_text(markdown(header, records) + "\n")
    plots = plot(header, records, folder)
    print(markdown(header, records))
    print(f"results: {folder / 'results.jsonl'}, {folder / 'report.md'}"
          + "".join(f", {p}" for p in plots))
    return folder

