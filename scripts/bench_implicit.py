"""Implicit-feedback benchmark: ImplicitFactorization (WARP and BPR) at 1 and 2
workers next to LightFM's WARP and implicit's ALS and BPR at 1 and 2 threads, on
three MovieLens protocols: 100K and 1M as implicit data (ratings >= 4 are
interactions, each user's split 80/20 with seed 0), and LightFM's own 100K split
(ml-100k-ua: GroupLens' ua.base / ua.test, ten ratings of each user held out,
ratings >= 4 kept on both sides, as LightFM's fetch_movielens(min_rating=4.0)).
--data also takes planted groups of users and items (PLANTED: 7-16 pairs a row,
where the defaults take adaptive rates). Rank 32, 20 epochs (implicit's ALS: its
15 iterations), every library with its own defaults otherwise; ours also with
adaptive rates forced off and on at one worker (hogwild-warp-fixed-1,
hogwild-warp-adaptive-1: what the default chooses between). Prints one JSON
document (also --out); --plot draws precision@10 against training seconds.

    python scripts/bench_implicit.py              # full run (about 10 minutes here)
    python scripts/bench_implicit.py --quick      # a smoke run on planted data
    python scripts/bench_implicit.py --data planted-600x400,planted-3000x2000  # sparse shapes

Method. Every model is scored by the same code (hogwild's ranking_metrics: each
user's items ranked with their training items left out) after every epoch, and
that evaluation is left out of the clock. Training seconds are wall-clock: ours
from the start of fit() to each epoch's end (data preparation, compilation
checks and the engine's per-epoch objective included) less the held-out
metrics' time (EpochRecord.metric_seconds); LightFM's, the sum of its
fit_partial(epochs=1) calls; implicit's, from the start of fit() to each epoch's
callback, less the evaluation done in earlier callbacks. Time to a precision is
the training seconds at the first epoch whose precision@10 reaches it; the
target is the best peer's final precision@10 at one thread less 0.005 (the
issue's tolerance); "precision_hogwild_warp_1_minus_best_peer" compares finals
with no tolerance. Rounds interleave the configurations; figures are medians
over rounds and ratios compare medians of the same run.

Peers (pip install lightfm implicit; LightFM 1.17 builds from source: see
docs/implicit.md): LightFM(no_components=32, loss="warp") with its adagrad
step 0.05 and no regularisation; implicit's CPU AlternatingLeastSquares
(factors=32, its regularisation 0.01, alpha 1 and 15 iterations) and
BayesianPersonalizedRanking (factors=32, its learning rate 0.01 and
regularisation 0.01).
"""
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

from hogwild.bench.figures import panels, save
from hogwild.bench.machine import (benchmark_arguments, compute_ceiling, describe_machine,
                                   machine_lines, publish)
from hogwild.datasets.ratings import Interactions, Ratings, interactions_from_ratings
from hogwild.datasets.registry import RATINGS_DATASETS, load_ratings
from hogwild.problems.matrix_completion import ImplicitFactorization
from hogwild.problems.matrix_completion.ranking import ranking_metrics

RANK, EPOCHS, THREADS, TOLERANCE = 32, 20, (1, 2), 0.005
PRECISION = "precision@10"
ALS_ITERATIONS = 15  # implicit's default
PEERS_AT_ONE_THREAD = ("lightfm-warp-1", "implicit-als-1", "implicit-bpr-1")


def ours(data, loss, workers, epochs, seed, adaptive=None):
    """(training seconds after each epoch, measures after each epoch)."""
    clock = []
    started = time.perf_counter()
    model = ImplicitFactorization(loss=loss, workers=workers, epochs=epochs, rank=RANK,
                                  random_state=seed, adaptive=adaptive)
    model.fit(data.train, eval_set=data.test,
              callback=lambda record: clock.append(time.perf_counter()))
    left_out = np.cumsum([r.metric_seconds for r in model.history_])
    return list(np.array(clock) - started - left_out), [r.metrics for r in model.history_]


