"""Scale benchmark: how time and memory grow with the data, from 10^6 ratings or
nonzeros to more than this machine's memory. Prints one JSON document (also --out).

    python scripts/bench_scale.py                    # 10^6-10^8 ratings, 10^6-10^9 nonzeros
    python scripts/bench_scale.py --beyond 2500000000 --beyond-memory 8GB   # + 30 GB from disk
    python scripts/bench_scale.py --quick            # a smoke run on small data

What runs. Each of our runs is its own `hogwild run ... --json` process, so that its
peak RSS is its own: matrix completion on Jumbo matrices (a planted rank-10 matrix
plus noise 0.5, 100 ratings a row: enough to learn it, where 10 a row overfit to
above the mean's RMSE; rank 32, the defaults (biased, adaptive rates), `--scheduler
blocked`, --ratings-epochs epochs) and the
linear SVM on click logs (`clicks:`, 100 nonzeros a row, 10^6 hashed features, hinge
loss, --reg 1e-6). Sizes up to --in-memory run in memory at 1 and 2 workers (rounds
interleaved); larger ones and --beyond run from disk under --memory with 2 workers
(hogwild scheduler for ratings: the blocked layout of data larger than memory is not
built). Each run reports wall time by set-up phase, seconds from launch to the first
epoch, time per epoch, updates/s, peak RSS against the data and parameters' own size,
the chunking when streamed, and the test metric per epoch. Data are generated once
into the data cache; later runs read it. For ratings, time to accuracy: the update
seconds until the test RMSE first reaches LIBMF's final RMSE (2 threads, the same
iterations) and --target, ours summed over epochs, LIBMF's its iterations times
its marginal epoch.

Peers. LIBMF through its C API (hogwild.bench.libmf_native: the libmf wheel's
library, or LIBMF_OBJ / --libmf for a build of github.com/cjlin1/libmf): in memory on
the same ratings arrays, and `mf_train_on_disk` (mf-train --disk) on a text file of
the same ratings; k 32, L2 0.05 on both factors, its default learning rate 0.1; its
epoch time is the marginal cost (fit(E) - fit(1)) / (E - 1), its test RMSE after each
iteration its own report (mf_train_with_validation, 2 threads). The random-row
reference: a compiled loop doing the same rank-32 update on uniformly random
(row, column) pairs of a table of the same shape, one thread: what an update costs
without the blocked layout's locality.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

from hogwild.bench.libmf_native import default_library, iteration_seconds, libmf_train, \
    write_text
from hogwild.bench.random_rows import random_row_rate
from hogwild.bench.machine import (benchmark_arguments, machine_lines, publish, report_header,
                                   update_seconds_to)
from hogwild.datasets.jumbo import make_jumbo
from hogwild.disk_arrays import file_of
from hogwild.paths import private_folder

RANK = 32
RATINGS_PER_ROW = 100
NONZEROS_PER_ROW = 100
MAX_FEATURES = 1_000_000
SVM_REG = 1e-6  # the default 1e-4 over-regularises 10^7 rows: 33% test error, 22% here
LIBMF_L2 = 0.05


def ratings_spec(n):
    side = max(n // RATINGS_PER_ROW, 100)
    side = min(side, 10_000_000)
    return f"jumbo:{side}x{side}x{n}"


def clicks_spec(n):
    rows = max(n // NONZEROS_PER_ROW, 100)
    return f"clicks:{rows}x{min(MAX_FEATURES, 10 * rows)}x{n}"


def time_to_accuracy(entry, target):
    """{target, label: update seconds to it} for our runs (median over rounds) and
    LIBMF's 2-thread run, at LIBMF's final RMSE and at ``target``."""
    curve = entry.get("libmf", {}).get("libmf-2", {}).get("test_rmse_by_iteration")
    rows = []
    for goal in ([curve[-1]] if curve else []) + [target]:
        row = {"target": goal}
        for label, runs in entry["runs"].items():
            times = [update_seconds_to(goal, r["epoch_seconds"], r["test_rmse"])
                     for r in runs]
            row[label] = None if None in times else float(np.median(times))
        if curve:
            epoch = entry["libmf"]["libmf-2"]["epoch_seconds"]
            row["libmf-2"] = update_seconds_to(goal, [epoch] * len(curve), curve)
        rows.append(row)
    return rows


def ours(problem, spec, workers, epochs, seed, memory=None, scheduler=None, timeout=None):
    """One `hogwild run` on ``spec``: the JSON it printed, with its wall seconds."""
    command = [sys.executable, "-m", "hogwild.cli", "run", problem, "--data", spec,
               "--workers", str(workers), "--epochs", str(epochs), "--seed", str(seed),
               "--json"]
    if problem == "mc":
        command += ["--rank", str(RANK), "--scheduler", scheduler or "blocked"]
    else:
        command += ["--reg", str(SVM_REG)]
    if memory:
        command += ["--memory", memory]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[2:])} failed: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout)
    metric = "test_rmse" if problem == "mc" else "test_error"
    history = result["history"]
    return {"spec": spec, "workers": workers, "memory": memory,
            "scheduler": result["scheduler"], "wall_seconds": time.perf_counter() - start,
            "setup_phase_seconds": result["setup_phase_seconds"],
            "first_epoch_after_launch_s": result["first_epoch_after_launch_s"],
            "epoch_seconds": [r["seconds"] for r in history],
            "updates_per_s": result["ratings_per_s" if problem == "mc" else "updates_per_s"],
            "nonzeros_per_s": result.get("nonzeros_per_s"),
            "peak_rss_bytes": result["peak_rss_bytes"], "minimum_bytes": result["minimum_bytes"],
            "peak_over_minimum": result["peak_over_minimum"], "streaming": result["streaming"],
            metric: [r[metric] for r in history]}


def libmf_runs(library, spec, epochs, seed, text_folder, disk_threads, timeout):
    """LIBMF on the Jumbo ratings of ``spec``: in memory at 1 and 2 threads (the
    latter with its test RMSE by iteration) and from a text file on disk at
    ``disk_threads``; {label: result}, a result being an error or stall when it did
    not finish."""
    rows, cols, n = (int(x) for x in spec.split(":")[1].split("x"))
    train, test, _ = make_jumbo(rows, cols, n, seed=seed)
    arrays = tuple(file_of(a)[0] for a in (train.users, train.items, train.values))
    test_arrays = tuple(np.asarray(a) for a in (test.users, test.items, test.values))
    text = os.path.join(text_folder, f"{spec.replace(':', '-')}-s{seed}.txt")
    if not os.path.exists(text):
        write_text(text, train.users, train.items, train.values)
    runs = {}
    for label, source, threads in (("libmf-1", ("memory", arrays), 1),
                                   ("libmf-2", ("memory", arrays), 2),
                                   (f"libmf-disk-{disk_threads}", ("disk", text), disk_threads)):
        fits = {iters: libmf_train(library, source, test_arrays, RANK, threads, iters,
                                   l2=LIBMF_L2, timeout=timeout) for iters in (1, epochs)}
        failed = [f for f in fits.values() if f is None or "error" in f]
        if failed:
            runs[label] = {"failed": failed[0] or "no answer within the time limit"}
            continue
        epoch, measured = iteration_seconds(fits[1], fits[epochs], epochs)
        runs[label] = {"threads": threads, "source": source[0], "epoch_seconds_from": measured,
                       "fit_seconds": fits[epochs]["seconds"], "epoch_seconds": epoch,
                       "updates_per_s": n / max(epoch, 1e-9),
                       "test_rmse": fits[epochs]["test_rmse"],
                       "peak_rss_bytes": max(f["peak_rss_bytes"] for f in fits.values())}
        if label == "libmf-2":
            curve = libmf_train(library, ("curve", arrays), test_arrays, RANK, threads,
                                epochs, l2=LIBMF_L2, timeout=timeout)
            if curve is not None and "error" not in curve:
                runs[label].update(curve)
    return runs


def interleaved(problem, spec, label, args, epochs):
    """{label-W: [a run per round]} at 1 and 2 workers, rounds alternating which
    goes first (this machine drifts: a ratio is taken within rounds)."""
    runs = {}
    for round_ in range(args.rounds):
        for workers in ((1, 2) if round_ % 2 == 0 else (2, 1)):
            runs.setdefault(f"{label}-{workers}", []).append(
                ours(problem, spec, workers, epochs, args.seed))
    return runs


def bench_ratings(sizes, in_memory_limit, args, library):
    rows = []
    for n in sizes:
        spec = ratings_spec(n)
        entry = {"kind": "ratings", "size": n, "spec": spec, "runs": {}}
        if n <= in_memory_limit:
            entry["runs"] = interleaved("mc", spec, "blocked", args, args.ratings_epochs)
            if library and n <= args.libmf_max:
                entry["libmf"] = libmf_runs(library, spec, args.ratings_epochs, args.seed,
                                            args.text_folder, 2, args.libmf_timeout)
            entry["time_to_accuracy"] = time_to_accuracy(entry, args.target)
        else:
            entry["runs"]["hogwild-2-disk"] = [ours("mc", spec, 2, args.ratings_epochs,
                                                    args.seed, memory=args.disk_memory,
                                                    scheduler="hogwild")]
        side = int(spec.split(":")[1].split("x")[0])
        entry["random_row_updates_per_s"] = random_row_rate(side, side, args.random_updates)
        rows.append(entry)
        print(f"ratings {n:,}: done", file=sys.stderr, flush=True)
    return rows


def bench_clicks(sizes, in_memory_limit, args):
    rows = []
    for n in sizes:
        spec = clicks_spec(n)
        entry = {"kind": "nonzeros", "size": n, "spec": spec, "runs": {}}
        if n <= in_memory_limit:
            entry["runs"] = interleaved("svm", spec, "hogwild", args, args.epochs)
        else:
            entry["runs"]["hogwild-2-disk"] = [ours("svm", spec, 2, args.epochs, args.seed,
                                                    memory=args.disk_nonzeros_memory)]
        rows.append(entry)
        print(f"nonzeros {n:,}: done", file=sys.stderr, flush=True)
    return rows


def _median_run(runs):
    """The run of median update rate (the figures of one run stay together)."""
    ordered = sorted(runs, key=lambda r: r["updates_per_s"])
    return ordered[len(ordered) // 2]


def markdown(report):
    lines = machine_lines(report)
    lines += ["| data | run | memory | first epoch after launch | s / epoch | updates/s | "
              "peak RSS | over minimum | test metric by epoch |",
              "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for entry in report["ratings"] + report["nonzeros"]:
        for label, runs in entry["runs"].items():
            r = _median_run(runs)
            metric = r.get("test_rmse", r.get("test_error"))
            lines.append(
                f"| {entry['spec']} | {label} | {r['memory'] or 'all'} | "
                f"{r['first_epoch_after_launch_s']:.1f} s | "
                f"{np.median(r['epoch_seconds']):.3g} | {r['updates_per_s'] / 1e6:.1f} M | "
                f"{r['peak_rss_bytes'] / 1e9:.2f} GB | {r['peak_over_minimum']:.2f}x | "
                f"{', '.join(f'{m:.4f}' for m in metric)} |")
        for label, r in entry.get("libmf", {}).items():
            if "failed" in r:
                lines.append(f"| {entry['spec']} | {label} | - | - | - | failed: "
                             f"{r['failed']} | - | - | - |")
            else:
                lines.append(f"| {entry['spec']} | {label} | {r['source']} | - | "
                             f"{r['epoch_seconds']:.3g} | {r['updates_per_s'] / 1e6:.1f} M | "
                             f"{r['peak_rss_bytes'] / 1e9:.2f} GB | - | {r['test_rmse']:.4f} |")
        if "random_row_updates_per_s" in entry:
            lines.append(f"| {entry['spec']} | random rows, 1 thread | - | - | - | "
                         f"{entry['random_row_updates_per_s'] / 1e6:.1f} M | - | - | - |")
    timed = [e for e in report["ratings"] if e.get("time_to_accuracy")]
    if timed:
        lines += ["", "Update seconds to a test RMSE (LIBMF's final, 2 threads; and the "
                  "--target):", "", "| data | target RMSE | " + " | ".join(
                      label for label in timed[0]["time_to_accuracy"][0] if label != "target")
                  + " |", "|---|---:|" + "---:|" * (len(timed[0]["time_to_accuracy"][0]) - 1)]
        for entry in timed:
            for row in entry["time_to_accuracy"]:
                lines.append(f"| {entry['spec']} | {row['target']:.4f} | " + " | ".join(
                    "not reached" if value is None else f"{value:.2f} s"
                    for label, value in row.items() if label != "target") + " |")
    return "\n".join(lines)


def plot(report, path):
    """Time per epoch and peak RSS against data size, ours and LIBMF's."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    series = {}
    for entry in report["ratings"] + report["nonzeros"]:
        for label, runs in entry["runs"].items():
            r = _median_run(runs)
            name = f"{entry['kind']}: {label.replace('-disk', '')}" + \
                (" (from disk)" if r["memory"] else "")
            series.setdefault(name, []).append(
                (entry["size"], np.median(r["epoch_seconds"]), r["peak_rss_bytes"]))
            series.setdefault(f"{entry['kind']}: data + parameters", []).append(
                (entry["size"], None, r["minimum_bytes"]))
        for label, r in entry.get("libmf", {}).items():
            if "failed" not in r:
                series.setdefault(f"ratings: {label}", []).append(
                    (entry["size"], r["epoch_seconds"], r["peak_rss_bytes"]))
    colors = plt.get_cmap("tab20").colors
    for (name, points), color in zip(series.items(), colors):
        points = sorted(set(points), key=lambda p: p[0])
        sizes = [p[0] for p in points]
        style = "--" if "parameters" in name else "-o"
        if points[0][1] is not None:
            axes[0].plot(sizes, [p[1] for p in points], style, color=color, label=name)
        axes[1].plot(sizes, [p[2] / 1e9 for p in points], style, color=color, label=name)
    for ax, what in zip(axes, ("seconds per epoch", "peak RSS (GB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("ratings or nonzeros")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def sizes_option(text):
    return [int(float(x)) for x in text.split(",") if x]


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on small data")
    parser.set_defaults(rounds=2)
    parser.add_argument("--ratings", type=sizes_option, default=[10**6, 10**7, 10**8],
                        help="ratings sizes, in memory (default: 1e6,1e7,1e8)")
    parser.add_argument("--beyond", type=sizes_option, default=[],
                        help="ratings sizes trained from disk (e.g. 2.5e9: 30 GB)")
    parser.add_argument("--beyond-memory", dest="disk_memory", default="8GB",
                        help="--memory of the runs from disk (default: 8GB)")
    parser.add_argument("--nonzeros", type=sizes_option, default=[10**6, 10**7, 10**8],
                        help="click-log nonzeros, in memory (default: 1e6,1e7,1e8)")
    parser.add_argument("--disk-nonzeros", type=sizes_option, default=[10**9],
                        help="click-log nonzeros trained from disk (default: 1e9: 8 GB)")
    parser.add_argument("--disk-nonzeros-memory", default="4GB",
                        help="--memory of the click-log runs from disk (default: 4GB)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the click logs")
    parser.add_argument("--ratings-epochs", type=int, default=20,
                        help="epochs (LIBMF's iterations) of the ratings (default: 20)")
    parser.add_argument("--target", type=float, default=0.72,
                        help="a test RMSE to time the ratings runs to, beside LIBMF's "
                             "final one (default: 0.72, LIBMF's after 10 iterations on "
                             "jumbo:100000x100000x10000000)")
    parser.add_argument("--libmf", default=default_library(),
                        help="LIBMF shared library (default: LIBMF_OBJ, else the libmf "
                             "wheel's)")
    parser.add_argument("--libmf-max", type=float, default=1e8,
                        help="largest ratings size LIBMF runs on (default: 1e8)")
    parser.add_argument("--libmf-timeout", type=float, default=1800)
    parser.add_argument("--text-folder", default=None,
                        help="where LIBMF's text files go (default: the data cache)")
    parser.add_argument("--random-updates", type=int, default=20_000_000)
    parser.add_argument("--plot", help="write the time and memory plot (PNG) here")
    args = parser.parse_args(argv)
    if args.quick:
        args.ratings, args.beyond, args.disk_memory = [10**5], [2 * 10**5], "1.5MB"
        args.nonzeros, args.disk_nonzeros, args.disk_nonzeros_memory = [10**5], [2 * 10**5], "1MB"
        args.rounds, args.epochs, args.random_updates, args.libmf_timeout = 1, 2, 10**5, 60
        args.ratings_epochs = 2
    if args.text_folder is None:
        args.text_folder = str(private_folder("libmf-text"))
    os.makedirs(args.text_folder, exist_ok=True)
    report = report_header("bench_scale", args, ("libmf",))
    report.update({"libmf_library": args.libmf, "epochs": args.epochs,
                   "ratings_epochs": args.ratings_epochs, "target": args.target, "rank": RANK,
                   "rounds": args.rounds})
    report["ratings"] = bench_ratings(sorted(args.ratings + args.beyond),
                                      max(args.ratings, default=0), args, args.libmf)
    report["nonzeros"] = bench_clicks(sorted(args.nonzeros + args.disk_nonzeros),
                                      max(args.nonzeros, default=0), args)
    if args.plot:
        plot(report, args.plot)
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
