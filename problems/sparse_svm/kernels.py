"""The binary model's per-sample kernels (plain Python, compiled by the engine into
its loops), and the compiled loops that score rows for prediction."""
import math

import numpy as np
from numba import njit

from hogwild.adaptive import adagrad_rate, adagrad_scale, adagrad_scale_after
from hogwild.problems.linear_kernels import LAZY_EPOCHS_LOG2, lazy_turn

#
# data = (indptr int64[n+1], indices int32[nnz], values float32[nnz],
#         labels float32[n] in {-1, +1}, reg_scale float32[d] = reg * n / d_u,
#         salt uint64[1] seeding the lazy-regularisation draws,
#         intercept_rate float32[1]: the intercept's step per unit step, 0 = none,
#         penalty_from int64[1]: the first epoch whose adaptive updates shrink,
#         penalty_weight float64[1] = reg * n, for l2_penalty)
# params = (w float32[d], intercept float32[INTERCEPT_PAD]), shared by all workers
# and written without locks. The intercept is intercept[INTERCEPT_SLOT]: the
# padding keeps it on a cache line of its own, since every sample reads it and
# the samples that move w also write it. Adaptive steps (hogwild.adaptive) add
# params[2] = the features' sums of squared gradients, float32[d], and keep the
# intercept's at intercept[INTERCEPT_SUMS_SLOT], on the intercept's cache line.
# Helpers called from kernels must themselves be numba functions (@njit); they are
# inlined (numba's inline="always") so that LLVM optimises each update as one body.
# Inactive hinge samples regularise lazily (hogwild.problems.linear_kernels). More
# than two classes train one-vs-rest in one pass (hogwild.problems.multiclass).

INTERCEPT_PAD = 32  # float32s: 128 bytes, whatever the array's alignment, hold
INTERCEPT_SLOT = 16  # one whole 64-byte cache line around element 16
INTERCEPT_SUMS_SLOT = INTERCEPT_SLOT + 1  # adaptive steps: the intercept's squared gradients


@njit(nogil=True, inline="always")
def _score(e, params, data):
    """x_e . w + intercept: the decision value of row e."""
    w, indptr, indices, values = params[0], data[0], data[1], data[2]
    total = params[1][INTERCEPT_SLOT]
    for k in range(indptr[e], indptr[e + 1]):
        total += w[indices[k]] * values[k]
    return total


@njit(nogil=True, inline="always")
def predicts_positive(score):
    """The one definition of a prediction, used by the training metric, predict()
    and every backend: a score > 0 is the positive class, and a tie (an empty row
    without an intercept) is the negative class."""
    return score > 0


@njit(nogil=True, inline="always")
def _margin(e, params, data):
    """y_e (x_e . w + b): the label's sign times the score. data[3][e] is the label
    times the sample's weight (1 unless sample_weight or class_weight say
    otherwise), so the weight scales the loss gradient and nothing else; with
    unit weights this is label * score, bit for bit. A weight of 0 keeps its sign
    (+0.0 or -0.0), so the class is read from the sign bit."""
    score = _score(e, params, data)
    return score if math.copysign(1.0, data[3][e]) > 0 else -score


@njit(nogil=True, inline="always")
def _sgd_step(e, w, data, step, g):
    """w_j <- w_j * (1 - step * reg_scale_j) + g * v_j over sample e's features: the
    degree-scaled L2 shrink and the loss gradient, touching only x_e. The shrink
    factor is floored at 0 so that a large step never flips a sign."""
    indptr, indices, values, reg_scale = data[0], data[1], data[2], data[4]
    for k in range(indptr[e], indptr[e + 1]):
        j = indices[k]
        shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
        w[j] = w[j] * shrink + g * values[k]


@njit(nogil=True, inline="always")
def _lazy_shrink(e, w, data, step):
    """w_j <- w_j * (1 - step * reg_scale_j)^(2**LAZY_EPOCHS_LOG2) over e's features."""
    indptr, indices, reg_scale = data[0], data[1], data[4]
    for k in range(indptr[e], indptr[e + 1]):
        j = indices[k]
        shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
        for _ in range(LAZY_EPOCHS_LOG2):
            shrink *= shrink
        w[j] *= shrink


@njit(nogil=True, inline="always")
def _intercept_step(e, epoch, params, data, g):
    """The intercept's SGD step g * intercept_rate (unregularised, as scikit-learn's),
    thinned: applied 2**LAZY_EPOCHS_LOG2 times larger on the same one draw in 2**
    LAZY_EPOCHS_LOG2 as the lazy shrink. Every sample's gradient reaches the
    intercept, so unthinned it is the one cache line that both workers write all
    the time (+8% update time for the hinge and +22% for the logistic loss on a9a
    with 2 workers); thinned, it is the same step in expectation, with 1/8 of the
    writes. No write at all without an intercept."""
    rate = data[6][0]
    if rate != 0 and lazy_turn(e, epoch, data[5][0]):
        params[1][INTERCEPT_SLOT] += g * (rate * (1 << LAZY_EPOCHS_LOG2))


