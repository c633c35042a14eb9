"""Matrix factorisation's defaults judged on generated ratings they were not tuned
on, beside LIBMF's defaults. Prints one JSON document (also --out) and Markdown
tables (--markdown).

    python scripts/bench_mf_family.py --rounds 2    # about 15 minutes here
    python scripts/bench_mf_family.py --quick       # a smoke run

Data: Jumbo matrices (hogwild.datasets.jumbo: a planted rank-r matrix of unit
variance plus Gaussian noise, uniform rows and columns; test ratings drawn alike),
around a base of 20,000 x 20,000, 100 ratings a row, rank 10, noise 0.5, one knob
at a time: 10 and 1,000 ratings a row (the latter on 5,000 x 5,000), planted rank 5
and 50, noise 0.1 and 1.0. The noise is the best test RMSE a model can reach;
predicting the training mean gives about sqrt(1 + noise^2). None of these shapes
chose a default (the adaptive rates' values came from 10^7-rating Jumbo data at 100
a row and MovieLens; their switch from MovieLens 100K and 1M).

Runs, on the same ratings in memory:
  - hogwild-1, hogwild-2: MatrixFactorization() defaults (biased, rank 32, 20
    epochs; adaptive rates where rows average 80 ratings or more) at 1 and 2
    workers, the test RMSE after every epoch (eval_set), update-phase seconds;
  - libmf-defaults: LIBMF's own defaults (mf-train: k 8, L2 0.1 on both factors,
    eta 0.1), 2 threads, 20 iterations;
  - libmf-k32: k 32, L2 0.05 (issue 42's `mf-train -k 32 -l2 0.05 -s 2`), 2 threads;
  LIBMF's test RMSE after each iteration is its own report
  (mf_train_with_validation), its iteration time the marginal cost (fit(20) -
  fit(1)) / 19, as scripts/bench_scale.py measures it.
The target of a set is the better LIBMF configuration's final RMSE; "to target" is
the update seconds summed until a run's test RMSE first reaches it (None: not in
20 epochs). Ours are medians over --rounds rounds (seeds seed, seed+1, ...; the
2-worker run is racy); LIBMF runs once (its timing noise is in the ratio only).
"""
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from hogwild.bench.libmf_native import default_library, iteration_seconds, libmf_train
from hogwild.bench.machine import (benchmark_arguments, machine_lines, publish, report_header,
                                   update_seconds_to)
from hogwild.datasets.jumbo import make_jumbo
from hogwild.problems.matrix_completion import MatrixFactorization

EPOCHS = 20
BASE = {"rows": 20_000, "per_row": 100, "rank": 10, "noise": 0.5}
FAMILY = (  # (name, the knob changed from BASE)
    ("base", {}),
    ("10 a row", {"per_row": 10}),
    ("1,000 a row", {"rows": 5_000, "per_row": 1_000}),
    ("rank 5", {"rank": 5}),
    ("rank 50", {"rank": 50}),
    ("noise 0.1", {"noise": 0.1}),
    ("noise 1.0", {"noise": 1.0}),
)
QUICK = (("quick", {"rows": 600, "per_row": 50}),)
LIBMF = {"libmf-defaults": {"rank": 8, "l2": 0.1}, "libmf-k32": {"rank": 32, "l2": 0.05}}
LIBMF_THREADS = 2


def ours(train, test, workers, seed, epochs):
    """{test_rmse, epoch_seconds, adaptive} of MatrixFactorization() defaults."""
    model = MatrixFactorization(workers=workers, epochs=epochs, random_state=seed)
    model.fit((train.users, train.items, train.values),
              eval_set=(test.users, test.items, test.values))
    return {"test_rmse": [r.metrics["test_rmse"] for r in model.history_],
            "epoch_seconds": [r.seconds for r in model.history_],
            "adaptive": bool(model.adaptive_)}


def libmf(library, train, test, folder, epochs, timeout):
    """{label: {test_rmse (by iteration), epoch_seconds}} of both LIBMF settings, or
    {label: {failed}} where LIBMF did not answer."""
    arrays = []
    for name in ("users", "items", "values"):
        path = Path(folder) / f"{name}.npy"
        np.save(path, np.ascontiguousarray(getattr(train, name)))
        arrays.append(str(path))
    test_arrays = (test.users, test.items, test.values)
    runs = {}
    for label, setting in LIBMF.items():
        fits = [libmf_train(library, ("memory", arrays), test_arrays, setting["rank"],
                            LIBMF_THREADS, iters, l2=setting["l2"], timeout=timeout)
                for iters in (1, epochs)]
        curve = libmf_train(library, ("curve", arrays), test_arrays, setting["rank"],
                            LIBMF_THREADS, epochs, l2=setting["l2"], timeout=timeout)
        failed = [f for f in fits + [curve] if f is None or "error" in f]
        if failed:
            runs[label] = {"failed": (failed[0] or {}).get("error", "no answer in time")}
            continue
        epoch, measured = iteration_seconds(fits[0], fits[1], epochs)
        runs[label] = {"test_rmse": curve["test_rmse_by_iteration"],
                       "epoch_seconds": [epoch] * epochs, "epoch_seconds_from": measured}
    return runs


