"""backend="gpu": Hogwild! on one NVIDIA GPU, the workers being CUDA streams.

The parameters and the data are copied to device memory once (CuPy arrays when
CuPy is installed, numba device arrays otherwise). Each epoch's objective, the
NaN check and held-out hogwild.Metric values are computed on the device; the
parameters come back to the host only for a callable ``evaluate``, checkpoints
and the result. Each epoch, every worker's span of the plan's shuffled runs is one kernel launch on that worker's
stream; inside it, GPU threads take runs in a grid-stride loop and apply the
user's update (compiled for CUDA by hogwild.kernels.cuda) to the one device
parameter array without atomics, as Hogwild! threads do on the CPU. Streams run
concurrently; the epoch ends when all have finished.

``serial`` launches one thread (the CPU's serial order, bitwise, where the
update's float arithmetic is the same); ``hogwild`` launches up to
``threads_per_worker`` threads per stream. An objective with a ``warp_update``
(matrix completion at rank >= 32) runs a warp per sample instead of a thread:
``serial`` is then one warp. Schedulers with barriers or gates
(locked, blocked, colored, cyclades) are not supported here yet.

Under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, for tests without a GPU)
every GPU thread is a Python thread, so launches are capped at a few threads.
"""
import contextlib
import math
import os
import sys
import warnings

import numpy as np

from hogwild.errors import HogwildError

SCHEDULERS = ("hogwild", "serial")
THREADS_PER_BLOCK = 128
SIMULATOR_THREADS = 4
SIMULATOR_SWITCH_INTERVAL = 1e-4  # seconds


def simulated():
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def check_gpu():
    """numba.cuda, or a HogwildError saying what is missing and how to fix it."""
    try:
        from numba import cuda
    except ImportError as exc:
        raise HogwildError(f"backend 'gpu' needs numba's CUDA support ({exc}); install it "
                           "with: pip install 'hogwild[gpu]'") from None
    if not cuda.is_available():
        raise HogwildError(f"backend 'gpu' found no usable NVIDIA GPU ({_driver_problem(cuda)}"
                           "; numba.cuda.is_available() is False); run on a machine "
                           "with one and pip install 'hogwild[gpu]', or set "
                           "NUMBA_ENABLE_CUDASIM=1 for the (slow) CUDA simulator")
    return cuda


def _driver_problem(cuda):
    """numba's one-line reason: no driver library, no device, ..."""
    try:
        cuda.current_context()
    except Exception as exc:  # numba's CudaSupportError, or the driver's own error
        lines = [line.strip(" :.") for line in str(exc).splitlines()]
        reasons = [line for line in lines if line and not line.startswith("Error at driver")]
        return reasons[0] if reasons else type(exc).__name__
    return "no CUDA device"


def _cupy():
    """CuPy if it is installed and a real GPU is in use (the simulator has none)."""
    if simulated():
        return None
    try:
        import cupy
    except ImportError:
        return None
    return cupy


@contextlib.contextmanager
def _simulator_settings():
    """For kernel launches under the simulator. It runs updates as numpy scalar
    code, which warns on the integer wrap-around that hash functions rely on (a
    GPU wraps silently): ignored, process-wide, as its GPU threads are Python
    threads. Those threads hand the GIL to each other at every simulated warp
    shuffle; a shorter switch interval makes that 3x faster."""
    if not simulated():
        yield
        return
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
            yield
    finally:
        sys.setswitchinterval(interval)


