"""Cold-start items: the hybrid model (user and item features) beside LightFM's with
the same features, and popularity as features predict it.

MovieLens 100K, ratings >= 4 as interactions (LightFM's convention); a share of the
items (COLD_SHARE, drawn per seed) is held out of training entirely, and each user
who interacted with one of them ranks those items alone, from features: genres and
release year for movies, age group, gender and occupation for users (the shared
files u.item, u.user). Measured: precision@10, ndcg@10 and AUC over those users.

- hogwild-features / lightfm-features: items are their features alone
  (item_identity=False; LightFM given the feature columns alone);
- hogwild-bpr-features: ours with the BPR loss, items as their features alone;
- hogwild-identity / lightfm-identity: each training item also has an identity
  feature (the hybrid default; LightFM given the same matrix: identity weight 1,
  the features' weights summing to 1); a cold item has its features alone;
- feature-popularity: a ridge fit of the training items' interaction counts on
  their features, the same ranking for every user (the popularity a cold item's
  features predict);
- test-popularity: the cold items' counts in the test set itself, a ceiling for
  any ranking that is the same for every user (no model can know them).

Every model with its defaults (rank 32, 20 epochs, WARP), one thread. Then the
same on MovieLens 1M's ratings that keep their original movie ids (users 1 to
2,999; genres and year from movies.dat, no user features), not tuned on, one
seed; and the explicit model (loss='squared') on MovieLens 100K: the RMSE of
ratings of cold items beside the training mean plus the user's bias.

    python scripts/bench_hybrid.py            # about 3 minutes here
    python scripts/bench_hybrid.py --quick    # planted data, no download
"""
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hogwild.bench.machine import benchmark_arguments, machine_lines, publish, report_header
from hogwild.datasets.movielens import (movielens_1m_item_features,
                                        movielens_100k_item_features,
                                        movielens_100k_user_features)
from hogwild.datasets.ratings import Ratings, read_ratings
from hogwild.datasets.registry import RATINGS_DATASETS, load_ratings
from hogwild.paths import shared_data_dir
from hogwild.problems.matrix_completion.hybrid import HybridFactorization, row_normalized
from hogwild.problems.matrix_completion.ranking import ranking_metrics

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_implicit import RANK, peers_available  # noqa: E402

COLD_SHARE = 0.2
EPOCHS = 20
SEEDS = 3
RIDGE = 1.0  # feature-popularity's L2 (counts regressed on one-hot features)
ML_1M_PARTIAL = "movielens-1m/ratings_partial_users1-2999.dat.gz"


def cold_split(ratings, seed, threshold=4.0):
    """(train users x warm items CSR of ones, test users x cold items CSR, warm and
    cold indices into the dataset's items, user ids, item ids); ``threshold``
    None keeps the ratings' values (the explicit model)."""
    kept = ratings.subset(ratings.values >= threshold) if threshold is not None else ratings
    user_ids, users = np.unique(kept.users, return_inverse=True)
    item_ids, items = np.unique(kept.items, return_inverse=True)
    values = np.ones(users.size, np.float32) if threshold is not None else kept.values
    matrix = sp.csr_matrix((values, (users, items)), shape=(user_ids.size, item_ids.size))
    if threshold is not None:
        matrix.data[:] = 1.0  # a pair rated twice is one interaction
    cold = np.sort(np.random.default_rng(seed).choice(
        item_ids.size, int(COLD_SHARE * item_ids.size), replace=False))
    warm = np.setdiff1d(np.arange(item_ids.size), cold)
    return matrix[:, warm].tocsr(), matrix[:, cold].tocsr(), warm, cold, user_ids, item_ids


def measures(U, V, bias, test, k=10):
    """precision@k, ndcg@k and auc of the cold items' held-out interactions."""
    found = ranking_metrics(U, V, bias, test, None, k)
    return {name: float(found[name]) for name in (f"precision@{k}", f"ndcg@{k}", "auc")}


def ours(train, test, users, warm_features, cold_features, seed, identity, loss="warp"):
    model = HybridFactorization(loss=loss, item_identity=identity, random_state=seed,
                                workers=1, epochs=EPOCHS)
    model.fit(train, user_features=users, item_features=warm_features)
    cold = model.add_items(cold_features)
    return measures(model.user_factors_, model.item_factors_[cold], model.item_bias_[cold],
                    test)


