"""SparseSVM: the scikit-learn estimator around the objectives."""
import numpy as np
import scipy.sparse as sp

from hogwild.backends import get_backend
from hogwild.pooling import LOCAL, samples_pool
from hogwild.config import RunControls
from hogwild.disk_arrays import csr_rows_taken, in_threads, part_bounds
from hogwild.engine import fit as engine_fit
from hogwild.errors import HogwildError, check_int, choose
from hogwild.estimator import (Params, drawn_seed, not_fitted, run_controls,
                               training_parameters)
from hogwild.model_file import read_model, write_model
from hogwild.phases import phase
from hogwild.problems.multiclass import CLASS_SLOT, ovr_error_metric, ovr_scores
from hogwild.problems.sparse_svm.inputs import (as_csr, check_class_count, check_loss, check_reg,
                                               class_indices, class_weights, distinct_labels,
                                               label_array,
                                               sample_weights, signs)
from hogwild.problems.sparse_svm.kernels import (INTERCEPT_PAD, INTERCEPT_SLOT,
                                                _decision_values, _positive_rows, intercept_of)
from hogwild.problems.sparse_svm.crossed import (check_crossings, crossed_positive_rows,
                                                 crossed_record, crossed_scores, scoring_data)
from hogwild.problems.sparse_svm.crossed import take as take_crossings
from hogwild.problems.sparse_svm.kernels import INTERCEPT_SUMS_SLOT
from hogwild.problems.sparse_svm.objectives import (ADAPTIVE_INTERCEPT_RATE,
                                                   DENSE_INTERCEPT_RATE, INTERCEPT_RATE,
                                                   auto_adaptive_step, auto_step, default_reg,
                                                   error_rate_metric, feature_counts,
                                                   multiclass_objective, svm_objective)
from hogwild.schedulers import get_scheduler
from hogwild.steps import StepSchedule

MULTI_CLASS = ("ovr", "multinomial")  # more than two classes: how they train
# step='auto' times this for a schedule: inverse_updates starts 8x higher and falls
# (decay 4) to 1.6x by the first epoch's end. Chosen on news20 20 classes and a9a;
# judged on imdb, news20 binary, digits, breast cancer, wine and a 5-class synthetic
# set (docs/engine.md): final objective lower on 5 of 6 (news20 binary 1.3% higher),
# accuracy after 1-2 epochs higher on the larger sets, within 1-2 test rows at 20.
AUTO_STEP_FACTOR = {"inverse_updates": 8.0}
DEFAULT_DECAY = {"geometric": 0.9, "inverse_updates": 4.0}  # decay=None; else 1
# step_schedule=None. Two classes keep the geometric schedule: at 2 workers auto
# replication runs them on merged replicas ("worker", merged "mixed" once an epoch),
# and each replica's half epoch of large early steps, summed, leaves the objective
# 3-4% higher after 20 epochs (news20 binary: 0.1128 against 0.1085 geometric, and
# 0.1094 shared or serial). More classes run shared (replication's rule for rows of
# several values), where inverse_updates reaches the test accuracy of 3 geometric
# epochs in 2 (news20 20 classes; digits 0.946 against 0.921 after 2). Two classes'
# adaptive steps keep it too: AdaGrad's own 1/sqrt(t) leaves the last iterate
# wandering at its noise level (one worker, 20 epochs, constant base step: the
# objective rose in 9, 4 and 3 epochs on a9a, news20 and imdb; geometric 0.9: 6 rises
# of a9a's 5th digit at its optimum, 0 and 1 on the others, news20 ending at 0.1093
# against 0.1253, test errors within 0.12 points).
SCHEDULE_BY_CLASSES = {2: "geometric"}  # more classes: "inverse_updates"
SCHEDULERS = ("hogwild", "locked", "serial", "colored", "cyclades")
SCORED_PER_THREAD = 1 << 18  # nonzeros below which scoring rows takes no thread of its own
MODEL_FILE_KIND = "hogwild.SparseSVM"
MODEL_FILE_VERSION = 1


def _epoch_seed(seed, epoch):
    """The seed of one partial_fit epoch, derived from the estimator's."""
    if isinstance(seed, np.random.Generator):
        seed = seed.bit_generator.seed_seq
    if not isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(seed)
    return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, epoch))



# --- estimator --------------------------------------------------------------------

