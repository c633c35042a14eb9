"""The two rating models, each chosen once by name and then asked for everything
that differs between them: kernels, parameters, per-sample data, the held-out
error, and the constant part of a prediction."""
import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from hogwild.errors import HogwildError, check_int, choose
from hogwild.objective import Objective
from hogwild.random_init import normal_array
from hogwild.problems.matrix_completion.kernels import (biased_adaptive_kernels,
                                                        biased_adaptive_warp_update,
                                                        biased_kernels, biased_warp_update,
                                                        paper_kernels, paper_warp_update,
                                                        squared_error_biased,
                                                        squared_error_paper)
from hogwild.disk_arrays import array_mean, extremes
from hogwild.structure import IdArray, Supports

MAX_RANK = 512
WARP_RANK = 32  # from this rank on, the GPU runs a warp per rating (the warp_update)
FACTOR_DTYPES = ("float32", "float16")

# Adaptive rates' defaults, in units of ratings scaled to unit standard deviation
# (as LIBMF scales them). Chosen on a planted 20,000 x 20,000 matrix of 2 million
# ratings and MovieLens 1M, among steps 0.1-0.5 and starts 0.01-0.3: a small start
# leaves the zero saddle soonest (a large random one fills the rows' sums with the
# gradients of its own noise, slowing every rate), and twice LIBMF's eta (0.1)
# under the 0.9 decay reaches the planted matrix's RMSE in 3 epochs, not 5, at
# MovieLens 1M's RMSE of the old default; 0.5 diverges.
ADAPTIVE_STEP = 0.2
ADAPTIVE_REG = 0.05
ADAPTIVE_BIAS_REG = 0.05
ADAPTIVE_INIT = 0.02
# adaptive=None: on where users and items both average this many ratings. Below it
# a row's own rate stays high over its few ratings and fits them: MovieLens 100K
# (47 an item) 0.9355 against the fixed step's 0.9080; a planted rank-10 matrix at
# 50 a row, which neither learns, 1.212 against 1.149; at 100 a row adaptive learns
# it in 3 epochs where the fixed step is still at the mean after 10.
ADAPTIVE_MIN_RATINGS_PER_ROW = 80
MIN_RATING_SCALE = 1e-4  # LIBMF's floor: ratings that are all equal still train


@dataclass(frozen=True)
class RatingModel:
    """One model: its defaults at rank 32, 20 epochs, decay 0.9 (``reg``, ``step``,
    ``init_scale``), whether it predicts the mean plus biases, and its code; with
    adaptive rates (``adaptive_kernels``, where the model has them) the defaults
    are AdaptiveDefaults'."""

    name: str
    reg: float
    step: float
    init_scale: float
    biased: bool
    kernels: Callable        # rank -> (update, loss)
    warp_update: Callable    # rank -> warp_update (GPU backend)
    squared_error: Callable  # rank -> the held-out metric's value(e, params, data)
    adaptive_kernels: Callable = None      # rank -> (update, loss), per-row rates
    adaptive_warp_update: Callable = None  # rank -> their warp_update

    def params(self, L, R, adaptive=False):
        """The parameter arrays of factors L and R (biases start at 0, the rows'
        adaptive sums at 1)."""
        if not self.biased:
            return (L, R)
        biases = (np.zeros(L.shape[0], np.float32), np.zeros(R.shape[0], np.float32))
        sums = (np.ones(L.shape[0], np.float32), np.ones(R.shape[0], np.float32)) \
            if adaptive else ()
        return (L, R) + biases + sums

    def data(self, users, items, values, reg, bias_reg, mean, n_users, n_items,
             rank=None, adaptive_scale=None):
        """The per-sample data of the kernels (see biased_kernels, paper_kernels, and
        biased_adaptive_kernels, whose ratings' scale is ``adaptive_scale``)."""
        if self.biased:
            constants = [reg, bias_reg, mean]
            if adaptive_scale is not None:
                constants += [1 / adaptive_scale, 1 / (rank * adaptive_scale ** 3)]
            return users, items, values, np.array(constants, np.float32)
        user_reg = reg / np.maximum(np.bincount(users, minlength=n_users), 1)
        item_reg = reg / np.maximum(np.bincount(items, minlength=n_items), 1)
        return users, items, values, user_reg.astype(np.float32), item_reg.astype(np.float32)

    def id_arrays(self, adaptive=False):
        """Where the kernels' data holds row ids: users index L (and the user
        biases, the per-user regularisation, or the users' adaptive sums), items R
        (and theirs)."""
        if self.biased:
            if adaptive:
                return (IdArray(0, (0, 2, 4)), IdArray(1, (1, 3, 5)))
            return (IdArray(0, (0, 2)), IdArray(1, (1, 3)))
        return (IdArray(0, (0,), (3,)), IdArray(1, (1,), (4,)))

    def offset(self, mean):
        """The constant part of a known pair's prediction."""
        return mean if self.biased else 0.0


