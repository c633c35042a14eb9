"""MatrixFactorization: the scikit-learn style estimator (fit, predict, recommend,
save, load) and the test RMSE."""
import contextlib
import math
import threading
import warnings

import numpy as np

from hogwild.backends import get_backend
from hogwild.datasets.cache import release_pages
from hogwild.engine import fit as engine_fit
from hogwild.errors import HogwildError, check_int, check_nonnegative, choose
from hogwild.estimator import (Params, drawn_seed, not_fitted, run_controls,
                               training_parameters)
from hogwild.limits import available_memory, check_workers, parse_size
from hogwild.model_file import check_shapes, read_model, write_model
from hogwild.objective import Metric
from hogwild.phases import phase
from hogwild.problems.matrix_completion.implicit import PARTIAL_FIT_EPOCHS
from hogwild.problems.matrix_completion.fold_in import (check_room, fold_rows, grown_sums,
                                                        ridge_rows, rows_set)
from hogwild.problems.matrix_completion.ids import (IdIndex, check_values, ratings_arrays,
                                                    relabelled, scratch_folder, warn_unseen)
from hogwild.problems.matrix_completion.kernels import group_by_user, predict_into
from hogwild.problems.matrix_completion.ranking import (approximate_top_n_rows, top_n,
                                                        top_n_rows)
from hogwild.problems.matrix_completion.layouts import layout_key, load_layout, store_layout
from hogwild.problems.matrix_completion.models import (ADAPTIVE_BIAS_REG, ADAPTIVE_INIT,
                                                       ADAPTIVE_MIN_RATINGS_PER_ROW,
                                                       ADAPTIVE_REG, ADAPTIVE_STEP,
                                                       FACTOR_DTYPES, MIN_RATING_SCALE,
                                                       check_rank, mf_objective,
                                                       rating_model)
from hogwild.schedulers import get_scheduler
from hogwild.disk_arrays import (array_mean, array_std, extremes, in_memory, occurrences, on_disk,
                                 taken)
from hogwild.random_init import normal_array
from hogwild.structure import BlockLayout, blocked_copy

SCHEDULERS = ("hogwild", "blocked", "fpsgd", "serial", "locked", "colored", "cyclades")
MODEL_FILE_KIND = "hogwild.MatrixFactorization"
MODEL_FILE_VERSION = 1


def rmse_metric(model, rank, users, items, values, mean, bounds=(-np.inf, np.inf),
                name="test_rmse"):
    """The test RMSE of ratings (dense indices, -1 for unseen) of a ``model`` of
    ``rank`` as a hogwild.Metric, computed where the factors are (on the GPU without
    a copy), of predictions clipped to ``bounds`` as predict() clips them."""
    data = (np.ascontiguousarray(users, np.int32), np.ascontiguousarray(items, np.int32),
            np.ascontiguousarray(values, np.float32), np.array([mean, *bounds], np.float32))
    return Metric(name, rating_model(model).squared_error(rank), data, values.size,
                  finish=math.sqrt)


def rmse(predictions, values):
    diff = np.asarray(predictions, np.float64) - np.asarray(values, np.float64)
    return float(np.sqrt(np.mean(diff * diff)))


BLOCKED_COPY_SHARE = 0.25  # of the available memory, for a block layout of ratings on disk
# each user's ratings grouped (recommend's exclusions, partial_fit's replay): the lists'
# 8 bytes a rating and the dense ids mapped on the way, 8 more
GROUPED_BYTES = 16
GROUPED_PIECE = 1 << 20  # ratings whose ids are mapped at a time
# grid=None: blocks whose factor rows on a side take about this much (a core's L2),
# holding at least MIN_BLOCK_RATINGS ratings on average. Ratings/s at 2 workers, 100
# a row, one run each: 10^6 users and items, grid 8 4.95 M, 32 6.52 M, 96 6.79 M,
# 260 6.07 M (this rule: 130); 10^5, grid 8 7.66 M, 13 8.31 M (this rule), 26
# 8.69 M, 32 9.52 M; MovieLens 1M keeps 8.
BLOCK_SIDE_BYTES = 1 << 20
MIN_BLOCK_RATINGS = 1000


