"""Serving benchmark of the recommenders: fold-in of new users and top-k for every
user, by time, with the quality the fold-in keeps.

- fold-in: MovieLens 1M (ratings >= 4 as interactions, each user's split 80/20,
  seed 0; the explicit model on the same users' ratings, split 80/20 per user):
  1,000 users (drawn with the seed) left out of training, then folded in from
  their training interactions (ratings) at 1 and 2 workers. Reported: seconds
  to fold in the 1,000 (median over rounds), and on their held-out items the
  precision@10 (test RMSE) of the folded-in users against the same users in a
  model trained on everyone (the same seed).
- partial_fit: the training interactions in two halves (a tenth of the users and a
  twentieth of the items only in the second: hogwild.bench.workloads.
  growth_halves); a model of the first half, then partial_fit on the second,
  against retraining on both at once, at one worker: the seconds of each
  (partial_fit's alone; the first half's fit not counted) and the precision@10
  each reaches, per loss.
- recommend_all: top 10 for every MovieLens 1M user (6,040), seen items left
  out, at 1 and 2 workers, for the WARP model (the explicit model's is the same
  kernel).
- catalogue: top 10 for ``--users`` x ``--items`` random rank-32 factors, exact
  and from faiss's HNSW index (hogwild[ann]; its recall: the share of the exact
  top 10 it finds), at every usable core; the time for all users is extrapolated
  from ``--timed-users`` of them (both grow linearly in users, the index's build
  apart).

Rounds interleave the worker counts; figures are medians. Prints one JSON
document (also --out; --markdown writes its tables).

    python scripts/bench_recommend.py               # about 5 minutes here
    python scripts/bench_recommend.py --quick       # a smoke run on planted data
    python scripts/bench_recommend.py --users 1000000 --items 100000   # the full catalogue
"""
import statistics
import sys
import time
import warnings

import numpy as np

from hogwild.bench.workloads import growth_halves
from hogwild.bench.machine import (benchmark_arguments, machine_lines, publish,
                                   report_header)
from hogwild.datasets.ratings import Ratings, interactions_from_ratings, split_ratings
from hogwild.datasets.registry import RATINGS_DATASETS, load_ratings
from hogwild.problems.matrix_completion import (ImplicitFactorization, MatrixFactorization,
                                                rmse)
from hogwild.errors import HogwildError
from hogwild.problems.matrix_completion.ranking import (approximate_top_n_rows, ranking_metrics,
                                                        top_n_rows)

WORKERS = (1, 2)
FOLDED_USERS = 1000
TOP = 10


def planted_ratings(seed, n_users=1500, n_items=600, groups=8):
    """Users and items in groups, a user rating their group's items high (a
    smoke run's data, with enough users to leave FOLDED_USERS out)."""
    rng = np.random.default_rng(seed)
    user_group, item_group = rng.integers(0, groups, n_users), rng.integers(0, groups, n_items)
    likes = rng.random((n_users, n_items)) < np.where(
        user_group[:, None] == item_group[None, :], 0.2, 0.01)
    users, items = np.nonzero(likes)
    values = np.where(user_group[users] == item_group[items], 5.0, 2.0).astype(np.float32)
    return Ratings(users, items, values)


def timed(call):
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def fold_in_implicit(data, loss, folded, rounds, seed):
    """Seconds to fold in ``folded`` (row indices) per worker count, and the
    precision@10 of the folded-in users against the full model's."""
    train, test = data.train.tocsr(), data.test.tocsr()
    kept = np.setdiff1d(np.arange(train.shape[0]), folded)
    full = ImplicitFactorization(loss=loss, random_state=seed).fit(train)
    model = ImplicitFactorization(loss=loss, random_state=seed).fit(train[kept])
    fitted = (model.user_factors_, model._seen, model.item_counts_)
    seconds = {workers: [] for workers in WORKERS}
    model.set_params(workers=1)
    model.fold_in(train[folded[:2]])  # compiled before the clock
    for _ in range(rounds):
        for workers in WORKERS:
            model.user_factors_, model._seen, model.item_counts_ = fitted
            model.set_params(workers=workers)
            spent, rows = timed(lambda: model.fold_in(train[folded]))
            seconds[workers].append(spent)
    measured = {"full": ranking_metrics(full.user_factors_[folded], full.item_factors_,
                                        full.item_bias_, test[folded], train[folded]),
                "folded": ranking_metrics(model.user_factors_[rows], model.item_factors_,
                                          model.item_bias_, test[folded], train[folded])}
    return {"users": int(folded.size), "pairs": int(train[folded].nnz),
            "seconds": {str(w): statistics.median(s) for w, s in seconds.items()},
            "precision@10_full": measured["full"]["precision@10"],
            "precision@10_folded": measured["folded"]["precision@10"]}


