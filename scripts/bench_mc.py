"""Matrix-completion benchmark: hogwild, blocked, locked and serial at 1 and 2 workers
next to LIBMF and Surprise's SVD, on MovieLens 1M (random 80/20 split of the
ratings, seed 0), rank 32, 20 epochs. Prints one JSON document (also --out).

    python scripts/bench_mc.py                 # full run (a few minutes here)
    python scripts/bench_mc.py --quick         # a smoke run on small data

Method. Our throughput is the update phase only (the engine's per-epoch timer;
evaluation excluded). The peers have no per-epoch timer, so their epoch time is
the marginal cost (fit(E epochs) - fit(1 epoch)) / (E - 1), which leaves out their
one-off data conversion and setup. This machine's virtual cores drift, so every
configuration runs once per round, rounds interleave the configurations, and each
figure is the median over rounds; ratios compare medians of the same run.

Peers (pip install hogwild[bench]): LIBMF through the `libmf` PyPI binding (k=32,
20 iterations, L2 regularisation 0.05 on both factors, its default learning rate
0.1, the same thread count; set LIBMF_OBJ to a shared library built from the
same source with other flags to measure that build instead), and Surprise's SVD
(n_factors=32, n_epochs=20, its defaults otherwise; single-threaded). RMSE is
computed the same way for all (unclipped predictions, the training mean for ids
unseen in training) except Surprise, whose predictions are clipped to [1, 5] by
its own test().
"""
import os
import statistics
import sys
import warnings

import numpy as np

from hogwild.datasets.jumbo import make_jumbo
from hogwild.datasets.ratings import split_ratings
from hogwild.datasets.registry import RATINGS_DATASETS, load_ratings
from hogwild.bench.machine import (benchmark_arguments, compute_ceiling, describe_machine,
                             machine_lines, publish)
from hogwild.bench.peers import (dense_triples, libmf_fit, libmf_predict, load_libmf,
                                 surprise_peer)
from hogwild.problems.matrix_completion import MatrixFactorization, rmse

# (name, scheduler, workers)
OUR_CONFIGS = (
    ("serial", "serial", 1),
    ("hogwild-1", "hogwild", 1),
    ("hogwild-2", "hogwild", 2),
    ("blocked-1", "blocked", 1),
    ("blocked-2", "blocked", 2),
    ("locked-1", "locked", 1),
    ("locked-2", "locked", 2),
)
LIBMF_L2 = 0.05


