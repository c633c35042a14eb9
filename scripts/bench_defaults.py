"""Defaults on data they were not tuned on: matrix completion and the SVM at their
default settings next to the peers' defaults, on the same splits. Prints one JSON
document (also --out) and Markdown tables (--markdown).

    python scripts/bench_defaults.py             # full run (about 10 minutes here)
    python scripts/bench_defaults.py --quick     # a smoke run on small generated data

Ratings (test RMSE, random 80/20 split of the ratings, seed 0): ml-100k; a uniform
sample of 100,000 ratings of ml-1m (seed 0), whose items keep a long tail of one or
two ratings; ml-1m; and, as checks of sizes nobody tuned on, samples of 50,000
(seed 2) and 300,000 (seed 1) ratings of ml-1m split with seed 3. Rows:
  - hogwild: MatrixFactorization() defaults (biased, rank 32, 20 epochs), 2 workers;
  - hogwild-paper: model="paper" with its defaults (the Hogwild! paper's model);
  - mean+biases: Surprise's BaselineOnly, its defaults (ALS, reg_u 15, reg_i 10);
  - libmf: LIBMF's own defaults (mf-train: k 8, l2 0.1 on both factors, eta 0.1,
    20 iterations), one thread (its multi-threaded scheduler can stall on small
    data), predictions unclipped, the training mean for unseen ids;
  - surprise-svd: Surprise's SVD, its defaults (100 factors, 20 epochs, lr 0.005,
    reg 0.02), predictions clipped to the rating scale by its own test().
Ours are the median over --rounds seeds (hogwild with 2 workers is racy); the
peers run once.

SVM (test error, official splits; the generated sets 40,000 train / 20,000 test
rows with 8.7% empty rows and a 3% positive class, the second one never used for
tuning): hogwild's SparseSVM() defaults (hinge, reg 1e-4, 20 epochs, 2 workers)
with and without its intercept; LIBLINEAR with -B 1 and without a bias, the dual
hinge solver at C = 1 / (n reg) (the same objective); scikit-learn's
SGDClassifier (hinge, alpha = reg, 20 epochs, its intercept); and ours with the
logistic loss. The cost of the intercept is the update-phase time of the 2-worker
run with it over without it, for each loss, median over rounds that interleave
the runs.
"""
import statistics
import sys
import warnings

import numpy as np

from hogwild.datasets.jumbo import make_jumbo
from hogwild.datasets.ratings import Ratings, split_ratings
from hogwild.datasets.registry import RATINGS_DATASETS, SVM_DATASETS, load_ratings, load_svm_data
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.bench.machine import benchmark_arguments, machine_lines, publish, report_header
from hogwild.bench.peers import (libmf_fit, libmf_predict, liblinear_peer, load_libmf,
                           sgd_classifier_peer, surprise_peer)
from hogwild.problems.matrix_completion import IdIndex, MatrixFactorization, rmse
from hogwild.problems.sparse_svm import SparseSVM, binary_labels

SVM_REG = 1e-4
LIBMF_DEFAULTS = {"rank": 8, "l2": 0.1, "epochs": 20}  # mf-train's -k, -l2, -t


# --- ratings --------------------------------------------------------------------------

def rating_sets(quick):
    """(name, train, test, tuned on it?) for each rating set."""
    if quick:
        train, test, _ = make_jumbo(600, 400, 20_000, rank=3, noise=0.5, seed=0, folder=None)
        return [("jumbo-600x400x20000", train, test, False)]
    sets = []
    if RATINGS_DATASETS["ml-100k"].locate() is not None:
        sets.append(("ml-100k", *split_ratings(load_ratings("ml-100k"), 0.2, 0), True))
    if RATINGS_DATASETS["ml-1m"].locate() is None:
        print("ml-1m not found: its rows left out (hogwild download ml-1m)", file=sys.stderr)
        return sets
    ml1m = load_ratings("ml-1m")

    def sample(n, seed, split_seed):
        pick = np.sort(np.random.default_rng(seed).choice(len(ml1m), n, replace=False))
        return split_ratings(Ratings(ml1m.users[pick], ml1m.items[pick], ml1m.values[pick]),
                             0.2, split_seed)
    sets.append(("ml-1m 100k sample", *sample(100_000, 0, 0), True))
    sets.append(("ml-1m", *split_ratings(ml1m, 0.2, 0), True))
    sets.append(("ml-1m 50k sample", *sample(50_000, 2, 3), False))
    sets.append(("ml-1m 300k sample", *sample(300_000, 1, 3), False))
    return sets


def tail_statistics(train):
    """How long the tail is: the share of items with at most 2 training ratings."""
    counts = np.unique(train.items, return_counts=True)[1]
    return {"items_with_at_most_2_ratings": float(np.mean(counts <= 2)),
            "ratings_per_item": float(counts.mean()),
            "ratings_per_user": float(np.unique(train.users, return_counts=True)[1].mean())}