def default_grid(raw_ids, n_ratings, rank, workers):
    """grid=None: at least 8 and 2 x workers, more where a block's factor rows on a
    side would take over BLOCK_SIDE_BYTES, but not so many that blocks average
    fewer than MIN_BLOCK_RATINGS ratings. The rows are counted before ids are
    mapped: the span of integer ids (exact for dense ones), at most the ratings."""
    rows = 0
    for ids in raw_ids:
        span = n_ratings
        if np.asarray(ids[:0]).dtype.kind in "iu":
            low, high = extremes(ids)
            span = min(span, int(high) - int(low) + 1)
        rows = max(rows, span)
    by_cache = math.ceil(rows * (rank + 2) * 4 / BLOCK_SIDE_BYTES)
    by_ratings = math.isqrt(n_ratings // MIN_BLOCK_RATINGS)
    return max(8, 2 * workers, min(by_cache, by_ratings))


@training_parameters(
    own={"rank": 32, "model": "biased", "reg": None, "bias_reg": None, "grid": None,
         "shuffle_ratings": True, "init_scale": None, "factor_dtype": "float32",
         "clip": True, "adaptive": None},
    epochs=20, step=None, decay=0.9, shuffle_block=256, scheduler=None,
    notes={"step": "None: 0.2 with adaptive rates (twice LIBMF's eta: the geometric decay "
                   "then takes it below LIBMF's from the eighth epoch), else 0.03 for the "
                   "biased model, 0.02 for the paper's.",
           "scheduler": "None: 'blocked', the fastest conflict-free schedule here (1.4x "
                        "hogwild's rate at one worker, 1.8x at two, at the same RMSE on "
                        "MovieLens 1M), or 'hogwild' where blocked cannot run: ratings "
                        "on disk whose block layout (a copy in memory) would take more "
                        "than a quarter of the memory available (or of memory), backends "
                        "gpu, ray and "
                        "mpi, and replication 'worker' or 'hot'; the one used is "
                        "scheduler_. MatrixFactorization runs 'hogwild', 'blocked' (bitwise "
                        "reproducible for a seed and grid), 'fpsgd' (the same blocks, each "
                        "free worker taking a free one: LIBMF's scheduler), 'serial', "
                        "'locked', 'colored' and 'cyclades' (colored needs as many colour "
                        "phases as the busiest item has ratings, so blocked is faster).",
           "backend": "On 'gpu', ranks >= 32 run a warp per rating (see "
                      "factor_warp_update).",
           "memory": "With shuffle_ratings=False and ids that are already dense, ratings "
                     "on disk (a Jumbo matrix) stay there without a copy."})
class MatrixFactorization(Params):
    """Low-rank matrix completion of ratings, trained with Hogwild! SGD.

    Parameters
    ----------
    rank : int, default 32
        Factors per user and item, 1 to 512 (a compile-time constant of the kernel).
    model : {'biased', 'paper'}, default 'biased'
        'biased': mean + user bias + item bias + L_u . R_v, regularised per rating
        like Surprise's SVD and LIBMF; 'paper': L_u . R_v with the Hogwild! paper's
        degree-scaled regulariser (see the module docstring).
    reg : float or None, default None
        mu; None: 0.05 x the ratings' standard deviation with adaptive rates (LIBMF's
        regularisation of ratings it scales to unit deviation), else 0.06 (biased)
        or 10 (paper).
    bias_reg : float or None, default None
        mu of the biases (biased model); None: 0.05 with adaptive rates, else reg.
    grid : int or None, default None
        Blocks per side for the schedulers 'blocked' and 'fpsgd' (None: 8, or 2 x
        workers above 4, or more on large matrices: enough that a block's factor
        rows on a side take about 1 MiB, while blocks average 1,000 ratings or
        more; see default_grid).
    shuffle_ratings : bool, default True
        Shuffle the ratings once before training (a copy); pass False when their
        stored order is already random (Jumbo files) to train on them in place.
    init_scale : float or None, default None
        Factors start N(0, init_scale^2); biases start at 0. None: with adaptive
        rates 0.02 x the square root of the ratings' standard deviation (the same
        start on any rating scale: a factor is measured in the square root of the
        ratings' unit), else 0.03 biased, 0.1 paper.
    factor_dtype : {'float32', 'float16'}, default 'float32'
        'float16' stores the factors in half precision while training on the GPU
        (half the memory traffic per rating; arithmetic stays float32, as in
        cuMF_SGD); backend='gpu' only. The fitted factors are float32 either way.
    adaptive : bool or None, default None
        Per-row adaptive rates (LIBMF's: each user's and item's step falls with the
        sum of its squared gradients; Chin et al., PAKDD 2015), measured on the
        ratings scaled to unit deviation so that the defaults hold on any rating
        scale. None: True for the biased model when users and items both average
        at least 80 ratings (the paper's model has none). On sparser ratings a
        row's own rate stays high over its handful of ratings and fits them: test
        RMSE 0.9355 against the fixed step's 0.9080 on MovieLens 100K (47 ratings
        an item), 1.008 against 0.9435 on a 100,000-rating sample of MovieLens 1M.
    clip : bool, default True
        Clip predictions (and the recorded test RMSE's) to the range of the training
        ratings, rating_range_ (a model of a 0.5-5 scale predicts no 5.61); False:
        the model's raw values. recommend() ranks by the raw values.
    {training parameters}

    Attributes
    ----------
    user_factors_, item_factors_ : numpy.ndarray of float32
        One row per known id, in the order of user_ids_ / item_ids_.
    user_bias_, item_bias_ : numpy.ndarray of float32
        Zeros for the paper's model.
    global_mean_ : float
    rating_range_ : (float, float)
        The lowest and highest training rating.
    reg_, bias_reg_, init_scale_ : float
        The values used (reg=None etc. resolved for the model and the ratings).
    adaptive_ : bool
        Whether the rows' rates adapted (adaptive=None resolved).
    rating_scale_ : float
        The training ratings' standard deviation (the unit of adaptive rates).
    scheduler_ : str
        The scheduler used (scheduler=None resolved).
    seed_ : int
        The seed used: random_state, or the one drawn for random_state=None (pass
        it to reproduce the run; an unseeded run's block layout is not cached).
    item_counts_ : numpy.ndarray of int64
        Training ratings per item (recommend's cold start breaks ties by it).
    step_ : float
        The step used (step=None resolved for the model).
    {run attributes}
    """

    # -- training --------------------------------------------------------------------

    def settings(self, scale=1.0, ratings_per_row=None):
        """Validated (rank, reg, bias_reg, step, init_scale), defaults filled in for
        the model and its rates (see adaptive_rates); with adaptive rates, for
        ratings of standard deviation ``scale``."""
        form = rating_model(self.model)
        if self.scheduler is not None:
            choose(SCHEDULERS, self.scheduler, "scheduler")
        rank = check_rank(self.rank)
        adaptive = self.adaptive_rates(ratings_per_row)
        if adaptive:
            defaults = (ADAPTIVE_REG * scale, ADAPTIVE_BIAS_REG, ADAPTIVE_STEP,
                        ADAPTIVE_INIT * scale ** 0.5)
        else:
            defaults = (form.reg, None, form.step, form.init_scale)
        reg = defaults[0] if self.reg is None else self.reg
        bias_reg = self.bias_reg if self.bias_reg is not None else \
            reg if defaults[1] is None or self.reg is not None else defaults[1]
        reg, bias_reg = check_nonnegative("reg", reg), check_nonnegative("bias_reg", bias_reg)
        init_scale = check_nonnegative(
            "init_scale", defaults[3] if self.init_scale is None else self.init_scale)
        choose(FACTOR_DTYPES, self.factor_dtype, "factor_dtype")
        if not isinstance(self.clip, (bool, np.bool_)):
            raise HogwildError(f"clip must be True or False, got {self.clip!r}")
        if self.factor_dtype == "float16" and not get_backend(self.backend).half_precision:
            raise HogwildError(f"factor_dtype='float16' needs backend='gpu' (numba compiles "
                               f"no half precision for the CPU); got backend={self.backend!r}")
        step = defaults[2] if self.step is None else self.step
        self.training_config(step=step)  # every training option checked before any work
        return rank, reg, bias_reg, step, init_scale

    def adaptive_rates(self, ratings_per_row=None):
        """adaptive, None resolved: True for the biased model on ratings whose users
        and items average at least ADAPTIVE_MIN_RATINGS_PER_ROW ratings each
        (``ratings_per_row``: the smaller of the two means; None: not known yet)."""
        form = rating_model(self.model)
        if self.adaptive is None:
            dense = ratings_per_row is None or ratings_per_row >= ADAPTIVE_MIN_RATINGS_PER_ROW
            return form.adaptive_kernels is not None and dense
        if not isinstance(self.adaptive, (bool, np.bool_)):
            raise HogwildError(f"adaptive must be True, False or None, got {self.adaptive!r}")
        if self.adaptive and form.adaptive_kernels is None:
            raise HogwildError(f"model {form.name!r} has no adaptive rates; use "
                               "model='biased' or adaptive=False")
        return bool(self.adaptive)

    def fit(self, ratings, eval_set=None, **controls):
        """Train on ratings (see ratings_arrays for the accepted forms).

        eval_set: test ratings in the same forms; their RMSE is recorded after
        every epoch in history_ (ids unseen in training are predicted by the
        fallback, with one warning). ``controls`` are hogwild.RunControls fields:
        callback(record) once per epoch, progress, checkpoint, checkpoint_every,
        resume (with the same ratings and seed).
        """
        with contextlib.ExitStack() as stack:  # a scratch folder, for the fit alone
            return self._fit(ratings, eval_set, stack, controls)

    def _fit(self, ratings, eval_set, stack, controls):
        self.settings()  # every option checked before the ratings are read
        raw_users, raw_items, raw_values = ratings_arrays(ratings)
        if not len(raw_users) == len(raw_items) == len(raw_values):
            raise HogwildError(f"users, items and values must have the same length, got "
                               f"{len(raw_users)}, {len(raw_items)} and {len(raw_values)}")
        with phase("check ratings"):
            values = check_values(raw_values)
        if values.size == 0:
            raise HogwildError("empty data: the training set has no ratings")
        self.seed_ = drawn_seed(self.random_state, self.backend)
        seeds = np.random.SeedSequence(self.seed_).spawn(3)
        held_out = None
        split = self.held_out(values.size, "ratings")
        if split is not None:  # early_stopping: the ratings trained on, copied to memory
            with phase("hold out"):
                kept, held = split  # read from files, not through maps (disk_arrays)
                held_out = taken(raw_users, held), taken(raw_items, held), taken(values, held)
                raw_users, raw_items, raw_values = taken(raw_users, kept), \
                    taken(raw_items, kept), taken(raw_values, kept)
                values = taken(values, kept)
        workers = self.workers
        layout = storing = None
        self.scheduler_ = scheduler = self._scheduler((raw_users, raw_items, raw_values))
        if "blocks" in get_scheduler(scheduler).needs:
            grid = self.grid
            if grid is None:
                grid = default_grid((raw_users, raw_items), values.size, self.rank,
                                    check_workers(workers, self.oversubscribe))
            key = layout_key((raw_users, raw_items, raw_values), grid,
                             None if self.random_state is None else seeds[0])
            cached = None
            if key is not None:
                with phase("read cached layout"):
                    cached = load_layout(key)
            if cached is not None:
                users, items, values = cached["users"], cached["items"], cached["values"]
                layout = BlockLayout(grid, np.array(cached["offsets"]))
                user_index = IdIndex(np.array(cached["user_ids"]))
                item_index = IdIndex(np.array(cached["item_ids"]))
                del cached  # the maps of the ratings go with the objective
            else:
                users, items, values, user_index, item_index, layout = _lay_out(
                    raw_users, raw_items, values, grid, np.random.default_rng(seeds[0]))
                if key is not None:  # written while the first epochs run
                    storing = threading.Thread(target=store_layout, name="hogwild-layout", args=(
                        key, {"users": users, "items": items, "values": values,
                              "offsets": layout.offsets, "user_ids": user_index.ids,
                              "item_ids": item_index.ids}))
                    storing.start()
        else:
            with phase("map ids"):  # shuffled below: a copy in memory anyway
                scratch = None if self.shuffle_ratings else stack.enter_context(
                    scratch_folder())
                user_index, users = IdIndex.build(in_memory(raw_users) if self.shuffle_ratings
                                                  else raw_users, scratch, "users")
                item_index, items = IdIndex.build(in_memory(raw_items) if self.shuffle_ratings
                                                  else raw_items, scratch, "items")
        n_users, n_items = len(user_index), len(item_index)
        self.item_counts_ = occurrences(items, n_items)
        if layout is None and self.shuffle_ratings:
            with phase("shuffle"):
                order = np.random.default_rng(seeds[0]).permutation(values.size)
                users, items, values = users[order], items[order], in_memory(values)[order]
        with phase("initial factors"):
            mean = array_mean(values)
            self.rating_scale_ = max(array_std(values, mean), MIN_RATING_SCALE)
            per_row = values.size / max(n_users, n_items)  # the sparser side's mean
            rank, reg, bias_reg, step, init_scale = self.settings(self.rating_scale_, per_row)
            self.reg_, self.bias_reg_, self.init_scale_ = reg, bias_reg, init_scale
            self.adaptive_ = self.adaptive_rates(per_row)
            objective = mf_objective(
                users, items, values, rank=rank, model=self.model, reg=reg,
                bias_reg=bias_reg, init_scale=init_scale, seed=seeds[1], n_users=n_users,
                n_items=n_items, blocks=layout, factor_dtype=self.factor_dtype,
                warp_update=get_backend(self.backend).runs_warp_updates,
                adaptive_scale=self.rating_scale_ if self.adaptive_ else None)

        self.user_ids_, self.item_ids_ = user_index.ids, item_index.ids
        self._user_index, self._item_index = user_index, item_index
        self.global_mean_ = mean
        self.rating_range_ = tuple(float(bound) for bound in extremes(values))
        evaluate = None
        if eval_set is not None:
            test_users, test_items, test_values = (in_memory(a) for a in  # as above
                                                   ratings_arrays(eval_set))
            test_values = check_values(test_values, "test ratings")
            test_u = user_index.find(test_users)
            test_i = item_index.find(test_items)
            warn_unseen(test_u, test_i, "test ratings", stacklevel=4)  # fit's caller

            evaluate = rmse_metric(self.model, rank, test_u, test_i, test_values, mean,
                                   self._bounds())
        if held_out is not None:
            objective = objective.with_validation(rmse_metric(
                self.model, rank, user_index.find(held_out[0]), item_index.find(held_out[1]),
                held_out[2], mean, self._bounds(), "validation_rmse"))

        try:
            result = engine_fit(objective, self.training_config(step=step, seed=seeds[2],
                                                                scheduler=scheduler),
                                run_controls(evaluate, controls))
        finally:
            if storing is not None:
                storing.join()
        del objective, users, items, values
        release_pages(raw_users, raw_items, raw_values)  # trained on through their maps
        self._set_factors(result.params)
        # each user's ratings, for recommend's exclusions and partial_fit's replay:
        # grouped from the ratings as given when first needed (read from their files
        # where they lie on disk), not held twice meanwhile
        self._lists = None
        self._training = (raw_users, raw_items, raw_values)
        self.keep_run(result)
        self.step_ = step
        return self

    # -- each user's training ratings, grouped when first needed -----------------------

    @property
    def _seen(self):
        """(indptr, items): user u's training items are items[indptr[u]:indptr[u + 1]];
        None where they cannot be held (ratings too many for memory, trained from
        disk)."""
        lists = self._grouped()
        return None if lists is None else lists[:2]

    @_seen.setter
    def _seen(self, value):
        values = None if self._grouped() is None else self._grouped()[2]
        self._lists = None if value is None else (*value, values)

    @property
    def _seen_values(self):
        """The ratings of _seen's items (None where none are kept: a model file of an
        earlier version)."""
        lists = self._grouped()
        return None if lists is None else lists[2]

    @_seen_values.setter
    def _seen_values(self, values):
        lists = self._grouped()
        if lists is not None:
            self._lists = (lists[0], lists[1], values)

    def _grouped(self):
        """(indptr, items, values) of each user's training ratings, grouped from the
        ratings fit was given on the first call (the model does not hold them twice
        meanwhile), None where they would not fit in memory."""
        lists = self.__dict__.get("_lists")
        training = self.__dict__.get("_training")
        if lists is not None or training is None:
            return lists
        users, items, values = training
        memory = available_memory()
        if memory is not None and values.size * GROUPED_BYTES > memory:
            return None
        with phase("group ratings by user"):
            dense_users = np.empty(values.size, np.int32)
            dense_items = np.empty(values.size, np.int32)
            for start in range(0, values.size, GROUPED_PIECE):
                stop = min(start + GROUPED_PIECE, values.size)
                dense_users[start:stop] = self._user_index.find(in_memory(users[start:stop]))
                dense_items[start:stop] = self._item_index.find(in_memory(items[start:stop]))
            self._lists = group_by_user(dense_users, dense_items, in_memory(values),
                                        len(self._user_index))
        self._training = None
        return self._lists

    def training_config(self, **resolved):
        """Params.training_config, scheduler=None resolved as for ratings in memory
        (fit resolves it for its ratings: see _scheduler)."""
        return super().training_config(**{"scheduler": self._scheduler(()), **resolved})

    def _scheduler(self, raw_arrays):
        """The scheduler given, or for None 'blocked' where it can run: on a backend
        that runs it, without replicas (which are for lock-free plans), and for
        ratings trained in place on disk only while its layout, a copy in memory
        (cached on disk for the next run), takes at most BLOCKED_COPY_SHARE of the
        memory available, or of the run's ``memory`` where that is less (a budget the
        copy would break); else 'hogwild'."""
        if self.scheduler is not None:
            return self.scheduler
        runs = get_backend(self.backend).schedulers
        in_place = not self.shuffle_ratings and bool(raw_arrays) and \
            all(on_disk(a) for a in raw_arrays)
        memory = available_memory() or math.inf
        if self.memory is not None:
            memory = min(memory, parse_size(self.memory))
        too_big = in_place and sum(a.nbytes for a in raw_arrays) > BLOCKED_COPY_SHARE * memory
        if too_big or (runs is not None and "blocked" not in runs) or \
                self.replication not in ("shared", "auto"):
            return "hogwild"
        return "blocked"

    def _set_factors(self, params):
        """The fitted factors and biases, and the rows' adaptive sums (partial_fit
        continues them)."""
        self._sums = tuple(params[4:6])
        self.user_factors_ = params[0].astype(np.float32, copy=False)
        self.item_factors_ = params[1].astype(np.float32, copy=False)
        if rating_model(self.model).biased:
            self.user_bias_, self.item_bias_ = params[2], params[3]
        else:
            self.user_bias_ = np.zeros(params[0].shape[0], np.float32)
            self.item_bias_ = np.zeros(params[1].shape[0], np.float32)

    # -- fold-in: new or changed users and items, the other side frozen -------------

    def fold_in(self, ratings):
        """Users' factors and biases from their ratings without retraining, the
        items frozen: for each user in ``ratings`` (any form fit takes) the
        minimiser of the training objective over their ratings, an exact ridge
        solve (hogwild.problems.matrix_completion.fold_in). A user id the model
        does not know is added; a known one's row, and the items it rated, are
        replaced. Ratings of items the model does not know are left out, with a
        warning. predict() and recommend() then serve them. Returns self."""
        self._fold(ratings, "user")
        return self

    def fold_in_items(self, ratings):
        """Items' factors and biases from their ratings without retraining, the
        users frozen (see fold_in, sides swapped). Returns self."""
        self._fold(ratings, "item")
        return self

    def partial_fit(self, ratings, epochs=None):
        """Train further on new ratings (any form fit takes), keeping what was
        trained.

        Users and items the model does not know are first folded in from their
        ratings (fold_in_items, fold_in: exact solves, the other side frozen), so
        they start where the model would put them; ids rated only by each other's
        new ids start from fit's random draw. The model then trains on the new
        ratings together with as many of its earlier ones, drawn at random (all of
        them where fewer: trained on the new ones alone it drifts from what it
        learned), ``epochs`` passes (None: PARTIAL_FIT_EPOCHS of the model's
        epochs) from its step, on its schedule (a quarter of it, implicit
        feedback's choice, ended 0.009-0.011 RMSE above retraining on MovieLens 1M;
        the whole, 0.0001-0.0003); adaptive rates continue from each row's sum
        (0.005-0.007 above retraining there: restarting or shrinking the sums did
        not close it).
        Every rating is kept, a pair rated again beside its earlier rating. A model
        not fitted yet is fitted. Returns self; history_ is this run's."""
        if not hasattr(self, "user_factors_"):
            return self.fit(ratings)
        if getattr(self, "_seen_values", None) is None:
            raise HogwildError("this model keeps no training ratings (trained on ratings "
                               "streamed from disk, or saved by an earlier version), and "
                               "partial_fit trains on them again: fit the model again")
        passes = max(1, math.ceil(PARTIAL_FIT_EPOCHS * self.epochs)) if epochs is None \
            else check_int("epochs", epochs, 1)
        raw = dict(zip(("user", "item", "value"), (in_memory(np.asarray(a)) for a in
                                                    ratings_arrays(ratings))))
        if not len(raw["user"]) == len(raw["item"]) == len(raw["value"]):
            raise HogwildError(f"users, items and values must have the same length, got "
                               f"{len(raw['user'])}, {len(raw['item'])} and "
                               f"{len(raw['value'])}")
        values = check_values(raw["value"])
        if values.size == 0:
            raise HogwildError("empty data: no new ratings")
        indptr, seen_items = self._seen
        old = (np.repeat(np.arange(indptr.size - 1, dtype=np.int32), np.diff(indptr)),
               seen_items, self._seen_values)
        with phase("fold in new items and users"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a fold-in leaves out what the next takes
            for side, other in (("item", "user"), ("user", "item"), ("item", "user")):
                pick = (getattr(self, f"_{side}_index").find(raw[side]) < 0) & \
                    (getattr(self, f"_{other}_index").find(raw[other]) >= 0)
                if pick.any():
                    self._fold((raw["user"][pick], raw["item"][pick], values[pick]), side)
            for side in ("user", "item"):
                self._drawn_rows(side, raw[side])
        users = self._user_index.find(raw["user"]).astype(np.int32)
        items = self._item_index.find(raw["item"]).astype(np.int32)
        n_users, n_items = self.user_factors_.shape[0], self.item_factors_.shape[0]
        indptr, seen_items, self._seen_values = group_by_user(
            np.concatenate([old[0], users]), np.concatenate([old[1], items]),
            np.concatenate([old[2], values.astype(np.float32)]), n_users)
        self._seen = (indptr, seen_items)
        self.item_counts_ = np.bincount(seen_items, minlength=n_items).astype(np.int64)
        low, high = self.rating_range_
        self.rating_range_ = (min(low, float(values.min())), max(high, float(values.max())))
        seeds = np.random.SeedSequence([self._seed(), int(old[0].size)]).spawn(3)
        rng = np.random.default_rng(seeds[0])
        replay = rng.choice(old[0].size, min(old[0].size, values.size), replace=False)
        order = rng.permutation(values.size + replay.size)
        form = rating_model(self.model)
        adaptive = bool(self.adaptive_)
        sums = grown_sums(self._sums, n_users, n_items, adaptive)
        params = (self.user_factors_, self.item_factors_) + (
            (self.user_bias_, self.item_bias_) if form.biased else ()) + sums
        objective = mf_objective(
            np.concatenate([users, old[0][replay]])[order],
            np.concatenate([items, old[1][replay]])[order],
            np.concatenate([values.astype(np.float32), old[2][replay]])[order],
            rank=self.rank, model=self.model, reg=check_nonnegative("reg_", self.reg_),
            bias_reg=check_nonnegative("bias_reg_", self.bias_reg_), n_users=n_users,
            n_items=n_items, adaptive_scale=self.rating_scale_ if adaptive else None,
            params=tuple(np.array(a, np.float32) for a in params), mean=self.global_mean_)
        result = engine_fit(objective, self.training_config(
            step=self.step_, epochs=passes, seed=seeds[2], early_stopping=None,
            scheduler="hogwild"), run_controls(None, {}))
        self._set_factors(result.params)
        self.keep_run(result)
        return self

    def _seed(self):
        """The seed of this model's draws (fit's; a model file keeps it)."""
        return getattr(self, "seed_", 0)

    def _drawn_rows(self, side, raw_ids):
        """Rows for the ids of ``raw_ids`` the model still does not know (new ids
        rated only by each other's): factors drawn as fit draws them, biases 0."""
        index = getattr(self, f"_{side}_index")
        fresh = np.unique(np.asarray(raw_ids)[index.find(raw_ids) < 0])
        if fresh.size == 0:
            return
        ids = getattr(self, f"{side}_ids_")
        check_room(ids.size + fresh.size, self.rank, f"{side}s")
        targets = np.arange(ids.size, ids.size + fresh.size)
        seed = np.random.SeedSequence([self._seed(), ids.size, side == "item"])
        for name, value in (("factors", normal_array((fresh.size, self.rank),
                                                      self.init_scale_, seed)),
                            ("bias", np.zeros(fresh.size, np.float32))):
            setattr(self, f"{side}_{name}_", rows_set(getattr(self, f"{side}_{name}_"),
                                                       targets, value))
        self._restart_sums(side, targets)
        setattr(self, f"{side}_ids_", np.concatenate([ids, fresh]))
        setattr(self, f"_{side}_index", IdIndex(getattr(self, f"{side}_ids_")))

    def _restart_sums(self, side, targets):
        """Rows ``targets`` of the side's adaptive sums at 1, where the model keeps
        sums (new or recalculated rows start their rates afresh)."""
        if self._sums:
            index = 0 if side == "user" else 1
            sums = list(self._sums)
            sums[index] = rows_set(sums[index], targets, np.ones(targets.size, np.float32))
            self._sums = tuple(sums)

    def _fold(self, ratings, side):
        self._check_fitted()
        if not hasattr(self, "reg_"):
            raise HogwildError("this model was saved by a version of hogwild that kept no "
                               "regularisation (reg_): fit it again to fold in")
        other = "item" if side == "user" else "user"
        raw = dict(zip(("user", "item", "value"), ratings_arrays(ratings)))
        if not len(raw["user"]) == len(raw["item"]) == len(raw["value"]):
            raise HogwildError(f"users, items and values must have the same length, got "
                               f"{len(raw['user'])}, {len(raw['item'])} and "
                               f"{len(raw['value'])}")
        values = check_values(raw["value"]).astype(np.float64)
        frozen = getattr(self, f"_{other}_index").find(np.asarray(raw[other]))
        known = frozen >= 0
        if not known.any():
            raise HogwildError(f"no rating has an {other} the model knows: nothing to fold in")
        if not known.all():
            warnings.warn(f"{int((~known).sum())} of {known.size} ratings have an {other} the "
                          f"model does not know; left out of the fold-in", stacklevel=3)
        rows, row_of = IdIndex.build(np.asarray(raw[side])[known])
        ids = getattr(self, f"{side}_ids_")
        check_room(len(rows) + ids.size, self.rank, f"{side}s")
        if ids.dtype.kind != rows.ids.dtype.kind and \
                {ids.dtype.kind, rows.ids.dtype.kind} != {"i", "u"}:
            raise HogwildError(f"{side} ids must be of the model's kind ({ids.dtype}), got "
                               f"{rows.ids.dtype}")
        found = getattr(self, f"_{side}_index").find(rows.ids)
        new = found < 0
        targets = found.copy()
        targets[new] = ids.size + np.arange(int(new.sum()))
        order = np.argsort(row_of, kind="stable")  # each row's ratings together
        others, values = frozen[known][order].astype(np.int32), values[known][order]
        rated = values.astype(np.float32)  # kept with the model's ratings
        indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=len(rows)))])
        form = rating_model(self.model)
        values -= form.offset(self.global_mean_)
        factors, biases = np.zeros((len(rows), self.rank)), np.zeros(len(rows))
        F, offsets = getattr(self, f"{other}_factors_"), \
            getattr(self, f"{other}_bias_").astype(np.float64)
        reg, bias_reg = check_nonnegative("reg_", self.reg_), \
            check_nonnegative("bias_reg_", self.bias_reg_)  # a model file's, maybe edited
        fold_rows(lambda share: ridge_rows(F, offsets, indptr, others, values, share, reg,
                                           bias_reg, form.biased, form.biased, factors, biases),
                  len(rows), self.workers)
        n_items = self.item_factors_.shape[0]  # before items are added
        for name, value in (("factors", factors), ("bias", biases)):
            setattr(self, f"{side}_{name}_", rows_set(getattr(self, f"{side}_{name}_"), targets,
                                                       value.astype(np.float32)))
        setattr(self, f"{side}_ids_", np.concatenate([ids, rows.ids[new]]))
        setattr(self, f"_{side}_index", IdIndex(getattr(self, f"{side}_ids_")))
        self._restart_sums(side, targets)
        self._fold_seen(side, n_items, targets, others, row_of[order], rated)

    def _fold_seen(self, side, n_items, targets, others, row_of, rated):
        """The ratings of each user and the counts per item after a fold-in of rows
        ``targets`` (``others`` the frozen side of their ratings ``rated``, grouped
        by row): the rows' earlier ratings replaced."""
        items_now = self.item_factors_.shape[0]
        if self._seen is None:  # ratings streamed from disk: no lists; counts grow
            counts = np.zeros(items_now, np.int64)
            counts[:n_items] = self.item_counts_
            if side == "item":
                counts[targets] = 0
            self.item_counts_ = counts + np.bincount(
                others if side == "user" else targets[row_of], minlength=items_now)
            return
        indptr, items = self._seen
        users = np.repeat(np.arange(indptr.size - 1, dtype=np.int32), np.diff(indptr))
        kept = ~np.isin(users if side == "user" else items, targets)
        new_users, new_items = (targets[row_of], others) if side == "user" else \
            (others, targets[row_of])
        values = np.zeros(0, np.float32) if self._seen_values is None else \
            np.concatenate([self._seen_values[kept], rated])  # files of old kept none
        indptr, items, values = group_by_user(
            np.concatenate([users[kept], new_users.astype(np.int32)]),
            np.concatenate([items[kept], new_items.astype(np.int32)]), values,
            self.user_factors_.shape[0])
        self._seen = (indptr, items)
        self._seen_values = values if self._seen_values is not None else None
        self.item_counts_ = np.bincount(items, minlength=items_now).astype(np.int64)

    # -- prediction --------------------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "user_factors_"):
            raise not_fitted(self, "fit(ratings)")

    def _predict_indices(self, u, i):
        out = np.empty(u.size, np.float32)
        offset = rating_model(self.model).offset(self.global_mean_)
        low, high = self._bounds()
        predict_into(self.user_factors_, self.item_factors_, self.user_bias_, self.item_bias_,
                     np.float32(offset), np.float32(self.global_mean_), np.float32(low),
                     np.float32(high), u, i, out)
        return out

    def _bounds(self):
        """The range predictions are clipped to: the training ratings' with clip."""
        return self.rating_range_ if self.clip else (-np.inf, np.inf)

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
            warn_unseen(u, i, "pairs")
        return self._predict_indices(u, i)

    def recommend(self, user, n=10, exclude_seen=True, unknown="fallback"):
        """(item ids, scores): the n items with the highest predicted rating for one
        user (external id), best first; exclude_seen drops the items the user rated
        in training. A user never seen in training (cold start): "fallback" ranks
        the items by what predict() gives an unseen user, the training mean plus
        the item's bias, the most rated first among equals (the paper's model has
        no biases: the most rated items), with a warning; "error" raises a
        HogwildError."""
        self._check_fitted()
        n = check_int("n", n, 1)
        choose(("fallback", "error"), unknown, "unknown-id policy")
        (u,) = self._user_index.find(np.array([user]))
        if u < 0:
            if unknown == "error":
                raise HogwildError(f"user id {user!r} was never seen in training")
            warnings.warn(f"user id {user!r} was never seen in training; recommending the "
                          "items an unseen user is predicted to rate highest", stacklevel=2)
            scores = self.global_mean_ + self.item_bias_.astype(np.float64)
            best = np.lexsort((-self.item_counts_, -scores))[:n]
            return self.item_ids_[best], scores[best]
        scores = self.item_factors_ @ self.user_factors_[u] + self.item_bias_
        scores = scores.astype(np.float64) + self.user_bias_[u] + \
            rating_model(self.model).offset(self.global_mean_)
        if exclude_seen:
            if self._seen is None:
                raise HogwildError("this model was trained on ratings streamed from disk and "
                                   "keeps no list of the items each user rated; pass "
                                   "exclude_seen=False")
            indptr, grouped = self._seen
            scores[grouped[indptr[u]:indptr[u + 1]]] = -np.inf
        best, best_scores = top_n(scores, n)
        return self.item_ids_[best], best_scores

    def recommend_all(self, users=None, n=10, exclude_seen=True, unknown="fallback",
                      approximate=False):
        """(item ids [len(users), n], scores float32 [len(users), n]): recommend()
        for many users (external ids; None: every user, in user_ids_' order) at
        once, best first, compiled and on ``workers`` threads (None: every core),
        one score per item per thread in memory. Users never seen in training get
        the cold start's items (with one warning) or, with unknown="error", a
        HogwildError; so does a user with fewer than n items left to rank.
        approximate: from faiss's HNSW index of the items (pip install
        'hogwild[ann]'), for large catalogues (ranking.approximate_top_n_rows)."""
        self._check_fitted()
        n = check_int("n", n, 1)
        choose(("fallback", "error"), unknown, "unknown-id policy")
        if exclude_seen and self._seen is None:
            raise HogwildError("this model was trained on ratings streamed from disk and "
                               "keeps no list of the items each user rated; pass "
                               "exclude_seen=False")
        given = self.user_ids_ if users is None else np.atleast_1d(np.asarray(users))
        rows = np.arange(self.user_ids_.size) if users is None else self._user_index.find(given)
        unseen = rows < 0
        if unseen.any():
            if unknown == "error":
                first = given[np.argmax(unseen)]
                first = first.item() if isinstance(first, np.generic) else first
                raise HogwildError(f"user id {first!r} was never seen in training")
            warnings.warn(f"{int(unseen.sum())} of {rows.size} users were never seen in "
                          "training; recommending them the items an unseen user is "
                          "predicted to rate highest", stacklevel=2)
        top = approximate_top_n_rows if approximate else top_n_rows
        items, scores = top(self.user_factors_, self.item_factors_, self.item_bias_,
                            np.where(unseen, 0, rows), n, self._seen if exclude_seen else None,
                            self.workers)
        short = (items[:, -1] < 0) & ~unseen
        if short.any() or n > self.item_ids_.size:
            first = given[np.argmax(short)] if short.any() else given[0]
            first = first.item() if isinstance(first, np.generic) else first
            raise HogwildError(f"user id {first!r} has fewer than n={n} items to rank; pass "
                               "a smaller n" + (" or exclude_seen=False" if exclude_seen
                                                else ""))
        scores += (self.user_bias_[rows] + np.float32(
            rating_model(self.model).offset(self.global_mean_)))[:, None]
        if unseen.any():
            fallback = self.global_mean_ + self.item_bias_.astype(np.float64)
            best = np.lexsort((-self.item_counts_, -fallback))[:n]
            items[unseen], scores[unseen] = best, fallback[best]
        return self.item_ids_[items], scores

    # -- persistence -------------------------------------------------------------------

    def save(self, path):
        """Write the fitted model to an .npz file (hogwild.model_file: arrays and
        JSON metadata, no pickle, renamed into place when complete)."""
        self._check_fitted()
        indptr, grouped = self._seen if self._seen is not None else (
            np.zeros(0, np.int64), np.zeros(0, np.int32))  # streamed: none kept
        kept = {"seen_values": self._seen_values} if self._seen_values is not None else {}
        write_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                    {"params": self.get_params(), "global_mean": self.global_mean_,
                     "rating_range": self.rating_range_, "workers": self.workers_,
                     "step": self.step_, "resolved": {
                         "reg": self.reg_, "bias_reg": self.bias_reg_,
                         "init_scale": self.init_scale_, "adaptive": self.adaptive_,
                         "rating_scale": self.rating_scale_, "seed": self._seed()}},
                    {"user_factors": self.user_factors_, "item_factors": self.item_factors_,
                     "user_bias": self.user_bias_, "item_bias": self.item_bias_,
                     "user_ids": _savable_ids(self.user_ids_, "user"),
                     "item_ids": _savable_ids(self.item_ids_, "item"),
                     "seen_indptr": indptr, "seen_items": grouped,
                     "item_counts": self.item_counts_, **kept,
                     **dict(zip(("user_sums", "item_sums"), self._sums))})

    @classmethod
    def load(cls, path):
        """A model written by save(); a file of another kind or version is refused."""
        def build(meta, arrays):
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
            # files written before cold-start recommendations: no counts, all equal
            model.item_counts_ = arrays.get("item_counts", np.zeros(model.item_ids_.size,
                                                                    np.int64))
            model._seen = (arrays["seen_indptr"], arrays["seen_items"]) \
                if arrays["seen_indptr"].size else None  # trained on streamed ratings
            # files written before partial_fit kept no ratings nor adaptive sums
            model._seen_values = arrays.get("seen_values")
            model._sums = tuple(arrays[name] for name in ("user_sums", "item_sums")
                                if name in arrays)
            model.global_mean_ = float(meta["global_mean"])
            # files written before clipping: predictions were not clipped
            low, high = meta.get("rating_range", (-np.inf, np.inf))
            model.rating_range_ = (float(low), float(high))
            model.workers_ = meta["workers"]
            model.step_ = meta["step"]
            # files written before fold-in kept no resolved values: fold_in refuses them
            for name, value in meta.get("resolved", {}).items():
                setattr(model, name + "_", value)
            model.history_ = []
            model._user_index = IdIndex(model.user_ids_)
            model._item_index = IdIndex(model.item_ids_)
            _check_shapes(model)
            return model
        return read_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                          "matrix-factorization model", build)


