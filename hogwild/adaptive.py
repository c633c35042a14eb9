"""Adaptive steps for objectives' kernels: AdaGrad (Duchi, Hazan and Singer, JMLR
2011), the per-coordinate step ``step / sqrt(sum of the coordinate's squared
gradients)`` of Vowpal Wabbit's --adaptive, LIBMF's and LightFM's adagrad.

A coordinate's step then falls with how often and how steeply it has moved, not
with the epoch: a rare feature keeps a large step while a frequent one settles, and
the step no longer depends on the features' scale (the first step of a coordinate
moves it by ``step`` whatever its gradient).

The sums are parameters like any other, so nothing in the engine treats them
apart: give the Objective, among its params, a float32 array of zeros shaped like
the coordinates it adapts, and list it beside them in the IdArray that names
their rows. Workers then write it lock-free like the parameters, and replicas,
checkpoints, resume, processes, MPI ranks, Ray nodes, streaming and the GPU carry
it as they carry them. Call these helpers from ``update`` (they are numba
functions, inlined into the compiled loops)::

    from hogwild.adaptive import adagrad_step

    def update(e, params, data, step):
        x, sums = params
        for k in range(data[0][e], data[0][e + 1]):
            j = data[1][k]
            adagrad_step(x, sums, j, gradient_of(e, j, params, data), step)
"""
import math

import numpy as np
from numba import njit

_LEAST_NORMAL = np.float32(np.finfo(np.float32).tiny)


@njit(nogil=True, inline="always")
def adagrad_rate(sums, j, gradient_square):
    """sums[j] += gradient_square; returns 1 / sqrt(sums[j]): coordinate j's step per
    unit step (0 while its sum is 0, when it has never had a gradient)."""
    total = sums[j] + gradient_square
    sums[j] = total
    return _inverse_root(total)


@njit(nogil=True, inline="always")
def adagrad_scale(sums, j):
    """1 / sqrt(sums[j]) without adding to it (0 for a sum of 0): the current step per
    unit step of coordinate j, e.g. for a regulariser's shrink between gradients."""
    return _inverse_root(sums[j])


@njit(nogil=True, inline="always")
def adagrad_scale_after(sums, j, gradient_square):
    """adagrad_rate's value without adding to sums[j]: the step per unit step that
    coordinate j would take with this gradient."""
    return _inverse_root(sums[j] + gradient_square)


@njit(nogil=True, inline="always")
def _inverse_root(total):
    """1 / sqrt(total), 0 for 0, without a branch: the root of max(total, the least
    normal float32) is taken whatever the sum and the 0 picked after, so that the
    kernels' loops around it stay vectorised (a branch around the root made them
    1.5x slower)."""
    scale = np.float32(1.0) / np.float32(math.sqrt(max(total, _LEAST_NORMAL)))
    return scale if total > 0 else np.float32(0.0)


@njit(nogil=True, inline="always")
def adagrad_step(x, sums, j, gradient, step):
    """One AdaGrad step on coordinate j: sums[j] += gradient**2, then
    x[j] -= step * gradient / sqrt(sums[j])."""
    g = np.float32(gradient)
    x[j] -= np.float32(step) * g * adagrad_rate(sums, j, g * g)