@training_parameters(
    own={"loss": "hinge", "reg": None, "fit_intercept": True, "class_weight": None,
         "shuffle_rows": True, "multi_class": "ovr", "adaptive": None},
    epochs=20, step="auto", decay=None, step_schedule=None, shuffle_block=16,
    replication=None,
    notes={"replication": "None: 'auto' on the backends that run it (threads, processes, "
                          "mpi), else 'shared'; what auto chose, and why, is in replicated_ "
                          "(a run too short for its probe stays shared; a longer one probes "
                          "'hot' copies against 'shared' and keeps the faster).",
           "step": "'auto': with adaptive steps 2 / (mean L1 row norm), so that a row "
                   "of fresh features moves its margin by about 2; else 0.2 / (mean "
                   "squared row norm), 8 times that for the inverse_updates schedule "
                   "(with decay 4 the step is 1.6 times 0.2 / norm by the first epoch's "
                   "end, the larger ones averaged out). Both suit unit-norm TF-IDF rows "
                   "and binary features alike; the value used is step_.",
           "decay": "None: 0.9 for the geometric schedule, 4 for inverse_updates, 1 for "
                    "the others; the value used is decay_.",
           "step_schedule": "None: 'inverse_updates' with more than two classes, else "
                            "'geometric' (SCHEDULE_BY_CLASSES), also with adaptive steps, "
                            "where it anneals the noise AdaGrad's own 1/sqrt(t) leaves; "
                            "the value used is step_schedule_.",
           "scheduler": "SparseSVM runs 'hogwild', 'locked', 'serial', 'colored' and "
                        "'cyclades'; the last two run together only samples that share no "
                        "feature, and need fit_intercept=False.",
           "shuffle_block": "The rows are shuffled once (by the seed) unless "
                            "shuffle_rows=False."})