# biased: chosen on ml-100k and a 100,000-rating sample of ml-1m (its long tail),
# checked on ml-1m and 50,000- and 300,000-rating samples (other seeds), where it
# beats the mean plus biases and Surprise's and LIBMF's defaults (README; scripts/
# bench_defaults.py). The earlier 0.04 step and 0.1 init overfit sparse ratings,
# worse than the mean plus biases there. paper: the paper's, tuned on ml-1m.
MODELS = {
    "biased": RatingModel("biased", 0.06, 0.03, 0.03, True, biased_kernels, biased_warp_update,
                          squared_error_biased, biased_adaptive_kernels,
                          biased_adaptive_warp_update),
    "paper": RatingModel("paper", 10.0, 0.02, 0.1, False, paper_kernels, paper_warp_update,
                         squared_error_paper),
}


def rating_model(name):
    """The RatingModel called ``name`` ("biased" or "paper")."""
    return choose(MODELS, name, "model")


def factor_kernels(rank, model, adaptive=False):
    """(update, loss) of ``model`` at ``rank`` (with its adaptive rates):
    plain functions the engine compiles."""
    form = rating_model(model)
    return (form.adaptive_kernels if adaptive else form.kernels)(rank)


def factor_warp_update(rank, model, adaptive=False):
    """The CUDA warp form of factor_kernels(rank, model, adaptive)'s update."""
    form = rating_model(model)
    return (form.adaptive_warp_update if adaptive else form.warp_update)(rank)


def check_rank(rank):
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) \
            or not 1 <= rank <= MAX_RANK:
        raise HogwildError(f"rank must be an integer from 1 to {MAX_RANK}, got {rank!r}")
    return int(rank)


def _contiguous(array, dtype):
    """``array`` itself when it already is C-contiguous ``dtype`` (a memory map stays
    one, so that ratings on disk can stream), else a contiguous copy."""
    array = np.asanyarray(array)
    if array.dtype == dtype and array.flags.c_contiguous:
        return array
    return np.ascontiguousarray(array, dtype)


def mf_objective(users, items, values, *, rank=32, model="biased", reg=None, bias_reg=None,
                 init_scale=None, seed=None, n_users=None, n_items=None, blocks=None,
                 factor_dtype="float32", warp_update=False, adaptive_scale=None,
                 params=None, mean=None):
    """The Objective of ratings given as dense indices (users[k] in 0..n_users-1,
    items[k] in 0..n_items-1, values float32), in the order they are given.

    ``model``'s defaults fill reg, bias_reg (= reg) and init_scale; the factors are
    drawn N(0, init_scale^2) from ``seed``. ``blocks``: a BlockLayout of the given
    order (for the blocked scheduler). ``warp_update``: also give the update's CUDA
    warp form (for ranks >= WARP_RANK on the GPU backend). ``adaptive_scale``: train
    with per-row adaptive rates (biased_adaptive_kernels), the ratings' scale being
    this (their standard deviation). ``params``: a model's parameters to train
    further (partial_fit), in place of drawn factors; ``mean``: the training mean
    of the biased model (None: these ratings'). MatrixFactorization.fit builds its
    objective here after mapping ids and ordering the ratings.
    """
    form = rating_model(model)
    rank = check_rank(rank)
    users, items = _contiguous(users, np.int32), _contiguous(items, np.int32)
    values = _contiguous(values, np.float32)
    if not users.size == items.size == values.size:
        raise HogwildError(f"users, items and values must have the same length, got "
                           f"{users.size}, {items.size} and {values.size}")
    n_users = int(extremes(users)[1]) + 1 if n_users is None \
        else check_int("n_users", n_users, 1)
    n_items = int(extremes(items)[1]) + 1 if n_items is None \
        else check_int("n_items", n_items, 1)
    reg = form.reg if reg is None else reg
    bias_reg = reg if bias_reg is None else bias_reg
    init_scale = form.init_scale if init_scale is None else init_scale
    choose(FACTOR_DTYPES, factor_dtype, "factor_dtype")
    user_seed, item_seed = (seed if isinstance(seed, np.random.SeedSequence)
                            else np.random.SeedSequence(seed)).spawn(2)
    mean = array_mean(values) if mean is None else mean
    adaptive = adaptive_scale is not None
    if adaptive and form.adaptive_kernels is None:
        raise HogwildError(f"model {form.name!r} has no adaptive rates; use model='biased' "
                           "or adaptive=False")
    if adaptive and not (adaptive_scale > 0 and np.isfinite(adaptive_scale)):
        raise HogwildError(f"adaptive_scale must be a positive finite number, got "
                           f"{adaptive_scale!r}")
    if params is None:
        params = form.params(
            normal_array((n_users, rank), init_scale, user_seed).astype(factor_dtype,
                                                                       copy=False),
            normal_array((n_items, rank), init_scale, item_seed).astype(factor_dtype,
                                                                       copy=False), adaptive)
    update, loss = (form.adaptive_kernels if adaptive else form.kernels)(rank)
    warp = (form.adaptive_warp_update if adaptive else form.warp_update) \
        if warp_update and rank >= WARP_RANK else None
    return Objective(update, loss, tuple(params),
                     form.data(users, items, values, reg, bias_reg, mean, n_users, n_items,
                               rank, adaptive_scale),
                     values.size, name=f"mf-{form.name}{'-adaptive' if adaptive else ''}"
                     f"-rank{rank}", blocks=blocks,
                     supports=functools.partial(Supports.from_keys, users, items),
                     fastmath=True, id_arrays=form.id_arrays(adaptive), train_in_place=True,
                     indices_checked=True, warp_update=warp(rank) if warp else None)