def hinge_update(e, params, data, step, epoch):
    w = params[0]
    s = np.float32(step)
    if _margin(e, params, data) < 1:
        g = s * data[3][e]
        _sgd_step(e, w, data, s, g)
        _intercept_step(e, epoch, params, data, g)
    elif lazy_turn(e, epoch, data[5][0]):
        _lazy_shrink(e, w, data, s)


def logistic_update(e, params, data, step, epoch):
    w = params[0]
    s = np.float32(step)
    g = s * data[3][e] / (np.float32(1.0) + math.exp(_margin(e, params, data)))
    _sgd_step(e, w, data, s, g)
    _intercept_step(e, epoch, params, data, g)


# --- adaptive steps (AdaGrad per feature, hogwild.adaptive) ----------------------
#
# Each feature j steps by step / sqrt(sums_j), sums_j its squared loss gradients so
# far: the shrink of the degree-scaled regulariser and the loss gradient both take
# that step, and inactive hinge samples shrink lazily with it, as above. ``g`` is
# here the loss's derivative in the score, the label's sign included, and
# ``weight`` the sample's: the step is weight * g, and the sums grow by weight * g^2
# (Vowpal Wabbit's rule), so a sample of weight k counts as k copies of it. Summed
# as (weight g)^2, a class weighted 12x would shrink every step of the other class
# 12x (balanced weights on a 4% class: 0.2710 against 0.2454 after 20 epochs).
#
# The penalty's step is the implicit one of composite AdaGrad (Duchi, Hazan and
# Singer 2011): w_j <- (w_j - s_j weight g x_j) / (1 + s_j reg_scale_j). A feature
# seen once has a step s_j of about 4 on a unit-norm click row, where the explicit
# shrink 1 - s_j reg_scale_j, floored at 0, set its weight to 0 at each sight.
# Epochs before data[7][0] take no penalty step at all: in a first pass every
# sample is unseen, its loss an unbiased estimate of the test loss, so SGD there
# needs no penalty against overfitting (Vowpal Wabbit's default has none); the
# defaults use it (reg=None: 1), where a penalty applied from the start cost the
# first epoch 0.2-1.0 points of test error on seven of eight click logs and the
# later epochs reach the same optimum (docs/problems.md).
#
# A hinge step stops at the hinge: where the whole adaptive step would carry the
# sample's margin past 1, it is shortened to the fraction that brings it to 1
# (_to_the_hinge), the hinge loss's importance-invariant ("safe") update
# (Karampatziakis and Langford 2011; Vowpal Wabbit's default). A row of unseen
# features has s_j x_j = step, so the whole step moves a unit-norm row's margin
# by step * sum_j |x_j|: 2.0 on a 20-field click row, twice past the hinge. The
# intercept and the penalty take the same fraction. Stopping at the hinge took
# the first epoch 0.1-0.5 points lower on all eleven sets of
# bench_linear_defaults, within 0.08 of the unclipped epoch 20 (docs/problems.md).

@njit(nogil=True, inline="always")
def _penalised(epoch, data):
    """1 from the epoch data[7][0] on, else 0: whether the penalty steps."""
    return np.float32(1.0) if epoch >= data[7][0] else np.float32(0.0)


@njit(nogil=True, inline="always")
def _adaptive_step(e, w, sums, data, step, g, weight, penalised):
    """sums_j += weight (g x_j)^2, then w_j <- (w_j - s_j weight g x_j) / (1 + s_j
    reg_scale_j penalised) with s_j = step / sqrt(sums_j), over sample e's features."""
    indptr, indices, values, reg_scale = data[0], data[1], data[2], data[4]
    for k in range(indptr[e], indptr[e + 1]):
        j = indices[k]
        gj = g * values[k]
        s = step * adagrad_rate(sums, j, weight * gj * gj)
        if penalised:
            w[j] = (w[j] - s * weight * gj) / (np.float32(1.0) + s * reg_scale[j])
        else:  # the same value, without reading reg_scale: a cache miss a nonzero
            w[j] -= s * weight * gj


@njit(nogil=True, inline="always")
def _adaptive_lazy_shrink(e, w, sums, data, step):
    """_lazy_shrink's implicit form with each feature's adaptive step (no gradient:
    sums unchanged)."""
    indptr, indices, reg_scale = data[0], data[1], data[4]
    for k in range(indptr[e], indptr[e + 1]):
        j = indices[k]
        shrink = np.float32(1.0) / (np.float32(1.0)
                                    + step * adagrad_scale(sums, j) * reg_scale[j])
        for _ in range(LAZY_EPOCHS_LOG2):
            shrink *= shrink
        w[j] *= shrink


