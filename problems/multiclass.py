"""One-vs-rest linear classification of K classes in one lock-free pass.

The K binary problems (class k against the rest, each the sparse SVM's objective
with the degree-scaled L2 regulariser) share one parameter matrix W (d x K, a
feature's K weights side by side, so a sample's update reads and writes
contiguous memory) and K intercepts, and each sample updates all K of them in one
call: its features are read once per epoch from memory and K times from cache.
Why not K separate objectives, as scikit-learn's OvR runs them: that is K passes
over the samples, each reading every sample from memory, and K sets of workers
contending for the same cache lines in turn; one pass reads each sample once.

data = (indptr int64[n+1], indices int32[nnz], values float32[nnz],
        classes int32[n] (the class index of each sample), weights float32[n]
        (sample and class weights), reg_scale float32[d] = reg * n / d_u,
        salt uint64[1], intercept_rate float32[1], n_classes int64[1])
params = (W float32[d, K], intercepts float32[CLASS_SLOT + K + 16]); the
intercept of class k is intercepts[CLASS_SLOT + k], on cache lines of their own.
"""
import functools
import math

import numpy as np
from numba import njit

from hogwild.objective import Metric, Objective
from hogwild.problems.linear_kernels import LAZY_EPOCHS_LOG2, lazy_turn
from hogwild.structure import IdArray, Supports

CLASS_SLOT = 16  # intercepts start a 64-byte cache line in, and end one before the end


@njit(nogil=True, inline="always")
def _class_score(e, k, W, b, data):
    """x_e . W[:, k] + b_k."""
    indptr, indices, values = data[0], data[1], data[2]
    total = b[CLASS_SLOT + k]
    for p in range(indptr[e], indptr[e + 1]):
        total += W[indices[p], k] * values[p]
    return total


@njit(nogil=True, inline="always")
def _class_step(e, k, W, data, step, g):
    """W[j, k] <- W[j, k] * (1 - step * reg_scale_j) + g * x_ej over e's features."""
    indptr, indices, values, reg_scale = data[0], data[1], data[2], data[5]
    for p in range(indptr[e], indptr[e + 1]):
        j = indices[p]
        shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
        W[j, k] = W[j, k] * shrink + g * values[p]


@njit(nogil=True, inline="always")
def _class_lazy_shrink(e, k, W, data, step):
    """The shrink of 2**LAZY_EPOCHS_LOG2 epochs at once (see linear_kernels)."""
    indptr, indices, reg_scale = data[0], data[1], data[5]
    for p in range(indptr[e], indptr[e + 1]):
        j = indices[p]
        shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
        for _ in range(LAZY_EPOCHS_LOG2):
            shrink *= shrink
        W[j, k] *= shrink


@njit(nogil=True, inline="always")
def _class_intercept(turn, k, b, data, g):
    """The intercept's step, thinned to the lazy turns as the binary kernel's."""
    rate = data[7][0]
    if rate != 0 and turn:
        b[CLASS_SLOT + k] += g * (rate * (1 << LAZY_EPOCHS_LOG2))


@njit(nogil=True, inline="always")
def _sign(e, k, data):
    return np.float32(1.0) if data[3][e] == k else np.float32(-1.0)


def ovr_hinge_update(e, params, data, step, epoch):
    W, b = params[0], params[1]
    s = np.float32(step)
    turn = lazy_turn(e, epoch, data[6][0])
    for k in range(data[8][0]):
        y = _sign(e, k, data)
        if y * _class_score(e, k, W, b, data) < 1:
            g = s * y * data[4][e]
            _class_step(e, k, W, data, s, g)
            _class_intercept(turn, k, b, data, g)
        elif turn:
            _class_lazy_shrink(e, k, W, data, s)


def ovr_logistic_update(e, params, data, step, epoch):
    W, b = params[0], params[1]
    s = np.float32(step)
    turn = lazy_turn(e, epoch, data[6][0])
    for k in range(data[8][0]):
        y = _sign(e, k, data)
        g = s * y * data[4][e] / (np.float32(1.0) + math.exp(y * _class_score(e, k, W, b,
                                                                               data)))
        _class_step(e, k, W, data, s, g)
        _class_intercept(turn, k, b, data, g)


