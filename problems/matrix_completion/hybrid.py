"""Hybrid factorisation (LightFM's model): users and items described by features,
each row's factors the sum of its features' factors, so that a user or item never
seen in training, but with known features, is scored all the same (cold start).

A user u with features x_u (a row of the user feature matrix, weights w_uf) is
represented by p_u = sum_f w_uf P_f and a bias sum_f w_uf c_f; an item i by q_i =
sum_g w_ig Q_g and d_i = sum_g w_ig e_g. By default each row also has an identity
feature of its own (LightFM's "identity plus features"): a row seen in training
learns its own factors on top of its features', and a new one has its features'
alone. Each row's feature weights are scaled to sum to 1 (normalize), so a row's
factors are its own plus the mean of its features': a new row's, that mean, at
the scale of a trained row's. (Scaling the identity in with the features, as
LightFM's users often do, cost warm users' precision@10 0.047 on MovieLens 100K;
this way the features gain 0.002 over the identity alone: docs/implicit.md.)

Three losses on the observed entries of a users x items matrix:

- ``warp`` and ``bpr``: implicit feedback ranked, as ImplicitFactorization's
  (module implicit): score(u, i) = p_u . q_i + d_i against items drawn at random.
- ``squared``: explicit ratings, as MatrixFactorization's biased model:
  prediction m + b_u + d_i + p_u . q_i with m the training mean.

A step's gradient on a row's factors goes to each of its features', times the
feature's weight. The L2 (reg) acts on the row's factors (p_u, q_i), as in the
models without features, and so reaches each feature by its weight: an L2 on each
feature row a step touches shrank the shared ones (a genre is touched by a fifth
of all samples) to nothing, warm precision@10 0.11 against 0.18 on MovieLens 100K.
Each feature row steps by AdaGrad (one running sum a row, as
ImplicitFactorization's adaptive rates), since features are touched at such
different rates.
Every step touches the features of a user and one or two items: the workers share
them without locks, the scheduler is "hogwild" or "serial".
"""
import math

import numpy as np
import scipy.sparse as sp
from numba import njit

from hogwild.engine import fit as engine_fit
from hogwild.errors import HogwildError, check_int, check_nonnegative, choose
from hogwild.estimator import (Params, drawn_seed, not_fitted, run_controls,
                               training_parameters)
from hogwild.kernels.draws import below, sample_hash
from hogwild.kernels.stack import stack_array
from hogwild.model_file import check_shapes, read_model, write_model
from hogwild.objective import Metric, Objective
from hogwild.phases import phase
from hogwild.problems.matrix_completion.fold_in import check_room
from hogwild.problems.matrix_completion.implicit import MAX_WARP_WEIGHT, VALIDATION_DRAWS
from hogwild.problems.matrix_completion.models import check_rank
from hogwild.problems.matrix_completion.ranking import (interaction_lists, lower_bound,
                                                        ranking_metrics)
from hogwild.problems.matrix_completion.serving import Recommender
from hogwild.random_init import normal_array

LOSSES = ("warp", "bpr", "squared")
SCHEDULERS = ("hogwild", "serial")
# Each loss's defaults (AdaGrad per feature row, a constant schedule), chosen on
# MovieLens 100K (each user's 80/20 split, 2 seeds, with and without features),
# checked on its items held out of training and MovieLens 1M's (scripts/
# bench_hybrid.py). WARP: ImplicitFactorization's adaptive defaults, as they are.
# BPR: a smaller step than its fixed one (0.3: 0.1903 with features; 0.15: 0.2058,
# ImplicitFactorization's BPR 0.2049). Squared: test RMSE 0.894 with features,
# MatrixFactorization's defaults 0.904.
LOSS_DEFAULTS = {"warp": {"step": 0.05, "reg": 0.2, "init_scale": 0.01},
                 "bpr": {"step": 0.15, "reg": 0.02, "init_scale": 0.1},
                 "squared": {"step": 0.05, "reg": 0.05, "init_scale": 0.1}}
