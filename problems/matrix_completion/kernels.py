"""The compiled side of matrix completion: the SGD update and loss of each model,
generated per rank (a compile-time constant, so LLVM unrolls the rank-length
loops and the SLP vectoriser packs them; keep branches and Python's division checks
out of an update, which cost the adaptive kernel 2x: see docs/benchmarks.md, issue
42's matrix-factorisation section), their CUDA warp forms, the held-out squared
errors, and the loops behind prediction and recommendation."""
import numpy as np
from numba import njit

from hogwild.adaptive import adagrad_scale
from hogwild.kernels.compiler import FASTMATH_FLAGS


def paper_kernels(rank):
    """(update, loss) of the paper model at ``rank``: params = (L float32[n_users,
    rank], R float32[n_items, rank]); data = (users int32[n], items int32[n], ratings
    float32[n], user_reg float32[n_users] = mu / |row u|, item_reg float32[n_items] =
    mu / |col v|)."""
    k = int(rank)

    def update(e, params, data, step):
        L, R = params[0], params[1]
        u, v = data[0][e], data[1][e]
        g = np.float32(step)
        pred = np.float32(0.0)
        for j in range(k):
            pred += np.float32(L[u, j]) * np.float32(R[v, j])
        err = pred - data[2][e]
        keep_u = max(np.float32(0.0), np.float32(1.0) - g * data[3][u])
        keep_v = max(np.float32(0.0), np.float32(1.0) - g * data[4][v])
        ge = g * err
        for j in range(k):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            L[u, j] = a * keep_u - ge * b
            R[v, j] = b * keep_v - ge * a

    def loss(e, params, data):
        L, R = params[0], params[1]
        u, v = data[0][e], data[1][e]
        pred = 0.0
        norm_u = 0.0
        norm_v = 0.0
        for j in range(k):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            pred += a * b
            norm_u += a * a
            norm_v += b * b
        err = pred - data[2][e]
        return err * err + data[3][u] * norm_u + data[4][v] * norm_v

    return update, loss


def biased_kernels(rank):
    """(update, loss) of the biased model at ``rank``: params = (L, R, user_bias
    float32[n_users], item_bias float32[n_items]); data = (users, items, ratings,
    float32[3] = (mu, mu_bias, training mean))."""
    k = int(rank)

    def update(e, params, data, step):
        L, R, bu, bi = params[0], params[1], params[2], params[3]
        u, v = data[0][e], data[1][e]
        g = np.float32(step)
        mu = data[3][0]
        mu_bias = data[3][1]
        pred = data[3][2] + bu[u] + bi[v]
        for j in range(k):
            pred += np.float32(L[u, j]) * np.float32(R[v, j])
        err = pred - data[2][e]
        ge = g * err
        bu[u] -= ge + g * mu_bias * bu[u]
        bi[v] -= ge + g * mu_bias * bi[v]
        keep = np.float32(1.0) - g * mu
        for j in range(k):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            L[u, j] = a * keep - ge * b
            R[v, j] = b * keep - ge * a

    def loss(e, params, data):
        L, R, bu, bi = params[0], params[1], params[2], params[3]
        u, v = data[0][e], data[1][e]
        pred = data[3][2] + bu[u] + bi[v]
        norms = 0.0
        for j in range(k):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            pred += a * b
            norms += a * a + b * b
        err = pred - data[2][e]
        return (err * err + data[3][0] * norms
                + data[3][1] * (bu[u] * bu[u] + bi[v] * bi[v]))

    return update, loss


@njit(nogil=True, inline="always")
def _adapt_rows(params, u, v, constants, err, dot, norm_u, norm_v, rate_u, rate_v):
    """The biases' steps at their rows' rates, and the rows' sums grown by their
    mean squared factor gradient in scaled units: sum_j (err b_j + mu a_j)^2 (and
    its mirror) from the dot product and squared norms, so that the factors' loop
    needs no reductions (biased_adaptive_kernels' data[3] = ``constants``)."""
    bu, bi, user_sums, item_sums = params[2], params[3], params[4], params[5]
    mu = constants[0]
    bu[u] -= rate_u * (err + constants[1] * bu[u])
    bi[v] -= rate_v * (err + constants[1] * bi[v])
    cross = np.float32(2.0) * err * mu * dot
    user_sums[u] += (err * err * norm_v + cross + mu * mu * norm_u) * constants[4]
    item_sums[v] += (err * err * norm_u + cross + mu * mu * norm_v) * constants[4]


@njit(nogil=True, inline="always")
def _factor_steps(constants, err, rate_u, rate_v):
    """(keep_u, keep_v, step_u, step_v): L_u <- L_u keep_u - step_u R_v, and its
    mirror, at the rows' rates in scaled units."""
    factor_u = rate_u * constants[3]
    factor_v = rate_v * constants[3]
    return (np.float32(1.0) - factor_u * constants[0], np.float32(1.0) - factor_v * constants[0],
            factor_u * err, factor_v * err)


