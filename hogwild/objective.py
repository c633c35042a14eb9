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
  - optionally ``blocks``, a hogwild.schedulers.BlockLayout saying which samples
    never conflict (used by the ``blocked`` scheduler), ``supports``, a
    hogwild.conflicts.Supports listing the coordinates each sample touches (used
    by ``colored`` and ``cyclades``), ``conflicts``, a hogwild.coloring.Graph on
    the samples for when two samples that share a coordinate may still run
    together (GraphLab's edge consistency: only a vertex's own state is written,
    so neighbours conflict but vertices two apart do not; ``colored`` colours this
    graph instead of the supports'), and ``fastmath=True`` to
    let LLVM reassociate floating-point sums and vectorise short fixed-length
    loops (SIMD dot products) in the compiled loops (see
    hogwild.kernels.compiler.slp_vectorizer).

The engine compiles update and loss into its epoch loops (hogwild.kernels), so no
Python runs per sample, and the same plain functions can be compiled for other
targets later (processes, GPU).
"""
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from hogwild.errors import HogwildError
from hogwild.kernels.compiler import python_function
from hogwild.coloring import Graph
from hogwild.conflicts import Supports
from hogwild.schedulers import BlockLayout


def _as_array_tuple(arrays, what):
    if isinstance(arrays, np.ndarray):
        arrays = (arrays,)
    arrays = tuple(arrays)
    if not arrays:
        raise HogwildError(f"{what} must hold at least one numpy array")
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            raise HogwildError(f"{what}[{i}] must be a numpy array, got {type(a).__name__}")
        if not a.flags.c_contiguous:
            raise HogwildError(
                f"{what}[{i}] must be C-contiguous; pass np.ascontiguousarray(...)")
    return arrays


@dataclass(frozen=True)
class Objective:
    """A sparse separable objective; see the module docstring for the contract."""

    update: Callable
    loss: Callable
    params: tuple
    data: tuple
    n_samples: int
    name: str = field(default="objective")
    blocks: Optional[BlockLayout] = None
    supports: Optional[Supports] = None
    fastmath: bool = False
    conflicts: Optional[Graph] = None

    def __post_init__(self):
        object.__setattr__(self, "params", _as_array_tuple(self.params, "params"))
        object.__setattr__(self, "data", _as_array_tuple(self.data, "data"))
        for i, p in enumerate(self.params):
            if not p.flags.writeable:
                raise HogwildError(f"params[{i}] is read-only; the engine updates it in place")
        if int(self.n_samples) < 1:
            raise HogwildError(f"empty data: objective '{self.name}' has no samples")
        object.__setattr__(self, "n_samples", int(self.n_samples))
        for fn_name, arities, shape in (
                ("update", (4, 5), "(e, params, data, step[, epoch])"),
                ("loss", (3,), "(e, params, data)")):
            try:
                fn = python_function(getattr(self, fn_name))
            except TypeError as exc:
                raise HogwildError(f"{fn_name} must be a Python function, {exc}") from None
            if fn.__code__.co_argcount not in arities:
                raise HogwildError(f"{fn_name} must take {shape}; {fn.__name__} takes "
                                   f"{fn.__code__.co_argcount} arguments")
        if self.conflicts is not None and self.conflicts.n_vertices != self.n_samples:
            raise HogwildError(f"the conflict graph has {self.conflicts.n_vertices} vertices "
                               f"for {self.n_samples} samples")