@njit(nogil=True, inline="always")
def _margin_and_penalty(e, k, params, data):
    """(y_ek (x_e . W[:, k] + b_k), the regulariser's share 0.5 sum_j reg_scale_j
    W[j, k]^2 over e's features), in one pass over them."""
    W, indptr, indices, values, reg_scale = params[0], data[0], data[1], data[2], data[5]
    score, penalty = params[1][CLASS_SLOT + k], 0.0
    for p in range(indptr[e], indptr[e + 1]):
        weight = W[indices[p], k]
        score += weight * values[p]
        penalty += reg_scale[indices[p]] * weight * weight
    return _sign(e, k, data) * score, 0.5 * penalty


def ovr_hinge_loss(e, params, data):
    total = 0.0
    for k in range(data[8][0]):
        margin, penalty = _margin_and_penalty(e, k, params, data)
        total += max(0.0, 1.0 - margin) * data[4][e] + penalty
    return total


def ovr_logistic_loss(e, params, data):
    total = 0.0
    for k in range(data[8][0]):
        m, penalty = _margin_and_penalty(e, k, params, data)
        # log(1 + exp(-m)) without overflow for large |m|
        term = math.log1p(math.exp(-m)) if m > 0 else -m + math.log1p(math.exp(m))
        total += term * data[4][e] + penalty
    return total


KERNELS = {"hinge": (ovr_hinge_update, ovr_hinge_loss),
           "logistic": (ovr_logistic_update, ovr_logistic_loss)}


def ovr_objective(X, classes_of, weights, n_classes, loss, reg_scale, salt, intercept_rate):
    """The Objective of K one-vs-rest problems on a prepared X (sparse_svm.as_csr):
    ``classes_of`` int32 class indices, ``weights`` float32 per-sample weights,
    ``reg_scale`` and ``salt`` as the binary objective's (sparse_svm.svm_objective),
    the intercepts moved by ``intercept_rate`` times a feature's step (0: none)."""
    update, sample_loss = KERNELS[loss]
    n, d = X.shape
    data = (X.indptr, X.indices, X.data, np.ascontiguousarray(classes_of, np.int32),
            np.ascontiguousarray(weights, np.float32), reg_scale, salt,
            np.array([intercept_rate], np.float32), np.array([n_classes], np.int64))
    params = (np.zeros((d, n_classes), np.float32),
              np.zeros(CLASS_SLOT + n_classes + 16, np.float32))
    return Objective(update, sample_loss, params=params, data=data, n_samples=n,
                     name=f"sparse-svm-ovr-{loss}",
                     supports=None if intercept_rate else functools.partial(Supports.from_csr,
                                                                            X),
                     id_arrays=(IdArray(ids=1, params=(0,), data=(5,)),),
                     indices_checked=True, sample_offsets=0)


def ovr_wrong(e, params, data):
    """1.0 when the highest score of row e is not its class's (ties: the lowest
    class index, as numpy's argmax), else 0.0."""
    best, best_score = 0, _class_score(e, 0, params[0], params[1], data)
    for k in range(1, data[4][0]):
        score = _class_score(e, k, params[0], params[1], data)
        if score > best_score:
            best, best_score = k, score
    return 1.0 if best != data[3][e] else 0.0


def ovr_error_metric(X, classes_of, n_classes):
    """The error rate on (X, class indices) as a hogwild.Metric."""
    return Metric("test_error", ovr_wrong, (X.indptr, X.indices, X.data,
                                            np.ascontiguousarray(classes_of, np.int32),
                                            np.array([n_classes], np.int64)), X.shape[0])


@njit(nogil=True, cache=True)
def ovr_scores(W, b, indptr, indices, values, out):
    """out[e, k] = x_e . W[:, k] + b_k for every row and class."""
    for e in range(out.shape[0]):
        for k in range(out.shape[1]):
            total = b[CLASS_SLOT + k]
            for p in range(indptr[e], indptr[e + 1]):
                total += W[indices[p], k] * values[p]
            out[e, k] = total
