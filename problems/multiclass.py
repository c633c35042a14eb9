"""One-vs-rest linear classification of K classes in one lock-free pass.

The K binary problems (class k against the rest, each the sparse SVM's objective
with the degree-scaled L2 regulariser) share one parameter matrix W (d x K, a
feature's K weights side by side, so a sample's update reads and writes
contiguous memory) and K intercepts, and each sample updates all K of them in one
call: its features are read once per epoch from memory and K times from cache.
Why not K separate objectives, as scikit-learn's OvR runs them: that is K passes
over the samples, each reading every sample from memory, and K sets of workers
contending for the same cache lines in turn; one pass reads each sample once.
The multinomial (softmax) logistic model shares the layout and the step: class
k's column ascends (y_k - p_k) x_e, p the softmax of the K scores.

The class loops index a row slice, W[j, first:first + count][c], not W[j, first + c]:
numba wraps a negative index, and on the sum first + c that check kept LLVM from
vectorising the loop (news20, 20 classes: 18 -> 9 ms per epoch, same results).

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

from hogwild.kernels.stack import stack_array
from hogwild.objective import Metric, Objective
from hogwild.problems.linear_kernels import LAZY_EPOCHS_LOG2, lazy_turn
from hogwild.structure import IdArray, Supports

CLASS_SLOT = 16  # intercepts start a 64-byte cache line in, and end one before the end
CHUNK = 32  # classes scored together in one pass over a sample's features (stack scratch)


@njit(nogil=True, inline="always")
def _sign(e, k, data):
    return np.float32(1.0) if data[3][e] == k else np.float32(-1.0)


@njit(nogil=True, inline="always")
def _chunk_scores(e, first, count, W, b, data, scores):
    """scores[c] = x_e . W[:, k] + b_k for the classes k = first + c < first + count,
    in one pass over e's features (each reads W[j, first:first + count],
    contiguous); each score is summed in the same order as one class alone."""
    indptr, indices, values = data[0], data[1], data[2]
    for c in range(count):
        scores[c] = b[CLASS_SLOT + first + c]
    for p in range(indptr[e], indptr[e + 1]):
        row, x = W[indices[p], first:first + count], values[p]
        for c in range(count):
            scores[c] += row[c] * x


@njit(nogil=True, inline="always")
def _chunk_margins(e, first, count, W, b, data, margins):
    """margins[c] = y_ek (x_e . W[:, k] + b_k) (see _chunk_scores)."""
    _chunk_scores(e, first, count, W, b, data, margins)
    for c in range(count):
        margins[c] *= _sign(e, first + c, data)


@njit(nogil=True, inline="always")
def _chunk_steps(e, first, count, W, b, data, step, turn, margins, gains):
    """One pass over e's features: a class with margins[c] < 1 (every class, for
    the logistic loss: margins -inf) takes W[j, k] <- W[j, k] (1 - step reg_scale_j)
    + gains[c] x_ej and its intercept step; another, on its lazy turn, the shrink of
    2**LAZY_EPOCHS_LOG2 epochs (see linear_kernels)."""
    indptr, indices, values, reg_scale = data[0], data[1], data[2], data[5]
    for p in range(indptr[e], indptr[e + 1]):
        j, x = indices[p], values[p]
        shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
        lazy = shrink
        if turn:
            for _ in range(LAZY_EPOCHS_LOG2):
                lazy *= lazy
        row = W[j, first:first + count]
        for c in range(count):
            if margins[c] < 1:
                row[c] = row[c] * shrink + gains[c] * x
            elif turn:
                row[c] *= lazy
    rate = data[7][0]
    if rate != 0 and turn:  # the intercepts' steps, thinned to the lazy turns
        for c in range(count):
            if margins[c] < 1:
                b[CLASS_SLOT + first + c] += gains[c] * (rate * (1 << LAZY_EPOCHS_LOG2))


@njit(nogil=True, inline="always")
def _ovr_step(e, params, data, step, epoch, logistic):
    """Every class's step for sample e, CHUNK classes per pass over its features:
    the hinge loss steps the classes inside the margin, the logistic loss all."""
    W, b = params[0], params[1]
    s = np.float32(step)
    turn = lazy_turn(e, epoch, data[6][0])
    margins, gains = stack_array(CHUNK, np.float32), stack_array(CHUNK, np.float32)
    n_classes = data[8][0]
    for first in range(0, n_classes, CHUNK):
        count = min(CHUNK, n_classes - first)
        _chunk_margins(e, first, count, W, b, data, margins)
        for c in range(count):
            gains[c] = s * _sign(e, first + c, data) * data[4][e]
            if logistic:
                gains[c] /= np.float32(1.0) + math.exp(margins[c])
                margins[c] = -np.inf  # every class steps
        _chunk_steps(e, first, count, W, b, data, s, turn, margins, gains)


def ovr_hinge_update(e, params, data, step, epoch):
    _ovr_step(e, params, data, step, epoch, False)


def ovr_logistic_update(e, params, data, step, epoch):
    _ovr_step(e, params, data, step, epoch, True)


@njit(nogil=True, inline="always")
def _chunk_margins_and_penalties(e, first, count, params, data, margins, penalties):
    """_chunk_margins, and penalties[c] = the regulariser's share 0.5 sum_j
    reg_scale_j W[j, k]^2 over e's features, in the same pass."""
    W, indptr, indices, values, reg_scale = params[0], data[0], data[1], data[2], data[5]
    for c in range(count):
        margins[c] = params[1][CLASS_SLOT + first + c]
        penalties[c] = 0.0
    for p in range(indptr[e], indptr[e + 1]):
        row, x, r = W[indices[p], first:first + count], values[p], reg_scale[indices[p]]
        for c in range(count):
            weight = row[c]
            margins[c] += weight * x
            penalties[c] += r * weight * weight
    for c in range(count):
        margins[c] *= _sign(e, first + c, data)
        penalties[c] *= 0.5