def bench_set(name, knobs, args, library, epochs):
    shape = {**BASE, **knobs}
    rows = shape["rows"]
    train, test, info = make_jumbo(rows, rows, rows * shape["per_row"], rank=shape["rank"],
                                   noise=shape["noise"], seed=args.seed, folder=None)
    rounds = {"hogwild-1": [], "hogwild-2": []}
    for round_ in range(args.rounds):
        order = (1, 2) if round_ % 2 == 0 else (2, 1)  # interleaved
        for workers in order:
            rounds[f"hogwild-{workers}"].append(ours(train, test, workers,
                                                     args.seed + round_, epochs))
    with tempfile.TemporaryDirectory(prefix="hogwild-bench-") as folder:
        # LIBMF's scheduler can stall on small data: a stalled fit is reported, not waited
        peers = {} if library is None else libmf(library, train, test, folder, epochs,
                                                  60 if args.quick else 900)
    results = {}
    for label, runs in rounds.items():
        middle = sorted(runs, key=lambda r: r["test_rmse"][-1])[len(runs) // 2]
        results[label] = {"test_rmse": middle["test_rmse"],
                          "epoch_seconds": [statistics.median(r["epoch_seconds"][k]
                                                              for r in runs)
                                            for k in range(epochs)],
                          "final_rmse": statistics.median(r["test_rmse"][-1] for r in runs),
                          "adaptive": middle["adaptive"]}
    for label, run in peers.items():
        results[label] = dict(run, final_rmse=run["test_rmse"][-1]) if "failed" not in run \
            else run
    finished = [r["final_rmse"] for label, r in results.items()
                if label.startswith("libmf") and "final_rmse" in r]
    target = min(finished) if finished else results["hogwild-1"]["final_rmse"]
    for label, result in results.items():
        if "test_rmse" in result:
            result["seconds_to_target"] = update_seconds_to(target, result["epoch_seconds"],
                                                            result["test_rmse"])
    mean = float(train.values.mean())
    mean_rmse = float(np.sqrt(np.mean((np.asarray(test.values, np.float64) - mean) ** 2)))
    return {"dataset": name, "shape": shape, "n_ratings": int(len(train)),
            "n_test": int(len(test)), "noise_floor": shape["noise"],
            "mean_rmse": mean_rmse, "target_rmse": target, "epochs": epochs,
            "rounds": args.rounds, "results": results}


def markdown(report):
    lines = machine_lines(report)
    lines += ["| data | ratings | floor | mean | hogwild-1 | hogwild-2 | libmf-defaults | "
              "libmf-k32 | s to target: hogwild-2 | libmf (best) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for d in report["datasets"]:
        r = d["results"]

        def final(label):
            got = r.get(label, {})
            text = f"{got['final_rmse']:.4f}" if "final_rmse" in got else "failed"
            return text + (" (adaptive)" if got.get("adaptive") else "")

        best = min((label for label in r if label.startswith("libmf")
                    and "final_rmse" in r[label]),
                   key=lambda label: r[label]["final_rmse"], default=None)

        def to_target(label):
            seconds = r.get(label, {}).get("seconds_to_target")
            return "not reached" if seconds is None else f"{seconds:.2f}"

        lines.append(f"| {d['dataset']} | {d['n_ratings']:,} | {d['noise_floor']:.2f} | "
                     f"{d['mean_rmse']:.4f} | {final('hogwild-1')} | {final('hogwild-2')} | "
                     f"{final('libmf-defaults')} | {final('libmf-k32')} | "
                     f"{to_target('hogwild-2')} | "
                     f"{to_target(best) if best else '-'} |")
    return "\n".join(lines)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on a small matrix")
    args = parser.parse_args(argv)
    library = default_library()
    if library is None:
        print("LIBMF not found (pip install libmf): its columns are left out", file=sys.stderr)
    report = report_header("bench_mf_family", args, ("libmf",))
    epochs = 3 if args.quick else EPOCHS
    report["datasets"] = []
    for name, knobs in QUICK if args.quick else FAMILY:
        report["datasets"].append(bench_set(name, knobs, args, library, epochs))
        print(f"  {name}: done", file=sys.stderr, flush=True)
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