def lightfm(train, test, users, warm_features, cold_features, seed, identity):
    from lightfm import LightFM
    n_users, n_warm = train.shape
    user_matrix = sp.hstack([sp.identity(n_users), row_normalized(users)]).tocsr() \
        if users is not None else None
    warm_matrix, cold_matrix = row_normalized(warm_features), row_normalized(cold_features)
    if identity:
        warm_matrix = sp.hstack([sp.identity(n_warm), warm_matrix]).tocsr()
        cold_matrix = sp.hstack([sp.csr_matrix((cold_matrix.shape[0], n_warm)),
                                 cold_matrix]).tocsr()
    model = LightFM(no_components=RANK, loss="warp", random_state=seed)
    model.fit(train.tocoo(), user_features=user_matrix, item_features=warm_matrix,
              epochs=EPOCHS, num_threads=1)
    _, U = model.get_user_representations(user_matrix)
    bias, V = model.get_item_representations(cold_matrix)
    return measures(U, V, bias, test)


def feature_popularity(train, test, warm_features, cold_features):
    counts = np.asarray(train.sum(axis=0), np.float64).ravel()
    X = sp.hstack([np.ones((warm_features.shape[0], 1)), warm_features]).toarray()
    weights = np.linalg.solve(X.T @ X + RIDGE * np.eye(X.shape[1]), X.T @ counts)
    predicted = sp.hstack([np.ones((cold_features.shape[0], 1)), cold_features]) @ weights
    return measures(np.zeros((test.shape[0], 1), np.float32),
                    np.zeros((test.shape[1], 1), np.float32), predicted, test)


def test_popularity(test):
    return measures(np.zeros((test.shape[0], 1), np.float32),
                    np.zeros((test.shape[1], 1), np.float32),
                    np.asarray(test.sum(axis=0), np.float64).ravel(), test)


def cold_start(ratings, item_features, user_features, seeds, peers):
    """{model: [measures per seed]} of the cold-items protocol;
    ``item_features(item_ids)``, ``user_features(user_ids)`` (or None)."""
    results = {}
    for seed in seeds:
        train, test, warm, cold, user_ids, item_ids = cold_split(ratings, seed)
        items = item_features(item_ids)
        users = user_features(user_ids) if user_features else None
        runs = {"hogwild-features": lambda: ours(train, test, users, items[warm], items[cold],
                                                 seed, False),
                "hogwild-identity": lambda: ours(train, test, users, items[warm], items[cold],
                                                 seed, True),
                "hogwild-bpr-features": lambda: ours(train, test, users, items[warm],
                                                     items[cold], seed, False, "bpr")}
        if "lightfm" in peers:
            runs["lightfm-features"] = lambda: lightfm(train, test, users, items[warm],
                                                       items[cold], seed, False)
            runs["lightfm-identity"] = lambda: lightfm(train, test, users, items[warm],
                                                       items[cold], seed, True)
        runs["feature-popularity"] = lambda: feature_popularity(train, test, items[warm],
                                                                items[cold])
        runs["test-popularity"] = lambda: test_popularity(test)
        for label, run in runs.items():
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # LightFM's own notices
                found = run()
            found["train_seconds"] = time.perf_counter() - started
            results.setdefault(label, []).append(found)
            print(f"  seed {seed}: {label} done", file=sys.stderr, flush=True)
    return {"users_ranked": int((np.diff(test.tocsr().indptr) > 0).sum()),
            "cold_items": int(cold.size), "warm_items": int(warm.size),
            "results": {label: _mean(runs) for label, runs in results.items()}}


def explicit_cold_start(ratings, item_features, user_features, seed):
    """RMSE of the cold items' ratings: the hybrid squared model against the training
    mean plus each user's bias (the model's own, fitted without item features)."""
    train, test, warm, cold, user_ids, item_ids = cold_split(ratings, seed, threshold=None)
    items, users = item_features(item_ids), user_features(user_ids)
    test = test.tocoo()
    found = {}
    for label, features in (("hogwild-squared-features", (users, items)),
                            ("mean-plus-user-bias", (users, None))):
        model = HybridFactorization(loss="squared", random_state=seed, workers=1,
                                    epochs=EPOCHS)
        started = time.perf_counter()
        model.fit(train, user_features=features[0],
                  item_features=features[1][warm] if features[1] is not None else None)
        if features[1] is not None:
            new = model.add_items(features[1][cold])
            predicted = model.predict(test.row, new[test.col])
        else:  # no item side for a cold item: the mean and the user's bias alone
            predicted = model.mean_ + model.user_bias_[test.row]
        found[label] = {"rmse": float(np.sqrt(np.mean((predicted - test.data) ** 2))),
                        "train_seconds": time.perf_counter() - started}
    return {"cold_ratings": int(test.nnz), "results": found}


