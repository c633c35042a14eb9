"""Quadratic features crossed by the kernels, not stored: the binary model's
updates and losses over a row's own features plus, for each namespace pair of
its hogwild.datasets.vw.Crossings, every feature of one side times each of the
other, at Vowpal Wabbit's index ((16777619 i) ^ j) & mask with value v_i v_j
(one side with itself: each unordered pair once, a feature with itself
included). A row of 20 features in two namespaces of 10 gets 100 crossed ones
for the memory of its own 20 twice.

data = the binary model's nine arrays (kernels.py), then
  [9] side offsets int64[n S + 1], [10] side indices int32, [11] side values
  float32, [12] pairs int64[2 P] (side numbers), [13] int64[2] = (S, mask).
Every loop over a row's features runs over its crossed ones too, through one
iterator (_crossed) whose ``op`` names what it does to each.
"""
import math

import numpy as np
from numba import njit

from hogwild.adaptive import adagrad_rate, adagrad_scale, adagrad_scale_after
from hogwild.errors import HogwildError
from hogwild.datasets.hashing import FNV_PRIME
from hogwild.problems.linear_kernels import LAZY_EPOCHS_LOG2, lazy_turn
from hogwild.problems.sparse_svm.kernels import (
    _adaptive_intercept_step, _adaptive_lazy_shrink, _adaptive_step,
    _intercept_step, _label_sign, _lazy_shrink, _penalised, _score, _sgd_step,
    predicts_positive)

CROSSED = 9  # the first of the crossings' arrays in data
SCORE, SGD, SHRINK, ADAPTIVE, ADAPTIVE_SHRINK, MOVED, COUNT, L1 = range(8)