def _lay_out(raw_users, raw_items, values, grid, rng):
    """(users, items, values, user index, item index, layout): the ratings copied once
    into the block layout (hogwild.structure.blocked_copy) straight from their raw
    ids, read into memory first by file reads (hogwild.disk_arrays.in_memory) where
    they are a cache's maps: compiled code reading a map of a file truncated
    meanwhile would end the process with SIGBUS."""
    with phase("read ratings"):
        raw_users, raw_items, values = (in_memory(a) for a in (raw_users, raw_items, values))
    with phase("map ids"):
        user_index, user_keys, user_table = IdIndex.keyed(raw_users)
        item_index, item_keys, item_table = IdIndex.keyed(raw_items)
    with phase("block layout"):
        users, items, laid_out, row_labels, col_labels, layout = blocked_copy(
            user_keys, item_keys, values, grid, rng, user_table, item_table)
        del user_keys, item_keys, user_table, item_table
        return (users, items, laid_out, IdIndex(relabelled(user_index.ids, row_labels)),
                IdIndex(relabelled(item_index.ids, col_labels)), layout)


def _check_shapes(model):
    """A loaded model's arrays fit each other (a ValueError naming the first that does
    not: an edited file would index past them in predict or recommend)."""
    users, items = model.user_ids_.size, model.item_ids_.size
    indptr, grouped = model._seen if model._seen is not None else (
        np.zeros(users + 1, np.int64), np.zeros(0, np.int32))
    check_shapes((("user_factors", model.user_factors_, (users, model.rank)),
                  ("item_factors", model.item_factors_, (items, model.rank)),
                  ("user_bias", model.user_bias_, (users,)),
                  ("item_bias", model.item_bias_, (items,)),
                  ("item_counts", model.item_counts_, (items,)),
                  ("seen_indptr", indptr, (users + 1,)),
                  *((("seen_values", model._seen_values, (grouped.size,)),)
                    if model._seen_values is not None else ()),
                  *zip(("user_sums", "item_sums"), model._sums, ((users,), (items,)))),
                 indptr, grouped, items, "the items each user rated")
    if any(not np.all(sums >= 1) for sums in model._sums):
        raise ValueError("user_sums or item_sums holds a value below 1 (an adaptive rate's "
                         "sum starts at 1)")


def _savable_ids(ids, what):
    """Ids as a numeric or unicode array (np.load without pickle reads those only)."""
    if ids.dtype.kind in "iufU":
        return ids
    if all(isinstance(x, str) for x in ids.tolist()):
        return ids.astype(str)
    raise HogwildError(f"cannot save {what} ids of type {type(ids[0]).__name__}; "
                       "save() supports integer and string ids")