def ours_mc(train, test, model, seed, epochs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few test ids unseen in training
        fitted = MatrixFactorization(model=model, workers=2, epochs=epochs,
                                     random_state=seed).fit(train, eval_set=test)
    return fitted.history_[-1].metrics["test_rmse"]


def surprise_baseline(train, test):
    """Test RMSE of Surprise's BaselineOnly (the mean plus biases), its defaults."""
    import pandas as pd
    from surprise import BaselineOnly, Dataset, Reader

    frame = pd.DataFrame({"user": train.users, "item": train.items, "rating": train.values})
    scale = (float(train.values.min()), float(train.values.max()))
    trainset = Dataset.load_from_df(frame, Reader(rating_scale=scale)).build_full_trainset()
    algo = BaselineOnly(verbose=False)
    algo.fit(trainset)
    testset = zip(test.users.tolist(), test.items.tolist(), test.values.tolist())
    predictions = np.array([p.est for p in algo.test(list(testset))])
    return rmse(predictions, test.values)


def libmf_defaults(train, test):
    users, u = IdIndex.build(train.users)
    items, i = IdIndex.build(train.items)
    X = np.column_stack([u, i, train.values]).astype(np.float32)
    fitted = libmf_fit(X, LIBMF_DEFAULTS["rank"], 1, LIBMF_DEFAULTS["epochs"],
                       LIBMF_DEFAULTS["l2"], timeout=600)
    if fitted is None:
        return None
    _, _, P, Q, b = fitted
    return rmse(libmf_predict(P, Q, b, users.find(test.users), items.find(test.items)),
                test.values)


def bench_ratings(quick, rounds, seed, peers):
    rows = []
    epochs = 5 if quick else 20
    for name, train, test, tuned in rating_sets(quick):
        runs = {"hogwild": [], "hogwild-paper": []}
        for round_ in range(rounds):
            runs["hogwild"].append(ours_mc(train, test, "biased", seed + round_, epochs))
            runs["hogwild-paper"].append(ours_mc(train, test, "paper", seed + round_, epochs))
        results = {label: statistics.median(values) for label, values in runs.items()}
        if "surprise" in peers:
            results["mean+biases"] = surprise_baseline(train, test)
            results["surprise-svd"] = surprise_peer(train, test, 100, epochs, seed)["test_rmse"]
        if "libmf" in peers:
            results["libmf"] = libmf_defaults(train, test)
        rows.append({"dataset": name, "tuned_on": tuned, "n_train": len(train),
                     "n_test": len(test), **tail_statistics(train), "test_rmse": results,
                     "hogwild_per_round": runs["hogwild"]})
        print(f"  ratings {name}: done", file=sys.stderr, flush=True)
    return rows


# --- SVM ------------------------------------------------------------------------------

def rare_class_set(seed, n_features, nnz_per_row):
    X, y = make_sparse_classification(n_samples=60_000, n_features=n_features,
                                      nnz_per_row=nnz_per_row, noise=0.05, seed=seed,
                                      positive_fraction=0.03, empty_fraction=0.087)
    return X[:40_000], y[:40_000], X[40_000:], y[40_000:]


def svm_sets(quick):
    """(name, X, y, X_test, y_test, reg, tuned on it?) for each SVM set."""
    if quick:
        X, y = make_sparse_classification(n_samples=6_000, n_features=500, nnz_per_row=10,
                                          noise=0.05, seed=1, positive_fraction=0.03,
                                          empty_fraction=0.087)
        return [("rare-3% quick", X[:4000], y[:4000], X[4000:], y[4000:], 1e-5, False)]
    sets = []
    for name in ("a9a", "news20-bydate", "imdb-aclimdb"):
        if SVM_DATASETS[name].available():
            train, test = load_svm_data(name)
            sets.append((name, train.X, train.y, test.X, test.y, SVM_REG, True))
    sets.append(("rare-3% (1,000 features)", *rare_class_set(1, 1_000, 10), 1e-5, True))
    sets.append(("rare-3% (5,000 features, held out)", *rare_class_set(7, 5_000, 20), 1e-5,
                 False))
    return sets


def ours_svm(X, y, X_test, y_test, reg, fit_intercept, seed, epochs, loss="hinge"):
    model = SparseSVM(reg=reg, workers=2, random_state=seed, epochs=epochs,
                      fit_intercept=fit_intercept,
                      loss=loss)
    model.fit(X, y, eval_set=(X_test, y_test))
    return model.history_[-1].metrics["test_error"], sum(r.seconds for r in model.history_)


def bench_svm(quick, rounds, seed, peers):
    rows = []
    epochs = 5 if quick else 20
    for name, X, y, X_test, y_test, reg, tuned in svm_sets(quick):
        runs = {(loss, fit_intercept): [] for loss in ("hinge", "logistic")
                for fit_intercept in (False, True)}
        for round_ in range(rounds):
            for loss, fit_intercept in runs:
                runs[loss, fit_intercept].append(ours_svm(X, y, X_test, y_test, reg,
                                                          fit_intercept, seed + round_, epochs,
                                                          loss))
        errors = {"hogwild": statistics.median(e for e, _ in runs["hinge", True]),
                  "hogwild --no-intercept": statistics.median(e for e, _ in runs["hinge", False]),
                  "hogwild --loss logistic": statistics.median(
                      e for e, _ in runs["logistic", True])}
        cost = {loss: statistics.median(a[1] / b[1] for a, b in zip(runs[loss, True],
                                                                    runs[loss, False]))
                for loss in ("hinge", "logistic")}
        labels, _ = binary_labels(y_test, X_test.shape[0])
        if "liblinear" in peers:
            errors["liblinear -B 1"] = liblinear_peer(X, y, X_test, y_test, reg)["test_error"]
            errors["liblinear (no bias)"] = liblinear_peer(X, y, X_test, y_test, reg,
                                                           bias=False)["test_error"]
        if "sklearn" in peers:
            errors["sgdclassifier"] = sgd_classifier_peer(X, y, X_test, labels, "hinge", reg,
                                                          epochs, seed)["test_error"]
        rows.append({"dataset": name, "tuned_on": tuned, "reg": reg, "n_train": X.shape[0],
                     "n_test": X_test.shape[0],
                     "empty_test_rows": float(np.mean(np.diff(X_test.tocsr().indptr) == 0)),
                     "positive_test_rows": float(np.mean(labels > 0)), "test_error": errors,
                     "intercept_update_time_ratio_2_workers": cost})
        print(f"  svm {name}: done", file=sys.stderr, flush=True)
    return rows


# --- report ---------------------------------------------------------------------------

def available_peers():
    peers = []
    if load_libmf()[0] is not None:
        peers.append("libmf")
    for module, peer in (("surprise", "surprise"), ("liblinear", "liblinear"),
                         ("sklearn", "sklearn")):
        try:
            __import__(module)
            peers.append(peer)
        except ImportError:
            print(f"{module} not installed: left out (pip install hogwild[bench])",
                  file=sys.stderr)
    return peers


def markdown(report):
    lines = machine_lines(report)
    rating_labels = ("hogwild", "hogwild-paper", "mean+biases", "libmf", "surprise-svd")
    lines += ["### Ratings: test RMSE, default settings", "",
              "| data | train ratings | items with <= 2 ratings | " +
              " | ".join(rating_labels) + " |", "|---|---:|---:|" + "---:|" * len(rating_labels)]
    for row in report["ratings"]:
        cells = [f"{row['test_rmse'][k]:.4f}" if row["test_rmse"].get(k) is not None else "-"
                 for k in rating_labels]
        lines.append(f"| {row['dataset']}{'' if row['tuned_on'] else ' (not tuned on)'} | "
                     f"{row['n_train']:,} | {100 * row['items_with_at_most_2_ratings']:.1f}% | "
                     + " | ".join(cells) + " |")
    svm_labels = ("hogwild", "hogwild --no-intercept", "liblinear -B 1", "liblinear (no bias)",
                  "sgdclassifier", "hogwild --loss logistic")
    lines += ["", "### SVM: test error, default settings (2 workers)", "",
              "| data | empty / positive test rows | " + " | ".join(svm_labels) +
              " | intercept's update-time cost, hinge / logistic |",
              "|---|---:|" + "---:|" * (len(svm_labels) + 1)]
    for row in report["svm"]:
        cells = [f"{100 * row['test_error'][k]:.2f}%" if k in row["test_error"] else "-"
                 for k in svm_labels]
        lines.append(f"| {row['dataset']}{'' if row['tuned_on'] else ' (not tuned on)'} | "
                     f"{100 * row['empty_test_rows']:.1f}% / "
                     f"{100 * row['positive_test_rows']:.1f}% | " + " | ".join(cells) +
                     " | " + " / ".join(f"{100 * (ratio - 1):+.1f}%" for ratio in
                                        row["intercept_update_time_ratio_2_workers"].values())
                     + " |")
    return "\n".join(lines)


def main(argv=None):
    args = benchmark_arguments(__doc__.split("\n")[0], "a smoke run on small generated "
                               "data").parse_args(argv)
    peers = [] if args.quick else available_peers()
    report = report_header("bench_defaults", args, ("libmf", "scikit-surprise",
                                                    "liblinear-official", "scikit-learn"))
    report["peers"] = peers
    rounds = 1 if args.quick else args.rounds
    report["ratings"] = bench_ratings(args.quick, rounds, args.seed, peers)
    report["svm"] = bench_svm(args.quick, rounds, args.seed, peers)
    publish(report, markdown, args.out, args.markdown)


if __name__ == "__main__":
    main()
