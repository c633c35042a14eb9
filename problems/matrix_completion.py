"""Matrix completion (recommender ratings): the Hogwild! paper's main workload.

Each observed rating (u, v, z) touches one row of the user factors L and one row
of the item factors R; workers update L and R in place without locks.

Two models:

``biased`` (the default; Koren's SVD / Funk SVD, as in Surprise and LIBMF):
prediction m + b_u + c_v + L_u . R_v with m the training mean, and a regulariser
per rating:

    f_uv = (prediction - z)^2 + mu (||L_u||^2 + ||R_v||^2) + mu_bias (b_u^2 + c_v^2)

``paper`` (the Hogwild! paper's model: no mean, no biases, a degree-scaled
regulariser), with |row u| the number of training ratings of user u and |col v|
those of item v:

    f_uv = (L_u . R_v - z)^2 + mu ||L_u||^2 / |row u| + mu ||R_v||^2 / |col v|

summed over the ratings, so each user and item row is regularised by mu once in
total. It must learn the mean in its factors, and it does worse than predicting
the mean plus biases on sparse ratings (a long tail of items rated once or
twice): keep it for reproducing the paper, not for a first run.

Both take SGD steps on f_uv / 2 (LIBMF's convention, so a step of s moves a
factor by s * error * other factor). The kernels are generated per rank: the rank
is a compile-time constant of the update, so LLVM unrolls and vectorises the
rank-length loops, and fastmath lets it vectorise the dot product.
"""
import functools
import math
import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit

from hogwild.backends import get_backend
from hogwild.datasets.ratings import Ratings
from hogwild.engine import fit as engine_fit
from hogwild.limits import check_workers
from hogwild.errors import HogwildError, check_int, check_seed, choose
from hogwild.estimator import Params, run_controls
from hogwild.kernels.compiler import FASTMATH_FLAGS
from hogwild.model_file import read_model, write_model
from hogwild.objective import Metric, Objective
from hogwild.schedulers import get_scheduler
from hogwild.structure import Supports, block_layout

MODELS = ("biased", "paper")
SCHEDULERS = ("hogwild", "blocked", "serial", "locked", "colored", "cyclades")
MAX_RANK = 512
WARP_RANK = 32  # from this rank on, the GPU runs a warp per rating (factor_warp_update)
FACTOR_DTYPES = ("float32", "float16")
# Per model: (reg, step, init_scale) at rank 32, 20 epochs, decay 0.9. biased:
# chosen on ml-100k and a 100,000-rating sample of ml-1m (its long tail), checked
# on ml-1m and 50,000- and 300,000-rating samples (other seeds), where it beats
# the mean plus biases and Surprise's and LIBMF's defaults (README; scripts/
# bench_defaults.py). The earlier 0.04 step and 0.1 init overfit sparse ratings,
# worse than the mean plus biases there. paper: the paper's, tuned on ml-1m.
DEFAULTS = {
    "biased": (0.06, 0.03, 0.03),
    "paper": (10.0, 0.02, 0.1),
}
MODEL_FILE_KIND = "hogwild.MatrixFactorization"
MODEL_FILE_VERSION = 1


def factor_kernels(rank, model):
    """(update, loss) for one rank and model; plain functions compiled by the engine.

    paper:  params = (L float32[n_users, rank], R float32[n_items, rank]);
            data = (users int32[n], items int32[n], ratings float32[n],
                    user_reg float32[n_users] = mu / |row u|,
                    item_reg float32[n_items] = mu / |col v|).
    biased: params = (L, R, user_bias float32[n_users], item_bias float32[n_items]);
            data = (users, items, ratings, float32[3] = (mu, mu_bias, training mean)).
    """
    k = int(rank)

    if model == "paper":
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


