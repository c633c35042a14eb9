"""The objective protocol: what the engine needs to run any sparse separable SGD.

A sparse separable objective f(x) = (1/n) * sum_e f_e(x_e) is given by
  - params: a tuple of numpy arrays, the shared parameters x that every worker
    updates in place;
  - data: a tuple of numpy arrays holding the per-sample data (read only);
  - update(e, params, data, step): one SGD step on f_e, written in numba's
    compilable subset of Python; it must touch only the coordinates of x_e.
    An update that also takes ``epoch`` (0-based), update(e, params, data, step,
    epoch), receives it, e.g. to draw per-epoch random decisions;
  - loss(e, params, data): f_e at the current parameters (for evaluation);
  - optionally ``penalty(params, data)``: a term of the objective that depends on
    the parameters alone (a regulariser), as its sum over the n samples, computed
    in one pass over the parameters when the objective is measured; ``loss`` then
    leaves it out. An L2 penalty written per sample reads a second array at each
    of the sample's coordinates: five times the cost of the rest of a click
    log's loss pass (hogwild.problems.sparse_svm);
  - optionally ``blocks``, a hogwild.structure.BlockLayout saying which samples
    never conflict (used by the ``blocked`` scheduler), ``supports``, a
    hogwild.structure.Supports listing the coordinates each sample touches (used
    by ``colored`` and ``cyclades``; or a function returning one, called only when a
    scheduler needs them), ``conflicts``, a hogwild.structure.Graph on
    the samples for when two samples that share a coordinate may still run
    together (GraphLab's edge consistency: only a vertex's own state is written,
    so neighbours conflict but vertices two apart do not; ``colored`` colours this
    graph instead of the supports'), and ``fastmath=True`` to
    let LLVM reassociate floating-point sums and vectorise short fixed-length
    loops (SIMD dot products) in the compiled loops (see
    hogwild.kernels.compiler.slp_vectorizer);
  - optionally ``warp_update(e, lane, params, data, step)``, for the GPU backend
    only: the same step written for the 32 lanes of a CUDA warp working on one
    sample together (dense per-sample work such as rank-k factor rows spread over
    lanes, reduced with hogwild.kernels.warp.warp_sum). Without it the GPU runs
    ``update`` with one thread per sample;
  - optionally ``id_arrays``, hogwild.structure.IdArray declarations of which data
    arrays hold row ids of which parameter (and data) arrays: what
    replication="hot" needs to replicate only the hot rows. Declared ids are
    checked against the arrays they index when the objective is made;
  - ``integer_params=True`` for state that is not trained by SGD steps (a vertex
    program's labels, counts): parameters are otherwise floating point, since an
    integer array would truncate every step to nothing;
  - ``train_in_place=True`` when params were made for this one fit (fresh
    factors): the engine then trains those arrays themselves, 64-byte aligned
    ones without a copy (the objective's params are the result's), where
    otherwise it copies them first: at 10^7 x 10^7, 2.6 GB less.

Before the first update the engine also runs ``loss`` over every sample with
array indices checked (hogwild.engine), so an n_samples larger than the data, or
an id past an array's end, is an error that names the sample, never a read or
write of memory another array owns. ``indices_checked=True`` says the
objective's maker has checked that already (the built-in problems: every id
declared by ``id_arrays`` and so checked here, every other per-sample array
n_samples long), and the engine skips that pass (17 s of a 10^8-rating run's
set-up). ``sample_offsets``: the index of a data array of n_samples + 1 offsets
(a CSR matrix's indptr) into the per-nonzero arrays (those as long as its last
offset), so that hogwild.streaming can read a chunk of samples with their
nonzeros when those lie on disk beyond the run's memory.

The engine compiles update and loss into its epoch loops (hogwild.kernels), so no
Python runs per sample; the GPU backend compiles the same plain functions as CUDA
device functions.

A ``Metric`` is a held-out measure (test RMSE, error rate) computed by the
engine after each epoch on whichever device holds the parameters.
"""
import copy
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from hogwild.disk_arrays import extremes
from hogwild.errors import HogwildError, check_int
from hogwild.kernels.compiler import python_function
from hogwild.structure import BlockLayout, Graph, IdArray, Supports


def _as_array_tuple(arrays, what):
    if isinstance(arrays, np.ndarray):
        arrays = (arrays,)
    if not isinstance(arrays, (tuple, list)):
        raise HogwildError(f"{what} must be a numpy array or a tuple of them, got "
                           f"{type(arrays).__name__}")
    arrays = tuple(arrays)
    if not arrays:
        raise HogwildError(f"{what} must hold at least one numpy array")
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            raise HogwildError(f"{what}[{i}] must be a numpy array, got {type(a).__name__}")
        if a.ndim == 0:
            raise HogwildError(f"{what}[{i}] is 0-dimensional; the loops index arrays "
                               "(give np.array([x]) for a single value)")
        if not a.flags.c_contiguous:
            raise HogwildError(
                f"{what}[{i}] must be C-contiguous; pass np.ascontiguousarray(...)")
    return arrays