def biased_adaptive_kernels(rank):
    """(update, loss) of the biased model with LIBMF's per-row adaptive rates (Chin,
    Zhuang, Juan and Lin, PAKDD 2015) at ``rank``: params = (L, R, user_bias,
    item_bias, user_sums, item_sums); data = (users, items, ratings, float32[5] =
    (mu, mu_bias, training mean, 1 / scale, 1 / (rank scale^3))).

    Each row keeps one sum G of its mean squared factor gradient, starting at 1,
    and moves at step / sqrt(G): a row rated often settles while a rare one keeps
    learning. LIBMF divides the ratings by their standard deviation (``scale``) so
    that G's start of 1 and the step mean the same on every rating scale; this
    kernel trains in the ratings' own units and does the same by measuring the
    factors' gradients and steps in scaled units (factor gradients carry scale^1.5,
    factors scale^0.5, biases scale). A row's bias moves at its factors' rate.
    loss is biased_kernels' (the objective is the same)."""
    k = int(rank)

    def update(e, params, data, step):
        L, R, bu, bi = params[0], params[1], params[2], params[3]
        user_sums, item_sums = params[4], params[5]
        u, v = data[0][e], data[1][e]
        constants = data[3]
        dot = np.float32(0.0)
        norm_u = np.float32(0.0)
        norm_v = np.float32(0.0)
        for j in range(k):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            dot += a * b
            norm_u += a * a
            norm_v += b * b
        err = constants[2] + bu[u] + bi[v] + dot - data[2][e]
        rate_u = np.float32(step) * adagrad_scale(user_sums, u)
        rate_v = np.float32(step) * adagrad_scale(item_sums, v)
        _adapt_rows(params, u, v, constants, err, dot, norm_u, norm_v, rate_u, rate_v)
        keep_u, keep_v, step_u, step_v = _factor_steps(constants, err, rate_u, rate_v)
        for j in range(k):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            L[u, j] = a * keep_u - step_u * b
            R[v, j] = b * keep_v - step_v * a

    return update, biased_kernels(rank)[1]


def _lanes(rank):
    """The per-lane pieces of a warp update at ``rank`` (GPU backend only: imports
    numba.cuda): (lanes_dot, lanes_step, warp_sum)."""
    from hogwild.kernels.warp import WARP_SIZE, warp_sum

    k = int(rank)

    @njit(inline="always")
    def lanes_dot(L, R, u, v, lane):
        """This lane's share of L[u] . R[v]."""
        partial = np.float32(0.0)
        for j in range(lane, k, WARP_SIZE):
            partial += np.float32(L[u, j]) * np.float32(R[v, j])
        return partial

    @njit(inline="always")
    def lanes_step(L, R, u, v, lane, keep_u, keep_v, ge):
        """This lane's share of the two rows' step."""
        for j in range(lane, k, WARP_SIZE):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            L[u, j] = a * keep_u - ge * b
            R[v, j] = b * keep_v - ge * a

    return lanes_dot, lanes_step, warp_sum


def paper_warp_update(rank):
    """The update of paper_kernels(rank) for a CUDA warp per rating
    (cuMF_SGD's layout; GPU backend only): lane l owns factors l, l+32, ... of
    the rating's two rows, the dot product is a warp_sum of the lanes' partial
    sums (and in the biased model lane 0 alone reads and updates the biases). Each lane touches only
    its own factors, so no lane reads what another wrote. The same step, so it
    converges like the per-thread update; only the order of the sum differs."""
    lanes_dot, lanes_step, warp_sum = _lanes(rank)

    def warp_update(e, lane, params, data, step):
        L, R = params[0], params[1]
        u, v = data[0][e], data[1][e]
        g = np.float32(step)
        err = warp_sum(lanes_dot(L, R, u, v, lane)) - data[2][e]
        keep_u = max(np.float32(0.0), np.float32(1.0) - g * data[3][u])
        keep_v = max(np.float32(0.0), np.float32(1.0) - g * data[4][v])
        lanes_step(L, R, u, v, lane, keep_u, keep_v, g * err)

    return warp_update


def biased_warp_update(rank):
    """As paper_warp_update for biased_kernels(rank)."""
    lanes_dot, lanes_step, warp_sum = _lanes(rank)

    def warp_update(e, lane, params, data, step):
        L, R, bu, bi = params[0], params[1], params[2], params[3]
        u, v = data[0][e], data[1][e]
        g = np.float32(step)
        partial = lanes_dot(L, R, u, v, lane)
        if lane == 0:  # only lane 0 reads and writes the biases: lanes are not in
            partial += data[3][2] + bu[u] + bi[v]  # lockstep, and another lane could
        err = warp_sum(partial) - data[2][e]  # read a bias before lane 0 wrote it
        ge = g * err
        if lane == 0:
            mu_bias = data[3][1]
            bu[u] -= ge + g * mu_bias * bu[u]
            bi[v] -= ge + g * mu_bias * bi[v]
        keep = np.float32(1.0) - g * data[3][0]
        lanes_step(L, R, u, v, lane, keep, keep, ge)

    return warp_update