def factor_warp_update(rank, model):
    """The update of factor_kernels(rank, model) for a CUDA warp per rating
    (cuMF_SGD's layout; GPU backend only): lane l owns factors l, l+32, ... of
    the rating's two rows, the dot product is a warp_sum of the lanes' partial
    sums, and lane 0 alone reads and updates the biases. Each lane touches only
    its own factors, so no lane reads what another wrote. The same step, so it
    converges like the per-thread update; only the order of the sum differs."""
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

    if model == "paper":
        def warp_update(e, lane, params, data, step):
            L, R = params[0], params[1]
            u, v = data[0][e], data[1][e]
            g = np.float32(step)
            err = warp_sum(lanes_dot(L, R, u, v, lane)) - data[2][e]
            keep_u = max(np.float32(0.0), np.float32(1.0) - g * data[3][u])
            keep_v = max(np.float32(0.0), np.float32(1.0) - g * data[4][v])
            lanes_step(L, R, u, v, lane, keep_u, keep_v, g * err)

        return warp_update

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


# --- ratings in, dense indices -----------------------------------------------------

def ratings_arrays(ratings):
    """(users, items, values) from Ratings, a (users, items, values) tuple, a pandas
    DataFrame (columns user/item/rating if present, else the first three) or a
    scipy.sparse matrix (row = user, column = item)."""
    if isinstance(ratings, Ratings):
        return ratings.users, ratings.items, ratings.values
    if sp.issparse(ratings):
        coo = ratings.tocoo()
        return coo.row, coo.col, coo.data
    if hasattr(ratings, "columns") and hasattr(ratings, "iloc"):  # a pandas DataFrame
        names = [c for c in ("user", "item", "rating") if c in ratings.columns]
        frame = ratings[names] if len(names) == 3 else ratings.iloc[:, :3]
        if frame.shape[1] < 3:
            raise HogwildError("a ratings DataFrame needs user, item and rating columns")
        return tuple(frame.iloc[:, i].to_numpy() for i in range(3))
    if isinstance(ratings, (tuple, list)) and len(ratings) == 3:
        return tuple(np.asarray(a) for a in ratings)
    raise HogwildError("ratings must be hogwild Ratings, a (users, items, values) tuple, a "
                       f"pandas DataFrame or a scipy.sparse matrix, got {type(ratings).__name__}")


def check_values(values, what="ratings"):
    """float32 ratings; NaN, Inf or a value float32 cannot hold is an error that
    names the first bad position. Checked in chunks, so that 100 million ratings
    need no large temporaries."""
    given = np.asarray(values)
    if given.dtype.kind not in "fiu":
        raise HogwildError(f"{what} must be numbers, got dtype {given.dtype}")
    with np.errstate(over="ignore"):  # beyond float32's range becomes inf: refused below
        values = given.astype(np.float32, copy=False)
    chunk = 1 << 22
    for start in range(0, values.size, chunk):
        bad = ~np.isfinite(values[start:start + chunk])
        if bad.any():
            k = start + int(np.argmax(bad))
            total = int(np.count_nonzero(~np.isfinite(values)))
            raise HogwildError(f"{what} hold {total} NaN, Inf or values beyond float32's "
                               f"range (the first at position {k}: {given[k]})")
    return values


def _table_fits(ids):
    """A lookup table indexed by id (max id + 1 entries) only when it is small
    against the data: one hostile id of 10**12 must not ask for terabytes."""
    return ids.dtype.kind in "iu" and ids.size > 0 and ids.min() >= 0 \
        and ids.max() < 4 * ids.size + (1 << 20)