def _check_signature(fn, what, arities, shape):
    try:
        fn = python_function(fn)
    except TypeError as exc:
        raise HogwildError(f"{what} must be a Python function, {exc}") from None
    if fn.__code__.co_argcount not in arities:
        raise HogwildError(f"{what} must take {shape}; {fn.__name__} takes "
                           f"{fn.__code__.co_argcount} arguments")


def _check_ids(ids, params, data):
    """Every declared id indexes a row of each array the IdArray names (a HogwildError
    naming the first that does not: the compiled loops would read or write past
    the array)."""
    values = data[ids.ids]
    if not values.size:
        return
    low, high = extremes(values)
    indexed = [(held[i].shape[0] if held[i].ndim else 0, f"{kind}[{i}]")
               for kind, held, positions in (("params", params, ids.params),
                                             ("data", data, ids.data)) for i in positions]
    rows, name = min(indexed, key=lambda item: item[0])  # the first of the shortest
    if low < 0 or high >= rows:
        where = int(np.flatnonzero((values < 0) | (values >= rows))[0])
        raise HogwildError(f"data[{ids.ids}][{where}] = {values[where]} is not a row of "
                           f"{name}, which has {rows} rows (declared by an IdArray)")


def _check_validation(metric):
    if not isinstance(metric, Metric):
        raise HogwildError(f"validation must be a hogwild.Metric, got {type(metric).__name__}")


