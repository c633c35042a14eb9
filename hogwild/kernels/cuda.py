"""The user's update, compiled for the GPU from the same Python function.

An update written for the CPU calls numba helpers (``@njit`` functions, inlined
there). A CUDA kernel cannot call CPU code, so ``device_function`` rebuilds the
update with every numba helper it names (in its globals or closure cells,
recursively) replaced by a CUDA device function compiled from the helper's own
Python source. Nothing is written twice, and the CPU function is untouched.

``epoch_kernel`` wraps one update in the Hogwild! kernel: each GPU thread takes runs of
consecutive samples from the epoch's shuffled run list (a grid-stride loop) and applies
the update to the one parameter array in device memory, without atomics.
``warp_epoch_kernel`` does the same with a warp per run for an objective's
``warp_update`` (hogwild.kernels.warp). ``loss_sum_kernel`` and ``count_non_finite``
evaluate on the device, so an epoch's objective needs no copy of the parameters to the
host. All of this also runs under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1), which
is how CI tests it.
"""
import math
import types

import numpy as np
from numba import cuda  # a module global: the simulator swaps it for its own in kernels

from hogwild.kernels.compiler import fingerprint, python_function, takes_epoch
from hogwild.kernels.warp import WARP_SIZE

# Compiled device functions and kernels, keyed by the code fingerprint the CPU
# path uses: a new closure over the same code (matrix completion builds its
# update afresh every fit) finds the kernel compiled for the last one.
_device_functions = {}
_kernels = {}


def _is_numba_function(value):
    return hasattr(value, "py_func") and isinstance(value.py_func, types.FunctionType)


def device_function(fn, _building=None):
    """A CUDA device function compiled from fn's Python source, its numba helpers
    turned into device functions too."""
    source = python_function(fn)
    key = fingerprint(source)
    if key in _device_functions:
        return _device_functions[key]
    building = {} if _building is None else _building
    globals_ = dict(source.__globals__)
    for name in source.__code__.co_names:
        value = globals_.get(name)
        if _is_numba_function(value) and value.py_func is not source:
            globals_[name] = device_function(value, building)
    closure = None
    if source.__closure__:
        closure = tuple(types.CellType(device_function(cell.cell_contents, building)
                                       if _is_numba_function(cell.cell_contents)
                                       else cell.cell_contents)
                        for cell in source.__closure__)
    rebuilt = types.FunctionType(source.__code__, globals_, source.__name__,
                                 source.__defaults__, closure)
    rebuilt.__qualname__ = source.__qualname__
    compiled = cuda.jit(device=True)(rebuilt)
    _device_functions[key] = compiled
    return compiled


def _built_once(kind, fn, build):
    """build() once per (kind, fn's code)."""
    key = (kind, fingerprint(fn))
    if key not in _kernels:
        _kernels[key] = build()
    return _kernels[key]


def _runs_kernel(sample_update, lanes):
    """kernel(runs, first, last, run_length, limit, params, data, step, epoch):
    groups of ``lanes`` consecutive GPU threads (1, or a warp) share
    runs[first:last] in a grid-stride loop; run r is samples runs[r] ..
    min(runs[r] + run_length, limit) - 1, each passed in order to
    sample_update(e, lane, params, data, step, epoch) by every lane of the group."""
    @cuda.jit
    def kernel(runs, first, last, run_length, limit, params, data, step, epoch):
        lane = cuda.threadIdx.x % lanes
        for r in range(first + cuda.grid(1) // lanes, last, cuda.gridsize(1) // lanes):
            start = runs[r]
            for e in range(start, min(start + run_length, limit)):
                sample_update(e, lane, params, data, step, epoch)
    return kernel


def epoch_kernel(update):
    """The epoch kernel with a GPU thread per run, for update(e, params, data,
    step[, epoch]) (each signature gets its own adapter: no branch on it is left
    for the CUDA compiler to type)."""
    def build():
        sample_update = device_function(update)
        if takes_epoch(update):
            @cuda.jit(device=True)
            def per_thread(e, lane, params, data, step, epoch):
                sample_update(e, params, data, step, epoch)
        else:
            @cuda.jit(device=True)
            def per_thread(e, lane, params, data, step, epoch):
                sample_update(e, params, data, step)
        return _runs_kernel(per_thread, 1)

    return _built_once("epoch", update, build)


def warp_epoch_kernel(warp_update):
    """The epoch kernel with a warp per run: its 32 lanes apply
    ``warp_update(e, lane, params, data, step)`` to each sample of the run
    together (blocks must be whole warps)."""
    def build():
        sample_update = device_function(warp_update)

        @cuda.jit(device=True)
        def per_warp(e, lane, params, data, step, epoch):
            sample_update(e, lane, params, data, step)
        return _runs_kernel(per_warp, WARP_SIZE)

    return _built_once("warp", warp_update, build)


def loss_sum_kernel(loss):
    """kernel(params, data, n, total): total[0] += the sum of f_e over samples
    0..n-1, each thread adding its own partial sum (float64) atomically."""
    def build():
        sample_loss = device_function(loss)

        @cuda.jit
        def kernel(params, data, n, total):
            partial = np.float64(0.0)  # float64 in the simulator too (NumPy 2 keeps
            for e in range(cuda.grid(1), n, cuda.gridsize(1)):  # float32 + a Python float
                partial += sample_loss(e, params, data)  # in float32)
            cuda.atomic.add(total, 0, partial)
        return kernel

    return _built_once("loss", loss, build)


@cuda.jit
def count_non_finite(values, count):
    """count[0] += how many of the (1-d) values are NaN or infinite."""
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        value = np.float64(values[i])  # also reads half precision
        if math.isnan(value) or math.isinf(value):
            cuda.atomic.add(count, 0, 1)