class IdIndex:
    """Maps external ids (any hashable type) to dense indices 0..n-1 and back.

    ``ids[i]`` is the external id of index i. Integer ids use a lookup table when
    it is small against the number of ids (no sort, O(number of ratings)) and a
    sorted search otherwise; other ids a dictionary.
    """

    def __init__(self, ids):
        self.ids = ids
        self._table = None
        self._sorted = None
        if _table_fits(ids):
            self._table = np.full(int(ids.max()) + 1, -1, np.int64)
            self._table[ids] = np.arange(ids.size)
        elif ids.dtype.kind in "iu":
            order = np.argsort(ids, kind="stable")
            self._sorted = (ids[order], order)
        else:
            self._lookup = {key: i for i, key in enumerate(ids.tolist())}

    @classmethod
    def build(cls, raw):
        """(index, dense int32 indices of raw): ids in sorted order."""
        raw = np.asarray(raw)
        if raw.size == 0:
            raise HogwildError("empty data: no ratings")
        if _table_fits(raw):
            present = np.zeros(int(raw.max()) + 1, bool)
            present[raw] = True
            if present.all() and raw.dtype == np.int32:
                return cls(np.arange(present.size)), raw  # already dense: no copy
            table = (np.cumsum(present) - 1).astype(np.int32)
            return cls(np.flatnonzero(present)), table[raw]
        try:
            ids, dense = np.unique(raw, return_inverse=True)
        except TypeError:  # mixed types that do not sort
            ids = np.array(list(dict.fromkeys(raw.tolist())), dtype=object)
            lookup = {key: i for i, key in enumerate(ids.tolist())}
            dense = np.fromiter((lookup[key] for key in raw.tolist()), np.int64, raw.size)
        return cls(ids), dense.astype(np.int32)

    def __len__(self):
        return self.ids.size

    def find(self, raw):
        """Dense indices of raw ids; -1 where an id was never seen."""
        raw = np.asarray(raw)
        if self._table is not None or self._sorted is not None:
            out = np.full(raw.shape, -1, np.int64)
            if raw.dtype.kind not in "iu":
                return out  # integer ids only: anything else was never seen
            if self._table is not None:
                inside = (raw >= 0) & (raw < self._table.size)
                out[inside] = self._table[raw[inside]]
                return out
            known, order = self._sorted
            inside = (raw >= known[0]) & (raw <= known[-1])  # also keeps uint64 in range
            wanted = raw[inside].astype(known.dtype)
            where = np.minimum(np.searchsorted(known, wanted), known.size - 1)
            out[inside] = np.where(known[where] == wanted, order[where], -1)
            return out
        return np.fromiter((self._lookup.get(key, -1) for key in raw.tolist()), np.int64,
                           raw.size)


# --- compiled helpers for prediction and the seen-items index ---------------------

@njit(nogil=True, cache=True, fastmath=FASTMATH_FLAGS)
def _predict(L, R, user_bias, item_bias, offset, mean, users, items, out):
    """out[k] = prediction for (users[k], items[k]); an index of -1 (never seen in
    training) falls back to the training mean plus the known side's bias."""
    for k in range(users.size):
        u, v = users[k], items[k]
        if u >= 0 and v >= 0:
            total = offset + user_bias[u] + item_bias[v]
            for j in range(L.shape[1]):
                total += L[u, j] * R[v, j]
            out[k] = total
        else:
            total = mean
            if u >= 0:
                total += user_bias[u]
            if v >= 0:
                total += item_bias[v]
            out[k] = total


@njit(nogil=True, cache=True)
def _group_by_user(users, items, n_users):
    """(indptr, items grouped by user): the training items of user u are
    grouped[indptr[u]:indptr[u + 1]] (a counting sort, 4 bytes per rating)."""
    indptr = np.zeros(n_users + 1, np.int64)
    for u in users:
        indptr[u + 1] += 1
    for u in range(n_users):
        indptr[u + 1] += indptr[u]
    fill = indptr[:-1].copy()
    grouped = np.empty(users.size, np.int32)
    for k in range(users.size):
        grouped[fill[users[k]]] = items[k]
        fill[users[k]] += 1
    return indptr, grouped


@njit(nogil=True, inline="always")
def _row_dot(L, R, u, v):
    """L[u] . R[v] in float32 (read through float32, so half-precision factors work)."""
    total = np.float32(0.0)
    for j in range(L.shape[1]):
        total += np.float32(L[u, j]) * np.float32(R[v, j])
    return total


def squared_error_paper(e, params, data):
    """(prediction - rating)^2 for held-out rating e of the paper model; data =
    (users, items, ratings, float32[1] = (training mean,)); a user or item unseen
    in training (index -1) is predicted by the mean, as _predict does."""
    u, v = data[0][e], data[1][e]
    pred = _row_dot(params[0], params[1], u, v) if u >= 0 and v >= 0 else data[3][0]
    err = pred - data[2][e]
    return err * err