def biased_adaptive_warp_update(rank):
    """As paper_warp_update for biased_adaptive_kernels(rank), with its arithmetic:
    the lanes' partial dot products and squared norms summed over the warp, the
    rows' sums grown from them, the lanes then stepping their own factors. Lane
    0 alone reads and writes the biases and the rows' sums; warp_sums (adding the
    other lanes' zeros) give every lane the rates and the prediction's offset."""
    from hogwild.kernels.warp import WARP_SIZE, warp_sum

    k = int(rank)

    def warp_update(e, lane, params, data, step):
        L, R, bu, bi = params[0], params[1], params[2], params[3]
        user_sums, item_sums = params[4], params[5]
        u, v = data[0][e], data[1][e]
        constants = data[3]
        rate_u = np.float32(0.0)
        rate_v = np.float32(0.0)
        offset = np.float32(0.0)
        if lane == 0:  # another lane, not in lockstep, could read them before lane
            # 0 wrote them for the previous rating
            rate_u = np.float32(step) * adagrad_scale(user_sums, u)
            rate_v = np.float32(step) * adagrad_scale(item_sums, v)
            offset = constants[2] + bu[u] + bi[v]
        rate_u = warp_sum(rate_u)
        rate_v = warp_sum(rate_v)
        offset = warp_sum(offset)
        dot = np.float32(0.0)
        norm_u = np.float32(0.0)
        norm_v = np.float32(0.0)
        for j in range(lane, k, WARP_SIZE):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            dot += a * b
            norm_u += a * a
            norm_v += b * b
        dot = warp_sum(dot)
        norm_u = warp_sum(norm_u)
        norm_v = warp_sum(norm_v)
        err = offset + dot - data[2][e]
        if lane == 0:
            _adapt_rows(params, u, v, constants, err, dot, norm_u, norm_v, rate_u, rate_v)
        keep_u, keep_v, step_u, step_v = _factor_steps(constants, err, rate_u, rate_v)
        for j in range(lane, k, WARP_SIZE):
            a = np.float32(L[u, j])
            b = np.float32(R[v, j])
            L[u, j] = a * keep_u - step_u * b
            R[v, j] = b * keep_v - step_v * a

    return warp_update


# --- prediction, held-out errors, the seen-items index ---------------------------

@njit(nogil=True, cache=True, fastmath=FASTMATH_FLAGS)
def predict_into(L, R, user_bias, item_bias, offset, mean, low, high, users, items, out):
    """out[k] = prediction for (users[k], items[k]), clipped to [low, high]; an index
    of -1 (never seen in training) falls back to the training mean plus the known
    side's bias."""
    for k in range(users.size):
        u, v = users[k], items[k]
        if u >= 0 and v >= 0:
            total = offset + user_bias[u] + item_bias[v]
            for j in range(L.shape[1]):
                total += L[u, j] * R[v, j]
        else:
            total = mean
            if u >= 0:
                total += user_bias[u]
            if v >= 0:
                total += item_bias[v]
        out[k] = min(max(total, low), high)


@njit(nogil=True, cache=True)
def group_by_user(users, items, values, n_users):
    """(indptr, items grouped by user, their values): the training items of user u
    are grouped[indptr[u]:indptr[u + 1]] (a counting sort, in the given order);
    ``values`` (one per rating, or empty: none) follow them (8 bytes per rating)."""
    indptr = np.zeros(n_users + 1, np.int64)
    for u in users:
        indptr[u + 1] += 1
    for u in range(n_users):
        indptr[u + 1] += indptr[u]
    fill = indptr[:-1].copy()
    grouped = np.empty(users.size, np.int32)
    grouped_values = np.empty(values.size, np.float32)
    for k in range(users.size):
        grouped[fill[users[k]]] = items[k]
        if values.size:
            grouped_values[fill[users[k]]] = values[k]
        fill[users[k]] += 1
    return indptr, grouped, grouped_values


def squared_error_paper(rank):
    """The paper model's held-out error at ``rank``: (prediction - rating)^2 for
    rating e; data = (users, items, ratings, float32[3] = (training mean, lowest and
    highest prediction)): a user or item unseen in training (index -1) is predicted
    by the mean, and predictions are clipped, as predict_into does. The rank is a
    compile-time constant (5x faster than a loop to L.shape[1]); factors are read
    through float32, so half precision works."""
    k = int(rank)

    def squared_error(e, params, data):
        u, v = data[0][e], data[1][e]
        pred = data[3][0]
        if u >= 0 and v >= 0:
            pred = np.float32(0.0)
            for j in range(k):
                pred += np.float32(params[0][u, j]) * np.float32(params[1][v, j])
        err = min(max(pred, data[3][1]), data[3][2]) - data[2][e]
        return err * err

    return squared_error


def squared_error_biased(rank):
    """As squared_error_paper for the biased model: an unseen side contributes no
    bias and no factor term."""
    k = int(rank)

    def squared_error(e, params, data):
        u, v = data[0][e], data[1][e]
        pred = data[3][0]
        if u >= 0:
            pred += params[2][u]
        if v >= 0:
            pred += params[3][v]
        if u >= 0 and v >= 0:
            for j in range(k):
                pred += np.float32(params[0][u, j]) * np.float32(params[1][v, j])
        err = min(max(pred, data[3][1]), data[3][2]) - data[2][e]
        return err * err

    return squared_error