def lightfm_run(data, threads, epochs, seed):
    from lightfm import LightFM
    model = LightFM(no_components=RANK, loss="warp", random_state=seed)
    seconds, measures, total = [], [], 0.0
    for _ in range(epochs):
        started = time.perf_counter()
        model.fit_partial(data.train, epochs=1, num_threads=threads)
        total += time.perf_counter() - started
        seconds.append(total)
        measures.append(ranking_metrics(model.user_embeddings, model.item_embeddings,
                                        model.item_biases, data.test, data.train))
    return seconds, measures


def implicit_run(data, threads, epochs, seed, method="bpr"):
    """implicit's BPR for ``epochs`` iterations, or its ALS for its own 15 (fewer
    where ``epochs`` is: --quick)."""
    if method == "als":
        from implicit.cpu.als import AlternatingLeastSquares
        model = AlternatingLeastSquares(factors=RANK, num_threads=threads, random_state=seed,
                                        iterations=min(epochs, ALS_ITERATIONS))
    else:
        from implicit.cpu.bpr import BayesianPersonalizedRanking
        model = BayesianPersonalizedRanking(factors=RANK, iterations=epochs,
                                            num_threads=threads, random_state=seed)
    seconds, measures, evaluating = [], [], [0.0]

    def after_epoch(*_):
        now = time.perf_counter()
        seconds.append(now - started - evaluating[0])
        # the factors as they are now (implicit trains them in place)
        measures.append(ranking_metrics(model.user_factors, model.item_factors, None,
                                        data.test, data.train))
        evaluating[0] += time.perf_counter() - now

    started = time.perf_counter()
    model.fit(data.train, show_progress=False, callback=after_epoch)
    return seconds, measures


def peers_available():
    found = {}
    for name, module in (("lightfm", "lightfm"), ("implicit", "implicit.cpu.bpr")):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                __import__(module)
            found[name] = True
        except ImportError:
            print(f"{name} not installed: left out (see docs/implicit.md)", file=sys.stderr)
    return found


def configurations(peers):
    """(label, run(data, threads, epochs, seed), threads) in the order rounds run them."""
    runs = []
    for threads in THREADS:
        runs.append((f"hogwild-warp-{threads}",
                     lambda d, t, e, s: ours(d, "warp", t, e, s), threads))
        runs.append((f"hogwild-bpr-{threads}",
                     lambda d, t, e, s: ours(d, "bpr", t, e, s), threads))
        if threads == 1:  # what the default's switch chose between (see ADAPTIVE_*)
            for adaptive in (False, True):
                runs.append((f"hogwild-warp-{'adaptive' if adaptive else 'fixed'}-1",
                             lambda d, t, e, s, a=adaptive: ours(d, "warp", t, e, s, a),
                             threads))
        if "lightfm" in peers:
            runs.append((f"lightfm-warp-{threads}", lightfm_run, threads))
        if "implicit" in peers:
            runs.append((f"implicit-als-{threads}",
                         lambda d, t, e, s: implicit_run(d, t, e, s, "als"), threads))
            runs.append((f"implicit-bpr-{threads}", implicit_run, threads))
    return runs


def time_to(seconds, measures, target):
    """Training seconds at the first epoch reaching precision@10 >= target, or None."""
    for t, m in zip(seconds, measures):
        if m[PRECISION] >= target:
            return t
    return None