@njit(nogil=True, inline="always")
def _adaptive_intercept_step(e, epoch, params, data, step, g, weight):
    """The intercept's AdaGrad step, thinned as _intercept_step's: on one draw in
    2**LAZY_EPOCHS_LOG2, the squared gradients and the step of that many samples."""
    rate = data[6][0]
    if rate != 0 and lazy_turn(e, epoch, data[5][0]):
        pad = params[1]
        thinned = np.float32(1 << LAZY_EPOCHS_LOG2)
        scale = adagrad_rate(pad, INTERCEPT_SUMS_SLOT, weight * g * g * thinned)
        pad[INTERCEPT_SLOT] -= step * scale * weight * g * thinned * rate


@njit(nogil=True, inline="always")
def _label_sign(e, data):
    """+1 or -1: the class of row e (its weight's sign bit, see _margin)."""
    return np.float32(math.copysign(1.0, data[3][e]))


@njit(nogil=True, inline="always")
def _to_the_hinge(e, sums, data, step, weight, gap):
    """The fraction (at most 1) of sample e's adaptive step that moves its margin by
    ``gap`` = 1 - margin > 0, to the hinge and not past it: the whole step moves
    it by weight * sum_j s_j x_j^2, s_j the step its feature j would take."""
    indptr, indices, values = data[0], data[1], data[2]
    moved = np.float32(0.0)
    for k in range(indptr[e], indptr[e + 1]):
        x = values[k]
        moved += x * x * adagrad_scale_after(sums, indices[k], weight * x * x)
    moved *= step * weight
    return min(np.float32(1.0), np.float32(gap) / moved) if moved > 0 else np.float32(1.0)


def adaptive_hinge_update(e, params, data, step, epoch):
    w, sums = params[0], params[2]
    s, penalised = np.float32(step), _penalised(epoch, data)
    margin = _margin(e, params, data)
    if margin < 1:
        g, weight = -_label_sign(e, data), abs(data[3][e])
        s *= _to_the_hinge(e, sums, data, s, weight, 1 - margin)
        _adaptive_step(e, w, sums, data, s, g, weight, penalised)
        _adaptive_intercept_step(e, epoch, params, data, s, g, weight)
    elif penalised and lazy_turn(e, epoch, data[5][0]):
        _adaptive_lazy_shrink(e, w, sums, data, s)


def adaptive_logistic_update(e, params, data, step, epoch):
    w, sums = params[0], params[2]
    s = np.float32(step)
    g = -_label_sign(e, data) / (np.float32(1.0) + math.exp(_margin(e, params, data)))
    weight = abs(data[3][e])
    _adaptive_step(e, w, sums, data, s, g, weight, _penalised(epoch, data))
    _adaptive_intercept_step(e, epoch, params, data, s, g, weight)


@njit(nogil=True, cache=True)
def l2_penalty(params, data):
    """The Objective's penalty: the samples' summed degree-scaled L2 terms,
    sum_e sum_{j in e} reg_scale_j w_j^2 / 2 = (reg n / 2) ||w||^2 over the features
    that occur (data[8][0] = reg n), in one pass over w: read per sample it cost a
    click log's loss pass five times the rest (a random read of reg_scale at each
    nonzero)."""
    w, reg_scale = params[0], data[4]
    total = 0.0
    for j in range(w.size):
        if reg_scale[j] > 0:
            total += np.float64(w[j]) * w[j]
    return 0.5 * data[8][0] * total


def hinge_loss(e, params, data):
    return max(0.0, 1.0 - _margin(e, params, data)) * abs(data[3][e])


def logistic_loss(e, params, data):
    ym = _margin(e, params, data)
    # log(1 + exp(-ym)) without overflow for large |ym|
    data_term = math.log1p(math.exp(-ym)) if ym > 0 else -ym + math.log1p(math.exp(ym))
    return data_term * abs(data[3][e])


# (loss, adaptive) -> (update, loss without the penalty: l2_penalty)
KERNELS = {("hinge", False): (hinge_update, hinge_loss),
           ("logistic", False): (logistic_update, logistic_loss),
           ("hinge", True): (adaptive_hinge_update, hinge_loss),
           ("logistic", True): (adaptive_logistic_update, logistic_loss)}


@njit(nogil=True, cache=True)
def _decision_values(params, data, out):
    """out[e] = _score(e, params, data) for every row: decision_function's loop."""
    for e in range(out.size):
        out[e] = _score(e, params, data)


@njit(nogil=True, cache=True)
def _positive_rows(params, data, out):
    """out[e] = predicts_positive(_score(e, params, data)): predict's loop, compiled
    once and cached (predicts_positive called on an array from Python would compile
    at every run, and hold the compiler's memory at the end of a large one)."""
    for e in range(out.size):
        out[e] = predicts_positive(_score(e, params, data))


def intercept_of(params):
    """The fitted intercept in a params tuple of svm_objective, as an array of
    shape (1,) (scikit-learn's intercept_)."""
    return params[1][INTERCEPT_SLOT:INTERCEPT_SLOT + 1].copy()


def wrong_side(e, params, data):
    """1.0 when row e is misclassified (predicts_positive disagrees with its
    label), else 0.0."""
    return 1.0 if predicts_positive(_score(e, params, data)) != (data[3][e] > 0) else 0.0

