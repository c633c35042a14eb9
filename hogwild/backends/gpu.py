"""backend="gpu": Hogwild! on one NVIDIA GPU, the workers being CUDA streams.

The parameters and the data are copied to device memory once (CuPy arrays when
CuPy is installed, numba device arrays otherwise); data that does not fit is
streamed through it (SampleStream). Each epoch's objective, the NaN check and
held-out hogwild.Metric values are computed on the device; the parameters come
back to the host only for a callable ``evaluate``, checkpoints and the result.
Each epoch, every worker's span of the plan's shuffled runs is one kernel launch
on that worker's stream; inside it, GPU threads take runs in a grid-stride loop and apply the
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
import importlib.util
import math
import os
import re
import sys
import warnings

import numpy as np

from hogwild.backends.base import Backend
from hogwild.errors import HogwildError
from hogwild.schedulers import even_spans

SCHEDULERS = ("hogwild", "serial")
THREADS_PER_BLOCK = 128
SIMULATOR_THREADS = 4
SIMULATOR_SWITCH_INTERVAL = 1e-4  # seconds
MEMORY_VARIABLE = "HOGWILD_GPU_MEMORY"


def simulated():
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def check_gpu():
    """numba.cuda, or a HogwildError saying what is missing and how to fix it."""
    if importlib.util.find_spec("numba_cuda") is None:
        raise HogwildError("backend 'gpu' needs numba-cuda (numba's built-in numba.cuda is "
                           "deprecated and cannot compile min() or max() in a kernel); "
                           "install it with: pip install 'hogwild[gpu]'")
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 overloads it; numpy 2.5 dropped it
        np.row_stack = np.vstack
    from numba import cuda
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


def device_memory_budget(cuda):
    """Bytes of device memory a fit may fill: HOGWILD_GPU_MEMORY (e.g. 512MB, 8GB)
    if set, else 90% of the memory free now."""
    setting = os.environ.get(MEMORY_VARIABLE)
    if setting:
        number = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*", setting.upper())
        if number is None:
            raise HogwildError(f"{MEMORY_VARIABLE}={setting!r}: expected bytes such as "
                               "500000000, 512MB or 8GB")
        return int(float(number[1]) * 1024 ** "_KMGT".index(number[2] or "_"))
    free = cuda.current_context().get_memory_info()[0]  # infinite in the simulator
    return int(0.9 * free) if math.isfinite(free) else sys.maxsize


def _size(nbytes):
    """Bytes for people: 2.3 KB, 1.2 GB."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(nbytes) < 1024 or unit == "GB":
            return f"{nbytes:.0f} B" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024


