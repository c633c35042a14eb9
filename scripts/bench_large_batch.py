"""Large minibatches on MPI ranks: test error against the samples per sync, with and
without the linear scaling rule and its warm-up (Goyal et al., "Accurate, Large
Minibatch SGD", 2017).

Each run is ``hogwild run svm --data imdb-aclimdb --ranks R --sync-every S``: R
ranks each make S local SGD updates, then average their changes, so R x S
samples go into each sync (the "total minibatch"; with S = 1 it is synchronous
minibatch SGD of R samples). Variants: the plain mean ("none"), the step times R
("linear"), and the step times R reached linearly over the first epochs
("linear+warmup"). The reference is one process (the threads backend with one
worker) with the same step, schedule and epochs. Every run has the same seed.

    python scripts/bench_large_batch.py --out docs/bench_large_batch.json \\
        --markdown docs/bench_large_batch.md --plot docs/bench_large_batch.png
    python scripts/bench_large_batch.py --quick   # a9a, 2 ranks, 3 sizes, 3 epochs
"""
import argparse
import json
import subprocess
import sys
import time

from hogwild.bench.machine import publish

VARIANTS = {"none": ["--step-scaling", "none"], "linear": ["--step-scaling", "linear"],
            "linear+warmup": ["--step-scaling", "linear", "--warmup-epochs", "{warmup}"]}
HOLDS = 0.005  # test error within half a point of the one-process run


def hogwild(args, timeout=1800):
    done = subprocess.run([sys.executable, "-m", "hogwild.cli", *args], capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"hogwild {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="imdb-aclimdb")
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--sync-every", default="1,8,64,512,4096,0",
                        help="local updates per sync; 0 = once an epoch")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--warmup-epochs", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--markdown")
    parser.add_argument("--plot")
    args = parser.parse_args(argv)
    if args.quick:
        args.data, args.ranks, args.sync_every, args.epochs = "a9a", "2", "64,1024,0", 3
        args.warmup_epochs = 1.0
    common = ["run", "svm", "--data", args.data, "--epochs", str(args.epochs), "--seed",
              str(args.seed), "--json"]
    single = hogwild(common + ["--workers", "1"])
    report = {"data": args.data, "epochs": args.epochs, "seed": args.seed,
              "warmup_epochs": args.warmup_epochs, "step": single["step"],
              "decay": single["decay"],
              "single_process": {"test_error": single["test_error"],
                                 "objective": single["objective"],
                                 "update_seconds": single["update_seconds"]},
              "runs": []}
    for ranks in map(int, args.ranks.split(",")):
        for every in map(int, args.sync_every.split(",")):
            for variant, options in VARIANTS.items():
                options = [o.format(warmup=args.warmup_epochs) for o in options]
                started = time.perf_counter()
                run = hogwild(common + ["--ranks", str(ranks), *options]
                              + (["--sync-every", str(every)] if every else []))
                info = run["distributed"]
                per_sync = every or -(-run["n_samples"] // ranks)
                report["runs"].append({
                    "ranks": ranks, "sync_every": every or None, "variant": variant,
                    "total_minibatch": ranks * per_sync,
                    "syncs_per_epoch": info["syncs_per_epoch"],
                    "test_error": run["test_error"], "objective": run["objective"],
                    "holds": run["test_error"] <= single["test_error"] + HOLDS,
                    "test_error_per_epoch": [h.get("test_error") for h in run["history"]],
                    "update_seconds": run["update_seconds"],
                    "wall_seconds": time.perf_counter() - started,
                    "exchange": {"dense": info["dense"]["syncs"],
                                 "sparse": info["sparse"]["syncs"]}})
                print(f"ranks {ranks} sync_every {every or 'epoch'} {variant}: test error "
                      f"{100 * run['test_error']:.2f}% (one process "
                      f"{100 * single['test_error']:.2f}%)", file=sys.stderr, flush=True)
    publish(report, markdown, args.out, args.markdown)
    if args.plot:
        plot(report, args.plot)
    return 0


def markdown(report):
    single = report["single_process"]["test_error"]
    lines = [f"Large minibatches on {report['data']}: {report['epochs']} epochs, seed "
             f"{report['seed']}, step {report['step']:.4g} x {report['decay']}^epoch; one "
             f"process: test error {100 * single:.2f}%. A cell holds (no mark) when it is "
             f"within {100 * HOLDS:.1f} points of it; x marks where it breaks. Warm-up: "
             f"{report['warmup_epochs']:g} epochs.", "",
             "| ranks | sync every | total minibatch | none | linear | linear+warmup |",
             "|---|---|---|---|---|---|"]
    keyed = {(r["ranks"], r["sync_every"], r["variant"]): r for r in report["runs"]}
    for ranks, every in dict.fromkeys((r["ranks"], r["sync_every"]) for r in report["runs"]):
        cells = []
        for variant in VARIANTS:
            run = keyed[(ranks, every, variant)]
            cells.append(f"{100 * run['test_error']:.2f}%" + ("" if run["holds"] else " x"))
        total = keyed[(ranks, every, "none")]["total_minibatch"]
        lines.append(f"| {ranks} | {every or 'epoch'} | {total:,} | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines) + "\n"


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.5, 4.8))
    styles = {"none": "o:", "linear": "s-", "linear+warmup": "^--"}
    for k, ranks in enumerate(sorted({r["ranks"] for r in report["runs"]})):
        for variant, style in styles.items():
            runs = sorted((r for r in report["runs"] if r["ranks"] == ranks
                           and r["variant"] == variant), key=lambda r: r["total_minibatch"])
            axes.plot([r["total_minibatch"] for r in runs],
                      [100 * r["test_error"] for r in runs], style, color=f"C{k}",
                      label=f"{ranks} ranks, {variant}")
    single = 100 * report["single_process"]["test_error"]
    axes.axhline(single, color="k", lw=1, label="one process")
    axes.axhspan(single, single + 100 * HOLDS, color="k", alpha=0.08)
    axes.set_xscale("log")
    axes.set_xlabel("samples per sync over all ranks (total minibatch)")
    axes.set_ylabel("test error after the run (%)")
    axes.set_title(f"{report['data']}: {report['epochs']} epochs")
    axes.legend(fontsize=8)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


if __name__ == "__main__":
    sys.exit(main())
