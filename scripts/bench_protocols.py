"""The implicit recommenders on the protocols the field publishes, beside the peers:

- leave-one-out (He et al. 2017, the NCF paper's): MovieLens 1M, every rating an
  interaction, one of each user's held out (at random: the shared copy has no
  timestamps, where the paper holds out the latest), ranked against 100 items the
  user has not rated, drawn once for every model; HR@10 and NDCG@10.
- LightFM's MovieLens 100K example (ua.base / ua.test, ratings >= 4): precision@10
  and AUC, run by scripts/bench_implicit.py (--data ml-100k-ua); its table is in
  docs/bench_implicit.md.

Models at rank 32 with their defaults: ours (WARP, BPR; 20 epochs), LightFM's WARP
(20 epochs), implicit's ALS (its 15 iterations) and BPR (20), and the most popular
items. One thread each. Prints one JSON document (also --out; --markdown writes
its table).

    python scripts/bench_protocols.py            # about 2 minutes here
    python scripts/bench_protocols.py --quick    # planted data, no download
"""
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from hogwild.bench.machine import benchmark_arguments, machine_lines, publish, report_header
from hogwild.datasets.ratings import leave_one_out
from hogwild.datasets.registry import RATINGS_DATASETS, load_ratings
from hogwild.problems.matrix_completion import ImplicitFactorization
from hogwild.problems.matrix_completion.ranking import hit_ratio_ndcg, sampled_negatives

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_implicit import ALS_ITERATIONS, RANK, peers_available  # noqa: E402
from bench_recommend import planted_ratings  # noqa: E402

EPOCHS, NEGATIVES = 20, 100
# as reported by He et al. 2017 on MovieLens 1M (latest interaction held out, 100
# negatives; their models at 64 factors and more): the paper's best model
PUBLISHED = {"NeuMF (He et al. 2017)": {"hr@10": 0.730, "ndcg@10": 0.447}}


def factor_scorer(U, V, bias=None):
    def score(users, candidates):
        scores = np.einsum("uf,ucf->uc", U[users], V[candidates])
        return scores + (bias[candidates] if bias is not None else 0.0)
    return score


def ours(train, loss, seed):
    model = ImplicitFactorization(loss=loss, random_state=seed, workers=1, epochs=EPOCHS)
    model.fit(train)
    return factor_scorer(model.user_factors_, model.item_factors_, model.item_bias_)


def popular(train, seed):
    counts = np.asarray(train.sum(axis=0)).ravel()
    return lambda users, candidates: counts[candidates].astype(np.float64)


def lightfm(train, seed):
    from lightfm import LightFM
    model = LightFM(no_components=RANK, loss="warp", random_state=seed)
    model.fit(train, epochs=EPOCHS, num_threads=1)
    return factor_scorer(model.user_embeddings, model.item_embeddings, model.item_biases)


def implicit_model(train, seed, method):
    if method == "als":
        from implicit.cpu.als import AlternatingLeastSquares
        model = AlternatingLeastSquares(factors=RANK, iterations=ALS_ITERATIONS, num_threads=1,
                                        random_state=seed)
    else:
        from implicit.cpu.bpr import BayesianPersonalizedRanking
        model = BayesianPersonalizedRanking(factors=RANK, iterations=EPOCHS, num_threads=1,
                                            random_state=seed)
    model.fit(train.tocsr(), show_progress=False)
    return factor_scorer(model.user_factors, model.item_factors)


def models(peers):
    chosen = [("hogwild-warp", lambda t, s: ours(t, "warp", s)),
              ("hogwild-bpr", lambda t, s: ours(t, "bpr", s)), ("most-popular", popular)]
    if "lightfm" in peers:
        chosen.append(("lightfm-warp", lightfm))
    if "implicit" in peers:
        chosen += [("implicit-als", lambda t, s: implicit_model(t, s, "als")),
                   ("implicit-bpr", lambda t, s: implicit_model(t, s, "bpr"))]
    return chosen


def leave_one_out_run(ratings, seed, peers):
    data = leave_one_out(ratings, seed)
    users, candidates = sampled_negatives(data.train, data.test, NEGATIVES, seed)
    results = {}
    for label, build in models(peers):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # implicit's and LightFM's own notices
            score = build(data.train, seed)
        seconds = time.perf_counter() - started
        results[label] = {**hit_ratio_ndcg(score(users, candidates)), "train_seconds": seconds}
        print(f"  {label} done", file=sys.stderr, flush=True)
    return {"interactions": int(data.train.nnz + data.test.nnz), "users": int(users.size),
            "items": int(data.train.shape[1]), "negatives": NEGATIVES, "results": results,
            "published": PUBLISHED}


def markdown(report):
    run = report["leave_one_out"]
    lines = ["# Published protocols", "", *machine_lines(report), "",
             f"## Leave-one-out, {report['data']} ({run['interactions']:,} interactions, "
             f"{run['users']:,} users x {run['items']:,} items; each held-out item against "
             f"{run['negatives']} sampled negatives)", "",
             "| model | HR@10 | NDCG@10 | training s |", "|---|---:|---:|---:|"]
    for label, result in run["results"].items():
        lines.append(f"| {label} | {result['hr@10']:.4f} | {result['ndcg@10']:.4f} | "
                     f"{result['train_seconds']:.2f} |")
    for label, result in run["published"].items():
        lines.append(f"| {label}, as published | {result['hr@10']:.3f} | "
                     f"{result['ndcg@10']:.3f} | |")
    return "\n".join(lines)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "planted data, no download")
    args = parser.parse_args(argv)
    report = report_header("bench_protocols", args, ("lightfm", "implicit"))
    peers = peers_available()
    if args.quick:
        ratings, report["data"] = planted_ratings(args.seed), "planted 1,500 x 600"
    elif RATINGS_DATASETS["ml-1m"].locate() is None:
        sys.exit("ml-1m: not in the shared data folder or the download cache (hogwild "
                 "download ml-1m, or set HOGWILD_DATA)")
    else:
        ratings, report["data"] = load_ratings("ml-1m"), "MovieLens 1M"
    report["leave_one_out"] = leave_one_out_run(ratings, args.seed, peers)
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