def fold_in_explicit(ratings, folded_ids, rounds, seed):
    """fold_in_implicit's figures for MatrixFactorization: test RMSE of the users."""
    train, test = split_ratings(ratings, 0.2, seed, by="user")
    out, tested = np.isin(train.users, folded_ids), np.isin(test.users, folded_ids)
    held = test.subset(tested)
    full = MatrixFactorization(random_state=seed).fit(train)
    model = MatrixFactorization(random_state=seed).fit(train.subset(~out))
    new = train.subset(out)
    state = {name: getattr(model, name) for name in (
        "user_factors_", "user_bias_", "user_ids_", "_user_index", "_seen", "_seen_values",
        "_sums", "item_counts_")}
    seconds = {workers: [] for workers in WORKERS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # items only the left-out users rated
        model.fold_in(new.subset(np.arange(len(new)) < 5))  # compiled before the clock
        for _ in range(rounds):
            for workers in WORKERS:
                for name, value in state.items():
                    setattr(model, name, value)
                model.set_params(workers=workers)
                seconds[workers].append(timed(lambda: model.fold_in(new))[0])
        figures = {name: rmse(fitted.predict(held.users, held.items), held.values)
                   for name, fitted in (("full", full), ("folded", model))}
    return {"users": int(np.unique(new.users).size), "ratings": len(new),
            "seconds": {str(w): statistics.median(s) for w, s in seconds.items()},
            "test_rmse_full": figures["full"], "test_rmse_folded": figures["folded"]}


def partial_fit(data, loss, rounds, seed):
    first, second, users, items, old_users, old_items = growth_halves(data.train, seed)
    test = data.test.tocsr()[users][:, items]
    seconds, precision = {"retrain": [], "partial_fit": []}, {"retrain": [], "partial_fit": []}
    for round_ in range(rounds):
        options = {"loss": loss, "random_state": seed + round_, "workers": 1}
        spent, whole = timed(lambda: ImplicitFactorization(**options).fit(first + second))
        seconds["retrain"].append(spent)
        precision["retrain"].append(whole.evaluate(test)["precision@10"])
        model = ImplicitFactorization(**options).fit(first[:old_users][:, :old_items])
        seconds["partial_fit"].append(timed(lambda: model.partial_fit(second))[0])
        precision["partial_fit"].append(model.evaluate(test)["precision@10"])
    return {"first_pairs": int(first.nnz), "second_pairs": int(second.nnz),
            "new_users": int(first.shape[0] - old_users),
            "new_items": int(first.shape[1] - old_items),
            "seconds": {name: statistics.median(s) for name, s in seconds.items()},
            "precision@10": {name: statistics.median(p) for name, p in precision.items()},
            "seconds_partial_fit_over_retrain": statistics.median(seconds["partial_fit"])
            / statistics.median(seconds["retrain"])}


def recommend_all(data, rounds, seed):
    model = ImplicitFactorization(random_state=seed).fit(data.train)
    model.set_params(workers=1)
    model.recommend_all(users=[0], n=TOP)  # compiled before the clock
    seconds = {workers: [] for workers in WORKERS}
    for _ in range(rounds):
        for workers in WORKERS:
            model.set_params(workers=workers)
            seconds[workers].append(timed(lambda: model.recommend_all(n=TOP))[0])
    return {"users": int(model.user_factors_.shape[0]),
            "items": int(model.item_factors_.shape[0]),
            "seconds": {str(w): statistics.median(s) for w, s in seconds.items()}}


def catalogue(n_users, n_items, timed_users, seed, rank=32):
    """Top 10 of n_items for timed_users of n_users users (random factors), on every
    core, exact and (where faiss-cpu is installed) from the HNSW index: seconds,
    the seconds for all n_users, and the share of the exact top 10 the index
    finds (its recall)."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((timed_users, rank), np.float32)
    V = rng.standard_normal((n_items, rank), np.float32)
    bias = rng.standard_normal(n_items, np.float32)
    users = np.arange(timed_users)
    top_n_rows(U, V, bias, users[:2], TOP)  # compiled before the clock
    spent, (exact, _) = timed(lambda: top_n_rows(U, V, bias, users, TOP))
    result = {"users": n_users, "items": n_items, "rank": rank, "timed_users": timed_users,
              "exact": {"seconds": spent, "seconds_all_users": spent * n_users / timed_users}}
    try:
        approximate_top_n_rows(U, V[:50], bias[:50], users[:2], TOP)  # faiss there?
    except HogwildError as missing:
        result["approximate"] = {"left_out": str(missing)}
        return result
    spent, (found, _) = timed(lambda: approximate_top_n_rows(U, V, bias, users, TOP))
    build, _ = timed(lambda: approximate_top_n_rows(U, V, bias, users[:1], TOP))
    result["approximate"] = {
        "seconds": spent, "index_seconds": build,
        "seconds_all_users": build + (spent - build) * n_users / timed_users,
        "recall@10": float(np.mean([np.intersect1d(a, b).size / TOP
                                    for a, b in zip(found, exact)]))}
    return result


def markdown(report):
    lines = ["# Recommender serving: fold-in and top-k", "", *machine_lines(report), ""]
    for name, section in report["fold_in"].items():
        quality = ", ".join(f"{key} {value:.4f}" for key, value in section.items()
                            if key.startswith(("precision", "test_rmse")))
        lines.append(f"- fold-in {name}: {section['users']} users in "
                     + ", ".join(f"{s:.3f} s at {w} worker{'s' if w != '1' else ''}"
                                 for w, s in section["seconds"].items()) + f"; {quality}")
    for loss, grown in report["partial_fit"].items():
        lines.append(f"- partial_fit {loss}: second half ({grown['second_pairs']} pairs, "
                     f"{grown['new_users']} new users, {grown['new_items']} new items) in "
                     f"{grown['seconds']['partial_fit']:.2f} s against retraining's "
                     f"{grown['seconds']['retrain']:.2f} s; precision@10 "
                     f"{grown['precision@10']['partial_fit']:.4f} against "
                     f"{grown['precision@10']['retrain']:.4f}")
    ranked = report["recommend_all"]
    lines.append(f"- recommend_all: top {TOP} for {ranked['users']} users x {ranked['items']} "
                 "items in " + ", ".join(f"{s:.3f} s at {w} worker{'s' if w != '1' else ''}"
                                         for w, s in ranked["seconds"].items()))
    big = report["catalogue"]
    lines.append(f"- catalogue: {big['users']:,} users x {big['items']:,} items, rank "
                 f"{big['rank']}, top {TOP} ("
                 + ("all timed" if big["timed_users"] == big["users"] else
                    f"{big['timed_users']:,} users timed, the rest extrapolated")
                 + f"): exact {big['exact']['seconds_all_users']:.1f} s")
    near = big["approximate"]
    lines.append(f"  - approximate (faiss HNSW): {near['seconds_all_users']:.1f} s (index "
                 f"{near['index_seconds']:.1f} s), recall@{TOP} {near['recall@10']:.3f}"
                 if "left_out" not in near else f"  - approximate: {near['left_out']}")
    return "\n".join(lines)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on planted data")
    parser.add_argument("--users", type=int, default=1_000_000,
                        help="users of the catalogue benchmark (default 10^6)")
    parser.add_argument("--items", type=int, default=100_000,
                        help="items of the catalogue benchmark (default 10^5)")
    parser.add_argument("--timed-users", type=int, default=20_000,
                        help="users actually ranked in the catalogue benchmark (the rest "
                             "extrapolated; default 20,000)")
    args = parser.parse_args(argv)
    report = report_header("bench_recommend", args)
    if args.quick:
        ratings, rounds = planted_ratings(args.seed), 1
        args.users, args.items, args.timed_users = 2000, 1000, 2000
    elif RATINGS_DATASETS["ml-1m"].locate() is None:
        sys.exit("ml-1m: not in the shared data folder or the download cache (hogwild "
                 "download ml-1m, or set HOGWILD_DATA)")
    else:
        ratings, rounds = load_ratings("ml-1m"), args.rounds
    data = interactions_from_ratings(ratings)
    folded = np.sort(np.random.default_rng(args.seed).choice(
        data.train.shape[0], FOLDED_USERS, replace=False))
    report["fold_in"] = {}
    for loss in ("warp", "bpr"):
        report["fold_in"][f"implicit-{loss}"] = fold_in_implicit(data, loss, folded, rounds,
                                                                 args.seed)
        print(f"fold-in implicit-{loss} done", file=sys.stderr, flush=True)
    report["fold_in"]["explicit-biased"] = fold_in_explicit(ratings, data.user_ids[folded],
                                                            rounds, args.seed)
    report["partial_fit"] = {loss: partial_fit(data, loss, rounds, args.seed)
                             for loss in ("warp", "bpr")}
    report["recommend_all"] = recommend_all(data, rounds, args.seed)
    report["catalogue"] = catalogue(args.users, args.items,
                                    min(args.timed_users, args.users), args.seed)
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