@njit(nogil=True, inline="always")
def _ovr_loss(e, params, data, logistic):
    margins, penalties = stack_array(CHUNK, np.float32), stack_array(CHUNK, np.float64)
    total, n_classes = 0.0, data[8][0]
    for first in range(0, n_classes, CHUNK):
        count = min(CHUNK, n_classes - first)
        _chunk_margins_and_penalties(e, first, count, params, data, margins, penalties)
        for c in range(count):
            m = margins[c]
            if logistic:  # log(1 + exp(-m)) without overflow for large |m|
                term = math.log1p(math.exp(-m)) if m > 0 else -m + math.log1p(math.exp(m))
            else:
                term = max(0.0, 1.0 - m)
            total += term * data[4][e] + penalties[c]
    return total


def ovr_hinge_loss(e, params, data):
    return _ovr_loss(e, params, data, False)


def ovr_logistic_loss(e, params, data):
    return _ovr_loss(e, params, data, True)


@njit(nogil=True, inline="always")
def _log_normaliser(e, W, b, data, scores):
    """log sum_k exp(x_e . W[:, k] + b_k) over every class, CHUNK classes per pass
    (a running maximum keeps every exp below 1); ``scores`` keeps the last chunk's."""
    top, total = -np.inf, 0.0
    n_classes = data[8][0]
    for first in range(0, n_classes, CHUNK):
        count = min(CHUNK, n_classes - first)
        _chunk_scores(e, first, count, W, b, data, scores)
        for c in range(count):
            top, total = _add_exp(top, total, scores[c])
    return top + math.log(total)


@njit(nogil=True, inline="always")
def _add_exp(top, total, z):
    """A running log-sum-exp (top + log(total)) with exp(z) added, every exp below 1."""
    if z > top:
        return z, total * math.exp(top - z) + 1.0
    return top, total + math.exp(z - top)


