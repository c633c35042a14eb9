"""Fold-in: the factors of new users or items (or of known ones whose interactions
changed) from their interactions or ratings, the other side frozen, without
retraining (LightFM cannot add a row to a trained model; implicit folds in users
for ALS only, by its recalculate_user).

- Ratings (MatrixFactorization): with the other side frozen a row's objective is a
  ridge regression, solved exactly: for user u, minimise sum over its ratings of
  (mean + b_u + c_v + L_u . R_v - z)^2 + lambda |L_u|^2 + lambda_b b_u^2, where the
  biased model's per-rating regulariser makes lambda = n_u mu (n_u ratings) and
  the paper's degree-scaled one lambda = mu (no biases). This is the training
  objective's own minimiser in L_u, b_u (an ALS half-step), so it is at least as
  good as the SGD iterate a full retraining would give the row.
- Implicit feedback (ImplicitFactorization): WARP's and BPR's sampled objectives
  have no closed form: the row starts at zero and takes the training's steps
  (the same loss, negative draws, regulariser, adaptive rates and step schedule,
  one pass a training epoch) against the frozen side. A draw depends on the pair's
  place in the row's list, the pass and a fixed salt, so a row's factors are a
  function of its interactions alone: the same whether it is folded in alone or in
  a batch, on one worker or many.

Rows are independent: each kernel folds a share of them without the GIL, the
shares on all cores (fold_rows)."""
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from numba import njit

from hogwild.errors import HogwildError
from hogwild.kernels.draws import below, sample_hash
from hogwild.limits import available_memory, size_text, usable_cores
from hogwild.problems.matrix_completion.ranking import lower_bound

FOLD_IN_SALT = np.uint64(0x2545F4914F6CDD1D)  # the draws of implicit fold-ins
MAX_WARP_WEIGHT = 10.0  # as the training's (LightFM's MAX_LOSS)


@njit(nogil=True, inline="always")
def _holds(indptr, items, row, item):
    """Whether the sorted list of ``row`` holds ``item`` (binary search)."""
    at = lower_bound(items, indptr[row], indptr[row + 1], item)
    return at < indptr[row + 1] and items[at] == item


@njit(nogil=True, inline="always")
def _score(X, Y, bias, x, y):
    total = bias[y]
    for f in range(X.shape[1]):
        total += X[x, f] * Y[y, f]
    return total


@njit(nogil=True, inline="always")
def _scratch(indptr, rows, k):
    """(a row's visiting order, a row's gradient): room for the longest of ``rows``."""
    longest = 1
    for r in rows:
        longest = max(longest, indptr[r + 1] - indptr[r])
    return np.empty(longest, np.int64), np.empty(k, np.float32)


@njit(nogil=True, inline="always")
def _unshuffled(order, n):
    """order[0:n] = 0..n-1 (a row's passes start from its list's order)."""
    for t in range(n):
        order[t] = t


@njit(nogil=True, inline="always")
def _shuffle(order, n, key, salt):
    """order[0:n] in a random order of (key, salt) (Fisher-Yates from the hash)."""
    for t in range(n - 1, 0, -1):
        x = below(sample_hash(t, key, salt), t + 1)
        order[t], order[x] = order[x], order[t]


@njit(nogil=True, cache=True, fastmath=True)
def implicit_user_rows(V, b, indptr, items, rows, U, sums_out, warp, adaptive, steps, reg,
                       max_sampled):
    """U[r] for each r in ``rows``: the factors of a user whose (sorted) items are
    items[indptr[r]:indptr[r + 1]], against frozen item factors V and biases b; one
    pass over the items per entry of ``steps`` (its step); sums_out[r], the row's
    adaptive sum at the end (1 without adaptive rates)."""
    n_items, k = V.shape
    order, scratch = _scratch(indptr, rows, k)
    for r in rows:
        lo, hi = indptr[r], indptr[r + 1]
        U[r, :] = 0.0
        _unshuffled(order, hi - lo)
        sums = sums_out[r] = np.float32(1.0)  # an AdaGrad sum starts at 1
        for epoch in range(steps.size):
            s = np.float32(steps[epoch])
            _shuffle(order, hi - lo, epoch, FOLD_IN_SALT)
            for t in range(hi - lo):
                p = order[t]
                i = items[lo + p]
                positive = _score(U, V, b, r, i)
                c, j = np.float32(0.0), -1
                if warp:
                    for draw in range(1, max_sampled + 1):
                        drawn = below(sample_hash(p, epoch, FOLD_IN_SALT + np.uint64(draw)),
                                      n_items)
                        if _holds(indptr, items, r, drawn):
                            continue
                        if _score(U, V, b, r, drawn) > positive - np.float32(1.0):
                            c, j = _warp_weight(draw, n_items), drawn
                            break
                else:
                    drawn = below(sample_hash(p, epoch, FOLD_IN_SALT), n_items)
                    if not _holds(indptr, items, r, drawn):
                        x = positive - _score(U, V, b, r, drawn)
                        c, j = np.float32(1.0 / (1.0 + math.exp(x))), drawn
                if j < 0:
                    continue
                rate, keep = s * c, np.float32(1.0) - s * reg
                if adaptive:  # the row's AdaGrad sum of mean squared gradients
                    squares = np.float32(0.0)
                    for f in range(k):
                        scratch[f] = c * (V[i, f] - V[j, f]) - reg * U[r, f]
                        squares += scratch[f] * scratch[f]
                    sums += squares / np.float32(k)
                    sums_out[r] = sums
                    rate = s / np.float32(math.sqrt(sums))
                    for f in range(k):
                        U[r, f] += rate * scratch[f]
                else:
                    for f in range(k):
                        U[r, f] = U[r, f] * keep + rate * (V[i, f] - V[j, f])


