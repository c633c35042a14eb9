"""Example: your own sparse objective. Logistic regression with AdaGrad's
per-coordinate steps, written as two plain Python functions that hogwild compiles
into its lock-free loops.

    python scripts/examples/own_objective.py                  # a9a (shipped with hogwild)
    python scripts/examples/own_objective.py --data news20-bydate --workers 2

AdaGrad (Duchi, Hazan and Singer, 2011) scales each coordinate's step by the root
of its summed squared gradients, so rare features take large steps and frequent
ones small: the accumulators are a second parameter array, updated in the same
lock-free way as the weights.
"""
import argparse
import math

import numpy as np
from numba import njit

import hogwild
from hogwild.datasets.registry import load_svm_data
from hogwild.problems.sparse_svm import as_csr, binary_labels

REG = 1e-6  # L2 strength of each touched coordinate


@njit(nogil=True)  # a helper of update and loss: compiled by numba itself
def score(e, w, data):
    indptr, indices, values, _ = data
    total = 0.0
    for k in range(indptr[e], indptr[e + 1]):
        total += w[indices[k]] * values[k]
    return total


def update(e, params, data, step):
    """One AdaGrad step on log(1 + exp(-y x.w)) + REG/2 ||w_x||^2 for row e."""
    w, squares = params
    indptr, indices, values, y = data
    margin = y[e] * score(e, w, data)
    slope = -y[e] / (1.0 + math.exp(min(margin, 30.0)))  # d loss / d score
    for k in range(indptr[e], indptr[e + 1]):
        j = indices[k]
        gradient = slope * values[k] + REG * w[j]
        squares[j] += gradient * gradient
        w[j] -= step * gradient / math.sqrt(squares[j] + 1e-8)


def loss(e, params, data):
    margin = data[3][e] * score(e, params[0], data)
    return math.log1p(math.exp(-margin)) if margin > -30.0 else -margin


def wrong(e, params, data):
    """1 for a misclassified row: the test error as a hogwild.Metric."""
    return 1.0 if data[3][e] * score(e, params[0], data) <= 0.0 else 0.0


def arrays(X, y):
    X = as_csr(X)
    labels, _ = binary_labels(y, X.shape[0])  # -1 / +1 as float32
    return X, (X.indptr, X.indices, X.data, labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="a9a",
                        help="a dataset name or an svmlight file (default: a9a, shipped)")
    parser.add_argument("--epochs", type=int, default=10,
                        help="passes over the samples (default: 10)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker threads (default: every usable core)")
    args = parser.parse_args()

    train, test = load_svm_data(args.data)
    X, data = arrays(train.X, train.y)
    X_test, test_data = arrays(test.X, test.y)
    d = max(X.shape[1], X_test.shape[1])
    X_test.resize(X_test.shape[0], d)
    objective = hogwild.Objective(
        update, loss, params=(np.zeros(d, np.float32), np.zeros(d, np.float32)),
        data=data, n_samples=X.shape[0], name="adagrad-logistic")
    test_error = hogwild.Metric("test_error", wrong, test_data, X_test.shape[0])

    result = hogwild.fit(objective, epochs=args.epochs, step=0.5, workers=args.workers,
                         seed=0, shuffle_block=16, evaluate=test_error)
    for record in result.history:
        print(f"epoch {record.epoch:2}: objective {record.objective:.4f}, test error "
              f"{100 * record.metrics['test_error']:.2f}%")

    try:  # the same model by scikit-learn, for comparison
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return
    reference = LogisticRegression(C=1.0 / (REG * X.shape[0]), fit_intercept=False,
                                   max_iter=1000).fit(X, data[3])
    print(f"scikit-learn LogisticRegression: test error "
          f"{100 * (1 - reference.score(X_test, test_data[3])):.2f}%")


if __name__ == "__main__":
    main()