def bench(name, data, epochs, rounds, seed, peers):
    runs = {}
    for round_ in range(rounds):
        for label, run, threads in configurations(peers):
            seconds, measures = run(data, threads, epochs, seed + round_)
            runs.setdefault(label, []).append({"seconds": seconds, "measures": measures})
        print(f"  {name}: round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    finals = {label: statistics.median(r["measures"][-1][PRECISION] for r in values)
              for label, values in runs.items()}
    peer_finals = {label: finals[label] for label in PEERS_AT_ONE_THREAD if label in finals}
    best_peer = max(peer_finals, key=peer_finals.get) if peer_finals else "hogwild-warp-1"
    target = finals[best_peer] - TOLERANCE
    results = {}
    for label, values in runs.items():
        reached = [time_to(r["seconds"], r["measures"], target) for r in values]
        results[label] = {
            "final": {key: statistics.median(r["measures"][-1][key] for r in values)
                      for key in (PRECISION, "recall@10", "ndcg@10", "auc")},
            "train_seconds": statistics.median(r["seconds"][-1] for r in values),
            "seconds_to_target": statistics.median(reached) if None not in reached else None,
            "reached_target_in_rounds": sum(t is not None for t in reached),
            # the first round's curve, for the plot: (seconds, precision@10) per epoch
            "curve": [[t, m[PRECISION]] for t, m in zip(values[0]["seconds"],
                                                         values[0]["measures"])],
        }

    def speedup(slow, fast):
        a, b = results.get(slow, {}), results.get(fast, {})
        if a.get("seconds_to_target") and b.get("seconds_to_target"):
            return a["seconds_to_target"] / b["seconds_to_target"]
        return None

    ratios = {
        "precision_hogwild_warp_1_minus_best_peer": finals["hogwild-warp-1"]
        - finals[best_peer],
        "precision_hogwild_warp_2_minus_best_peer": finals["hogwild-warp-2"]
        - finals[best_peer],
        **{f"time_to_target_{peer.replace('-', '_')}_over_hogwild_warp_1":
           speedup(peer, "hogwild-warp-1") for peer in PEERS_AT_ONE_THREAD},
        "time_to_target_hogwild_warp_1_over_2": speedup("hogwild-warp-1", "hogwild-warp-2"),
        "rate_hogwild_warp_2_over_1": results["hogwild-warp-1"]["train_seconds"]
        / results["hogwild-warp-2"]["train_seconds"],
        "rate_hogwild_bpr_2_over_1": results["hogwild-bpr-1"]["train_seconds"]
        / results["hogwild-bpr-2"]["train_seconds"],
    }
    return {"dataset": name, "n_train": int(data.train.nnz), "n_test": int(data.test.nnz),
            "n_users": int(data.user_ids.size), "n_items": int(data.item_ids.size),
            "rank": RANK, "epochs": epochs, "rounds": rounds, "best_peer": best_peer,
            "target_precision": target, "results": results,
            "ratios": {k: v for k, v in ratios.items() if v is not None}}


# Planted groups (name -> users, items, groups, in-group and out-of-group interaction
# probabilities): shapes from 7 to 16 pairs a row, where the defaults take adaptive
# rates; data --planted adds (none chose a fixed-step default; 400 x 300 and 3,000 x
# 2,000 took part in choosing the adaptive ones).
PLANTED = {"planted-600x400": (600, 400, 6, 0.25, 0.01),
           "planted-400x300": (400, 300, 5, 0.2, 0.01),
           "planted-5000x1000": (5000, 1000, 10, 0.1, 0.01),
           "planted-3000x2000": (3000, 2000, 20, 0.05, 0.002)}


def planted_interactions(name, seed):
    """Users and items in groups; a user interacts with items of their group with
    one probability and others with another; split per user 80/20 as MovieLens."""
    n_users, n_items, groups, p_in, p_out = PLANTED[name]
    rng = np.random.default_rng(seed)
    user_group, item_group = rng.integers(0, groups, n_users), rng.integers(0, groups, n_items)
    likes = rng.random((n_users, n_items)) < np.where(user_group[:, None] == item_group,
                                                      p_in, p_out)
    users, items = np.nonzero(likes)
    return interactions_from_ratings(Ratings(users, items, np.full(users.size, 5.0)))


def movielens_protocol(name):
    """The Interactions of one protocol (see the module docstring), or None (said
    why) when its files are not here."""
    ratings_file = RATINGS_DATASETS[name.removesuffix("-ua")].locate()
    if name.endswith("-ua"):  # GroupLens' own split, beside u.data in the archive
        ratings_file = ratings_file and ratings_file.with_name("ua.base")
    if ratings_file is None or not ratings_file.is_file():
        print(f"{name}: not in the shared data folder or the download cache (hogwild "
              f"download fetches u.data alone; ua.base/ua.test come with the shared "
              f"folder's copy)" if name.endswith("-ua") else
              f"{name}: not in the shared data folder or the download cache (hogwild "
              f"download {name})", file=sys.stderr)
        return None
    if not name.endswith("-ua"):
        return interactions_from_ratings(load_ratings(name), threshold=4, test_fraction=0.2,
                                         seed=0)
    base, test = (load_ratings(str(ratings_file.with_name(f"ua.{part}")))
                  for part in ("base", "test"))
    user_ids = np.union1d(base.users, test.users)
    item_ids = np.union1d(base.items, test.items)

    def matrix(part):
        liked = part.values >= 4
        return sp.csr_matrix((np.ones(int(liked.sum()), np.float32),
                              (np.searchsorted(user_ids, part.users[liked]),
                               np.searchsorted(item_ids, part.items[liked]))),
                             shape=(user_ids.size, item_ids.size))

    return Interactions(matrix(base), matrix(test), user_ids, item_ids)