@njit(nogil=True, inline="always")
def _item_step(out, out_bias, r, U, u, c, s, reg, adaptive, sums, scratch):
    """Ascend c x (item r's score for user u) (c < 0 for a negative), the row shrunk
    by s reg, as the training steps an item's row; returns the row's AdaGrad sum."""
    k = out.shape[1]
    if adaptive:
        bias_step = c - reg * out_bias[r]
        squares = bias_step * bias_step
        for f in range(k):
            scratch[f] = c * U[u, f] - reg * out[r, f]
            squares += scratch[f] * scratch[f]
        sums += squares / np.float32(k + 1)
        rate = s / np.float32(math.sqrt(sums))
        for f in range(k):
            out[r, f] += rate * scratch[f]
        out_bias[r] += rate * bias_step
    else:
        keep, rate = np.float32(1.0) - s * reg, s * c
        for f in range(k):
            out[r, f] = out[r, f] * keep + rate * U[u, f]
        out_bias[r] = out_bias[r] * keep + rate
    return sums


@njit(nogil=True, inline="always")
def _warp_weight(draw, n_items):
    return np.float32(min(math.log(max(1.0, float((n_items - 1) // draw))), MAX_WARP_WEIGHT))


@njit(nogil=True, cache=True, fastmath=True)
def implicit_item_rows(U, V, b, seen_indptr, seen_items, indptr, users, rows, item_of_row,
                       out, out_bias, sums_out, warp, adaptive, steps, reg, max_sampled,
                       negatives):
    """out[r], out_bias[r] and sums_out[r] (its adaptive sum at the end) for each r
    in ``rows``: the factors and bias of an item
    whose users are users[indptr[r]:indptr[r + 1]] (sorted), against frozen user
    factors U and the other items' factors V and biases b; each user's training
    items (seen_indptr/seen_items) are not drawn, nor the item itself,
    item_of_row[r] (-1 for a new one).

    Training moves an item's row both ways: up on its own pairs, and down where
    it is another user's negative draw. A pass takes both, interleaved: each of
    the item's pairs once, and ``negatives`` times a random training pair
    (u', i') of another user that drew the item, at a uniform place among WARP's
    max_sampled draws (stepping only if no earlier draw violated, as training
    stops at the first) or as BPR's one draw. ``negatives`` = pairs x draws a
    pair / items: how often an item is drawn in a training epoch. Without the
    downward steps a folded-in item's bias only grows, until it tops every
    user's ranking."""
    n_items, k = V.shape
    order, scratch = _scratch(indptr, rows, k)
    for r in rows:
        lo, hi = indptr[r], indptr[r + 1]
        out[r, :] = 0.0
        out_bias[r] = 0.0
        _unshuffled(order, hi - lo)
        sums = sums_out[r] = np.float32(1.0)  # an AdaGrad sum starts at 1
        total = hi - lo + negatives
        for epoch in range(steps.size):
            s = np.float32(steps[epoch])
            _shuffle(order, hi - lo, epoch, FOLD_IN_SALT)
            done = 0
            for t in range(total):
                own = (t + 1) * (hi - lo) // total > t * (hi - lo) // total
                if own:  # the item's own pair: up against a draw
                    p = order[done]
                    done += 1
                    u = users[lo + p]
                    positive = out_bias[r]
                    for f in range(k):
                        positive += U[u, f] * out[r, f]
                    c = np.float32(0.0)
                    for draw in range(1, (max_sampled if warp else 1) + 1):
                        drawn = below(sample_hash(p, epoch, FOLD_IN_SALT + np.uint64(draw)),
                                      n_items)
                        if drawn == item_of_row[r] or _holds(seen_indptr, seen_items, u, drawn):
                            continue
                        negative = _score(U, V, b, u, drawn)
                        if not warp:
                            c = np.float32(1.0 / (1.0 + math.exp(positive - negative)))
                        elif negative > positive - np.float32(1.0):
                            c = _warp_weight(draw, n_items)
                            break
                    if c > 0:
                        sums = sums_out[r] = _item_step(out, out_bias, r, U, u, c, s, reg,
                                                        adaptive, sums, scratch)
                    continue
                # another user's pair drawing the item: down
                bits = sample_hash(t, epoch, ~FOLD_IN_SALT)
                q = below(bits, seen_items.size)
                u = lower_bound(seen_indptr, 0, seen_indptr.size, q + 1) - 1
                at = lower_bound(users, lo, hi, u)
                if at < hi and users[at] == u:
                    continue  # the user's own item: never their negative
                positive = _score(U, V, b, u, seen_items[q])
                score = out_bias[r]
                for f in range(k):
                    score += U[u, f] * out[r, f]
                if not warp:
                    c = np.float32(-1.0 / (1.0 + math.exp(positive - score)))
                else:
                    place = 1 + below(sample_hash(t, epoch, FOLD_IN_SALT), max_sampled)
                    earlier = False
                    for draw in range(1, place):
                        drawn = below(sample_hash(t, epoch, ~FOLD_IN_SALT + np.uint64(draw)),
                                      n_items)
                        if drawn != item_of_row[r] and \
                                not _holds(seen_indptr, seen_items, u, drawn) and \
                                _score(U, V, b, u, drawn) > positive - np.float32(1.0):
                            earlier = True
                            break
                    if earlier or score <= positive - np.float32(1.0):
                        continue
                    c = -_warp_weight(place, n_items)
                sums = sums_out[r] = _item_step(out, out_bias, r, U, u, c, s, reg, adaptive,
                                                sums, scratch)


@njit(nogil=True, cache=True)
def ridge_rows(F, offsets, indptr, others, targets, rows, reg, bias_reg, per_rating,
               biased, out, out_bias):
    """out[r] (and out_bias[r] where ``biased``) for each r in ``rows``: the
    minimiser of sum_p (out_bias[r] + offsets[o] + out[r] . F[o] - targets[p])^2 +
    lambda |out[r]|^2 + lambda_b out_bias[r]^2 over the row's entries p (o =
    others[p]), lambda = reg (times the row's entry count where ``per_rating``),
    lambda_b likewise of bias_reg. A row without entries is zero."""
    k = F.shape[1]
    d = k + 1 if biased else k
    gram, rhs = np.empty((d, d)), np.empty(d)
    for r in rows:
        lo, hi = indptr[r], indptr[r + 1]
        if hi == lo:
            out[r, :] = 0.0
            if biased:
                out_bias[r] = 0.0
            continue
        gram[:, :] = 0.0
        rhs[:] = 0.0
        for p in range(lo, hi):
            o = others[p]
            y = targets[p] - offsets[o]
            for a in range(k):
                fa = np.float64(F[o, a])
                rhs[a] += fa * y
                for c in range(a + 1):
                    gram[a, c] += fa * F[o, c]
            if biased:
                for c in range(k):
                    gram[k, c] += F[o, c]
                gram[k, k] += 1.0
                rhs[k] += y
        scale = float(hi - lo) if per_rating else 1.0
        for a in range(d):
            gram[a, a] += (bias_reg if biased and a == k else reg) * scale
            for c in range(a):
                gram[c, a] = gram[a, c]
        if reg == 0.0 or (biased and bias_reg == 0.0):  # may be singular: least squares
            solution = np.linalg.lstsq(gram, rhs)[0]
        else:
            solution = np.linalg.solve(gram, rhs)
        for a in range(k):
            out[r, a] = solution[a]
        if biased:
            out_bias[r] = solution[k]


def fold_rows(kernel, n_rows, workers=None):
    """Run kernel(rows) over all n_rows rows, in shares on ``workers`` threads (None:
    every usable core); the kernels release the GIL."""
    workers = usable_cores() if workers is None else workers
    shares = np.array_split(np.arange(n_rows, dtype=np.int64), max(1, min(workers, n_rows)))
    if len(shares) == 1:
        kernel(shares[0])
        return
    with ThreadPoolExecutor(len(shares)) as pool:
        list(pool.map(kernel, shares))


def negative_draws(pairs, n_items, warp, max_sampled):
    """How often a training epoch draws an item as a negative: pairs x draws a pair
    (WARP: up to max_sampled) / items."""
    return int(round(pairs * (max_sampled if warp else 1) / max(n_items, 1)))


def pass_steps(schedule, passes):
    """The step of each fold-in pass: the training schedule's at that epoch (a
    schedule that falls within an epoch: at its middle)."""
    middle = 0.5 if schedule.within_epoch else 0.0
    return np.array([schedule(epoch + middle) for epoch in range(passes)], np.float32)


def check_room(rows, rank, what):
    """A HogwildError where ``rows`` rows of ``rank`` factors (``what``: "users" or
    "items") would not fit in the memory available: their factors, the grown
    copies of the model's arrays, biases, adaptive sums and list pointers."""
    needed, memory = 8 * rows * (rank + 4), available_memory()
    if memory is not None and needed > memory:
        raise HogwildError(f"memory {size_text(memory)} is less than {rows:,} {what} need "
                           f"({size_text(needed)})")


def grown_sums(kept, n_users, n_items, adaptive):
    """partial_fit's adaptive sums: the model's ``kept`` (user sums, item sums; a
    folded-in row's included), grown to n_users and n_items, 1 where none is kept
    (an AdaGrad sum starts at 1); () without adaptive rates."""
    if not adaptive:
        return ()
    kept = kept or (np.ones(0, np.float32), np.ones(0, np.float32))
    return tuple(rows_set(np.ones(size, np.float32), np.arange(known.size), known)
                 for known, size in zip(kept, (n_users, n_items)))


def rows_set(array, rows, values):
    """A copy of ``array`` whose rows ``rows`` are ``values``, grown where rows run
    past its end (new users or items take the next indices)."""
    grown = np.zeros((max(array.shape[0], int(rows.max()) + 1 if rows.size else 0),
                      *array.shape[1:]), array.dtype)
    grown[:array.shape[0]] = array
    grown[rows] = values
    return grown


def rows_replaced(indptr, entries, n_columns, rows, new_indptr, new_entries):
    """(indptr, entries) of lists of entries per row (each sorted) whose rows
    ``rows`` (indices, possibly past the last: the lists grow) now hold the new
    lists' rows in order; other rows are kept."""
    rows = np.asarray(rows, np.int64)
    n_rows = max(indptr.size - 1, int(rows.max()) + 1 if rows.size else 0)
    old = sp.csr_matrix((np.ones(entries.size, np.int8), entries, indptr),
                        shape=(indptr.size - 1, n_columns))
    old.resize((n_rows, n_columns))
    keep = np.ones(n_rows, np.int8)
    keep[rows] = 0
    new = sp.csr_matrix((np.ones(new_entries.size, np.int8), new_entries, new_indptr),
                        shape=(rows.size, n_columns))
    placed = sp.csr_matrix((np.ones(rows.size, np.int8), (rows, np.arange(rows.size))),
                           shape=(n_rows, rows.size))
    merged = (sp.diags(keep, dtype=np.int8) @ old + placed @ new).tocsr()
    merged.eliminate_zeros()
    merged.sort_indices()
    return merged.indptr.astype(np.int64), merged.indices.astype(np.int32)


def columns_replaced(indptr, entries, n_columns, columns, column_rows):
    """rows_replaced for columns: each row's sorted list, the columns ``columns``
    (possibly past the last: n_columns grows) now held by the rows in
    column_rows[c] (a sparse matrix, one column per entry of ``columns``)."""
    columns = np.asarray(columns, np.int64)
    width = max(n_columns, int(columns.max()) + 1 if columns.size else 0)
    old = sp.csr_matrix((np.ones(entries.size, np.int8), entries, indptr),
                        shape=(indptr.size - 1, n_columns))
    old.resize((indptr.size - 1, width))
    keep = np.ones(width, np.int8)
    keep[columns] = 0
    placed = sp.csr_matrix((np.ones(columns.size, np.int8), (np.arange(columns.size), columns)),
                           shape=(columns.size, width))
    added = (column_rows > 0).astype(np.int8) @ placed
    merged = (old @ sp.diags(keep, dtype=np.int8) + added).tocsr()
    merged.eliminate_zeros()
    merged.sort_indices()
    return merged.indptr.astype(np.int64), merged.indices.astype(np.int32)


def check_targets(indices, count, what):
    """``indices`` (rows to recalculate) as int64: distinct, each in [0, count)."""
    given = np.atleast_1d(np.asarray(indices))
    if given.dtype.kind not in "iu" or given.ndim != 1:
        raise HogwildError(f"{what} must be a list of {what[:-1]} indices, got "
                           f"{given.dtype} of shape {given.shape}")
    given = given.astype(np.int64)
    bad = (given < 0) | (given >= count)
    if bad.any():
        raise HogwildError(f"{what} must be indices from 0 to {count - 1} (the model's), got "
                           f"{given[np.argmax(bad)]}")
    if np.unique(given).size != given.size:
        raise HogwildError(f"{what} must be distinct: each row is folded in once")
    return given