@dataclass(frozen=True)
class Objective:
    """A sparse separable objective; see the module docstring for the contract.

    Parameters
    ----------
    update : callable
        ``update(e, params, data, step[, epoch])``: one SGD step on sample ``e``, in
        numba's nopython subset, touching only the sample's coordinates.
    loss : callable
        ``loss(e, params, data) -> float``: the sample's loss at the parameters.
    params : tuple of numpy.ndarray
        The parameters every worker updates in place (floating point).
    data : tuple of numpy.ndarray
        The per-sample data, read only (bool, integer or floating point).
    n_samples : int
        Samples per epoch (>= 1).
    name : str, default "objective"
        Named in errors, checkpoints and results.
    blocks : hogwild.structure.BlockLayout, optional
        Which samples never conflict (scheduler "blocked", "fpsgd").
    supports : hogwild.structure.Supports or callable, optional
        The coordinates each sample touches, or a function returning them
        (schedulers "colored", "cyclades").
    fastmath : bool, default False
        Let LLVM reassociate floating-point sums and vectorise short loops.
    conflicts : hogwild.structure.Graph, optional
        The samples' conflict graph, where it is sparser than the supports'.
    warp_update : callable, optional
        ``warp_update(e, lane, params, data, step)``: the step for the 32 lanes of
        a CUDA warp (backend "gpu" only).
    id_arrays : tuple of hogwild.structure.IdArray, default ()
        Which data arrays hold row ids of which arrays (replication "hot").
    integer_params : bool, default False
        Integer state not trained by steps may be among the params.
    train_in_place : bool, default False
        Train these params themselves rather than a copy.
    indices_checked : bool, default False
        Every id was checked against its array: the engine skips its pass (on
        copies it reads from files, it checks the ranges of the ids in
        ``id_arrays`` and the ``sample_offsets`` instead, and makes its pass
        where they declare none).
    sample_offsets : int, optional
        The index of a data array of n_samples + 1 offsets (a CSR indptr), so that
        samples can be streamed from disk with their nonzeros.
    loss_samples : int, optional
        Estimate each epoch's objective on the first ``loss_samples`` samples
        rather than all: for samples stored in random order, an unbiased estimate
        at a fraction of a pass (where a pass costs much of an epoch). None: all.
    validation : hogwild.Metric, optional
        Held-out samples, scored after each epoch (lower is better) and recorded
        under the Metric's name; what early_stopping watches.
    penalty : callable, optional
        ``penalty(params, data) -> float``: the part of the n samples' summed loss
        that depends on the parameters alone, left out of ``loss``; called on the
        host (a numba.njit function for speed) each time the objective is
        measured.
    """

    update: Callable
    loss: Callable
    params: tuple
    data: tuple
    n_samples: int
    name: str = field(default="objective")
    blocks: Optional[BlockLayout] = None
    supports: Optional[Supports | Callable[[], Supports]] = None
    fastmath: bool = False
    conflicts: Optional[Graph] = None
    warp_update: Optional[Callable] = None
    id_arrays: tuple = ()
    integer_params: bool = False
    train_in_place: bool = False
    indices_checked: bool = False
    sample_offsets: Optional[int] = None
    loss_samples: Optional[int] = None
    validation: Optional["Metric"] = None
    penalty: Optional[Callable] = None

    def __post_init__(self):
        object.__setattr__(self, "params", _as_array_tuple(self.params, "params"))
        object.__setattr__(self, "data", _as_array_tuple(self.data, "data"))
        for i, p in enumerate(self.params):
            if not p.flags.writeable:
                raise HogwildError(f"params[{i}] is read-only; the engine updates it in place")
            if p.dtype.kind != "f" and not (self.integer_params and p.dtype.kind in "iu"):
                raise HogwildError(f"params[{i}] is {p.dtype}: parameters must be floating "
                                   "point (float32 or float64), or each update is truncated "
                                   "(integer_params=True for integer state that is not "
                                   "trained by steps)")
        for i, a in enumerate(self.data):
            if a.dtype.kind not in "biuf":
                raise HogwildError(f"data[{i}] is {a.dtype}: the compiled loops read numbers "
                                   "(bool, integer or floating point arrays)")
        if isinstance(self.n_samples, bool) or not isinstance(self.n_samples,
                                                              (int, np.integer)):
            raise HogwildError(f"n_samples must be an integer, got {self.n_samples!r}")
        if int(self.n_samples) < 1:
            raise HogwildError(f"empty data: objective '{self.name}' has no samples")
        object.__setattr__(self, "n_samples", int(self.n_samples))
        if self.loss_samples is not None:
            object.__setattr__(self, "loss_samples",
                               min(check_int("loss_samples", self.loss_samples, 1),
                                   self.n_samples))
        _check_signature(self.update, "update", (4, 5), "(e, params, data, step[, epoch])")
        _check_signature(self.loss, "loss", (3,), "(e, params, data)")
        if self.warp_update is not None:
            _check_signature(self.warp_update, "warp_update", (5,),
                             "(e, lane, params, data, step)")
        if self.penalty is not None:
            _check_signature(self.penalty, "penalty", (2,), "(params, data)")
        if not (self.supports is None or isinstance(self.supports, Supports)
                or callable(self.supports)):
            raise HogwildError(f"supports must be a hogwild.structure.Supports or a function "
                               f"returning one, got {type(self.supports).__name__}")
        object.__setattr__(self, "id_arrays", tuple(self.id_arrays))
        for ids in self.id_arrays:
            if not isinstance(ids, IdArray):
                raise HogwildError(f"id_arrays holds hogwild.structure.IdArray, got "
                                   f"{type(ids).__name__}")
            for kind, held, positions in (("data", self.data, (ids.ids, *ids.data)),
                                          ("params", self.params, ids.params)):
                for i in positions:
                    if not 0 <= i < len(held):
                        raise HogwildError(f"an IdArray names {kind}[{i}]; the objective "
                                           f"has {len(held)} {kind} arrays")
            if self.data[ids.ids].dtype.kind not in "iu":
                raise HogwildError(f"IdArray ids data[{ids.ids}] must hold integers, got "
                                   f"{self.data[ids.ids].dtype}")
            _check_ids(ids, self.params, self.data)
        if self.validation is not None:
            _check_validation(self.validation)
        if self.conflicts is not None and self.conflicts.n_vertices != self.n_samples:
            raise HogwildError(f"the conflict graph has {self.conflicts.n_vertices} vertices "
                               f"for {self.n_samples} samples")


    def with_validation(self, metric):
        """This objective with ``metric`` as its validation (None: unchanged); the
        other fields were checked when it was built (an id check is a pass over
        every sample's ids) and are not checked again."""
        if metric is None:
            return self
        _check_validation(metric)
        twin = copy.copy(self)
        object.__setattr__(twin, "validation", metric)
        return twin

    def sample_supports(self):
        """The samples' Supports (built now if they were declared as a function, and
        checked), or None when the objective declares none."""
        if self.supports is None:
            return None
        if isinstance(self.supports, Supports):
            if self.supports.n_samples != self.n_samples:
                raise HogwildError(f"objective '{self.name}': its supports describe "
                                   f"{self.supports.n_samples} samples, not {self.n_samples}")
            return self.supports.checked()
        supports = self.supports()
        if not isinstance(supports, Supports) or supports.n_samples != self.n_samples:
            raise HogwildError(f"objective '{self.name}': its supports function must return "
                               f"a hogwild.structure.Supports of {self.n_samples} samples")
        return supports.checked()


@dataclass(frozen=True)
class Metric:
    """A held-out metric that the engine computes after each epoch where the
    parameters live (on the GPU without copying them to the host):
    ``finish(mean over e of value(e, params, data))``, recorded under ``name``.

    ``value(e, params, data)`` is written like an objective's loss (numba's
    subset) over the metric's own ``data`` (a tuple of arrays, e.g. a test set),
    with ``n_samples`` samples. The squared error of a held-out rating with
    ``finish=math.sqrt`` is the test RMSE; 1.0 for a wrong sign, else 0.0, is the
    error rate.
    """

    name: str
    value: Callable
    data: tuple
    n_samples: int
    finish: Optional[Callable] = None

    def __post_init__(self):
        object.__setattr__(self, "data", _as_array_tuple(self.data, f"metric {self.name!r} data"))
        _check_signature(self.value, f"metric {self.name!r} value", (3,), "(e, params, data)")
        if int(self.n_samples) < 1:
            raise HogwildError(f"metric {self.name!r} has no samples")
        object.__setattr__(self, "n_samples", int(self.n_samples))