class GpuBackend:
    name = "gpu"
    schedulers = SCHEDULERS  # the engine refuses others before preparing them

    def __init__(self, workers, threads_per_worker=None):
        self.cuda = check_gpu()
        self.workers = workers
        self.threads_per_worker = threads_per_worker or (
            SIMULATOR_THREADS if simulated() else 64 * 1024)
        self.streams = [self.cuda.stream() for _ in range(workers)]
        self.on_progress = None  # progress is reported once per epoch (the engine)
        self.kernel = None
        self.single_thread = False
        self.lanes = 1  # GPU threads per sample: 32 for an objective's warp_update
        self.cupy = _cupy()
        self._cupy_arrays = []

    def share(self, params, data):
        """Device copies of the parameters and of the data (once per fit)."""
        return self.place(params), self.place(data)

    def place(self, arrays):
        """Device copies of host arrays: CuPy arrays where CuPy is installed (its
        memory pool; the kernels see them through __cuda_array_interface__),
        else numba device arrays."""
        arrays = [np.ascontiguousarray(a) for a in arrays]
        if self.cupy is None:
            return tuple(self.cuda.to_device(a) for a in arrays)
        with self.cupy.cuda.Device(self.cuda.get_current_device().id):
            owned = [self.cupy.asarray(a) for a in arrays]
        self._cupy_arrays.extend(owned)  # numba's views below do not keep them alive
        # numba cannot type a tuple of CuPy arrays (numba issue 8483): pass its views
        return tuple(self.cuda.as_cuda_array(a) for a in owned)

    def warm_up(self, loops, params, data, scheduler, objective=None):
        """Compile the kernel (a launch on no samples): a warp per sample for an
        objective with a warp_update, else a thread per sample."""
        from hogwild.kernels.cuda import epoch_kernel, warp_epoch_kernel
        from hogwild.kernels.warp import WARP_SIZE

        self.single_thread = scheduler.name == "serial"
        warp_update = getattr(objective, "warp_update", None)
        if warp_update is not None:
            self.kernel, self.lanes = warp_epoch_kernel(warp_update), WARP_SIZE
        else:
            self.kernel, self.lanes = epoch_kernel(loops.source[0]), 1
        runs = self.cuda.to_device(np.zeros(1, np.int64))
        with _simulator_settings():
            self.kernel[1, self.lanes](runs, 0, 0, 1, 0, params, data, 0.0, 0)
        self.cuda.synchronize()

    def run_epoch(self, loops, plan, params, data, step, epoch):
        """Launch every worker's spans on its stream; returns the number of updates."""
        if plan.gates or plan.barriers or plan.locked:
            raise HogwildError("backend 'gpu' runs plans without gates, barriers or locks")
        runs = self.cuda.to_device(plan.runs)
        updates = 0
        with _simulator_settings():
            for phase in plan.phases:
                for stream, spans in zip(self.streams, phase):
                    for lo, hi, limit in np.asarray(spans).reshape(-1, 3):
                        if hi <= lo:
                            continue
                        blocks, block = (1, self.lanes) if self.single_thread else \
                            self._grid(int(hi - lo), self.lanes)
                        self.kernel[blocks, block, stream](
                            runs, int(lo), int(hi), plan.run_length, int(limit), params,
                            data, float(step), epoch)
                        starts = plan.runs[lo:hi]
                        updates += int(np.sum(np.minimum(starts + plan.run_length, limit)
                                              - starts))
                for stream in self.streams:
                    stream.synchronize()
        return updates

    def _grid(self, items, lanes=1):
        """(blocks, threads per block) for a grid-stride loop over ``items``, each
        taken by ``lanes`` threads (1, or a warp)."""
        threads = max(1, min(items, max(1, self.threads_per_worker // lanes))) * lanes
        block = min(threads, THREADS_PER_BLOCK)
        return math.ceil(threads / block), block

    def all_finite(self, params):
        """No NaN or infinity in the parameters (checked on the device)."""
        from hogwild.kernels.cuda import count_non_finite

        count = self.cuda.to_device(np.zeros(1, np.int64))
        for p in params:
            flat = p.reshape(p.size)
            blocks, block = self._grid(p.size)
            count_non_finite[blocks, block](flat, count)
        return int(count.copy_to_host()[0]) == 0

    def loss_sum(self, loops, params, data, n):
        """The sum of the losses of samples 0..n-1, computed on the device."""
        from hogwild.kernels.cuda import loss_sum_kernel

        total = self.cuda.to_device(np.zeros(1, np.float64))
        blocks, block = self._grid(n)
        with _simulator_settings():
            loss_sum_kernel(loops.source[1])[blocks, block](params, data, n, total)
        return float(total.copy_to_host()[0])

    def to_host(self, params):
        """Host copies of the parameters (for evaluation and checkpoints)."""
        return tuple(p.copy_to_host() for p in params)

    def export(self, params):
        return self.to_host(params)

    def close(self):
        self.streams = []
        self._cupy_arrays = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