def multinomial_update(e, params, data, step, epoch):
    """The softmax (multinomial logistic) step: class k's column ascends (y_k -
    p_k) x_e, p the classes' softmax; every column steps, as the logistic one-vs-
    rest's do."""
    W, b = params[0], params[1]
    s = np.float32(step)
    turn = lazy_turn(e, epoch, data[6][0])
    scores, gains = stack_array(CHUNK, np.float32), stack_array(CHUNK, np.float32)
    n_classes = data[8][0]
    normaliser = _log_normaliser(e, W, b, data, scores)
    for first in range(0, n_classes, CHUNK):
        count = min(CHUNK, n_classes - first)
        if n_classes > CHUNK:  # this chunk's scores again (its columns have not moved)
            _chunk_scores(e, first, count, W, b, data, scores)
        for c in range(count):
            target = np.float32(1.0) if data[3][e] == first + c else np.float32(0.0)
            gains[c] = s * data[4][e] * (target - np.float32(math.exp(scores[c] - normaliser)))
            scores[c] = -np.inf  # every class steps
        _chunk_steps(e, first, count, W, b, data, s, turn, scores, gains)


def multinomial_loss(e, params, data):
    """-log p_y (weighted) plus the regulariser's share over every class, one pass
    over e's features per chunk: the scores are the margins times their signs (+-1,
    exact), summed in _chunk_scores' order."""
    margins, penalties = stack_array(CHUNK, np.float32), stack_array(CHUNK, np.float64)
    top, exps, target, penalty = -np.inf, 0.0, 0.0, 0.0
    n_classes = data[8][0]
    for first in range(0, n_classes, CHUNK):
        count = min(CHUNK, n_classes - first)
        _chunk_margins_and_penalties(e, first, count, params, data, margins, penalties)
        for c in range(count):
            top, exps = _add_exp(top, exps, margins[c] * _sign(e, first + c, data))
            penalty += penalties[c]
            if data[3][e] == first + c:  # its margin is its score (sign +1)
                target = margins[c]
    return (top + math.log(exps) - target) * data[4][e] + penalty


KERNELS = {"hinge": (ovr_hinge_update, ovr_hinge_loss),
           "logistic": (ovr_logistic_update, ovr_logistic_loss),
           "multinomial": (multinomial_update, multinomial_loss)}


def ovr_objective(X, classes_of, weights, n_classes, loss, reg_scale, salt, intercept_rate):
    """The Objective of K one-vs-rest problems (loss 'hinge' or 'logistic'), or of
    the multinomial logistic model (loss 'multinomial'), on a prepared X
    (sparse_svm.as_csr): ``classes_of`` int32 class indices, ``weights`` float32 per-sample weights,
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
                     name="sparse-svm-multinomial" if loss == "multinomial"
                     else f"sparse-svm-ovr-{loss}",
                     supports=None if intercept_rate else functools.partial(Supports.from_csr,
                                                                            X),
                     id_arrays=(IdArray(ids=1, params=(0,), data=(5,)),),
                     indices_checked=True, sample_offsets=0)


def ovr_wrong(e, params, data):
    """1.0 when the highest score of row e is not its class's (ties: the lowest
    class index, as numpy's argmax), else 0.0."""
    scores = stack_array(CHUNK, np.float32)
    best, best_score, n_classes = 0, -np.inf, data[4][0]
    for first in range(0, n_classes, CHUNK):
        count = min(CHUNK, n_classes - first)
        _chunk_scores(e, first, count, params[0], params[1], data, scores)
        for c in range(count):
            if scores[c] > best_score or first + c == 0:
                best, best_score = first + c, scores[c]
    return 1.0 if best != data[3][e] else 0.0


def ovr_error_metric(X, classes_of, n_classes, name="test_error"):
    """The error rate on (X, class indices) as a hogwild.Metric."""
    return Metric(name, ovr_wrong, (X.indptr, X.indices, X.data,
                                            np.ascontiguousarray(classes_of, np.int32),
                                            np.array([n_classes], np.int64)), X.shape[0])


@njit(nogil=True, cache=True)
def ovr_scores(W, b, indptr, indices, values, out):
    """out[e, k] = x_e . W[:, k] + b_k for every row and class, a row's features
    read once, each score summed in the kernels' order."""
    for e in range(out.shape[0]):
        for k in range(out.shape[1]):
            out[e, k] = b[CLASS_SLOT + k]
        for p in range(indptr[e], indptr[e + 1]):
            j, x = indices[p], values[p]
            for k in range(out.shape[1]):
                out[e, k] += W[j, k] * x
