"""Plain NumPy versions of the compiled kernels, written for clarity, not speed.

They follow the same order of samples as the engine, so a serial run of the
compiled code must agree with them to float32 rounding.
"""
import numpy as np


def svm_objective_value(X, labels, w, reg, loss="hinge"):
    """mean loss + reg/2 ||w||^2 over the features that occur in X."""
    margins = labels * (X @ w.astype(np.float64))
    if loss == "hinge":
        data_term = np.maximum(0.0, 1.0 - margins).mean()
    else:
        data_term = np.logaddexp(0.0, -margins).mean()
    seen = np.bincount(X.indices, minlength=X.shape[1]) > 0
    return data_term + 0.5 * reg * float(np.sum(w[seen].astype(np.float64) ** 2))


def svm_sgd_epoch(X, labels, w, reg, step, order, loss="hinge"):
    """One serial epoch of the degree-scaled SGD in the given sample order (in place)."""
    n = X.shape[0]
    degree = np.bincount(X.indices, minlength=X.shape[1])
    reg_scale = np.where(degree > 0, reg * n / np.maximum(degree, 1), 0.0)
    for e in order:
        cols = X.indices[X.indptr[e]:X.indptr[e + 1]]
        vals = X.data[X.indptr[e]:X.indptr[e + 1]].astype(np.float64)
        margin = labels[e] * float(w[cols] @ vals)
        if loss == "hinge":
            g = step * labels[e] if margin < 1 else 0.0
        else:
            g = step * labels[e] / (1.0 + np.exp(margin))
        shrink = np.maximum(0.0, 1.0 - step * reg_scale[cols])
        w[cols] = w[cols] * shrink + g * vals
    return w
