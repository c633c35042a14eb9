"""The user's update, compiled for the GPU from the same Python function.

An update written for the CPU calls numba helpers (``@njit`` functions, inlined
there). A CUDA kernel cannot call CPU code, so ``device_function`` rebuilds the
update with every numba helper it names (in its globals or closure cells,
recursively) replaced by a CUDA device function compiled from the helper's own
Python source. Nothing is written twice, and the CPU function is untouched.

``epoch_kernel`` wraps one update in the Hogwild! kernel: each GPU thread takes
runs of consecutive samples from the epoch's shuffled run list (a grid-stride
loop) and applies the update to the one parameter array in device memory,
without atomics. ``loss_sum_kernel`` and ``count_non_finite`` evaluate on the
device, so an epoch's objective needs no copy of the parameters to the host. All of this also runs under numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1), which is how CI tests it.
"""
import math
import types

import numpy as np
from numba import cuda  # a module global: the simulator swaps it for its own in kernels

from hogwild.kernels.compiler import python_function, takes_epoch

_device_functions = {}
_kernels = {}


def _is_numba_function(value):
    return hasattr(value, "py_func") and isinstance(value.py_func, types.FunctionType)


def device_function(fn, _building=None):
    """A CUDA device function compiled from fn's Python source, its numba helpers
    turned into device functions too."""
    source = python_function(fn)
    key = id(source)
    if key in _device_functions:
        return _device_functions[key][1]
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
    _device_functions[key] = (source, compiled)  # keep source alive: its id is the key
    return compiled


def epoch_kernel(update):
    """kernel(runs, first, last, run_length, limit, params, data, step, epoch):
    threads share runs[first:last] in a grid-stride loop; run r is samples
    runs[r] .. min(runs[r] + run_length, limit) - 1, updated in order."""
    source = python_function(update)
    if id(source) in _kernels:
        return _kernels[id(source)][1]
    sample_update = device_function(update)
    with_epoch = takes_epoch(update)

    @cuda.jit
    def kernel(runs, first, last, run_length, limit, params, data, step, epoch):
        for r in range(first + cuda.grid(1), last, cuda.gridsize(1)):
            start = runs[r]
            for e in range(start, min(start + run_length, limit)):
                if with_epoch:
                    sample_update(e, params, data, step, epoch)
                else:
                    sample_update(e, params, data, step)

    _kernels[id(source)] = (source, kernel)
    return kernel


def loss_sum_kernel(loss):
    """kernel(params, data, n, total): total[0] += the sum of f_e over samples
    0..n-1, each thread adding its own partial sum (float64) atomically."""
    source = python_function(loss)
    key = ("loss", id(source))
    if key in _kernels:
        return _kernels[key][1]
    sample_loss = device_function(loss)

    @cuda.jit
    def kernel(params, data, n, total):
        partial = np.float64(0.0)  # float64 in the simulator too (NumPy 2 keeps float32
        for e in range(cuda.grid(1), n, cuda.gridsize(1)):  # + a Python float in float32)
            partial += sample_loss(e, params, data)
        cuda.atomic.add(total, 0, partial)

    _kernels[key] = (source, kernel)
    return kernel


@cuda.jit
def count_non_finite(values, count):
    """count[0] += how many of the (1-d) values are NaN or infinite."""
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        if math.isnan(values[i]) or math.isinf(values[i]):
            cuda.atomic.add(count, 0, 1)