def ours(train, test, scheduler, workers, rank, epochs, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few test ids unseen in training
        model = MatrixFactorization(rank=rank, epochs=epochs, scheduler=scheduler,
                                    workers=workers, random_state=seed).fit(train, eval_set=test)
    history = model.history_
    return {"ratings_per_s": sum(r.updates for r in history) / sum(r.seconds for r in history),
            "test_rmse": history[-1].metrics["test_rmse"], "objective": history[-1].objective}


def libmf_peer(X, test_u, test_i, test_values, threads, rank, epochs, timeout):
    fitted = libmf_fit(X, rank, threads, epochs, LIBMF_L2, timeout)
    if fitted is None:
        print(f"libmf-{threads}: no answer within the time limit (LIBMF's scheduler stalls "
              "now and then); this round left out", file=sys.stderr)
        return None
    full, one, P, Q, b = fitted
    return {"ratings_per_s": X.shape[0] * (epochs - 1) / max(full - one, 1e-9),
            "test_rmse": rmse(libmf_predict(P, Q, b, test_u, test_i), test_values),
            "fit_seconds": full}


def bench(name, train, test, rank, epochs, rounds, seed, peers, libmf_timeout=600):
    mf, libmf_library = load_libmf() if "libmf" in peers else (None, None)
    if "libmf" in peers and mf is None:
        print("libmf not installed: LIBMF left out (pip install hogwild[bench])",
              file=sys.stderr)
    X, test_u, test_i = dense_triples(train, test)
    runs = {}
    stalls = []  # peer runs that did not finish in time (left out of the medians)
    for round_ in range(rounds):
        for label, scheduler, workers in OUR_CONFIGS:
            runs.setdefault(label, []).append(ours(train, test, scheduler, workers, rank,
                                                   epochs, seed + round_))
        if mf is not None:
            for threads in (1, 2):
                measured = libmf_peer(X, test_u, test_i, test.values, threads, rank, epochs,
                                      libmf_timeout)
                if measured is not None:
                    runs.setdefault(f"libmf-{threads}", []).append(measured)
                else:
                    stalls.append(f"libmf-{threads} in round {round_ + 1}")
        if "surprise" in peers:
            measured = surprise_peer(train, test, rank, epochs, seed + round_)
            runs.setdefault("surprise-svd", []).append(
                {"ratings_per_s": measured["updates_per_s"], "test_rmse": measured["test_rmse"],
                 "fit_seconds": measured["fit_seconds"]})
        print(f"  {name}: round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    results = {}
    for label, values in runs.items():
        results[label] = {key: statistics.median(v[key] for v in values)
                          for key in values[0]}
        results[label]["ratings_per_s_per_round"] = [v["ratings_per_s"] for v in values]

    def ratio(a, b):
        if a in results and b in results:
            return results[a]["ratings_per_s"] / results[b]["ratings_per_s"]
        return None

    ratios = {"hogwild_2_over_1": ratio("hogwild-2", "hogwild-1"),
              "blocked_2_over_1": ratio("blocked-2", "blocked-1"),
              "blocked_2_over_hogwild_1": ratio("blocked-2", "hogwild-1"),
              "hogwild_2_over_locked_2": ratio("hogwild-2", "locked-2"),
              "hogwild_1_over_libmf_1": ratio("hogwild-1", "libmf-1"),
              "hogwild_2_over_libmf_2": ratio("hogwild-2", "libmf-2"),
              "blocked_2_over_libmf_2": ratio("blocked-2", "libmf-2"),
              "hogwild_1_over_surprise": ratio("hogwild-1", "surprise-svd")}
    if "libmf-1" in results:
        for label in ("hogwild-1", "hogwild-2", "blocked-2"):
            ratios[f"rmse_{label.replace('-', '_')}_minus_libmf"] = \
                results[label]["test_rmse"] - results["libmf-1"]["test_rmse"]
    return {"dataset": name, "n_train": len(train), "n_test": len(test), "peer_stalls": stalls,
            "n_users": int(np.unique(train.users).size),
            "n_items": int(np.unique(train.items).size), "rank": rank, "epochs": epochs,
            "rounds": rounds, "libmf_library": libmf_library, "results": results,
            "ratios": {k: v for k, v in ratios.items() if v is not None}}


def markdown(report):
    lines = machine_lines(report)
    for d in report["datasets"]:
        lines += [f"### {d['dataset']} ({d['n_train']:,} training / {d['n_test']:,} test "
                  f"ratings, {d['n_users']:,} users x {d['n_items']:,} items; rank {d['rank']}, "
                  f"{d['epochs']} epochs, median of {d['rounds']} rounds)", "",
                  "| configuration | ratings/s | test RMSE |", "|---|---:|---:|"]
        for label, r in d["results"].items():
            lines.append(f"| {label} | {r['ratings_per_s'] / 1e6:.2f} M | "
                         f"{r['test_rmse']:.4f} |")
        lines += ["", "Ratios: " + ", ".join(f"{k} = {v:.3f}" for k, v in d["ratios"].items()),
                  ""]
    return "\n".join(lines)


def main(argv=None):
    args = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on small data").parse_args(argv)
    peers = ["libmf"]
    try:
        import pandas  # noqa: F401
        import surprise  # noqa: F401
        peers.append("surprise")
    except ImportError:
        print("scikit-surprise or pandas not installed: Surprise left out (pip install "
              "hogwild[bench])", file=sys.stderr)
    report = {"benchmark": "bench_mc", "quick": args.quick,
              "machine": describe_machine(("libmf", "scikit-surprise")),
              "libmf_obj": os.environ.get("LIBMF_OBJ"),
              "compute_ceiling_2_over_1": compute_ceiling(0.3 if args.quick else 1.0),
              "datasets": []}
    if args.quick:
        train, test, _ = make_jumbo(2000, 1500, 100_000, rank=4, noise=0.5, seed=args.seed,
                                    folder=None)
        report["datasets"].append(bench("jumbo-2000x1500x100000", train, test, rank=8,
                                        epochs=3, rounds=1, seed=args.seed, peers=peers,
                                        libmf_timeout=15))
    elif RATINGS_DATASETS["ml-1m"].locate() is None:
        print("ml-1m: not in the shared data folder or the download cache (hogwild download "
              "ml-1m)", file=sys.stderr)
    else:
        train, test = split_ratings(load_ratings("ml-1m"), 0.2, seed=0)
        report["datasets"].append(bench("ml-1m", train, test, rank=32, epochs=20,
                                        rounds=args.rounds, seed=args.seed, peers=peers))
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