class SampleStream:
    """Data larger than the device memory left by the parameters, streamed through
    it chunk by chunk each epoch (and for each objective), with the copy of the
    next chunk overlapping the kernels on the current one (two buffers, a copy
    stream and CUDA events).

    Only arrays with one row per sample (ratings' users, items and values) can be
    streamed; the others (e.g. per-user tables) stay in device memory. A chunk is
    a multiple of the epoch's run length of consecutive samples; the epoch visits
    the chunks in the order in which the plan's shuffled runs first reach them,
    and each chunk's runs in the plan's order, dealt to the streams in equal
    spans. Sample indices in the kernels are local to the chunk, so the update
    must use ``e`` only to index per-sample arrays (true of matrix completion).
    """

    def __init__(self, backend, data, n_samples, room):
        self.backend, self.cuda, self.n = backend, backend.cuda, int(n_samples)
        self.per_sample = [a.ndim >= 1 and a.shape[0] == self.n for a in data]
        resident = [a for a, streamed in zip(data, self.per_sample) if not streamed]
        room -= sum(a.nbytes for a in resident)
        row_bytes = sum(a.nbytes // self.n for a, s in zip(data, self.per_sample) if s)
        if room < 2 * row_bytes or not any(self.per_sample):
            kept = ", ".join(f"data[{i}] {a.shape}" for i, a in enumerate(data)
                             if not self.per_sample[i])
            raise HogwildError(
                f"backend 'gpu': the data ({_size(sum(a.nbytes for a in data))}) does not fit "
                f"in the {_size(room + sum(a.nbytes for a in resident))} of device memory "
                f"left by the parameters, and the arrays without one row per sample "
                f"({kept or 'none'}) cannot be streamed through it")
        self.chunk = int(min(self.n, room // (2 * row_bytes)))
        self.host = [np.ascontiguousarray(a) for a in data]
        self._pinned = contextlib.ExitStack()  # page-locked: copies run asynchronously
        for array in (a for a, s in zip(self.host, self.per_sample) if s):
            self._pinned.enter_context(self.cuda.pinned(array))
        placed = iter(backend.place(resident))
        self.resident = [None if s else next(placed) for s in self.per_sample]
        self.buffers = [self._buffer_set() for _ in range(2)]
        self.copy_stream = self.cuda.stream()

    def _buffer_set(self):
        """One chunk's device arrays, as the data tuple the kernels take."""
        return tuple(self.cuda.device_array((self.chunk,) + a.shape[1:], a.dtype) if s else r
                     for a, s, r in zip(self.host, self.per_sample, self.resident))

    def _upload(self, chunk, slot, chunk_samples, copied):
        """Queue the copy of a chunk into buffer set ``slot``; returns its length."""
        lo = chunk * chunk_samples
        hi = min(lo + chunk_samples, self.n)
        for host, device, streamed in zip(self.host, self.buffers[slot], self.per_sample):
            if streamed:
                device[:hi - lo].copy_to_device(host[lo:hi], stream=self.copy_stream)
        copied[slot].record(self.copy_stream)
        return hi - lo

    def _chunks(self, order, chunk_samples):
        """Yield (position, data tuple, length) for the chunks in ``order``: the
        copy of the next chunk (on the copy stream) overlaps the caller's kernels
        on this one, and waits only for the kernels of the chunk before."""
        streams = self.backend.streams
        copied = [self.cuda.event(), self.cuda.event()]
        length = self._upload(order[0], 0, chunk_samples, copied) if len(order) else 0
        for i in range(len(order)):
            slot = i % 2
            for stream in streams:
                copied[slot].wait(stream)  # kernels start once their chunk is in
            following = length
            if i + 1 < len(order):
                for stream in streams:  # the other buffer's chunk (i - 1) must be done
                    used = self.cuda.event()
                    used.record(stream)
                    used.wait(self.copy_stream)
                following = self._upload(order[i + 1], 1 - slot, chunk_samples, copied)
            yield i, self.buffers[slot], length
            length = following
        for stream in streams:
            stream.synchronize()

    def run_epoch(self, plan, params, steps, epoch):
        run_length = plan.run_length
        chunk_samples = max(1, self.chunk // run_length) * run_length
        if chunk_samples > self.chunk:
            raise HogwildError(f"backend 'gpu': a chunk of the streamed data holds "
                               f"{self.chunk} samples, fewer than one run of {run_length}; "
                               "use a smaller shuffle_block or more device memory")
        runs_chunk = plan.runs // chunk_samples
        _, first = np.unique(runs_chunk, return_index=True)
        order = runs_chunk[np.sort(first)]  # chunks as the shuffled runs first reach them
        position = np.empty(order.size, np.int64)
        position[order] = np.arange(order.size)
        rank = position[runs_chunk]
        by_chunk = np.argsort(rank, kind="stable")  # each chunk's runs in the plan's order
        local = plan.runs[by_chunk] - runs_chunk[by_chunk] * chunk_samples
        ends = np.cumsum(np.bincount(rank, minlength=order.size))
        runs = self.cuda.to_device(local)  # one upload of the epoch's order, then async
        streams = self.backend.streams
        updates = 0
        with _simulator_settings():
            for i, data, length in self._chunks(order, chunk_samples):
                start = int(ends[i - 1]) if i else 0
                part = steps.over(i / order.size, (i + 1) / order.size)
                for stream, (a, b) in zip(streams, even_spans(int(ends[i]) - start,
                                                              len(streams))):
                    if b > a:
                        self.backend.launch(stream, runs, start + a, start + b, run_length,
                                            length, params, data, part, epoch)
                updates += length
        return updates

    def sum_losses(self, kernel, params, n, total):
        """Add the losses of samples 0..n-1 to total[0], chunk by chunk."""
        stream = self.backend.streams[-1]
        for _, data, length in self._chunks(np.arange(-(-n // self.chunk)), self.chunk):
            blocks, block = self.backend.grid(length)
            kernel[blocks, block, stream](params, data, length, total)

    def close(self):
        self._pinned.close()


class GpuBackend(Backend):
    name = "gpu"
    workers_share_cores = False  # workers are CUDA streams, not CPU cores
    runs_warp_updates = True
    half_precision = True
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
        self.streamed = None  # a SampleStream when the data does not fit

    def share(self, params, data, n_samples=None):
        """Device copies of the parameters and of the data (once per fit). Data
        that does not fit beside the parameters is streamed (SampleStream)."""
        budget = device_memory_budget(self.cuda)
        params_bytes = sum(p.nbytes for p in params)
        if params_bytes > budget:
            raise HogwildError(f"backend 'gpu': the parameters ({_size(params_bytes)}) do not "
                               f"fit in the {_size(budget)} of device memory this fit may use")
        params = self.place(params)
        room = budget - params_bytes
        if sum(a.nbytes for a in data) <= room:
            return params, self.place(data)
        self.streamed = SampleStream(self, data, n_samples, room)
        return params, self.streamed

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
            self.kernel, self.lanes = epoch_kernel(loops.source.update), 1
        runs = self.cuda.to_device(np.zeros(1, np.int64))
        chunk = data.buffers[0] if isinstance(data, SampleStream) else data
        with _simulator_settings():
            self.kernel[1, self.lanes](runs, 0, 0, 1, 0, params, chunk, 0.0, 0)
        self.cuda.synchronize()

    def run_epoch(self, loops, plan, params, data, steps, epoch):
        """Launch every worker's spans on its stream; returns the number of updates."""
        if plan.kind != "spans":
            raise HogwildError(f"backend 'gpu' runs plans without gates, barriers or locks "
                               f"(kind 'spans'), not {plan.kind!r}")
        if isinstance(data, SampleStream):
            return data.run_epoch(plan, params, steps, epoch)
        runs = self.cuda.to_device(plan.runs)
        updates = 0
        with _simulator_settings():
            for phase in plan.phases:
                for stream, spans in zip(self.streams, phase):
                    for lo, hi, limit in np.asarray(spans).reshape(-1, 3):
                        if hi <= lo:
                            continue
                        self.launch(stream, runs, lo, hi, plan.run_length, limit, params,
                                    data, steps, epoch)
                        starts = plan.runs[lo:hi]
                        updates += int(np.sum(np.minimum(starts + plan.run_length, limit)
                                              - starts))
                for stream in self.streams:
                    stream.synchronize()
        return updates

    def launch(self, stream, runs, lo, hi, run_length, limit, params, data, steps, epoch):
        """The epoch kernel on runs[lo:hi] (sample indices below ``limit``), on
        ``stream``: one GPU thread or warp for ``serial``, else a grid of them. A
        table of several steps (hogwild.steps.EpochSteps) cuts the runs into as
        many launches in a row on the stream, each with its step: the GPU's
        threads run a launch's runs at once, so it has no earlier and later."""
        n, size = int(hi - lo), steps.table.size
        edges = -(-np.arange(size + 1) * n // size)  # run p takes step p * size // n
        for step, a, b in zip(steps.table, edges[:-1], edges[1:]):
            if b <= a:
                continue
            blocks, block = (1, self.lanes) if self.single_thread else \
                self.grid(int(b - a), self.lanes)
            self.kernel[blocks, block, stream](runs, int(lo + a), int(lo + b),
                                               int(run_length), int(limit), params, data,
                                               float(step), epoch)

    def grid(self, items, lanes=1):
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
            blocks, block = self.grid(p.size)
            count_non_finite[blocks, block](flat, count)
        return int(count.copy_to_host()[0]) == 0

    def loss_sum(self, loops, params, data, n):
        """The sum of the losses of samples 0..n-1, computed on the device."""
        from hogwild.kernels.cuda import loss_sum_kernel

        total = self.cuda.to_device(np.zeros(1, np.float64))
        kernel = loss_sum_kernel(loops.source.loss)
        with _simulator_settings():
            if isinstance(data, SampleStream):
                data.sum_losses(kernel, params, n, total)
            else:
                blocks, block = self.grid(n)
                kernel[blocks, block](params, data, n, total)
        return float(total.copy_to_host()[0])

    def to_host(self, params):
        """Host copies of the parameters (for evaluation and checkpoints)."""
        return tuple(p.copy_to_host() for p in params)

    def export(self, params):
        return self.to_host(params)

    def close(self):
        if self.streamed is not None:
            self.streamed.close()
        self.streams = []
        self._cupy_arrays = []