MODEL_FILE_KIND = "hogwild.HybridFactorization"
MODEL_FILE_VERSION = 1
# the arrays a model file keeps: the rows' factors and biases as served, the
# features' (add_users and add_items compute new rows from them)
MODEL_ARRAYS = ("user_factors", "item_factors", "user_bias", "item_bias", "item_counts",
                "user_feature_factors", "item_feature_factors", "user_feature_bias",
                "item_feature_bias")
LOSS_SAMPLES = 1 << 16  # the per-epoch objective's estimate: this many samples (shuffled)
_LOSS_DRAW = np.uint64(0x2545F4914F6CDD1D)  # the objective's fixed draws, apart from training's


def hybrid_kernels(rank, loss):
    """(update, loss, held-out loss) of ``loss`` at ``rank`` (a compile-time
    constant): params = (P float32[user features, rank], Q float32[item features,
    rank], the features' biases float32[user features] and float32[item features],
    their rows' AdaGrad sums, the same shapes, from 1); data = (users int32[n], items
    int32[n], targets float32[n] (ratings less the mean; ranking losses: unused),
    then each side's feature rows as CSR (indptr int64, features int32, weights
    float32) for users and for items, seen_indptr int64[n_users + 1], seen_items
    int32 (each user's training items, sorted), settings float32[3] = (reg,
    max_sampled, mean), salt uint64[1])."""
    k, kind = int(rank), choose(LOSSES, loss, "loss")
    warp, squared = kind == "warp", kind == "squared"

    @njit(nogil=True, inline="always")
    def represent(E, bias, indptr, features, weights, row, out):
        """out = the row's factors (its features' weighted sum); returns its bias."""
        for f in range(k):
            out[f] = np.float32(0.0)
        total = np.float32(0.0)
        for at in range(indptr[row], indptr[row + 1]):
            g, w = features[at], weights[at]
            total += w * bias[g]
            for f in range(k):
                out[f] += w * E[g, f]
        return total

    @njit(nogil=True, inline="always")
    def dot(a, b):
        total = np.float32(0.0)
        for f in range(k):
            total += a[f] * b[f]
        return total

    @njit(nogil=True, inline="always")
    def ascend(E, bias, sums, indptr, features, weights, row, direction, c, own, own_bias,
               c_bias, s, reg):
        """Each feature g of the row ascends w_g (c direction - reg own) on its
        factors and w_g (c_bias - reg own_bias) on its bias (own: the row's
        factors, regularised as ImplicitFactorization's rows are), by AdaGrad:
        step s / sqrt(its running sum of mean squared gradients, this one's
        included)."""
        for at in range(indptr[row], indptr[row + 1]):
            g, w = features[at], weights[at]
            squares = np.float32(0.0)
            for f in range(k):
                d = w * (c * direction[f] - reg * own[f])
                squares += d * d
            db = w * (c_bias - reg * own_bias)
            sums[g] += (squares + db * db) / np.float32(k + 1)
            rate = s / math.sqrt(sums[g])
            for f in range(k):
                E[g, f] += rate * w * (c * direction[f] - reg * own[f])
            bias[g] += rate * db

    @njit(nogil=True, inline="always")
    def seen(u, j, data):
        at = lower_bound(data[10], data[9][u], data[9][u + 1], j)
        return at < data[9][u + 1] and data[10][at] == j

    def update(e, params, data, step, epoch):
        P, Q, c, d, G, H = params[0], params[1], params[2], params[3], params[4], params[5]
        u, i = data[0][e], data[1][e]
        s, reg = np.float32(step), data[11][0]
        p, q, other, gap = (stack_array(k, np.float32), stack_array(k, np.float32),
                            stack_array(k, np.float32), stack_array(k, np.float32))
        user_bias = represent(P, c, data[3], data[4], data[5], u, p)
        item_bias = represent(Q, d, data[6], data[7], data[8], i, q)
        if squared:
            error = data[2][e] - (user_bias + item_bias + dot(p, q))
            ascend(P, c, G, data[3], data[4], data[5], u, q, error, p, user_bias, error, s, reg)
            ascend(Q, d, H, data[6], data[7], data[8], i, p, error, q, item_bias, error, s, reg)
            return
        n_items = data[6].size - 1
        positive = dot(p, q) + item_bias
        j, weight, negative = -1, np.float32(0.0), np.float32(0.0)
        if warp:
            for draw in range(1, int(data[11][1]) + 1):
                drawn = below(sample_hash(e, epoch, data[12][0] + np.uint64(draw)), n_items)
                if seen(u, drawn, data):
                    continue
                negative = represent(Q, d, data[6], data[7], data[8], drawn, other)
                if dot(p, other) + negative > positive - np.float32(1.0):
                    j = drawn
                    weight = np.float32(min(math.log(max(1.0, float((n_items - 1) // draw))),
                                            MAX_WARP_WEIGHT))
                    break
        else:
            drawn = below(sample_hash(e, epoch, data[12][0]), n_items)
            if not seen(u, drawn, data):
                j = drawn
                negative = represent(Q, d, data[6], data[7], data[8], j, other)
                weight = np.float32(1.0 / (1.0 + math.exp(positive - negative
                                                          - dot(p, other))))
        if j < 0:
            return
        for f in range(k):
            gap[f] = q[f] - other[f]  # q_i - q_j: the user's direction
        ascend(P, c, G, data[3], data[4], data[5], u, gap, weight, p, np.float32(0.0),
               np.float32(0.0), s, reg)
        ascend(Q, d, H, data[6], data[7], data[8], i, p, weight, q, item_bias, weight, s, reg)
        ascend(Q, d, H, data[6], data[7], data[8], j, p, -weight, other, negative, -weight,
               s, reg)

    @njit(nogil=True, inline="always")
    def pair_score(params, data, u, i):
        p, q = stack_array(k, np.float32), stack_array(k, np.float32)
        bias = represent(params[0], params[2], data[3], data[4], data[5], u, p) \
            + represent(params[1], params[3], data[6], data[7], data[8], i, q)
        return bias + dot(p, q)

    def sample_loss(e, params, data):
        """Squared: the squared error; WARP: the hinge against one fixed draw; BPR:
        its log-loss (0 where the draw is one of the user's items)."""
        u, i = data[0][e], data[1][e]
        if squared:
            error = data[2][e] - pair_score(params, data, u, i)
            return error * error
        j = below(sample_hash(e, 0, data[12][0] ^ _LOSS_DRAW), data[6].size - 1)
        if seen(u, j, data):
            return 0.0
        x = pair_score(params, data, u, i) - pair_score(params, data, u, j)
        if warp:
            return max(0.0, 1.0 - x)
        return math.log1p(math.exp(-x)) if x > 0 else -x + math.log1p(math.exp(x))

    def held_out_loss(e, params, data):
        """Squared: the squared error of held-out rating e; ranking losses: the
        share of VALIDATION_DRAWS fixed draws (training items skipped) scoring at
        least as high as held-out pair e (1 - AUC, sampled)."""
        u, i = data[0][e], data[1][e]
        positive = pair_score(params, data, u, i)
        if squared:
            return (data[2][e] - positive) ** 2
        above, drawn = 0, 0
        for draw in range(VALIDATION_DRAWS):
            j = below(sample_hash(e, draw, data[12][0]), data[6].size - 1)
            if j != i and not seen(u, j, data):
                drawn += 1
                if pair_score(params, data, u, j) >= positive:
                    above += 1
        return above / drawn if drawn else 0.0

    return update, sample_loss, held_out_loss


def feature_rows(features, n_rows, identity, normalize, side, rank):
    """((indptr int64, features int32, weights float32), number of features): an
    identity feature of its own first, weight 1, where ``identity``, then the
    columns of ``features`` (rows x features, scipy.sparse or dense; None:
    identity alone), each row's feature weights scaled to sum to 1 where
    ``normalize``. Weights must be finite and >= 0; the factors of the rows and
    features (``rank`` each) must fit in memory."""
    check_room(n_rows * (1 + identity), rank, f"{side}s")
    if features is None:
        if not identity:
            raise HogwildError(f"{side}_identity=False needs {side}_features: without "
                               f"either, {side}s have no factors")
        matrix = sp.csr_matrix((n_rows, 0), dtype=np.float32)
    else:
        matrix = feature_matrix(features, side, rank)
        if matrix.shape[0] != n_rows:
            raise HogwildError(f"{side}_features has {matrix.shape[0]} rows; the data has "
                               f"{n_rows} {side}s")
        if normalize:
            matrix = row_normalized(matrix)
    check_room(n_rows * (1 + identity) + matrix.shape[1], rank, f"{side}s and {side} features")
    if identity:
        matrix = sp.hstack([sp.identity(n_rows, np.float32, format="csr"), matrix],
                           format="csr")
    return csr_lists(matrix), matrix.shape[1]


def feature_matrix(features, side, rank):
    """``features`` as a float32 CSR matrix whose stored weights are finite and >= 0,
    refused before conversion where its rows' and features' factors (``rank`` each)
    would not fit in memory."""
    shape = getattr(features, "shape", (0, 0))
    if len(shape) != 2:
        raise HogwildError(f"{side}_features must be a rows x features matrix, got shape "
                           f"{tuple(shape)}")
    check_room(int(shape[0]) + int(shape[1]), rank, f"{side}s and {side} features")
    try:
        matrix = sp.csr_matrix(features, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise HogwildError(f"{side}_features must be a rows x features matrix (scipy.sparse "
                           f"or numpy): {error}") from None
    if not np.all(np.isfinite(matrix.data)) or (matrix.data < 0).any():
        raise HogwildError(f"{side}_features holds a weight that is negative, NaN or "
                           "infinite; feature weights must be finite and >= 0")
    matrix.eliminate_zeros()
    return matrix


def row_normalized(matrix):
    """``matrix`` (CSR) with each row's weights scaled to sum to 1 (an empty row
    stays empty)."""
    totals = np.asarray(matrix.sum(axis=1), np.float64).ravel()
    return sp.diags(1.0 / np.where(totals > 0, totals, 1.0)).astype(np.float32) @ matrix


def csr_lists(matrix):
    """(indptr int64, columns int32, weights float32) of a CSR matrix."""
    matrix = sp.csr_matrix(matrix)
    matrix.sum_duplicates()
    return (matrix.indptr.astype(np.int64), matrix.indices.astype(np.int32),
            np.ascontiguousarray(matrix.data, np.float32))


def representations(factors, biases, lists):
    """(rows' factors float32[rows, rank], rows' biases float32[rows]): each row's
    features' weighted sums."""
    matrix = sp.csr_matrix((lists[2], lists[1], lists[0]),
                           shape=(lists[0].size - 1, factors.shape[0]))
    return (np.ascontiguousarray(matrix @ factors, np.float32),
            np.ascontiguousarray(matrix @ biases, np.float32))


@training_parameters(
    own={"rank": 32, "loss": "warp", "reg": None, "max_sampled": 10, "init_scale": None,
         "user_identity": True, "item_identity": True, "normalize": True},
    epochs=20, step=None, decay=1.0, shuffle_block=256,
    notes={"step": "None: 0.05 for WARP and squared, 0.15 for BPR (LOSS_DEFAULTS); each "
                   "feature row's AdaGrad sum lowers it.",
           "scheduler": "HybridFactorization runs 'hogwild' and 'serial'."})
class HybridFactorization(Recommender, Params):
    """Matrix factorisation with user and item features (LightFM's hybrid model):
    a row's factors are the sum of its features', so users and items unseen in
    training are scored from their features (cold start). Trained with Hogwild!
    SGD, AdaGrad per feature row.

    Parameters
    ----------
    rank : int, default 32
        Factors per feature, 1 to 512.
    loss : {'warp', 'bpr', 'squared'}, default 'warp'
        'warp', 'bpr': implicit feedback ranked (as ImplicitFactorization's);
        'squared': explicit ratings predicted (as MatrixFactorization's biased
        model). See the module docstring.
    reg : float or None, default None
        L2 on the factors of the rows a step touches (reaching each feature by
        its weight); None: 0.2 for WARP, 0.02 for BPR, 0.05 for squared.
    max_sampled : int, default 10
        WARP's draws per step before it gives up.
    init_scale : float or None, default None
        Feature factors start N(0, init_scale^2), biases at 0; None: 0.01 for
        WARP, 0.1 for BPR and squared.
    user_identity, item_identity : bool, default True
        Give each user (item) seen in training a feature of its own beside its
        features (LightFM's identity features); a new one has its features alone.
        False: rows are their features only (every row needs features).
    normalize : bool, default True
        Scale each row's feature weights (its identity's apart) to sum to 1.
    {training parameters}

    Attributes
    ----------
    user_factors_, item_factors_ : numpy.ndarray of float32
        Each user's and item's factors (its features' weighted sum); add_users and
        add_items append rows.
    user_bias_, item_bias_ : numpy.ndarray of float32
        Each row's bias (squared loss: the user's too; ranking losses: user_bias_
        is 0).
    user_feature_factors_, item_feature_factors_ : numpy.ndarray of float32
        The factors of each feature, identity features first.
    user_feature_bias_, item_feature_bias_ : numpy.ndarray of float32
    mean_ : float
        The training mean (squared loss; 0 for ranking losses).
    item_counts_ : numpy.ndarray of int64
        Interactions per item in training.
    step_, reg_, init_scale_ : float
    seed_ : int
    {run attributes}
    """

    def settings(self):
        """Validated (rank, reg, init_scale, max_sampled, step), every option checked
        before any work."""
        defaults = LOSS_DEFAULTS[choose(LOSSES, self.loss, "loss")]
        choose(SCHEDULERS, self.scheduler, "scheduler")
        for name in ("user_identity", "item_identity", "normalize"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise HogwildError(f"{name} must be True or False, got "
                                   f"{getattr(self, name)!r}")
        value = {name: defaults[name] if getattr(self, name) is None else getattr(self, name)
                 for name in defaults}
        self.training_config(step=value["step"])
        return (check_rank(self.rank), check_nonnegative("reg", value["reg"]),
                check_nonnegative("init_scale", value["init_scale"]),
                check_int("max_sampled", self.max_sampled, 1, 1 << 20), value["step"])

    def fit(self, interactions, user_features=None, item_features=None, eval_set=None,
            k=10, **controls):
        """Train on ``interactions``, a users x items scipy.sparse matrix: for 'warp'
        and 'bpr' its stored entries > 0 are the observed pairs; for 'squared' its
        stored entries are the ratings. ``user_features`` (users x user features)
        and ``item_features`` (items x item features): scipy.sparse or numpy, weights
        >= 0 (one-hot genres, age groups, tags); None: identity features alone.

        eval_set: held-out interactions of the same shape: precision@k, recall@k,
        ndcg@k and auc after each epoch in history_ (ranking losses), the RMSE
        (squared). ``controls``: as MatrixFactorization.fit's."""
        rank, reg, init_scale, max_sampled, step = self.settings()
        if not sp.issparse(interactions) or interactions.ndim != 2:
            raise HogwildError(f"interactions must be a scipy.sparse users x items matrix, "
                               f"got {type(interactions).__name__}")
        n_users, n_items = interactions.shape
        squared = self.loss == "squared"
        if not squared and n_items < 2:
            raise HogwildError(f"implicit feedback needs at least 2 items to rank, got "
                               f"{n_items}")
        with phase("features"):
            user_lists, user_width = feature_rows(user_features, n_users, self.user_identity,
                                                  self.normalize, "user", rank)
            item_lists, item_width = feature_rows(item_features, n_items, self.item_identity,
                                                  self.normalize, "item", rank)
        with phase("interactions"):
            users, items, targets = self._entries(interactions, squared)
        self.seed_ = drawn_seed(self.random_state, self.backend)
        seeds = np.random.SeedSequence(self.seed_).spawn(5)
        held_out = None
        split = self.held_out(users.size, "interactions", groups=users)
        if split is not None:
            kept, held = split
            held_out = users[held], items[held], targets[held]
            users, items, targets = users[kept], items[kept], targets[kept]
        self.mean_ = float(targets.mean()) if squared else 0.0
        targets = targets - np.float32(self.mean_)
        seen_lists = interaction_lists(sp.csr_matrix(
            (np.ones(users.size, np.int8), (users, items)), shape=(n_users, n_items)),
            n_users, n_items, "interactions")
        params = (normal_array((user_width, rank), init_scale, seeds[1]),
                  normal_array((item_width, rank), init_scale, seeds[2]))
        params += (np.zeros(params[0].shape[0], np.float32),
                   np.zeros(params[1].shape[0], np.float32),
                   np.ones(params[0].shape[0], np.float32),
                   np.ones(params[1].shape[0], np.float32))
        order = np.random.default_rng(seeds[0]).permutation(users.size)
        salt = seeds[3].generate_state(1, np.uint64)
        shared = (*user_lists, *item_lists, *seen_lists,
                  np.array([reg, max_sampled, self.mean_], np.float32), salt)
        update, sample_loss, held_out_loss = hybrid_kernels(rank, self.loss)
        validation = None
        if held_out is not None:
            validation = Metric(
                "validation_rmse" if squared else "validation_rank_loss", held_out_loss,
                (np.ascontiguousarray(held_out[0], np.int32),
                 np.ascontiguousarray(held_out[1], np.int32),
                 np.ascontiguousarray(held_out[2] - np.float32(self.mean_)), *shared),
                held_out[0].size, finish=math.sqrt if squared else None)
        objective = Objective(
            update, sample_loss, params,
            (np.ascontiguousarray(users[order]), np.ascontiguousarray(items[order]),
             np.ascontiguousarray(targets[order]), *shared), users.size,
            name=f"hybrid-{self.loss}-rank{rank}", fastmath=True, train_in_place=True,
            indices_checked=True, loss_samples=LOSS_SAMPLES, validation=validation)
        del users, items, targets, order
        evaluate = self._evaluator(eval_set, k, user_lists, item_lists, seen_lists)
        result = engine_fit(objective, self.training_config(step=step, seed=seeds[4]),
                            run_controls(evaluate, controls))
        self.step_, self.reg_, self.init_scale_ = step, reg, init_scale
        self._seen = seen_lists
        self.user_feature_factors_, self.item_feature_factors_ = result.params[:2]
        self.user_feature_bias_, self.item_feature_bias_ = result.params[2:4]
        self._identity_rows = (n_users if self.user_identity else 0,
                               n_items if self.item_identity else 0)
        self.user_factors_, user_bias = representations(
            result.params[0], result.params[2], user_lists)
        self.user_bias_ = user_bias if squared else np.zeros(n_users, np.float32)
        self.item_factors_, self.item_bias_ = representations(
            result.params[1], result.params[3], item_lists)
        self.item_counts_ = np.bincount(seen_lists[1], minlength=n_items).astype(np.int64)
        self.keep_run(result)
        return self

    @staticmethod
    def _entries(interactions, squared, what="interactions"):
        """(users int32, items int32, targets float32) of the observed entries:
        'squared', the stored ratings (finite); ranking losses, the entries > 0
        (targets 0)."""
        n_users, n_items = interactions.shape
        if squared:
            matrix = sp.coo_matrix(sp.csr_matrix(interactions))  # duplicates summed
            if not np.all(np.isfinite(matrix.data)):
                raise HogwildError(f"{what} holds a NaN or infinite rating")
            users, items = matrix.row.astype(np.int32), matrix.col.astype(np.int32)
            targets = matrix.data.astype(np.float32)
        else:
            indptr, items = interaction_lists(interactions, n_users, n_items, what)
            users = np.repeat(np.arange(n_users, dtype=np.int32), np.diff(indptr))
            targets = np.zeros(users.size, np.float32)
        if users.size == 0:
            raise HogwildError(f"empty data: {what} holds no "
                               f"{'rating' if squared else 'entry > 0'}")
        return users, items, targets

    def _evaluator(self, eval_set, k, user_lists, item_lists, seen_lists):
        """fit's per-epoch measures of eval_set (None without one): ranking_metrics,
        or the RMSE of its ratings (squared)."""
        if eval_set is None:
            return None
        k = check_int("k", k, 1)
        shape = (seen_lists[0].size - 1, item_lists[0].size - 1)
        if not sp.issparse(eval_set) or eval_set.shape != shape:
            raise HogwildError(f"eval_set must be a scipy.sparse matrix of the training "
                               f"data's shape {shape}, got {getattr(eval_set, 'shape', None)}")
        if self.loss != "squared":
            held = interaction_lists(eval_set, *shape, "eval_set")

            def evaluate(params):
                U, _ = representations(params[0], params[2], user_lists)
                V, b = representations(params[1], params[3], item_lists)
                return ranking_metrics(U, V, b, held, seen_lists, k)
            return evaluate
        users, items, ratings = self._entries(eval_set, True, "eval_set")

        def evaluate(params):
            U, c = representations(params[0], params[2], user_lists)
            V, d = representations(params[1], params[3], item_lists)
            predicted = self.mean_ + c[users] + d[items] + np.einsum(
                "nf,nf->n", U[users], V[items], dtype=np.float64)
            return {"rmse": float(np.sqrt(np.mean((predicted - ratings) ** 2)))}
        return evaluate

    def _check_fitted(self):
        if not hasattr(self, "user_factors_"):
            raise not_fitted(self, "fit(interactions, user_features, item_features)")

    def _cold(self, users):
        """Users past the model's rows (add_users gives new ones their features')."""
        return users >= self.user_factors_.shape[0]

    def add_users(self, user_features):
        """New users scored from their features alone (cold start): rows of
        ``user_features`` (new users x the user features of fit) become users
        past the model's. Returns their indices; recommend() serves them."""
        return self._add("user", user_features)

    def add_items(self, item_features):
        """New items scored from their features alone (cold start): rows of
        ``item_features`` (new items x the item features of fit) become items
        past the model's, recommended to every user from now on. Returns their
        indices."""
        return self._add("item", item_features)

    def _add(self, side, features):
        self._check_fitted()
        factors = getattr(self, f"{side}_feature_factors_")
        identity = self._identity_rows[side == "item"]
        matrix = feature_matrix(features, side, self.rank)
        if matrix.shape[1] != factors.shape[0] - identity:
            raise HogwildError(f"{side}_features has {matrix.shape[1]} features; the model "
                               f"was fitted with {factors.shape[0] - identity}")
        indptr, columns, weights = csr_lists(row_normalized(matrix) if self.normalize
                                             else matrix)
        new_factors, new_bias = representations(
            factors, getattr(self, f"{side}_feature_bias_"),
            (indptr, columns + np.int32(identity), weights))
        first = getattr(self, f"{side}_factors_").shape[0]
        setattr(self, f"{side}_factors_",
                np.concatenate([getattr(self, f"{side}_factors_"), new_factors]))
        if side == "user":
            if self.loss != "squared":
                new_bias[:] = 0
            self.user_bias_ = np.concatenate([self.user_bias_, new_bias])
            seen_indptr, seen_items = self._seen
            self._seen = (np.concatenate([seen_indptr, np.full(matrix.shape[0],
                                                                seen_indptr[-1])]), seen_items)
        else:
            self.item_bias_ = np.concatenate([self.item_bias_, new_bias])
            self.item_counts_ = np.concatenate([self.item_counts_,
                                                np.zeros(matrix.shape[0], np.int64)])
        return np.arange(first, first + matrix.shape[0])

    def predict(self, users, items):
        """float64 scores of (users[k], items[k]) pairs (row indices): the predicted
        rating for 'squared', the ranking score otherwise."""
        self._check_fitted()
        users, items = np.atleast_1d(np.asarray(users)), np.atleast_1d(np.asarray(items))
        for name, index, count in (("users", users, self.user_factors_.shape[0]),
                                   ("items", items, self.item_factors_.shape[0])):
            if index.dtype.kind not in "iu" or index.ndim != 1 or \
                    (index.size and not 0 <= index.min() <= index.max() < count):
                raise HogwildError(f"{name} must be a list of indices from 0 to {count - 1}")
        if users.size != items.size:
            raise HogwildError(f"users has {users.size} indices and items {items.size}; "
                               "predict takes pairs")
        return (self.mean_ + self.user_bias_[users].astype(np.float64) + self.item_bias_[items]
                + np.einsum("nf,nf->n", self.user_factors_[users], self.item_factors_[items],
                            dtype=np.float64))

    def save(self, path):
        """Write the fitted model to an .npz file (hogwild.model_file)."""
        self._check_fitted()
        write_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                    {"params": self.get_params(), "workers": self.workers_,
                     "resolved": {"step": self.step_, "reg": self.reg_,
                                  "init_scale": self.init_scale_, "seed": self.seed_,
                                  "mean": self.mean_,
                                  "identity_rows": list(self._identity_rows)}},
                    {**{name: getattr(self, name + "_") for name in MODEL_ARRAYS},
                     "seen_indptr": self._seen[0], "seen_items": self._seen[1]})

    @classmethod
    def load(cls, path):
        """A model written by save(); a file of another kind or version, or whose
        arrays do not fit each other, is refused."""
        def build(meta, arrays):
            model = cls(**meta["params"])
            for name in MODEL_ARRAYS:
                setattr(model, name + "_", arrays[name])
            model._seen = (arrays["seen_indptr"], arrays["seen_items"])
            model.workers_, model.history_ = meta["workers"], []
            resolved = dict(meta["resolved"])
            model._identity_rows = tuple(int(n) for n in resolved.pop("identity_rows"))
            for name, value in resolved.items():
                setattr(model, name + "_", value)
            _check_shapes(model)
            return model
        return read_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION, "hybrid model", build)


def _check_shapes(model):
    """A loaded model's arrays fit each other (a ValueError naming the first that
    does not: an edited file would index past them)."""
    def rows(array):
        return array.shape[0] if array.ndim == 2 else -1
    users, items = rows(model.user_factors_), rows(model.item_factors_)
    user_features, item_features = (rows(model.user_feature_factors_),
                                    rows(model.item_feature_factors_))
    check_shapes((("user_factors", model.user_factors_, (users, model.rank)),
                  ("item_factors", model.item_factors_, (items, model.rank)),
                  ("user_bias", model.user_bias_, (users,)),
                  ("item_bias", model.item_bias_, (items,)),
                  ("item_counts", model.item_counts_, (items,)),
                  ("user_feature_factors", model.user_feature_factors_,
                   (user_features, model.rank)),
                  ("item_feature_factors", model.item_feature_factors_,
                   (item_features, model.rank)),
                  ("user_feature_bias", model.user_feature_bias_, (user_features,)),
                  ("item_feature_bias", model.item_feature_bias_, (item_features,)),
                  ("seen_indptr", model._seen[0], (users + 1,))),
                 *model._seen, items, "the items each user interacted with")
    identity = model._identity_rows
    if not (0 <= identity[0] <= min(users, user_features)
            and 0 <= identity[1] <= min(items, item_features)):
        raise ValueError(f"identity_rows {list(identity)} do not fit the feature factors")