def squared_error_biased(e, params, data):
    """As squared_error_paper for the biased model: an unseen side contributes no
    bias and no factor term."""
    u, v = data[0][e], data[1][e]
    pred = data[3][0]
    if u >= 0:
        pred += params[2][u]
    if v >= 0:
        pred += params[3][v]
    if u >= 0 and v >= 0:
        pred += _row_dot(params[0], params[1], u, v)
    err = pred - data[2][e]
    return err * err


def rmse_metric(model, users, items, values, mean):
    """The test RMSE of ratings (dense indices, -1 for unseen) as a hogwild.Metric,
    computed where the factors are (on the GPU without a copy)."""
    data = (np.ascontiguousarray(users, np.int32), np.ascontiguousarray(items, np.int32),
            np.ascontiguousarray(values, np.float32), np.array([mean], np.float32))
    value = squared_error_biased if model == "biased" else squared_error_paper
    return Metric("test_rmse", value, data, values.size, finish=math.sqrt)


def rmse(predictions, values):
    diff = np.asarray(predictions, np.float64) - np.asarray(values, np.float64)
    return float(np.sqrt(np.mean(diff * diff)))


# --- estimator ------------------------------------------------------------------------



class MatrixFactorization(Params):
    """Low-rank matrix completion of ratings, trained with Hogwild! SGD.

    Parameters (keyword only, stored unchanged)
    rank: 1..512 factors per user and item (a compile-time constant of the kernel).
    model: "biased" (default: mean + user bias + item bias + L_u . R_v,
        regularised per rating like Surprise's SVD and LIBMF) or "paper" (L_u . R_v
        with the Hogwild! paper's degree-scaled regulariser); see the module
        docstring.
    reg: mu; default 0.06 (biased) or 10 (paper). bias_reg: mu for the biases
        (biased model; default reg).
    epochs, step, decay, step_schedule: SGD schedule (hogwild.steps); default step
        0.03 (biased) or 0.02 (paper), decay 0.9 per epoch.
    workers: threads or processes (default: all usable cores; more than 4 per usable
        core only with oversubscribe=True).
    scheduler: "hogwild" (lock-free), "blocked" (conflict-free grid blocks,
        bitwise reproducible for a seed and grid), "serial", "locked", "colored" or
        "cyclades" (conflict-free, bitwise reproducible for a seed; colored needs as
        many colour phases as the busiest item has ratings, so blocked is faster).
    backend: "threads", "processes" (see hogwild.backends), "gpu" (one NVIDIA GPU;
        ranks >= 32 run a warp per rating, see factor_warp_update) or "ray" (several
        nodes with a parameter server; ``distributed`` is a
        hogwild.backends.ray.SSPSettings or a dict of its fields).
    grid: blocks per side for "blocked" (default 8, or 2 x workers above 4).
    shuffle_block: "hogwild"/"serial"/"locked" visit random runs of this many
        consecutive ratings, which are stored in random order (shuffle_ratings).
    shuffle_ratings: shuffle the ratings once before training (a copy); pass False
        when their stored order is already random (Jumbo files) to train on them
        in place, without a copy.
    init_scale: factors start N(0, init_scale^2) (default 0.03 biased, 0.1
        paper); biases start at 0. Small factors let the first epochs fit the
        biases first, which keeps sparse ratings from overfitting.
    factor_dtype: "float32", or "float16" to store the factors in half precision
        while training on the GPU (half the memory traffic per rating; arithmetic
        stays float32, as in cuMF_SGD). backend="gpu" only: numba compiles no
        half precision for the CPU. The fitted factors are float32 either way.
    seed: with "serial" or "blocked" the fit is bitwise reproducible.

    Fitted attributes: user_factors_, item_factors_ (float32, one row per known id,
    in the order of user_ids_ / item_ids_), user_bias_, item_bias_ (zeros for
    "paper"), global_mean_, history_ (per-epoch records with test_rmse when an
    eval_set is given), workers_, setup_seconds_ (the scheduler's preparation,
    e.g. colouring), startup_seconds_ (starting worker processes).
    """

    def __init__(self, *, rank=32, model="biased", reg=None, bias_reg=None, epochs=20,
                 step=None, decay=0.9, step_schedule="geometric", workers=None,
                 scheduler="hogwild", backend="threads", distributed=None, grid=None,
                 shuffle_block=256, shuffle_ratings=True, init_scale=None,
                 factor_dtype="float32", seed=None, oversubscribe=False):
        self.rank = rank
        self.model = model
        self.reg = reg
        self.bias_reg = bias_reg
        self.epochs = epochs
        self.step = step
        self.decay = decay
        self.step_schedule = step_schedule
        self.workers = workers
        self.oversubscribe = oversubscribe
        self.scheduler = scheduler
        self.backend = backend
        self.distributed = distributed
        self.grid = grid
        self.shuffle_block = shuffle_block
        self.shuffle_ratings = shuffle_ratings
        self.init_scale = init_scale
        self.factor_dtype = factor_dtype
        self.seed = seed

    # -- training --------------------------------------------------------------------

    def settings(self):
        """Validated (rank, reg, bias_reg, step, init_scale), defaults filled in."""
        choose(MODELS, self.model, "model")
        choose(SCHEDULERS, self.scheduler, "scheduler")
        if isinstance(self.rank, bool) or not isinstance(self.rank, (int, np.integer)) \
                or not 1 <= self.rank <= MAX_RANK:
            raise HogwildError(f"rank must be an integer from 1 to {MAX_RANK}, "
                               f"got {self.rank!r}")
        default_reg, default_step, default_init = DEFAULTS[self.model]
        reg = default_reg if self.reg is None else self.reg
        bias_reg = reg if self.bias_reg is None else self.bias_reg
        for name, value in (("reg", reg), ("bias_reg", bias_reg)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not np.isfinite(value) or value < 0:
                raise HogwildError(f"{name} must be a finite number >= 0, got {value!r}")
        init_scale = default_init if self.init_scale is None else self.init_scale
        if isinstance(init_scale, bool) or not isinstance(init_scale, (int, float)) \
                or not 0 <= init_scale < math.inf:
            raise HogwildError(f"init_scale must be a finite number >= 0, got {init_scale!r}")
        choose(FACTOR_DTYPES, self.factor_dtype, "factor_dtype")
        if self.factor_dtype == "float16" and not get_backend(self.backend).half_precision:
            raise HogwildError(f"factor_dtype='float16' needs backend='gpu' (numba compiles "
                               f"no half precision for the CPU); got backend={self.backend!r}")
        step = default_step if self.step is None else self.step
        return int(self.rank), float(reg), float(bias_reg), step, float(init_scale)

    def fit(self, ratings, eval_set=None, **controls):
        """Train on ratings (see ratings_arrays for the accepted forms).

        eval_set: test ratings in the same forms; their RMSE is recorded after
        every epoch in history_ (ids unseen in training are predicted by the
        fallback, with one warning). ``controls`` are hogwild.RunControls fields:
        callback(record) once per epoch, progress, checkpoint, checkpoint_every,
        resume (with the same ratings and seed).
        """
        rank, reg, bias_reg, step, init_scale = self.settings()
        raw_users, raw_items, raw_values = ratings_arrays(ratings)
        if not len(raw_users) == len(raw_items) == len(raw_values):
            raise HogwildError(f"users, items and values must have the same length, got "
                               f"{len(raw_users)}, {len(raw_items)} and {len(raw_values)}")
        values = check_values(raw_values)
        if values.size == 0:
            raise HogwildError("empty data: the training set has no ratings")
        user_index, users = IdIndex.build(raw_users)
        item_index, items = IdIndex.build(raw_items)
        n_users, n_items = len(user_index), len(item_index)
        seeds = np.random.SeedSequence(check_seed(self.seed)).spawn(3)
        workers = self.workers
        layout = None
        if "blocks" in get_scheduler(self.scheduler).needs:
            grid = self.grid
            if grid is None:
                grid = max(8, 2 * check_workers(workers, self.oversubscribe))
            order, row_labels, col_labels, layout = block_layout(
                users, items, grid, np.random.default_rng(seeds[0]))
            users = row_labels[users[order]].astype(np.int32)
            items = col_labels[items[order]].astype(np.int32)
            values = values[order]
            user_index = IdIndex(_relabelled(user_index.ids, row_labels))
            item_index = IdIndex(_relabelled(item_index.ids, col_labels))
        elif self.shuffle_ratings:
            order = np.random.default_rng(seeds[0]).permutation(values.size)
            users, items, values = users[order], items[order], values[order]
        mean = float(np.mean(values, dtype=np.float64))

        init = np.random.default_rng(seeds[1])
        L = init.standard_normal((n_users, rank), dtype=np.float32) * np.float32(init_scale)
        R = init.standard_normal((n_items, rank), dtype=np.float32) * np.float32(init_scale)
        L, R = L.astype(self.factor_dtype, copy=False), R.astype(self.factor_dtype, copy=False)
        update, loss = factor_kernels(rank, self.model)
        warp_update = factor_warp_update(rank, self.model) \
            if get_backend(self.backend).runs_warp_updates and rank >= WARP_RANK else None
        if self.model == "biased":
            params = (L, R, np.zeros(n_users, np.float32), np.zeros(n_items, np.float32))
            data = (users, items, values, np.array([reg, bias_reg, mean], np.float32))
        else:
            user_reg = reg / np.maximum(np.bincount(users, minlength=n_users), 1)
            item_reg = reg / np.maximum(np.bincount(items, minlength=n_items), 1)
            params = (L, R)
            data = (users, items, values, user_reg.astype(np.float32),
                    item_reg.astype(np.float32))
        objective = Objective(update, loss, params, data, values.size,
                              name=f"mf-{self.model}-rank{rank}", blocks=layout,
                              supports=functools.partial(Supports.from_keys, users, items),
                              fastmath=True, warp_update=warp_update)

        self.user_ids_, self.item_ids_ = user_index.ids, item_index.ids
        self._user_index, self._item_index = user_index, item_index
        self.global_mean_ = mean
        evaluate = None
        if eval_set is not None:
            test_users, test_items, test_values = ratings_arrays(eval_set)
            test_values = check_values(test_values, "test ratings")
            test_u = user_index.find(test_users)
            test_i = item_index.find(test_items)
            _warn_unseen(test_u, test_i, "test ratings")

            evaluate = rmse_metric(self.model, test_u, test_i, test_values, mean)

        result = engine_fit(objective, self.training_config(step=step, seed=seeds[2]),
                            run_controls(evaluate, controls))
        self._set_factors(result.params)
        self._seen = _group_by_user(users, items, n_users)
        self.history_ = result.history
        self.workers_ = result.workers
        self.distributed_ = result.distributed
        self.setup_seconds_ = result.setup_seconds
        self.startup_seconds_ = result.startup_seconds
        self.step_ = step
        return self

    def _set_factors(self, params):
        self.user_factors_ = params[0].astype(np.float32, copy=False)
        self.item_factors_ = params[1].astype(np.float32, copy=False)
        if self.model == "biased":
            self.user_bias_, self.item_bias_ = params[2], params[3]
        else:
            self.user_bias_ = np.zeros(params[0].shape[0], np.float32)
            self.item_bias_ = np.zeros(params[1].shape[0], np.float32)

    # -- prediction --------------------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "user_factors_"):
            raise HogwildError("this MatrixFactorization is not fitted yet; call fit(ratings) "
                               "first")

    def _predict_indices(self, u, i):
        out = np.empty(u.size, np.float32)
        offset = self.global_mean_ if self.model == "biased" else 0.0
        _predict(self.user_factors_, self.item_factors_, self.user_bias_, self.item_bias_,
                 np.float32(offset), np.float32(self.global_mean_), u, i, out)
        return out

    def predict(self, users, items, unknown="fallback"):
        """Predicted ratings for (users[k], items[k]) pairs of external ids.

        unknown: "fallback" predicts the training mean (plus the known side's
        bias) for ids never seen in training, with one warning per call;
        "error" raises a HogwildError naming the first unseen id.
        """
        self._check_fitted()
        choose(("fallback", "error"), unknown, "unknown-id policy")
        users, items = np.atleast_1d(np.asarray(users)), np.atleast_1d(np.asarray(items))
        if users.shape != items.shape:
            raise HogwildError(f"users and items must have the same length, got "
                               f"{users.size} and {items.size}")
        u, i = self._user_index.find(users), self._item_index.find(items)
        if unknown == "error":
            for name, raw, found in (("user", users, u), ("item", items, i)):
                if (found < 0).any():
                    first = raw[np.argmax(found < 0)]
                    first = first.item() if isinstance(first, np.generic) else first
                    raise HogwildError(f"{name} id {first!r} was never seen in training")
        else:
            _warn_unseen(u, i, "pairs")
        return self._predict_indices(u, i)

    def recommend(self, user, n=10, exclude_seen=True):
        """(item ids, scores): the n items with the highest predicted rating for one
        user (external id), best first; exclude_seen drops the items the user rated
        in training."""
        self._check_fitted()
        n = check_int("n", n, 1)
        (u,) = self._user_index.find(np.array([user]))
        if u < 0:
            raise HogwildError(f"user id {user!r} was never seen in training")
        scores = self.item_factors_ @ self.user_factors_[u] + self.item_bias_
        scores = scores.astype(np.float64) + self.user_bias_[u] + \
            (self.global_mean_ if self.model == "biased" else 0.0)
        if exclude_seen:
            indptr, grouped = self._seen
            scores[grouped[indptr[u]:indptr[u + 1]]] = -np.inf
        n = min(n, int(np.isfinite(scores).sum()))
        best = np.argpartition(-scores, n - 1)[:n] if n else np.zeros(0, np.int64)
        best = best[np.argsort(-scores[best], kind="stable")]
        return self.item_ids_[best], scores[best]

    # -- persistence -------------------------------------------------------------------

    def save(self, path):
        """Write the fitted model to an .npz file (hogwild.model_file: arrays and
        JSON metadata, no pickle, renamed into place when complete)."""
        self._check_fitted()
        indptr, grouped = self._seen
        write_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                    {"params": self.get_params(), "global_mean": self.global_mean_,
                     "workers": self.workers_, "step": self.step_},
                    {"user_factors": self.user_factors_, "item_factors": self.item_factors_,
                     "user_bias": self.user_bias_, "item_bias": self.item_bias_,
                     "user_ids": _savable_ids(self.user_ids_, "user"),
                     "item_ids": _savable_ids(self.item_ids_, "item"),
                     "seen_indptr": indptr, "seen_items": grouped})

    @classmethod
    def load(cls, path):
        """A model written by save(); a file of another kind or version is refused."""
        meta, arrays = read_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                                  "matrix-factorization model")
        params = dict(meta["params"])
        if params.get("model") == "plain":  # files saved before the model was renamed
            params["model"] = "paper"
        model = cls(**params)
        model.user_factors_ = arrays["user_factors"]
        model.item_factors_ = arrays["item_factors"]
        model.user_bias_ = arrays["user_bias"]
        model.item_bias_ = arrays["item_bias"]
        model.user_ids_ = arrays["user_ids"]
        model.item_ids_ = arrays["item_ids"]
        model._seen = (arrays["seen_indptr"], arrays["seen_items"])
        model.global_mean_ = meta["global_mean"]
        model.workers_ = meta["workers"]
        model.step_ = meta["step"]
        model.history_ = []
        model._user_index = IdIndex(model.user_ids_)
        model._item_index = IdIndex(model.item_ids_)
        return model


def _relabelled(ids, labels):
    """ids reordered so that new index labels[i] holds the id of old index i."""
    out = np.empty_like(ids)
    out[labels] = ids
    return out


def _warn_unseen(u, i, what):
    unseen = (u < 0) | (i < 0)
    if unseen.any():
        warnings.warn(f"{int(unseen.sum())} of {unseen.size} {what} have a user or item never "
                      "seen in training; predicted by the training mean plus the known "
                      "side's bias", stacklevel=3)


def _savable_ids(ids, what):
    """Ids as a numeric or unicode array (np.load without pickle reads those only)."""
    if ids.dtype.kind in "iufU":
        return ids
    if all(isinstance(x, str) for x in ids.tolist()):
        return ids.astype(str)
    raise HogwildError(f"cannot save {what} ids of type {type(ids[0]).__name__}; "
                       "save() supports integer and string ids")