def _mean(runs):
    return {name: float(np.mean([run[name] for run in runs])) for name in runs[0]} | {
        "per_seed_precision@10": [run["precision@10"] for run in runs]}


def planted(seed, n_users=600, n_items=400, groups=6):
    """Users and items in groups, each item's group one of its features (with two
    noise features), users interacting mostly with their group's items: a smoke
    run's data."""
    rng = np.random.default_rng(seed)
    user_group, item_group = rng.integers(0, groups, n_users), rng.integers(0, groups, n_items)
    likes = rng.random((n_users, n_items)) < np.where(
        user_group[:, None] == item_group[None, :], 0.15, 0.01)
    users, items = np.nonzero(likes)
    ratings = Ratings(users, items, np.full(users.size, 5.0, np.float32))
    noise = rng.integers(groups, groups + 10, (n_items, 2))
    columns = np.column_stack([item_group, noise])
    features = sp.csr_matrix((np.ones(columns.size, np.float32),
                              (np.repeat(np.arange(n_items), 3), columns.ravel())),
                             shape=(n_items, groups + 10))
    return ratings, lambda ids: features[ids]


def markdown(report):
    lines = ["# Cold-start items: the hybrid model", "", *machine_lines(report), ""]
    for key, title in (("ml_100k", report["data"]),
                       ("ml_1m", "MovieLens 1M, users 1-2,999 (not tuned on)")):
        if key not in report:
            continue
        run = report[key]
        lines += [f"## {title}: {run['cold_items']:,} items held out of "
                  f"{run['cold_items'] + run['warm_items']:,}, ranked for "
                  f"{run['users_ranked']:,} users ({report[key + '_seeds']} seeds, means)", "",
                  "| model | precision@10 | ndcg@10 | AUC | per seed p@10 | s |",
                  "|---|---:|---:|---:|---|---:|"]
        for label, found in run["results"].items():
            seeds = ", ".join(f"{p:.4f}" for p in found["per_seed_precision@10"])
            lines.append(f"| {label} | {found['precision@10']:.4f} | {found['ndcg@10']:.4f} | "
                         f"{found['auc']:.4f} | {seeds} | {found['train_seconds']:.2f} |")
        lines.append("")
    if "explicit" in report:
        run = report["explicit"]
        lines += [f"## Explicit ratings of cold items ({run['cold_ratings']:,} ratings)", "",
                  "| model | RMSE | s |", "|---|---:|---:|"]
        lines += [f"| {label} | {found['rmse']:.4f} | {found['train_seconds']:.2f} |"
                  for label, found in run["results"].items()]
    return "\n".join(lines)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n")[0], "planted data, no download")
    args = parser.parse_args(argv)
    report = report_header("bench_hybrid", args, ("lightfm",))
    peers = peers_available()
    seeds = [args.seed + s for s in range(1 if args.quick else SEEDS)]
    if args.quick:
        ratings, items = planted(args.seed)
        report["data"], report["ml_100k_seeds"] = "planted 600 x 400", len(seeds)
        report["ml_100k"] = cold_start(ratings, items, None, seeds, peers)
        publish(report, markdown, args.out, args.markdown)
        return
    if RATINGS_DATASETS["ml-100k"].locate() is None or \
            not (shared_data_dir() / "movielens-100k" / "u.item").is_file():
        sys.exit("ml-100k with u.item and u.user: not in the shared data folder (set "
                 "HOGWILD_DATA)")
    ratings = load_ratings("ml-100k")
    report["data"], report["ml_100k_seeds"] = "MovieLens 100K", len(seeds)
    report["ml_100k"] = cold_start(
        ratings, lambda ids: movielens_100k_item_features(ids)[0],
        lambda ids: movielens_100k_user_features(ids)[0], seeds, peers)
    report["explicit"] = explicit_cold_start(
        ratings, lambda ids: movielens_100k_item_features(ids)[0],
        lambda ids: movielens_100k_user_features(ids)[0], args.seed)
    partial = shared_data_dir() / ML_1M_PARTIAL
    if partial.is_file():
        report["ml_1m_seeds"] = 1
        report["ml_1m"] = cold_start(read_ratings(partial),
                                     lambda ids: movielens_1m_item_features(ids)[0], None,
                                     seeds[:1], peers)
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
