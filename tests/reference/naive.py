"""Plain NumPy versions of the compiled kernels, written for clarity, not speed.

They follow the same order of samples as the engine, so a serial run of the
compiled code must agree with them to float32 rounding.
"""
import numpy as np


def svm_objective_value(X, labels, w, reg, loss="hinge", intercept=0.0):
    """mean loss + reg/2 ||w||^2 over the features that occur in X (the intercept
    is not regularised)."""
    margins = labels * (X @ w.astype(np.float64) + intercept)
    if loss == "hinge":
        data_term = np.maximum(0.0, 1.0 - margins).mean()
    else:
        data_term = np.logaddexp(0.0, -margins).mean()
    seen = np.bincount(X.indices, minlength=X.shape[1]) > 0
    return data_term + 0.5 * reg * float(np.sum(w[seen].astype(np.float64) ** 2))


def lazy_turn(e, epoch, salt, log2_epochs=3):
    """splitmix64 of (e, epoch, salt): True for about 1 pair in 2**log2_epochs."""
    mask = (1 << 64) - 1
    x = (e * 0x9E3779B97F4A7C15 + epoch * 0xD1B54A32D192ED03 + salt) & mask
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    x ^= x >> 31
    return x >> (64 - log2_epochs) == 0


def svm_sgd_epoch(X, labels, w, reg, step, order, loss="hinge", epoch=0, salt=0,
                  intercept=None, intercept_rate=0.0, weights=None):
    """One serial epoch of the degree-scaled SGD in the given sample order (in place).
    Inactive hinge samples apply 8 epochs' shrink on their lazy turn only; an
    intercept (a 1-element array, updated in place) takes 8 times its step on an
    active sample's lazy turn only. ``weights``: each sample's loss weight (its
    gradient's factor; the regulariser's shrink is not weighted)."""
    n = X.shape[0]
    weights = np.ones(n) if weights is None else weights
    b = intercept if intercept is not None else np.zeros(1)
    degree = np.bincount(X.indices, minlength=X.shape[1])
    reg_scale = np.where(degree > 0, reg * n / np.maximum(degree, 1), 0.0)
    for e in order:
        cols = X.indices[X.indptr[e]:X.indptr[e + 1]]
        vals = X.data[X.indptr[e]:X.indptr[e + 1]].astype(np.float64)
        margin = labels[e] * (float(w[cols] @ vals) + b[0])
        shrink = np.maximum(0.0, 1.0 - step * reg_scale[cols])
        if loss == "hinge" and margin >= 1:
            if lazy_turn(int(e), epoch, salt):
                w[cols] = w[cols] * shrink ** 8
            continue
        if loss == "hinge":
            g = step * labels[e] * weights[e]
        else:
            g = step * labels[e] * weights[e] / (1.0 + np.exp(margin))
        w[cols] = w[cols] * shrink + g * vals
        if intercept_rate and lazy_turn(int(e), epoch, salt):
            b[0] += g * intercept_rate * 8
    return w


def mean_plus_biases_rmse(train_users, train_items, train_values, test_users, test_items,
                          test_values, reg_user=15.0, reg_item=10.0, sweeps=10):
    """Test RMSE of the mean plus user and item biases, fitted by alternating
    regularised least squares (Surprise's BaselineOnly with its defaults); ids
    unseen in training get no bias."""
    mean = float(np.mean(train_values))
    users, user_index = np.unique(train_users, return_inverse=True)
    items, item_index = np.unique(train_items, return_inverse=True)
    b_user, b_item = np.zeros(users.size), np.zeros(items.size)
    for _ in range(sweeps):
        residual = train_values - mean - b_user[user_index]
        b_item = np.bincount(item_index, residual, items.size) / \
            (reg_item + np.bincount(item_index, minlength=items.size))
        residual = train_values - mean - b_item[item_index]
        b_user = np.bincount(user_index, residual, users.size) / \
            (reg_user + np.bincount(user_index, minlength=users.size))
    predictions = np.full(len(test_values), mean)
    for ids, known, bias in ((test_users, users, b_user), (test_items, items, b_item)):
        where = np.clip(np.searchsorted(known, ids), 0, known.size - 1)
        seen = known[where] == ids
        predictions[seen] += bias[where[seen]]
    return float(np.sqrt(np.mean((predictions - test_values) ** 2)))


def mf_biased_sgd_epoch(users, items, ratings, L, R, user_bias, item_bias, mean, reg,
                        bias_reg, step, order):
    """One serial epoch of the biased model, in place: the prediction is mean +
    b_u + b_v + L_u . R_v; each rating moves both biases (regularised by bias_reg)
    and both factor rows (shrunk by step * reg), the rows from their old values."""
    for e in order:
        u, v = users[e], items[e]
        err = mean + user_bias[u] + item_bias[v] + L[u] @ R[v] - ratings[e]
        user_bias[u] -= step * err + step * bias_reg * user_bias[u]
        item_bias[v] -= step * err + step * bias_reg * item_bias[v]
        L[u], R[v] = (L[u] * (1 - step * reg) - step * err * R[v],
                      R[v] * (1 - step * reg) - step * err * L[u])


def mf_paper_sgd_epoch(users, items, ratings, L, R, user_reg, item_reg, step, order):
    """One serial epoch of the Hogwild! paper's model, in place: the prediction is
    L_u . R_v, and row u (v) is shrunk by its degree-scaled regulariser
    user_reg[u] (item_reg[v]), never below zero."""
    for e in order:
        u, v = users[e], items[e]
        err = L[u] @ R[v] - ratings[e]
        keep_u = max(0.0, 1 - step * user_reg[u])
        keep_v = max(0.0, 1 - step * item_reg[v])
        L[u], R[v] = (L[u] * keep_u - step * err * R[v],
                      R[v] * keep_v - step * err * L[u])


def project_onto_simplex(x):
    """The closest point of {y >= 0, sum y = 1} to x (Duchi et al. 2008, by sorting)."""
    ordered = np.sort(x)[::-1]
    cumulative = np.cumsum(ordered) - 1.0
    rho = np.nonzero(ordered - cumulative / np.arange(1, x.size + 1) > 0)[0][-1]
    return np.maximum(x - cumulative[rho] / (rho + 1), 0.0)


def cut_sgd_epoch(u, v, w, fixed, X, step, order):
    """One serial epoch of projected subgradient descent on the multiway-cut
    relaxation sum_e w_e |X_u - X_v|_1, in place: each edge moves its free ends
    towards each other by step * w_e per label, then projects them back onto the
    simplex. Terminals (fixed) never move."""
    for e in order:
        a, b = u[e], v[e]
        direction = np.sign(X[a] - X[b]) * step * w[e]
        if not fixed[a]:
            X[a] = project_onto_simplex(X[a] - direction)
        if not fixed[b]:
            X[b] = project_onto_simplex(X[b] + direction)