@njit(nogil=True, inline="always")
def _crossed(e, op, w, sums, data, step, g, weight, penalised):
    """Apply ``op`` to each crossed feature (index j, value x) of row e; the sum it
    returns: SCORE sum w_j x; SGD the step (w_j shrunk, plus g x); SHRINK the
    lazy shrink; ADAPTIVE and ADAPTIVE_SHRINK their adaptive forms; MOVED sum
    x^2 times the adaptive step j would take (see kernels._to_the_hinge); COUNT
    w_j += 1 (w: counts); L1 sum |x|."""
    # data[9:14] (CROSSED onwards), spelt as literals: numba indexes a tuple of
    # arrays of several types only by a constant
    offsets, indices, values, pairs, geometry = data[9], data[10], data[11], data[12], data[13]
    reg_scale = data[4]
    sides, mask = geometry[0], geometry[1]
    total = np.float32(0.0)
    for p in range(pairs.size // 2):
        a, b = pairs[2 * p], pairs[2 * p + 1]
        a_end = offsets[e * sides + a + 1]
        b_end = offsets[e * sides + b + 1]
        for i in range(offsets[e * sides + a], a_end):
            half = FNV_PRIME * np.int64(indices[i])
            vi = values[i]
            for k in range(i if a == b else offsets[e * sides + b], b_end):
                j = (half ^ np.int64(indices[k])) & mask
                x = vi * values[k]
                if op == SCORE:
                    total += w[j] * x
                elif op == SGD:
                    shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
                    w[j] = w[j] * shrink + g * x
                elif op == SHRINK:
                    shrink = max(np.float32(0.0), np.float32(1.0) - step * reg_scale[j])
                    for _ in range(LAZY_EPOCHS_LOG2):
                        shrink *= shrink
                    w[j] *= shrink
                elif op == ADAPTIVE:
                    gj = g * x
                    s = step * adagrad_rate(sums, j, weight * gj * gj)
                    if penalised:
                        w[j] = (w[j] - s * weight * gj) / (np.float32(1.0) + s * reg_scale[j])
                    else:
                        w[j] -= s * weight * gj
                elif op == ADAPTIVE_SHRINK:
                    shrink = np.float32(1.0) / (np.float32(1.0)
                                                + step * adagrad_scale(sums, j) * reg_scale[j])
                    for _ in range(LAZY_EPOCHS_LOG2):
                        shrink *= shrink
                    w[j] *= shrink
                elif op == MOVED:
                    total += x * x * adagrad_scale_after(sums, j, weight * x * x)
                elif op == COUNT:
                    w[j] += 1
                else:
                    total += abs(x)
    return total


@njit(nogil=True, inline="always")
def _crossed_margin(e, params, data):
    """kernels._margin with the crossed features in the score."""
    score = _score(e, params, data) + _crossed(e, SCORE, params[0], params[0], data, 0.0,
                                               0.0, 0.0, 0.0)
    return score if math.copysign(1.0, data[3][e]) > 0 else -score


def crossed_hinge_update(e, params, data, step, epoch):
    w = params[0]
    s = np.float32(step)
    if _crossed_margin(e, params, data) < 1:
        g = s * data[3][e]
        _sgd_step(e, w, data, s, g)
        _crossed(e, SGD, w, w, data, s, g, 0.0, 0.0)
        _intercept_step(e, epoch, params, data, g)
    elif lazy_turn(e, epoch, data[5][0]):
        _lazy_shrink(e, w, data, s)
        _crossed(e, SHRINK, w, w, data, s, 0.0, 0.0, 0.0)


def crossed_logistic_update(e, params, data, step, epoch):
    w = params[0]
    s = np.float32(step)
    g = s * data[3][e] / (np.float32(1.0) + math.exp(_crossed_margin(e, params, data)))
    _sgd_step(e, w, data, s, g)
    _crossed(e, SGD, w, w, data, s, g, 0.0, 0.0)
    _intercept_step(e, epoch, params, data, g)


@njit(nogil=True, inline="always")
def _crossed_to_the_hinge(e, sums, data, step, weight, gap):
    """kernels._to_the_hinge over the row's own and crossed features."""
    indptr, indices, values = data[0], data[1], data[2]
    moved = np.float32(0.0)
    for k in range(indptr[e], indptr[e + 1]):
        x = values[k]
        moved += x * x * adagrad_scale_after(sums, indices[k], weight * x * x)
    moved += _crossed(e, MOVED, sums, sums, data, 0.0, 0.0, weight, 0.0)
    moved *= step * weight
    return min(np.float32(1.0), np.float32(gap) / moved) if moved > 0 else np.float32(1.0)


def crossed_adaptive_hinge_update(e, params, data, step, epoch):
    w, sums = params[0], params[2]
    s, penalised = np.float32(step), _penalised(epoch, data)
    margin = _crossed_margin(e, params, data)
    if margin < 1:
        g, weight = -_label_sign(e, data), abs(data[3][e])
        s *= _crossed_to_the_hinge(e, sums, data, s, weight, 1 - margin)
        _adaptive_step(e, w, sums, data, s, g, weight, penalised)
        _crossed(e, ADAPTIVE, w, sums, data, s, g, weight, penalised)
        _adaptive_intercept_step(e, epoch, params, data, s, g, weight)
    elif penalised and lazy_turn(e, epoch, data[5][0]):
        _adaptive_lazy_shrink(e, w, sums, data, s)
        _crossed(e, ADAPTIVE_SHRINK, w, sums, data, s, 0.0, 0.0, 0.0)


def crossed_adaptive_logistic_update(e, params, data, step, epoch):
    w, sums = params[0], params[2]
    s = np.float32(step)
    g = -_label_sign(e, data) / (np.float32(1.0) + math.exp(_crossed_margin(e, params, data)))
    weight = abs(data[3][e])
    penalised = _penalised(epoch, data)
    _adaptive_step(e, w, sums, data, s, g, weight, penalised)
    _crossed(e, ADAPTIVE, w, sums, data, s, g, weight, penalised)
    _adaptive_intercept_step(e, epoch, params, data, s, g, weight)


def crossed_hinge_loss(e, params, data):
    return max(0.0, 1.0 - _crossed_margin(e, params, data)) * abs(data[3][e])


def crossed_logistic_loss(e, params, data):
    ym = _crossed_margin(e, params, data)
    data_term = math.log1p(math.exp(-ym)) if ym > 0 else -ym + math.log1p(math.exp(ym))
    return data_term * abs(data[3][e])


KERNELS = {("hinge", False): (crossed_hinge_update, crossed_hinge_loss),
           ("logistic", False): (crossed_logistic_update, crossed_logistic_loss),
           ("hinge", True): (crossed_adaptive_hinge_update, crossed_hinge_loss),
           ("logistic", True): (crossed_adaptive_logistic_update, crossed_logistic_loss)}


def crossed_wrong_side(e, params, data):
    """kernels.wrong_side with the crossed features in the score."""
    score = _score(e, params, data) + _crossed(e, SCORE, params[0], params[0], data, 0.0,
                                               0.0, 0.0, 0.0)
    return 1.0 if predicts_positive(score) != (data[3][e] > 0) else 0.0


@njit(nogil=True, cache=True)
def crossed_scores(params, data, out):
    """out[e] = the score of row e with its crossed features (decision_function's
    loop; data as above, its labels and regulariser unused)."""
    for e in range(out.size):
        out[e] = _score(e, params, data) + _crossed(e, SCORE, params[0], params[0], data,
                                                    0.0, 0.0, 0.0, 0.0)


@njit(nogil=True, cache=True)
def crossed_positive_rows(params, data, out):
    """out[e] = predicts_positive(the score of row e with its crossed features)."""
    for e in range(out.size):
        out[e] = predicts_positive(_score(e, params, data) + _crossed(
            e, SCORE, params[0], params[0], data, 0.0, 0.0, 0.0, 0.0))


def check_crossings(crossings, X, n_classes, like=None):
    """The record a model keeps of the quadratic features it is fitted with (or
    scores with: ``like``, its record), {"pairs": ["ua", ...], "mask": ...}; None
    without crossings. A HogwildError where they do not fit X (rows, hashing) or
    the model."""
    if crossings is None:
        return None
    fields = ("offsets", "indices", "values", "letters", "pairs", "mask")
    if not all(hasattr(crossings, name) for name in fields):
        raise HogwildError(f"crossings must be a hogwild.datasets.vw.Crossings (load_vw's "
                           f"quadratic features), got {type(crossings).__name__}")
    if n_classes != 2:
        raise HogwildError(f"quadratic features are for two classes; y has {n_classes}")
    sides = len(crossings.letters)
    pairs = [crossings.letters[a] + crossings.letters[b] for a, b in np.asarray(crossings.pairs)]
    if crossings.mask + 1 != X.shape[1] or len(crossings.offsets) != X.shape[0] * sides + 1:
        rows = (len(crossings.offsets) - 1) // max(sides, 1)
        raise HogwildError(f"the crossings are of {rows:,} rows hashed into "
                           f"{crossings.mask + 1:,} features; X has {X.shape[0]:,} rows and "
                           f"{X.shape[1]:,} features")
    record = {"pairs": pairs, "mask": int(crossings.mask)}
    if like is not None and record != like:
        raise HogwildError(f"the crossings cross {', '.join(pairs)}; the model was fitted with "
                           f"{', '.join(like['pairs'])}")
    return record


def crossed_record(record, n_features):
    """A model file's record of its quadratic features, checked (ValueError)."""
    if record is None:
        return None
    if not (isinstance(record, dict) and isinstance(record.get("pairs"), list)
            and all(isinstance(p, str) and len(p) == 2 for p in record["pairs"])
            and record.get("mask") == n_features - 1):
        raise ValueError(f"crossed is {record!r}, not the quadratic pairs and hash mask of a "
                         f"model of {n_features} features")
    return record


def crossing_arrays(crossings):
    """data[9:14] of a hogwild.datasets.vw.Crossings."""
    return (np.asarray(crossings.offsets), np.asarray(crossings.indices),
            np.asarray(crossings.values), np.ascontiguousarray(crossings.pairs.reshape(-1)),
            np.array([len(crossings.letters), crossings.mask], np.int64))


def scoring_data(X, crossings, labels=None):
    """A data tuple for crossed_scores or crossed_wrong_side: X's arrays, labels,
    placeholders for the training-only arrays, and the crossings."""
    unused = np.zeros(1, np.float32)
    labels = np.zeros(X.shape[0], np.float32) if labels is None else labels
    return (X.indptr, X.indices, X.data, labels, unused, np.zeros(1, np.uint64), unused,
            np.zeros(1, np.int64), np.zeros(1, np.float64)) + crossing_arrays(crossings)


@njit(nogil=True, cache=True)
def _over_rows(op, out, data, rows):
    """_crossed's COUNT (into ``out``) or L1 over rows 0..rows-1, summed."""
    total = 0.0
    for e in range(rows):
        total += _crossed(e, op, out, out, data, 0.0, 0.0, 0.0, 0.0)
    return total


def _pass_data(crossings):
    """A data tuple of the crossings alone (data[9:14], the rest unused)."""
    unused = np.zeros(1, np.float32)
    return (np.zeros(1, np.int64),) + (unused,) * 8 + crossing_arrays(crossings)


def add_crossed_counts(crossings, counts):
    """counts[j] += the times crossed feature j occurs (a row's pairs that collide
    count each): feature_counts' share of the crossed features."""
    _over_rows(COUNT, counts, _pass_data(crossings), (len(crossings.offsets) - 1) //
               len(crossings.letters))


def crossed_l1(crossings):
    """The sum over rows of the crossed features' |v_i v_j| (for the step)."""
    return _over_rows(L1, np.zeros(1, np.float32), _pass_data(crossings),
                      (len(crossings.offsets) - 1) // len(crossings.letters))


@njit(nogil=True, cache=True)
def _gather(offsets, indices, values, sides, rows, new_offsets, new_indices, new_values):
    at = 0
    new_offsets[0] = 0
    for r in range(rows.size):
        e = rows[r]
        for s in range(sides):
            for k in range(offsets[e * sides + s], offsets[e * sides + s + 1]):
                new_indices[at] = indices[k]
                new_values[at] = values[k]
                at += 1
            new_offsets[r * sides + s + 1] = at


def take(crossings, rows):
    """The Crossings of ``rows`` (any order) of ``crossings``: a shuffled or held-out
    set's."""
    sides = len(crossings.letters)
    offsets = np.asarray(crossings.offsets)
    rows = np.asarray(rows, np.int64)
    lengths = offsets[rows * sides + sides] - offsets[rows * sides]
    total = int(lengths.sum())
    new_offsets = np.empty(rows.size * sides + 1, np.int64)
    new_indices, new_values = np.empty(total, np.int32), np.empty(total, np.float32)
    _gather(offsets, np.asarray(crossings.indices), np.asarray(crossings.values), sides, rows,
            new_offsets, new_indices, new_values)
    return type(crossings)(new_offsets, new_indices, new_values, crossings.letters,
                           crossings.pairs, crossings.mask)