def markdown(report):
    lines = machine_lines(report)
    for d in report["datasets"]:
        lines += [f"### {d['dataset']} ({d['n_train']:,} training / {d['n_test']:,} held-out "
                  f"interactions, {d['n_users']:,} users x {d['n_items']:,} items; rank "
                  f"{d['rank']}, {d['epochs']} epochs, median of {d['rounds']} rounds)", "",
                  f"Target: precision@10 >= {d['target_precision']:.4f} ({d['best_peer']}'s "
                  f"final less {TOLERANCE}).", "",
                  "| configuration | precision@10 | recall@10 | ndcg@10 | AUC | training s | "
                  "s to target |", "|---|---:|---:|---:|---:|---:|---:|"]
        for label, r in d["results"].items():
            f = r["final"]
            to_target = "not reached" if r["seconds_to_target"] is None \
                else f"{r['seconds_to_target']:.2f}"
            lines.append(f"| {label} | {f[PRECISION]:.4f} | {f['recall@10']:.4f} | "
                         f"{f['ndcg@10']:.4f} | {f['auc']:.4f} | {r['train_seconds']:.2f} | "
                         f"{to_target} |")
        lines += ["", "Ratios: " + ", ".join(f"{k} = {v:.3f}" for k, v in d["ratios"].items()),
                  ""]
    return "\n".join(lines)


def plot(report, path):
    datasets = report["datasets"]
    figure, axes = panels(len(datasets))
    for axis, d in zip(axes, datasets):
        for label, r in d["results"].items():
            seconds, precision = zip(*r["curve"])
            axis.plot(seconds, precision, marker=".", label=label,
                      linestyle="-" if label.endswith("-1") else "--")
        axis.axhline(d["target_precision"], color="gray", linewidth=0.8)
        axis.set_xscale("log")
        axis.set(title=f"{d['dataset']}: rank {d['rank']}, {d['epochs']} epochs",
                 xlabel="training seconds (log)", ylabel="precision@10")
        axis.legend(fontsize=7)
    save(figure, path)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on planted data")
    parser.add_argument("--plot", help="also draw precision@10 against seconds to this PNG")
    parser.add_argument("--data", type=lambda text: text.split(","),
                        default=["ml-100k", "ml-1m", "ml-100k-ua"],
                        help="comma-separated: ml-100k, ml-1m, ml-100k-ua and the planted "
                             f"shapes {', '.join(PLANTED)} (default: the three MovieLens)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.data) - {"ml-100k", "ml-1m", "ml-100k-ua", *PLANTED})
    if unknown:
        parser.error(f"--data: unknown data set {unknown[0]!r}")
    peers = peers_available()
    report = {"benchmark": "bench_implicit", "quick": args.quick,
              "machine": describe_machine(("lightfm", "implicit")),
              "compute_ceiling_2_over_1": compute_ceiling(0.3 if args.quick else 1.0),
              "datasets": []}
    if args.quick:
        report["datasets"].append(bench("planted-600x400",
                                        planted_interactions("planted-600x400", args.seed),
                                        epochs=3, rounds=1, seed=args.seed, peers=peers))
    for name in () if args.quick else args.data:
        data = planted_interactions(name, args.seed) if name in PLANTED \
            else movielens_protocol(name)
        if data is not None:
            report["datasets"].append(bench(name, data, EPOCHS, args.rounds, args.seed, peers))
    publish(report, markdown, args.out, args.markdown)
    if args.plot and report["datasets"]:
        plot(report, args.plot)


if __name__ == "__main__":
    main()