class SparseSVM(Params):
    """Linear classifier on sparse data trained with Hogwild! SGD.

    scikit-learn compatible (fit / predict / decision_function / score,
    get_params / set_params), so it works in pipelines and cross-validation;
    scikit-learn itself is not required. With the hinge loss,
    samples outside the margin regularise lazily (see the kernels' comment): the same
    objective in expectation, with far fewer writes to shared memory.

    Parameters
    ----------
    loss : {'hinge', 'logistic'}, default 'hinge'
        The linear SVM's hinge loss or the logistic loss.
    reg : float or None, default None
        L2 strength: the objective is mean loss + reg/2 ||w||^2 (scikit-learn's
        alpha; LIBLINEAR's C = 1 / (n * reg)). None: from the data's shape,
        max(n, p) / n^2 for n rows and p features that occur, at most 1e-4
        (LIBLINEAR's C = 1 while p <= n; see objectives.default_reg); the value
        used is reg_. With None and adaptive steps the first epoch takes no
        penalty step (its samples are all unseen, as in online learning: see
        the kernels), the later ones minimise the objective.
    fit_intercept : bool, default True
        Learn an unregularised intercept b, the score being x . w + b (as
        scikit-learn's SGDClassifier; LIBLINEAR's -B 1 is the regularised
        variant). Without one, an all-zero row has score 0 and is predicted
        negative, and a rare class pulls the boundary through the origin.
    class_weight : dict, 'balanced' or None, default None
        Weights of the classes' samples, multiplying sample_weight: {label:
        weight} (a class not named weighs 1), or 'balanced', n / (2 x the class's
        count), as scikit-learn's.
    multi_class : {'ovr', 'multinomial'}, default 'ovr'
        With more than two classes: one-vs-rest (K binary problems in one pass,
        as SGDClassifier), or, for loss='logistic', the multinomial (softmax)
        model, whose predict_proba is the softmax of the scores (as scikit-learn's
        LogisticRegression).
    adaptive : bool or None, default None
        AdaGrad steps per feature (hogwild.adaptive): each feature's step is
        step / sqrt(its squared gradients so far), as Vowpal Wabbit's adaptive
        updates, so rare features keep learning while frequent ones settle, and
        feature scales do not matter. None: True with two classes, False with more
        (their one-vs-rest and softmax kernels step by the schedule); the value
        used is adaptive_.
    shuffle_rows : bool, default True
        Shuffle the rows once before training (a copy of X). False for rows
        stored in random order already (a generated click log, a shuffled file):
        no copy, and X may stay memory-mapped or stream from disk.
    {training parameters}

    Attributes
    ----------
    coef_ : numpy.ndarray of float32, shape (n_features,)
    intercept_ : numpy.ndarray, shape (1,)
        [0.] without an intercept.
    classes_ : numpy.ndarray, shape (2,)
        A score > 0 predicts classes_[1], else classes_[0] (see
        predicts_positive); the recorded test error counts exactly the mistakes
        of predict().
    n_features_in_ : int
    step_ : float
        The step used (step='auto' resolved).
    step_schedule_, decay_ : str, float
        The step schedule and decay used (None resolved).
    reg_ : float
        The L2 strength used (None resolved).
    adaptive_ : bool
        Whether the steps were adaptive (None resolved).
    squared_gradients_ : numpy.ndarray of float32, shape (n_features + 1,)
        With adaptive steps: each feature's sum of squared gradients, then the
        intercept's, so that partial_fit (after fit, or after load) continues the
        steps where they were.
    n_iter_ : int
        Epochs trained: fit's epochs (fewer where early_stopping stopped it), plus
        one per partial_fit.
    seed_ : int
        The seed used: random_state, or the one drawn for random_state=None (pass
        it to reproduce the run; with one worker, bit for bit).
    dense_input_ : bool
        X was given dense (not scipy.sparse): the intercept then takes a feature's
        step, as in scikit-learn's SGD, else a hundredth of it.
    {run attributes}
    """

    def __sklearn_tags__(self):
        """What scikit-learn (>= 1.6) asks of an estimator it meets in a pipeline."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags
        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(multi_class=True),
                    input_tags=InputTags(sparse=True), non_deterministic=True)

    def fit(self, X, y, eval_set=None, sample_weight=None, crossings=None, **controls):
        """Train on X (n x d, sparse or dense) and binary labels y.

        eval_set=(X_test, y_test) records the test error after every epoch in
        ``history_`` (with crossings: (X_test, y_test, crossings_test)).
        sample_weight: one weight >= 0 per sample, scaling its loss (and so its
        gradient; the regulariser is not weighted), times class_weight's.
        crossings: quadratic features of two classes' rows (a
        hogwild.datasets.vw.Crossings, from load_vw's ``quadratic``), crossed by the
        kernels as they train, never stored; the model then scores rows with
        theirs (predict(X, crossings)).
        ``controls`` are hogwild.RunControls fields: callback(record) once per
        epoch, progress, checkpoint, checkpoint_every, resume (with the same X, y and
        seed), objective_every (default None here: the exact objective after the
        last epoch alone, NaN in the others' records; 1 measures every epoch, a pass
        over the samples that is a third of a short one-vs-rest epoch, as
        SGDClassifier, which measures none, does not pay).
        """
        automatic_step = self._check_params()
        pool = samples_pool(self.backend, self.distributed)  # a rank's own samples: the job's
        with phase("check data"):
            self.dense_input_ = not sp.issparse(X)
            X, targets, classes = self._samples(X, y, sample_weight, pool=pool)
            self.crossed_ = check_crossings(crossings, X, classes.size)
        evaluate = None
        if eval_set is not None:
            X_test = as_csr(eval_set[0], n_features=X.shape[1], estimator=self)
            codes, _ = class_indices(label_array(eval_set[1], X_test.shape[0]), classes)
            evaluate = error_rate_metric(X_test, signs(codes), crossings=self._crossings_of(
                eval_set[2] if len(eval_set) > 2 else None, X_test)) if classes.size == 2 \
                else ovr_error_metric(X_test, codes, classes.size)
        if not isinstance(self.shuffle_rows, (bool, np.bool_)):
            raise HogwildError(f"shuffle_rows must be True or False, got {self.shuffle_rows!r}")
        seed = self.seed_ = drawn_seed(self.random_state, self.backend)
        X, targets, validation, crossings = self._hold_out(X, targets, classes, crossings, pool)
        if self.shuffle_block != 1 and self.shuffle_rows:
            with phase("shuffle"):
                rows = np.random.default_rng(seed).permutation(X.shape[0])
                X = X[rows]
                targets = targets[rows] if classes.size == 2 else tuple(t[rows] for t in targets)
                crossings = crossings and take_crossings(crossings, rows)
        with phase("objective"):
            counts, samples = pool.sum(feature_counts(X, crossings)), pool.sum(X.shape[0])
            self._resolve_model(samples, counts, classes.size)
            self._resolve_schedule(X if automatic_step else None, classes.size,
                                   crossings=crossings, pool=pool)
            objective = self._objective(X, targets, classes.size, seed, counts, crossings,
                                        samples)
        result = engine_fit(objective.with_validation(validation), self.training_config(
            step=self.step_, step_schedule=self.step_schedule_, decay=self.decay_, seed=seed),
            run_controls(evaluate, {"objective_every": None, **controls}))
        self.classes_, self.n_features_in_ = classes, X.shape[1]
        self.n_iter_ = len(result.history)
        self._keep_model(result)
        return self

    def _hold_out(self, X, targets, classes, crossings=None, pool=LOCAL):
        """(X, targets) to train on, the validation Metric (their error rate) of the
        rows early_stopping holds out, and the crossings of the rows kept; with no
        early_stopping, (X, targets, None, crossings)."""
        split = self.held_out(X.shape[0], "rows")
        if split is None:
            return X, targets, None, crossings
        if pool.own:
            raise HogwildError("early stopping holds out rows of each rank's own samples, and "
                               "the ranks would stop apart: give a test set to watch instead")
        rows, held = split  # read from files, not through maps (disk_arrays)
        kept_X, held_X = csr_rows_taken(X, rows), csr_rows_taken(X, held)
        if classes.size == 2:
            return kept_X, targets[rows], error_rate_metric(
                held_X, signs(targets[held] > 0), "validation_error",
                crossings and take_crossings(crossings, held)), \
                crossings and take_crossings(crossings, rows)
        return kept_X, tuple(t[rows] for t in targets), ovr_error_metric(
            held_X, targets[0][held], classes.size, "validation_error"), None

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch over the batch (X, y), from the current model: for data that
        arrives in pieces (a stream, or more than memory holds). The first call
        needs ``classes`` (both labels the model will see); later batches must
        have the same features and labels among them. The step is the schedule's
        at epoch ``n_iter_`` (step='auto' is taken from the first batch), so the
        schedule continues across calls, and after fit too."""
        automatic_step = self._check_params()
        first = not hasattr(self, "coef_")
        if getattr(self, "crossed_", None) is not None:
            raise HogwildError("partial_fit trains rows without quadratic features, and this "
                               "model was fitted with them; fit it again on all the rows")
        if first and classes is None:
            raise HogwildError("the first call to partial_fit needs classes= (every label "
                               "the model will see)")
        if classes is not None:
            given = distinct_labels(label_array(classes, len(classes)))
            if given.size < 2:
                raise HogwildError(f"classes={given.tolist()}: a classifier needs 2 classes "
                                   "or more")
            if not first and not np.array_equal(given, self.classes_):
                raise HogwildError(f"classes={given.tolist()} differs from the classes the "
                                   f"model was fitted with, {self.classes_.tolist()}")
        dense = not sp.issparse(X)
        with phase("check data"):
            X, targets, _ = self._samples(X, y, sample_weight,
                                          given if first else self.classes_,
                                          None if first else self.n_features_in_)
        if first:
            self._resolve_model(X.shape[0], feature_counts(X), given.size)
            self._resolve_schedule(X if automatic_step else None, given.size)
            self.dense_input_ = dense
            self.classes_, self.n_features_in_, self.n_iter_ = given, X.shape[1], 0
        if not hasattr(self, "seed_"):  # a first call, or a model read from a file
            self.seed_ = drawn_seed(self.random_state, self.backend)
        # each call draws its own order and lazy turns: the same batch given again is
        # another epoch, not the same one
        seed = _epoch_seed(self.seed_, self.n_iter_)
        objective = self._objective(X, targets, self.classes_.size, seed)
        if not first:  # from the current model
            if self.classes_.size == 2:
                objective.params[0][:] = self.coef_
                objective.params[1][INTERCEPT_SLOT] = self.intercept_[0]
                if self.adaptive_:
                    objective.params[2][:] = self.squared_gradients_[:-1]
                    objective.params[1][INTERCEPT_SUMS_SLOT] = self.squared_gradients_[-1]
            else:
                objective.params[0][:] = self.coef_.T
                objective.params[1][CLASS_SLOT:CLASS_SLOT + self.classes_.size] = self.intercept_
        if not hasattr(self, "step_schedule_"):  # a model read from a file
            self._resolve_schedule(None, self.classes_.size, self.step_)
        batch = StepSchedule(self.step_schedule_, self.step_, self.decay_).from_epoch(
            self.n_iter_)
        # replication=None is 'shared' here: auto's probe would cost more than a batch
        # one epoch a call: early_stopping is fit's (as SGDClassifier's partial_fit)
        config = self.training_config(step=batch.step, epochs=1, decay=batch.decay,
                                      step_schedule=batch.kind, early_stopping=None,
                                      replication=self.replication or "shared", seed=seed)
        self._keep_model(engine_fit(objective, config, RunControls()))
        self.n_iter_ += 1
        return self

    def _adaptive(self, n_classes):
        """The adaptive parameter with None resolved for ``n_classes`` classes, or a
        HogwildError where the kernels of that many have no adaptive steps."""
        if self.adaptive is None:
            return n_classes == 2
        if self.adaptive and n_classes > 2:
            raise HogwildError(f"adaptive=True: adaptive steps are for two classes, and y has "
                               f"{n_classes}; pass adaptive=None (the default) or False")
        return bool(self.adaptive)

    def _schedule(self, n_classes):
        """(step_schedule, decay) with None resolved (see their parameters)."""
        kind = self.step_schedule or SCHEDULE_BY_CLASSES.get(n_classes, "inverse_updates")
        return kind, DEFAULT_DECAY.get(kind, 1.0) if self.decay is None else self.decay

    def _resolve_model(self, n_samples, counts, n_classes):
        """Set reg_ and adaptive_ (None resolved from the data's shape and classes)."""
        self.adaptive_ = self._adaptive(n_classes)
        self.reg_ = default_reg(n_samples, counts) if self.reg is None else float(self.reg)
        self.__dict__.pop("squared_gradients_", None)  # a previous fit's

    def _resolve_schedule(self, X, n_classes, step=None, crossings=None, pool=LOCAL):
        """Set step_schedule_, decay_ and step_ (step='auto' from X and its
        crossings, over the job's samples in ``pool``, when X is given, else the
        step parameter, or ``step``), after _resolve_model."""
        self.step_schedule_, self.decay_ = self._schedule(n_classes)
        if X is None:
            self.step_ = step if step is not None else self.step
        elif self.adaptive_:
            self.step_ = auto_adaptive_step(X, crossings, pool)
        else:
            self.step_ = auto_step(X, pool) * AUTO_STEP_FACTOR.get(self.step_schedule_, 1.0)

    def training_config(self, **resolved):
        """Params.training_config, replication=None resolved (see _replication) and
        the step schedule's None (that of the fitted classes, two before a fit)."""
        kind, decay = self._schedule(len(getattr(self, "classes_", ())) or 2)
        return super().training_config(**{"replication": self._replication(),
                                          "step_schedule": kind, "decay": decay,
                                          **resolved})

    def _replication(self):
        """The replication given, or for None 'auto' where the backend runs it."""
        if self.replication is not None:
            return self.replication
        return "auto" if "auto" in get_backend(self.backend).replication_modes else "shared"

    def _check_params(self):
        """The parameters checked before any work; whether the step is automatic."""
        check_loss(self.loss)
        choose(MULTI_CLASS, self.multi_class, "multi_class")
        if self.multi_class == "multinomial" and self.loss != "logistic":
            raise HogwildError(f"multi_class='multinomial' is the logistic loss's softmax "
                               f"model; this SparseSVM has loss={self.loss!r}")
        if self.reg is not None:
            check_reg(self.reg)
        if not (self.adaptive is None or isinstance(self.adaptive, (bool, np.bool_))):
            raise HogwildError(f"adaptive must be True, False or None, got {self.adaptive!r}")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise HogwildError(f"fit_intercept must be True or False, got {self.fit_intercept!r}")
        choose(SCHEDULERS, self.scheduler, "scheduler")
        automatic_step = isinstance(self.step, str) and self.step == "auto"
        # step_schedule=None: checked as inverse_updates, which takes any decay >= 0; a
        # decay the schedule of the data's classes refuses is named by fit
        kind, decay = self._schedule(3)
        self.training_config(step=1.0 if automatic_step else self.step, step_schedule=kind,
                             decay=decay)
        if self.fit_intercept and "supports" in get_scheduler(self.scheduler).needs:
            raise HogwildError(
                f"scheduler={self.scheduler!r} runs together only samples that share no "
                "coordinate, and an intercept is a coordinate of every sample; pass "
                "fit_intercept=False (--no-intercept) or another scheduler")
        return automatic_step

    def _samples(self, X, y, sample_weight, classes=None, n_features=None, pool=LOCAL):
        """(X as CSR, the targets, the classes, the job's in ``pool``): with two
        classes the targets are the labels +-1 times each sample's weight, with
        more (class indices, weights)."""
        if y is None:
            raise HogwildError("SparseSVM requires y to be passed, but the target y is None")
        X = as_csr(X, n_features=n_features, estimator=self)
        y = label_array(y, X.shape[0])
        if classes is None:
            classes = pool.union(distinct_labels(y))
            if classes.size < 2:
                raise HogwildError(f"y has 1 class ({classes.tolist()[0]!r}); a classifier "
                                   "needs samples of 2 classes or more")
        if classes.size > 2:
            check_class_count(classes.size, X.shape[0], X.nnz)
        codes, classes = class_indices(y, classes)
        weights = sample_weights(sample_weight, X.shape[0])
        per_class = class_weights(self.class_weight, classes, codes, pool)
        weight = None if weights is None and per_class is None else \
            (1.0 if weights is None else weights) * (1.0 if per_class is None else per_class)
        if weight is not None and not (weight != 0).any():
            raise HogwildError("every sample has weight zero: there is nothing to learn")
        if classes.size > 2:
            return X, (codes, np.ones(X.shape[0], np.float32) if weight is None
                       else weight.astype(np.float32)), classes
        labels = signs(codes)
        if weight is not None:
            labels = (labels * weight).astype(np.float32)
        return X, labels, classes

    def _objective(self, X, targets, n_classes, seed, counts=None, crossings=None,
                   samples=None):
        """The binary Objective, or the one-vs-rest one of more classes (reg_ and
        adaptive_ resolved; ``counts``: feature_counts(X) where known; ``samples``:
        the job's where X holds a rank's own)."""
        if n_classes == 2:
            return svm_objective(X, targets, self.loss, self.reg_, seed,
                                 bool(self.fit_intercept), self._intercept_rate(),
                                 self.adaptive_, counts,
                                 penalty_from=int(self.reg is None and self.adaptive_),
                                 crossings=crossings, reg_samples=samples)
        loss = "multinomial" if self.multi_class == "multinomial" else self.loss
        return multiclass_objective(X, *targets, n_classes, loss, self.reg_, seed,
                                    bool(self.fit_intercept), self._intercept_rate(), counts,
                                    reg_samples=samples)

    def _intercept_rate(self):
        """The intercept's step per unit step: a feature's with adaptive steps, else
        scikit-learn's rule, by X's form."""
        if self.adaptive_:
            return ADAPTIVE_INTERCEPT_RATE
        return DENSE_INTERCEPT_RATE if self.dense_input_ else INTERCEPT_RATE

    def _keep_model(self, result):
        if self.classes_.size == 2:
            self.coef_ = result.params[0]
            self.intercept_ = intercept_of(result.params)
            if self.adaptive_:
                self.squared_gradients_ = np.append(
                    result.params[2], result.params[1][INTERCEPT_SUMS_SLOT])
        else:  # scikit-learn's shapes: (K, d) and (K,)
            self.coef_ = np.ascontiguousarray(result.params[0].T)
            self.intercept_ = result.params[1][CLASS_SLOT:CLASS_SLOT + self.classes_.size].copy()
        self.keep_run(result)

    def _check_fitted(self):
        """The number of classes of a fitted model (else scikit-learn's error)."""
        if not hasattr(self, "coef_"):
            raise not_fitted(self, "fit(X, y)")
        return self.classes_.size

    def decision_function(self, X, crossings=None):
        """x . coef_ + intercept_ for each row of X, computed by the training
        metric's own float32 code (_score), so predict() and the recorded test
        error never disagree on a row near the boundary; with more than two
        classes, one column per class. ``crossings``: the rows' quadratic features,
        for a model fitted with them."""
        if self._check_fitted() > 2:
            return self._class_scores(X)
        return self._per_row((_decision_values, crossed_scores), X, np.float32, crossings)

    def _class_scores(self, X):
        """The (n, K) scores of the one-vs-rest model."""
        X = as_csr(X, n_features=self.n_features_in_, estimator=self, own_indices=True)
        k = self.classes_.size
        intercepts = np.zeros(CLASS_SLOT + k + 16, np.float32)
        intercepts[CLASS_SLOT:CLASS_SLOT + k] = self.intercept_
        out = np.empty((X.shape[0], k), np.float32)
        ovr_scores(np.ascontiguousarray(self.coef_.T, np.float32), intercepts, X.indptr,
                   X.indices, X.data, out)
        return out

    def _positive(self, X, crossings=None):
        """predicts_positive for each row of X, one byte a row."""
        return self._per_row((_positive_rows, crossed_positive_rows), X, np.bool_, crossings)

    def _crossings_of(self, crossings, X):
        """The crossings a scoring of X takes: those given, which a model fitted with
        quadratic features needs (and one without refuses)."""
        crossed = getattr(self, "crossed_", None)
        if crossed is None and crossings is not None:
            raise HogwildError("crossings given, but this model was fitted without "
                               "quadratic features")
        if crossed is not None:
            if crossings is None:
                raise HogwildError(f"this model was fitted with quadratic features "
                                   f"({', '.join(crossed['pairs'])}): give the rows' crossings "
                                   "(load_vw(..., quadratic=...).crossings)")
            check_crossings(crossings, X, 2, like=crossed)
        return crossings

    def _per_row(self, kernels, X, dtype, crossings=None):
        """The value of kernels[0] (kernels[1] with crossings) for each row of X,
        the rows split over the usable cores (a row's score waits on memory: one
        thread scored 10^6 rows of 20 hashed features in 0.35 s)."""
        self._check_fitted()
        X = as_csr(X, n_features=self.n_features_in_, estimator=self, own_indices=True)
        crossings = self._crossings_of(crossings, X)
        padded = np.zeros(INTERCEPT_PAD, np.float32)
        padded[INTERCEPT_SLOT] = self.intercept_[0]
        out = np.empty(X.shape[0], dtype)
        params = (np.ascontiguousarray(self.coef_, np.float32), padded)
        rows = part_bounds(X.shape[0], max(1, X.shape[0] * SCORED_PER_THREAD // max(X.nnz, 1)))

        def score_part(part):
            lo, hi = int(rows[part]), int(rows[part + 1])
            if crossings is None:
                kernels[0](params, (X.indptr[lo:hi + 1], X.indices, X.data), out[lo:hi])
            else:
                kernels[1](params, scoring_data(X[lo:hi], crossings.rows(lo, hi)), out[lo:hi])

        in_threads(score_part, len(rows) - 1)
        return out

    def predict(self, X, crossings=None):
        if self._check_fitted() > 2:  # the highest score; ties: the first class
            return self.classes_[self._class_scores(X).argmax(axis=1)]
        return np.where(self._positive(X, crossings), self.classes_[1], self.classes_[0])

    @property
    def predict_proba(self):
        """P(classes_[0]), P(classes_[1]) for each row of X: the logistic loss's model,
        sigmoid(decision_function(X)); with more classes, each class's sigmoid
        normalised over the classes (multi_class='multinomial': their softmax). The
        hinge loss models no probability: there the attribute is missing (an
        AttributeError), as SGDClassifier's."""
        self._probabilistic("predict_proba")
        return self._predict_proba

    @property
    def predict_log_proba(self):
        """The logarithms of predict_proba's columns (loss='logistic' only)."""
        self._probabilistic("predict_log_proba")
        return self._predict_log_proba

    def _probabilistic(self, method):
        if self.loss != "logistic":
            raise AttributeError(f"{method} is for loss='logistic' (a probability model); "
                                 f"this SparseSVM has loss={self.loss!r}")

    def _predict_proba(self, X, crossings=None):
        return np.exp(self._predict_log_proba(X, crossings))

    def _predict_log_proba(self, X, crossings=None):
        score = self.decision_function(X, crossings).astype(np.float64)
        # log sigmoid(s) = -log(1 + e^-s), without overflow for either sign
        if score.ndim == 1:
            return np.column_stack([-np.logaddexp(0.0, score), -np.logaddexp(0.0, -score)])
        if self.multi_class == "multinomial":  # the softmax of the scores
            top = score.max(axis=1, keepdims=True)
            return score - top - np.log(np.exp(score - top).sum(axis=1, keepdims=True))
        # one-vs-rest: each class's sigmoid, normalised over the classes (as
        # scikit-learn's SGDClassifier)
        each = -np.logaddexp(0.0, -score)
        top = each.max(axis=1, keepdims=True)
        return each - top - np.log(np.exp(each - top).sum(axis=1, keepdims=True))

    def score(self, X, y, crossings=None):
        """Mean accuracy, with three boolean temporaries (it is run on training sets
        of 10^7 rows and more, whose rows are all in memory by then)."""
        if self._check_fitted() > 2:
            return float(np.mean(self.predict(X) == np.asarray(y)))
        right = self._positive(X, crossings)
        y = np.asarray(y)
        is_high = y == self.classes_[1]
        np.equal(right, is_high, out=right)
        known = np.equal(y, self.classes_[0])
        known |= is_high
        right &= known  # a label of neither class is a mistake
        return float(np.mean(right))

    def save(self, path):
        """Write the fitted model (coef_, intercept_, classes_ and the parameters)
        to an .npz file; see hogwild.model_file."""
        self._check_fitted()
        write_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION,
                    {"params": self.get_params(), "workers": self.workers_, "step": self.step_,
                     "n_iter": self.n_iter_, "dense_input": self.dense_input_,
                     "reg": self.reg_, "adaptive": self.adaptive_,
                     "crossed": getattr(self, "crossed_", None)},
                    {"coef": self.coef_, "intercept": self.intercept_, "classes": self.classes_,
                     **({"squared_gradients": self.squared_gradients_} if self.adaptive_
                        else {})})

    @classmethod
    def load(cls, path):
        """A model written by save(); a file of another kind or version is refused."""
        def build(meta, arrays):
            model = cls(**meta["params"])
            model.classes_ = arrays["classes"]
            k = model.classes_.shape[0] if model.classes_.ndim == 1 else 0
            if k < 2:
                raise ValueError(f"classes has shape {model.classes_.shape}, not (K,) with "
                                 "K >= 2")
            model.coef_ = _float_vector(arrays["coef"], "coef") if k == 2 \
                else _float_matrix(arrays["coef"], "coef", k)
            model.intercept_ = _float_vector(arrays["intercept"], "intercept",
                                             size=1 if k == 2 else k)
            model.n_features_in_ = model.coef_.shape[-1]
            model.workers_, model.step_ = meta["workers"], meta["step"]
            # files written before partial_fit: a fit of the model's epochs, sparse X
            model.n_iter_ = check_int("n_iter", meta.get("n_iter", model.epochs), 0)
            model.dense_input_ = bool(meta.get("dense_input", False))
            # files written before adaptive steps and reg=None: reg given, no AdaGrad
            model.reg_ = float(meta.get("reg", model.reg))
            if not 0 <= model.reg_ < np.inf:
                raise ValueError(f"reg is {model.reg_}, not a finite number >= 0")
            model.adaptive_ = bool(meta.get("adaptive", False))
            model.crossed_ = crossed_record(meta.get("crossed"), model.n_features_in_)
            if model.adaptive_:
                model.squared_gradients_ = _float_vector(
                    arrays["squared_gradients"], "squared_gradients",
                    size=model.n_features_in_ + 1, nonnegative=True)
            model.history_ = []
            return model
        return read_model(path, MODEL_FILE_KIND, MODEL_FILE_VERSION, "sparse linear classifier",
                          build)


def _float_matrix(array, name, rows):
    """A saved model's float matrix of ``rows`` rows, or a ValueError."""
    if array.ndim != 2 or array.dtype.kind != "f" or array.shape[0] != rows \
            or not np.isfinite(array).all():
        raise ValueError(f"{name} is {array.dtype}{list(array.shape)}, not a finite float "
                         f"matrix of {rows} rows (one per class)")
    return array


def _float_vector(array, name, size=None, nonnegative=False):
    """A saved model's float vector, or a ValueError naming what is wrong with it."""
    if array.ndim != 1 or array.dtype.kind != "f" or (size is not None and array.size != size) \
            or not np.isfinite(array).all() or (nonnegative and (array < 0).any()):
        raise ValueError(f"{name} is {array.dtype}{list(array.shape)}, not a finite"
                         f"{' nonnegative' if nonnegative else ''} float "
                         f"vector{f' of {size}' if size else ''}")
    return array

