"""Implicit feedback (clicks, plays, purchases): matrix factorisation that ranks
each user's items, trained with Hogwild! SGD on the observed (user, item) pairs.

The score of item i for user u is U_u . V_i + b_i. Each sample is one observed
pair (u, i); its step compares i with items drawn at random (negative sampling):

- ``bpr`` (Rendle et al. 2009, as in implicit's BPR): one item j the user did not
  interact with; ascend log sigmoid(x_uij), x_uij = score(u, i) - score(u, j).
- ``warp`` (Weston et al. 2011, as in LightFM's WARP): draw up to ``max_sampled``
  items until one, j, scores above score(u, i) - 1; step on the hinge 1 - x_uij
  weighted by log(floor((n_items - 1) / draws)), an estimate of how far down the
  ranking i sits (a positive already on top takes many draws and a small step).

Both regularise the rows they touch by ``reg`` (L2 on U_u, V_i, V_j and the two
item biases). A draw the user interacted with in training is skipped, as both
libraries do. The draws come from a hash of (sample, epoch, seed)
(hogwild.kernels.draws), so that a run does not depend on which worker visits a
sample when. Every update touches three rows, one of them random: the workers
share them without locks, the scheduler is "hogwild" or "serial".

The per-epoch objective recorded is an estimate, on the first LOSS_SAMPLES pairs
(shuffled), each against one fixed draw: BPR's log-loss with its regulariser,
WARP's hinge alone (its regulariser acts on the steps it takes, as LightFM's, not
on an objective).
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
from hogwild.model_file import check_shapes, read_model, write_model
from hogwild.objective import Metric, Objective
from hogwild.phases import phase
from hogwild.problems.matrix_completion.fold_in import (check_room, check_targets,
                                                        columns_replaced, grown_sums,
                                                        fold_rows, implicit_item_rows,
                                                        implicit_user_rows, negative_draws,
                                                        pass_steps,
                                                        rows_replaced, rows_set)
from hogwild.problems.matrix_completion.models import check_rank
from hogwild.problems.matrix_completion.ranking import (interaction_lists, lower_bound,
                                                        ranking_metrics)
from hogwild.problems.matrix_completion.serving import Recommender
from hogwild.random_init import normal_array
from hogwild.steps import StepSchedule

LOSSES = ("warp", "bpr")
# Each loss's defaults at rank 32: chosen on MovieLens 100K (ratings >= 4, a per-user
# 80/20 split, 3 seeds), checked on MovieLens 1M (scripts/bench_implicit.py). WARP's
# weighted steps are large: a small step, decaying fast, and a strong reg; BPR's
# single draws give small gradients: a large step.
LOSS_DEFAULTS = {"warp": {"step": 0.03, "decay": 0.7, "reg": 0.6, "init_scale": 0.01},
                 "bpr": {"step": 0.3, "decay": 0.9, "reg": 0.03, "init_scale": 0.1}}
# Per-row AdaGrad (adaptive=True), a constant schedule (each row's own sum lowers its
# step). WARP: LightFM's base step and a reg between LightFM's none and the fixed
# step's 0.6, chosen on MovieLens 100K and planted groups of 12 and 7 pairs a user,
# checked on MovieLens 1M, LightFM's ua split and other planted shapes. BPR: its
# fixed step's step, reg and start on a constant schedule (0.1999 on MovieLens 100K
# against the fixed step's 0.2056; not a default: adaptive=None leaves BPR fixed).
ADAPTIVE_DEFAULTS = {"warp": {"step": 0.05, "decay": 1.0, "reg": 0.2, "init_scale": 0.01},
                     "bpr": {"step": 0.3, "decay": 1.0, "reg": 0.03, "init_scale": 0.1}}
# adaptive=None turns WARP's adaptive rates on below this many pairs a row (the sparser
# side's mean, pairs / max(users, items)): the fixed step's budget, a decaying
# schedule tuned at 30-76 pairs a row (MovieLens), moves a row that sees few pairs
# too little to learn (planted groups at 7 a row: precision@10 0.0012 against
# adaptive's 0.0044, scripts/bench_implicit.py), where above it the fixed step ends
# higher (MovieLens 1M 0.2518 against 0.2444).
ADAPTIVE_BELOW_PAIRS_PER_ROW = 25
SCHEDULERS = ("hogwild", "serial")
# partial_fit: passes over the new pairs (and as many earlier ones) as a share of the
# model's epochs, from this share of its step (fixed steps; adaptive rates continue
# from each row's sum at the model's step). Chosen on MovieLens 1M, its second half
# (new users and items included) after a model of the first, against a model of
# both at once, 2 seeds: WARP from 0.25 of its step -0.0029, +0.0020 (0.5: +0.0023,
# +0.0004; 0.1: -0.0108, -0.0073), BPR +0.0060, +0.0057 (0.5: -0.0055, -0.0079; 1:
# -0.027, -0.019). MovieLens 100K, not tuned on, fixed steps: WARP -0.0050, -0.0053.
# Adaptive rates fall further behind (-0.012 to -0.017 there; docs/implicit.md).
PARTIAL_FIT_EPOCHS = 0.6
PARTIAL_FIT_STEP = 0.25
MAX_WARP_WEIGHT = 10.0  # LightFM's MAX_LOSS: the heaviest WARP step
LOSS_SAMPLES = 1 << 16  # the per-epoch objective's estimate: this many pairs (shuffled)
_LOSS_DRAW = np.uint64(0x5851F42D4C957F2D)  # the objective's fixed draws, apart from training's
VALIDATION_DRAWS = 32  # items each held-out pair is ranked against (early stopping)
MODEL_FILE_KIND = "hogwild.ImplicitFactorization"
MODEL_FILE_VERSION = 1


@njit(nogil=True, inline="always")
def seen(u, j, data):
    """Whether user u interacted with item j in training (binary search)."""
    at = lower_bound(data[3], data[2][u], data[2][u + 1], j)
    return at < data[2][u + 1] and data[3][at] == j


def implicit_kernels(rank, loss, adaptive=False):
    """(update, loss, held-out rank loss) of ``loss`` at ``rank`` (a compile-time
    constant): params = (U float32[n_users, rank], V float32[n_items, rank], b
    float32[n_items]), with ``adaptive`` also (user_sums float32[n_users],
    item_sums float32[n_items]): each row's running sum of its mean squared
    gradients, starting at 1; data = (users int32[n], items int32[n], seen_indptr
    int64[n_users + 1], seen_items int32 (each user's training items, sorted),
    settings float32[2] = (reg, max_sampled), salt uint64[1])."""
    k, warp = int(rank), choose(LOSSES, loss, "loss") == "warp"

    @njit(nogil=True, inline="always")
    def score(U, V, b, u, i):
        total = b[i]
        for f in range(k):
            total += U[u, f] * V[i, f]
        return total

    @njit(nogil=True, inline="always")
    def step_pair(U, V, b, u, i, j, g, s, reg):
        """Ascend g x_uij: U_u += g (V_i - V_j), V_i += g U_u, V_j -= g U_u, b_i +=
        g, b_j -= g, each row shrunk by s reg."""
        keep = np.float32(1.0) - s * reg
        b[i] = b[i] * keep + g
        b[j] = b[j] * keep - g
        for f in range(k):
            a, p, q = U[u, f], V[i, f], V[j, f]
            U[u, f] = a * keep + g * (p - q)
            V[i, f] = p * keep + g * a
            V[j, f] = q * keep - g * a

    @njit(nogil=True, inline="always")
    def adaptive_pair(U, V, b, G, H, u, i, j, c, s, reg):
        """Ascend c x_uij - reg/2 (|U_u|^2 + |V_i|^2 + |V_j|^2 + b_i^2 + b_j^2) with
        AdaGrad per row (LightFM's adagrad, one sum a row as LIBMF's): each row
        steps s / sqrt(its sum of mean squared gradients, this one's included), so
        a rarely seen user or item keeps a large step while a frequent one's
        falls."""
        gu, gi, gj = np.float32(0.0), np.float32(0.0), np.float32(0.0)
        for f in range(k):
            a, p, q = U[u, f], V[i, f], V[j, f]
            du, di, dj = c * (p - q) - reg * a, c * a - reg * p, -c * a - reg * q
            gu += du * du
            gi += di * di
            gj += dj * dj
        db_i, db_j = c - reg * b[i], -c - reg * b[j]
        G[u] += gu / np.float32(k)
        H[i] += (gi + db_i * db_i) / np.float32(k + 1)
        H[j] += (gj + db_j * db_j) / np.float32(k + 1)
        ru, ri, rj = s / math.sqrt(G[u]), s / math.sqrt(H[i]), s / math.sqrt(H[j])
        for f in range(k):
            a, p, q = U[u, f], V[i, f], V[j, f]
            U[u, f] = a + ru * (c * (p - q) - reg * a)
            V[i, f] = p + ri * (c * a - reg * p)
            V[j, f] = q + rj * (-c * a - reg * q)
        b[i] += ri * db_i
        b[j] += rj * db_j

    @njit(nogil=True, inline="always")
    def take_step(params, u, i, j, c, s, reg):
        """The step on pair (u, i) against j of loss derivative c."""
        if adaptive:
            adaptive_pair(params[0], params[1], params[2], params[3], params[4], u, i, j,
                          np.float32(c), s, reg)
        else:
            step_pair(params[0], params[1], params[2], u, i, j, np.float32(s * c), s, reg)

    def update(e, params, data, step, epoch):
        U, V, b = params[0], params[1], params[2]
        u, i = data[0][e], data[1][e]
        s, reg, n_items = np.float32(step), data[4][0], V.shape[0]
        if warp:
            positive = score(U, V, b, u, i)
            for draw in range(1, int(data[4][1]) + 1):
                j = below(sample_hash(e, epoch, data[5][0] + np.uint64(draw)), n_items)
                if seen(u, j, data):
                    continue
                if score(U, V, b, u, j) > positive - np.float32(1.0):
                    weight = min(math.log(max(1.0, float((n_items - 1) // draw))),
                                 MAX_WARP_WEIGHT)
                    take_step(params, u, i, j, weight, s, reg)
                    return
        else:
            j = below(sample_hash(e, epoch, data[5][0]), n_items)
            if not seen(u, j, data):
                x = score(U, V, b, u, i) - score(U, V, b, u, j)
                take_step(params, u, i, j, 1.0 / (1.0 + math.exp(x)), s, reg)

    def sample_loss(e, params, data):
        U, V, b = params[0], params[1], params[2]
        u, i = data[0][e], data[1][e]
        j = below(sample_hash(e, 0, data[5][0] ^ _LOSS_DRAW), V.shape[0])
        if seen(u, j, data):
            j = i  # no negative: the pair's loss is its regulariser's alone
        x = score(U, V, b, u, i) - score(U, V, b, u, j)
        if warp:  # the hinge alone: WARP's regulariser acts on its steps only
            return max(0.0, 1.0 - x) if j != i else 0.0
        penalty = 0.0
        for f in range(k):
            penalty += U[u, f] * U[u, f] + V[i, f] * V[i, f] + V[j, f] * V[j, f]
        penalty = 0.5 * data[4][0] * (penalty + b[i] * b[i] + b[j] * b[j])
        if j == i:
            return penalty
        # -log sigmoid(x) without overflow for large |x|
        return (math.log1p(math.exp(-x)) if x > 0 else -x + math.log1p(math.exp(x))) + penalty

    def held_out_rank_loss(e, params, data):
        """The share of VALIDATION_DRAWS fixed draws (the user's training items
        skipped) that score at least as high as held-out pair e: 1 - AUC, sampled."""
        U, V, b = params[0], params[1], params[2]
        u, i = data[0][e], data[1][e]
        positive, above, drawn = score(U, V, b, u, i), 0, 0
        for draw in range(VALIDATION_DRAWS):
            j = below(sample_hash(e, draw, data[5][0]), V.shape[0])
            if j != i and not seen(u, j, data):
                drawn += 1
                if score(U, V, b, u, j) >= positive:
                    above += 1
        return above / drawn if drawn else 0.0

    return update, sample_loss, held_out_rank_loss


def implicit_objective(users, items, seen, n_items, *, rank=32, loss="warp", reg=0.0,
                       max_sampled=10, init_scale=0.1, seed=None, held_out=None,
                       adaptive=False, params=None):
    """The Objective of observed pairs (users[k], items[k]) as dense indices, in the
    order given; ``seen`` = (indptr, items) of each user's training items, sorted
    (ranking.interaction_lists). Factors start N(0, init_scale^2), biases 0, or
    from ``params`` (a model's, to train further: partial_fit). ``held_out``:
    (users, items) of pairs kept out of training, its validation."""
    rank = check_rank(rank)
    users = np.ascontiguousarray(users, np.int32)
    items = np.ascontiguousarray(items, np.int32)
    n_users = seen[0].size - 1
    user_seed, item_seed, salt_seed = (seed if isinstance(seed, np.random.SeedSequence)
                                       else np.random.SeedSequence(seed)).spawn(3)
    if params is None:
        params = (normal_array((n_users, rank), init_scale, user_seed),
                  normal_array((n_items, rank), init_scale, item_seed),
                  np.zeros(n_items, np.float32))
        if adaptive:  # each row's sum of squared gradients, from 1 (its first step: step)
            params += (np.ones(n_users, np.float32), np.ones(n_items, np.float32))
    salt = salt_seed.generate_state(1, np.uint64)
    data = (users, items, seen[0], seen[1], np.array([reg, max_sampled], np.float32), salt)
    update, sample_loss, held_out_rank_loss = implicit_kernels(rank, loss, adaptive)
    validation = None
    if held_out is not None:  # early stopping's pairs, scored against the same seen lists
        validation = Metric("validation_rank_loss", held_out_rank_loss, (
            np.ascontiguousarray(held_out[0], np.int32),
            np.ascontiguousarray(held_out[1], np.int32), *data[2:]), len(held_out[0]))
    return Objective(update, sample_loss, params, data, users.size,
                     name=f"implicit-{loss}{'-adaptive' if adaptive else ''}-rank{rank}",
                     fastmath=True, train_in_place=True,
                     indices_checked=True, loss_samples=LOSS_SAMPLES, validation=validation)


@training_parameters(
    own={"rank": 32, "loss": "warp", "reg": None, "max_sampled": 10, "init_scale": None,
         "adaptive": None},
    epochs=20, step=None, decay=None, shuffle_block=256,
    notes={"step": "None: 0.03 for WARP, 0.3 for BPR (LOSS_DEFAULTS); 0.05 for WARP "
                   "with adaptive rates (ADAPTIVE_DEFAULTS).",
           "decay": "None: 0.7 for WARP, 0.9 for BPR; 1 (constant) with adaptive rates.",
           "scheduler": "ImplicitFactorization runs 'hogwild' and 'serial' (each step "
                        "touches a random item: no conflict-free schedule exists)."})
class ImplicitFactorization(Recommender, Params):
    """Matrix factorisation of implicit feedback (which items each user interacted
    with), ranking items per user; trained with Hogwild! SGD and negative sampling.

    Parameters
    ----------
    rank : int, default 32
        Factors per user and item, 1 to 512.
    loss : {'warp', 'bpr'}, default 'warp'
        'warp': LightFM's rank-weighted loss (better top-k precision); 'bpr':
        implicit's Bayesian personalised ranking (one draw per step: faster
        epochs). See the module docstring.
    reg : float or None, default None
        L2 on the rows a step touches; None: 0.6 for WARP, 0.03 for BPR, 0.2 for
        WARP with adaptive rates.
    max_sampled : int, default 10
        WARP's draws per step before it gives up (a positive above every draw
        takes no step).
    init_scale : float or None, default None
        Factors start N(0, init_scale^2), item biases at 0; None: 0.01 for WARP,
        0.1 for BPR, with adaptive rates or not.
    adaptive : bool or None, default None
        Per-row AdaGrad steps (LightFM's adagrad, one sum per user and per item
        row): each row steps step / sqrt(its running sum of mean squared
        gradients), so rarely seen users and items keep large steps. None: on
        for WARP where users and items average fewer than
        ADAPTIVE_BELOW_PAIRS_PER_ROW (25) interactions (sparse data, where the
        fixed step's decaying schedule leaves them barely moved).
    {training parameters}

    Attributes
    ----------
    user_factors_, item_factors_ : numpy.ndarray of float32
    item_bias_ : numpy.ndarray of float32
    item_counts_ : numpy.ndarray of int64
        Interactions per item, trained on or folded in (a user without any is
        recommended the most popular).
    step_, decay_, reg_, init_scale_ : float
        The values used (None resolved for the loss).
    adaptive_ : bool
        Whether the run took adaptive rates (None resolved from the data).
    seed_ : int
        The seed used: random_state, or the one drawn for random_state=None (pass
        it to reproduce the run).
    {run attributes}
    """

    def adaptive_rates(self, pairs_per_row=None):
        """adaptive, None resolved: True for WARP on interactions whose users and
        items average fewer than ADAPTIVE_BELOW_PAIRS_PER_ROW pairs (the sparser
        side's mean; None: not known yet)."""
        if self.adaptive is None:
            return self.loss == "warp" and pairs_per_row is not None \
                and pairs_per_row < ADAPTIVE_BELOW_PAIRS_PER_ROW
        if not isinstance(self.adaptive, (bool, np.bool_)):
            raise HogwildError(f"adaptive must be True, False or None, got {self.adaptive!r}")
        return bool(self.adaptive)

    def settings(self, pairs_per_row=None):
        """Validated (rank, reg, init_scale, max_sampled, {step, decay}, adaptive),
        the defaults of the loss (or of adaptive rates) filled in; every training
        option checked before any work."""
        choose(LOSSES, self.loss, "loss")
        adaptive = self.adaptive_rates(pairs_per_row)
        defaults = (ADAPTIVE_DEFAULTS if adaptive else LOSS_DEFAULTS)[self.loss]
        choose(SCHEDULERS, self.scheduler, "scheduler")
        given = {name: getattr(self, name) for name in defaults}
        value = {name: defaults[name] if given[name] is None else given[name]
                 for name in defaults}
        resolved = {"step": value["step"], "decay": value["decay"]}
        self.training_config(**resolved)
        return (check_rank(self.rank), check_nonnegative("reg", value["reg"]),
                check_nonnegative("init_scale", value["init_scale"]),
                check_int("max_sampled", self.max_sampled, 1, 1 << 20), resolved, adaptive)

    def fit(self, interactions, eval_set=None, k=10, **controls):
        """Train on ``interactions``, a users x items scipy.sparse matrix whose stored
        entries > 0 are the observed pairs (values beyond that are ignored).

        eval_set: held-out interactions of the same shape; precision@k,
        recall@k, ndcg@k and auc (hogwild.problems.matrix_completion.ranking)
        are recorded after each epoch in history_. ``controls``: as
        MatrixFactorization.fit's.
        """
        self.settings()  # every option checked before the data is read
        if not sp.issparse(interactions) or interactions.ndim != 2:
            raise HogwildError(f"interactions must be a scipy.sparse users x items matrix, "
                               f"got {type(interactions).__name__}")
        n_users, n_items = interactions.shape
        if n_items < 2:
            raise HogwildError(f"implicit feedback needs at least 2 items to rank, got "
                               f"{n_items}")
        with phase("interactions"):
            indptr, seen_items = interaction_lists(interactions, n_users, n_items,
                                                   "interactions")
        if seen_items.size == 0:
            raise HogwildError("empty data: interactions holds no entry > 0")
        self.seed_ = drawn_seed(self.random_state, self.backend)
        seeds = np.random.SeedSequence(self.seed_).spawn(3)
        users = np.repeat(np.arange(n_users, dtype=np.int32), np.diff(indptr))
        held_out = None
        split = self.held_out(users.size, "interactions", groups=users)
        if split is not None:  # early_stopping: a share of each user's pairs kept out
            kept, held = split
            held_out = users[held], seen_items[held]
            users, seen_items = users[kept], seen_items[kept]
            indptr = np.concatenate([[0], np.cumsum(np.bincount(users, minlength=n_users))])
        rank, reg, init_scale, max_sampled, resolved, self.adaptive_ = self.settings(
            users.size / max(n_users, n_items))
        order = np.random.default_rng(seeds[0]).permutation(users.size)
        objective = implicit_objective(users[order], seen_items[order], (indptr, seen_items),
                                       n_items, rank=rank, loss=self.loss, reg=reg,
                                       max_sampled=max_sampled, init_scale=init_scale,
                                       seed=seeds[1], held_out=held_out,
                                       adaptive=self.adaptive_)
        del users, order
        evaluate = None
        if eval_set is not None:
            k = check_int("k", k, 1)
            held_out = interaction_lists(eval_set, n_users, n_items, "eval_set")

            def evaluate(params):
                return ranking_metrics(params[0], params[1], params[2], held_out,
                                       (indptr, seen_items), k)
        result = engine_fit(objective, self.training_config(**resolved, seed=seeds[2]),
                            run_controls(evaluate, controls))
        self.step_, self.decay_ = resolved["step"], resolved["decay"]
        self.reg_, self.init_scale_ = reg, init_scale
        self._seen = (indptr, seen_items)
        self._keep_params(result.params)
        self.keep_run(result)
        return self

    def _keep_params(self, params):
        """The fitted factors and biases, the rows' adaptive sums (partial_fit
        continues them) and the interactions per item."""
        self.user_factors_, self.item_factors_, self.item_bias_ = params[:3]
        self._sums = tuple(params[3:5])
        self.item_counts_ = np.bincount(self._seen[1], minlength=params[1].shape[0]
                                        ).astype(np.int64)

    def partial_fit(self, interactions, epochs=None):
        """Train further on new interactions, keeping what was trained.

        ``interactions`` (users x items, scipy.sparse) holds the new pairs; rows and
        columns past the model's are new users and items, and the arrays grow. New
        items, then new users, are first folded in from their interactions
        (fold_in_items, fold_in), so they start where the model would put them.
        The model then trains on the new pairs together with as many of its
        earlier ones, drawn at random (all of them where fewer): trained on the
        new ones alone it would drift from what it learned. ``epochs`` passes
        (None: PARTIAL_FIT_EPOCHS of the model's epochs) from PARTIAL_FIT_STEP of
        its step on its schedule; adaptive rates continue from each row's sum.
        A model not fitted yet is fitted. Returns self; history_ is this run's."""
        if not hasattr(self, "user_factors_"):
            return self.fit(interactions)
        if not sp.issparse(interactions) or interactions.ndim != 2:
            raise HogwildError(f"interactions must be a scipy.sparse users x items matrix, "
                               f"got {type(interactions).__name__}")
        n_users, n_items = self.user_factors_.shape[0], self.item_factors_.shape[0]
        rows, columns = interactions.shape
        if rows < n_users or columns < n_items:
            raise HogwildError(f"interactions are {rows} x {columns}; the model has {n_users} "
                               f"users and {n_items} items: new users and items come after "
                               "the model's")
        check_room(rows, self.rank, "users")
        check_room(columns, self.rank, "items")
        passes = max(1, math.ceil(PARTIAL_FIT_EPOCHS * self.epochs)) if epochs is None \
            else check_int("epochs", epochs, 1)
        new = sp.csr_matrix(interactions)
        old = sp.csr_matrix((np.ones(self._seen[1].size, np.int8), self._seen[1],
                             self._seen[0]), shape=(n_users, n_items))
        old.resize(rows, columns)
        new = ((new > 0).astype(np.int8) - old.multiply(new > 0)).tocsr()  # pairs not seen
        new.eliminate_zeros()
        with phase("fold in new items and users"):
            if columns > n_items:
                self.fold_in_items(new[:n_users, n_items:])
            if rows > n_users:
                self.fold_in(new[n_users:])
        seeds = np.random.SeedSequence([self._seed(), len(self._seen[1])]).spawn(3)
        rng = np.random.default_rng(seeds[0])
        new_users = np.repeat(np.arange(rows, dtype=np.int32), np.diff(new.indptr))
        old_users = np.repeat(np.arange(n_users, dtype=np.int32), np.diff(old.indptr)[:n_users])
        replay = rng.choice(old_users.size, min(old_users.size, new_users.size), replace=False)
        users = np.concatenate([new_users, old_users[replay]])
        items = np.concatenate([new.indices, old.indices[replay]]).astype(np.int32)
        self._seen = interaction_lists(old + new, rows, columns, "interactions")
        order = rng.permutation(users.size)
        adaptive = bool(self.adaptive_)
        sums = grown_sums(self._sums, rows, columns, adaptive)
        objective = implicit_objective(
            users[order], items[order], self._seen, columns, rank=self.rank, loss=self.loss,
            reg=check_nonnegative("reg_", self.reg_), max_sampled=self.max_sampled,
            seed=seeds[1], adaptive=adaptive,
            params=(self.user_factors_, self.item_factors_, self.item_bias_) + sums)
        step = self.step_ * (1.0 if adaptive else PARTIAL_FIT_STEP)
        result = engine_fit(objective, self.training_config(
            step=step, decay=self.decay_, epochs=passes, seed=seeds[2], early_stopping=None),
            run_controls(None, {}))
        self._keep_params(result.params)
        self.keep_run(result)
        return self

    def _seed(self):
        """The seed of this model's draws (fit's; a model file keeps it)."""
        return getattr(self, "seed_", 0)

    def _check_fitted(self):
        if not hasattr(self, "user_factors_"):
            raise not_fitted(self, "fit(interactions)")

    # -- fold-in: new or changed users and items, the other side frozen -------------

    def fold_in(self, interactions, users=None):
        """Users' factors from their interactions without retraining, the items
        frozen: each row of ``interactions`` (scipy.sparse, one column per item of
        the model) is a user, whose factors take the training's steps against the
        item factors, one pass per epoch (hogwild.problems.matrix_completion.
        fold_in). ``users``: None adds them as new users; else the indices of known
        users whose factors and items these rows replace. Returns the users'
        indices; recommend() serves them, their items left out."""
        self._check_fitted()
        n_users, n_items = self.user_factors_.shape[0], self.item_factors_.shape[0]
        indptr, items = self._fold_lists(interactions, n_items, "item")
        n = indptr.size - 1
        targets = np.arange(n_users, n_users + n) if users is None \
            else self._fold_targets(users, n_users, n, "users")
        factors, sums = np.zeros((n, self.rank), np.float32), np.ones(n, np.float32)
        V, b, (steps, reg, adaptive) = self.item_factors_, self.item_bias_, \
            self._fold_settings()
        fold_rows(lambda rows: implicit_user_rows(
            V, b, indptr, items, rows, factors, sums, self.loss == "warp", adaptive, steps, reg,
            self.max_sampled), n, self.workers)
        self.user_factors_ = rows_set(self.user_factors_, targets, factors)
        if self._sums:
            self._sums = (rows_set(self._sums[0], targets, sums), self._sums[1])
        self._seen = rows_replaced(*self._seen, n_items, targets, indptr, items)
        self.item_counts_ = np.bincount(self._seen[1], minlength=n_items).astype(np.int64)
        return targets

    def fold_in_items(self, interactions, items=None):
        """Items' factors and biases from the users who interacted with them,
        without retraining, the users frozen: each column of ``interactions``
        (scipy.sparse, one row per user of the model) is an item (see fold_in).
        ``items``: None adds them as new items; else the indices of known items
        these columns replace. Returns the items' indices."""
        self._check_fitted()
        n_users, n_items = self.user_factors_.shape[0], self.item_factors_.shape[0]
        columns = interactions.T if sp.issparse(interactions) else interactions
        indptr, users = self._fold_lists(columns, n_users, "user")
        n = indptr.size - 1
        targets = np.arange(n_items, n_items + n) if items is None \
            else self._fold_targets(items, n_items, n, "items")
        factors, biases = np.zeros((n, self.rank), np.float32), np.zeros(n, np.float32)
        sums = np.ones(n, np.float32)
        item_of_row = np.where(targets < n_items, targets, -1)
        U, V, b = self.user_factors_, self.item_factors_, self.item_bias_
        steps, reg, adaptive = self._fold_settings()
        seen_indptr, seen_items = self._seen
        fold_rows(lambda rows: implicit_item_rows(
            U, V, b, seen_indptr, seen_items, indptr, users, rows, item_of_row, factors,
            biases, sums, self.loss == "warp", adaptive, steps, reg, self.max_sampled,
            negative_draws(seen_items.size, n_items, self.loss == "warp", self.max_sampled)),
            n, self.workers)
        self.item_factors_ = rows_set(self.item_factors_, targets, factors)
        self.item_bias_ = rows_set(self.item_bias_, targets, biases)
        if self._sums:
            self._sums = (self._sums[0], rows_set(self._sums[1], targets, sums))
        self._seen = columns_replaced(seen_indptr, seen_items, n_items, targets,
                                      sp.csr_matrix(interactions))
        self.item_counts_ = np.bincount(self._seen[1], minlength=self.item_factors_.shape[0]
                                        ).astype(np.int64)
        return targets

    def _fold_lists(self, rows, width, column):
        """(indptr, sorted columns) of the rows to fold in, a matrix ``width`` wide."""
        if not sp.issparse(rows) or rows.ndim != 2:
            raise HogwildError(f"interactions must be a scipy.sparse matrix, got "
                               f"{type(rows).__name__}")
        if rows.shape[1] != width:
            raise HogwildError(f"interactions have {rows.shape[1]} {column}s; the model has "
                               f"{width}")
        side = "item" if column == "user" else "user"
        check_room(rows.shape[0] + getattr(self, f"{side}_factors_").shape[0], self.rank,
                   f"{side}s")
        return interaction_lists(rows, rows.shape[0], width, "interactions")

    @staticmethod
    def _fold_targets(given, count, n, what):
        targets = check_targets(given, count, what)
        if targets.size != n:
            raise HogwildError(f"{what} gives {targets.size} indices for the {n} {what} of "
                               "interactions")
        return targets

    def _fold_settings(self):
        """(one step per pass: the training's schedule over its epochs, reg,
        adaptive), checked: a model file's values may have been edited."""
        if not isinstance(self.adaptive_, (bool, np.bool_)):
            raise HogwildError(f"adaptive_ must be True or False, got {self.adaptive_!r}")
        return (pass_steps(StepSchedule(self.step_schedule, self.step_, self.decay_),
                           check_int("epochs", self.epochs, 1)),
                np.float32(check_nonnegative("reg_", self.reg_)), bool(self.adaptive_))

    def save(self, path):
        """Write the fitted model to an .npz file (hogwild.model_file)."""
        self._check_fitted()
        write_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                    {"params": self.get_params(), "workers": self.workers_,
                     "resolved": {"step": self.step_, "decay": self.decay_, "reg": self.reg_,
                                  "init_scale": self.init_scale_, "adaptive": self.adaptive_,
                                  "seed": self._seed()}},
                    {"user_factors": self.user_factors_, "item_factors": self.item_factors_,
                     "item_bias": self.item_bias_, "item_counts": self.item_counts_,
                     "seen_indptr": self._seen[0], "seen_items": self._seen[1],
                     **dict(zip(("user_sums", "item_sums"), self._sums))})

    @classmethod
    def load(cls, path):
        """A model written by save(); a file of another kind or version is refused."""
        def build(meta, arrays):
            model = cls(**meta["params"])
            model.user_factors_, model.item_factors_ = arrays["user_factors"], \
                arrays["item_factors"]
            model.item_bias_, model.item_counts_ = arrays["item_bias"], arrays["item_counts"]
            model._seen = (arrays["seen_indptr"], arrays["seen_items"])
            # adaptive rates' sums (files written before partial_fit kept none)
            model._sums = tuple(arrays[name] for name in ("user_sums", "item_sums")
                                if name in arrays)
            model.workers_, model.history_ = meta["workers"], []
            for name, value in meta["resolved"].items():
                setattr(model, name + "_", value)
            _check_shapes(model)
            return model
        return read_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                          "implicit-feedback model", build)


def _check_shapes(model):
    """A loaded model's arrays fit each other (a ValueError naming the first that
    does not: an edited file would index past them)."""
    users = model.user_factors_.shape[0] if model.user_factors_.ndim == 2 else -1
    items = model.item_factors_.shape[0] if model.item_factors_.ndim == 2 else -1
    indptr, seen_items = model._seen
    check_shapes((("user_factors", model.user_factors_, (users, model.rank)),
                  ("item_factors", model.item_factors_, (items, model.rank)),
                  ("item_bias", model.item_bias_, (items,)),
                  ("item_counts", model.item_counts_, (items,)),
                  ("seen_indptr", indptr, (users + 1,)),
                  *zip(("user_sums", "item_sums"), model._sums, ((users,), (items,)))),
                 indptr, seen_items, items, "the items each user interacted with")
    if any(not np.all(np.isfinite(sums) & (sums >= 1)) for sums in model._sums):
        raise ValueError("user_sums or item_sums holds a value below 1 (an adaptive rate's "
                         "sum starts at 1)")
