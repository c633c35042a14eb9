"""backend="gpu" without a GPU: the kernels run under numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1, set before numba.cuda is first imported, so each check
runs in a fresh interpreter), on tiny problems.

Asserted: the serial schedule on the GPU is bitwise the CPU's serial run (SVM;
matrix completion to rounding, as the CPU compiles it with fast-math); on
conflict-free data many GPU threads and streams give bitwise the serial result;
a warp per rating (ranks >= 32) agrees with the CPU to rounding; half-precision
factors train like float32; Hogwild! on the GPU converges like the CPU; the
objective, the NaN check and test metrics are computed on the device; and the
error without a GPU names the fix.
"""
import ctypes.util
import os
import re
import subprocess
import sys
import textwrap

import pytest

from hogwild.errors import HogwildError

PRELUDE = """
import warnings
import numpy as np
import hogwild
from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.problems.sparse_svm import as_csr, binary_labels, svm_objective
from hogwild.problems.matrix_completion import MatrixFactorization

def svm(n=400, d=200):
    X, y = make_sparse_classification(n, d, nnz_per_row=6, seed=0)
    X = as_csr(X)
    labels, _ = binary_labels(y, n)
    return svm_objective(X, labels, "hinge", 1e-4, 0)
"""


def simulate(code):
    """Run PRELUDE + code under the CUDA simulator; returns its stdout."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_serial_on_the_gpu_is_bitwise_the_cpus_serial_run():
    out = simulate("""
        objective = svm()
        cpu = hogwild.fit(objective, epochs=3, step=0.2, scheduler="serial", seed=1, workers=1)
        gpu = hogwild.fit(objective, epochs=3, step=0.2, scheduler="serial", seed=1, workers=1,
                          backend="gpu")
        assert gpu.backend == "gpu"
        assert np.array_equal(cpu.params[0], gpu.params[0])
        # a step that falls within the epoch: launches in a row, each with its step
        within = dict(epochs=2, step=0.5, decay=4.0, step_schedule="inverse_updates",
                      scheduler="serial", seed=1, workers=1)
        assert np.array_equal(hogwild.fit(objective, **within).params[0],
                              hogwild.fit(objective, backend="gpu", **within).params[0])
        # the objective is summed on the device; the simulator runs the loss as NumPy
        # scalar code, where an accumulator started from a Python 0.0 stays float32
        # (numba types it float64), hence agreement to float32 rounding only
        np.testing.assert_allclose([r.objective for r in gpu.history],
                                   [r.objective for r in cpu.history], rtol=1e-7)

        # matrix completion compiles with fast-math on the CPU (fused multiply-adds),
        # so the GPU's serial run agrees to rounding, not bitwise
        rng = np.random.default_rng(0)
        ratings = (rng.integers(0, 30, 600), rng.integers(0, 20, 600),
                   rng.integers(1, 6, 600).astype(np.float32))
        fits = [MatrixFactorization(rank=4, epochs=2, scheduler="serial", random_state=0,
                                    backend=backend).fit(ratings)
                for backend in ("threads", "gpu")]
        np.testing.assert_allclose(fits[0].user_factors_, fits[1].user_factors_, rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(fits[0].item_bias_, fits[1].item_bias_, rtol=1e-5,
                                   atol=1e-6)
        print("ok")
    """)
    assert out.strip() == "ok"


def test_many_gpu_threads_on_conflict_free_data_give_the_serial_result():
    """Each rating has its own user and item: no two samples share a parameter, so
    any interleaving of GPU threads and streams is bitwise the GPU's serial run."""
    out = simulate("""
        n = 64
        rng = np.random.default_rng(0)
        ratings = (np.arange(n), np.arange(n), rng.integers(1, 6, n).astype(np.float32))
        serial = MatrixFactorization(rank=4, epochs=3, scheduler="serial", random_state=0,
                                     shuffle_block=1, backend="gpu").fit(ratings)
        gpu = MatrixFactorization(rank=4, epochs=3, scheduler="hogwild", workers=2, random_state=0,
                                  shuffle_block=1, backend="gpu").fit(ratings)
        assert np.array_equal(serial.user_factors_, gpu.user_factors_)
        assert np.array_equal(serial.item_factors_, gpu.item_factors_)
        print("ok")
    """)
    assert out.strip() == "ok"


def test_a_warp_update_runs_32_lanes_per_sample_that_share_warp_sums():
    """Each lane writes its own column with the warp's sum of the lane numbers
    (0 + 1 + ... + 31 = 496): every sample gets 32 lanes, and warp_sum (a shuffle
    on a GPU, emulated exactly by the simulator) hands every lane the total."""
    out = simulate("""
        from hogwild.kernels.warp import warp_sum

        def fill(e, params, data, step):
            for j in range(32):
                params[0][e, j] = 496.0

        def fill_by_lanes(e, lane, params, data, step):
            params[0][e, lane] = warp_sum(np.float32(lane))

        def nothing(e, params, data):
            return 0.0

        objective = hogwild.Objective(fill, nothing, np.zeros((50, 32), np.float32),
                                      np.zeros(1), 50, warp_update=fill_by_lanes)
        for scheduler, workers in (("serial", 1), ("hogwild", 2)):
            result = hogwild.fit(objective, epochs=1, scheduler=scheduler, workers=workers,
                                 backend="gpu")
            assert (result.params[0] == 496).all(), result.params[0]
        print("ok")
    """)
    assert out.strip() == "ok"


def test_matrix_completion_with_a_warp_per_rating_agrees_with_the_cpu():
    """Ranks >= 32 run cuMF_SGD's layout (a warp per rating, the rank over the
    lanes), with and without adaptive rates. One warp (serial) follows the CPU's
    serial order, summing the dot product in another order: equal to rounding. On
    conflict-free ratings, warps on two streams give bitwise the one-warp result."""
    out = simulate("""
        rng = np.random.default_rng(0)
        ratings = (rng.integers(0, 12, 16), rng.integers(0, 8, 16),
                   rng.integers(1, 6, 16).astype(np.float32))
        # rank 40: lanes 8..31 idle half the time
        for model, rank, adaptive in (("biased", 32, False), ("biased", 32, True),
                                      ("paper", 40, False)):
            fits = [MatrixFactorization(model=model, rank=rank, epochs=2, scheduler="serial",
                                        random_state=0, backend=backend, adaptive=adaptive).fit(
                                            ratings, eval_set=ratings)
                    for backend in ("threads", "gpu")]
            for name in ("user_factors_", "item_factors_", "item_bias_"):
                np.testing.assert_allclose(getattr(fits[1], name), getattr(fits[0], name),
                                           rtol=1e-5, atol=1e-6)
            for cpu, gpu in zip(fits[0].history_, fits[1].history_):
                assert np.isclose(gpu.objective, cpu.objective, rtol=1e-5)
                assert np.isclose(gpu.metrics["test_rmse"], cpu.metrics["test_rmse"], rtol=1e-5)

        n = 12
        distinct = (np.arange(n), np.arange(n), rng.integers(1, 6, n).astype(np.float32))
        for adaptive in (False, True):
            one_warp, warps = (MatrixFactorization(rank=32, epochs=2, scheduler=scheduler,
                                                   workers=workers, random_state=0, shuffle_block=1,
                                                   backend="gpu", adaptive=adaptive).fit(distinct)
                               for scheduler, workers in (("serial", 1), ("hogwild", 2)))
            assert np.array_equal(one_warp.user_factors_, warps.user_factors_)
            assert np.array_equal(one_warp.item_bias_, warps.item_bias_)
        print("ok")
    """)
    assert out.strip() == "ok"


def test_gpu_kernels_are_cached_by_code_not_by_closure():
    """Matrix completion builds its update as a new closure every fit; the GPU
    path keyed its kernels by the closure's id, so every fit recompiled and the
    cache grew without bound. Keyed by the code fingerprint, a second fit of the
    same model reuses every kernel, and another rank compiles its own."""
    out = simulate("""
        from hogwild.kernels import cuda as gpu_kernels
        rng = np.random.default_rng(0)
        ratings = (rng.integers(0, 12, 16), rng.integers(0, 8, 16),
                   rng.integers(1, 6, 16).astype(np.float32))

        def fit(rank):
            MatrixFactorization(rank=rank, epochs=1, scheduler="serial", random_state=0,
                                backend="gpu").fit(ratings, eval_set=ratings)
            return len(gpu_kernels._kernels), len(gpu_kernels._device_functions)

        for rank in (8, 32):  # 32: a warp per rating, its update built afresh every fit
            first = fit(rank)
            again = fit(rank)
            assert again == first, (rank, first, again)
        assert fit(4)[0] > again[0]
        print("ok")
    """)
    assert out.strip() == "ok"


def test_half_precision_factors_train_like_float32_on_the_gpu():
    """factor_dtype='float16' stores the factors in half precision on the device
    (arithmetic in float32): the objective follows the float32 run's to within
    half precision's rounding, and the fitted factors come back as float32."""
    out = simulate("""
        rng = np.random.default_rng(1)
        ratings = (rng.integers(0, 30, 300), rng.integers(0, 20, 300),
                   rng.integers(1, 6, 300).astype(np.float32))
        runs = {dtype: MatrixFactorization(rank=8, epochs=4, scheduler="serial", random_state=0,
                                           backend="gpu", factor_dtype=dtype).fit(ratings)
                for dtype in ("float32", "float16")}
        single, half = ([r.objective for r in runs[d].history_] for d in ("float32", "float16"))
        np.testing.assert_allclose(half, single, rtol=2e-3)
        assert half[-1] < half[0]
        assert runs["float16"].user_factors_.dtype == np.float32
        assert not np.array_equal(runs["float16"].user_factors_, runs["float32"].user_factors_)
        try:
            MatrixFactorization(factor_dtype="float16").fit(ratings)
        except hogwild.HogwildError as error:
            print(error)
    """)
    assert out.strip() == ("factor_dtype='float16' needs backend='gpu' (numba compiles no half "
                           "precision for the CPU); got backend='threads'")


def test_hogwild_on_the_gpu_converges_like_the_cpu():
    out = simulate("""
        objective = svm()
        cpu = hogwild.fit(objective, epochs=4, step=0.2, scheduler="serial", seed=1, workers=1)
        gpu = hogwild.fit(objective, epochs=4, step=0.2, scheduler="hogwild", seed=1,
                          workers=2, backend="gpu")
        assert gpu.history[-1].objective < gpu.history[0].objective
        assert abs(gpu.objective / cpu.objective - 1) < 0.03, (gpu.objective, cpu.objective)
        print("ok")
    """)
    assert out.strip() == "ok"


def test_test_metrics_are_computed_on_the_device_without_copies_to_the_host():
    """Test RMSE and test error per epoch come from the device (the parameters are
    copied to the host once, at the end, and for the SVM's penalty, which the host
    computes where the objective is measured) and equal the CPU's serial run's."""
    out = simulate("""
        from hogwild.backends.gpu import GpuBackend
        from hogwild.problems.sparse_svm import SparseSVM
        copies = []
        to_host = GpuBackend.to_host
        GpuBackend.to_host = lambda self, params: copies.append(1) or to_host(self, params)

        rng = np.random.default_rng(0)
        def ratings(n):
            return (rng.integers(0, 30, n), rng.integers(0, 20, n),
                    rng.integers(1, 6, n).astype(np.float32))
        train, test = ratings(600), ratings(200)
        test[0][:3] = 99  # users unseen in training: the mean-plus-bias fallback
        warnings.simplefilter("ignore")
        for model in ("biased", "paper"):
            fits = [MatrixFactorization(model=model, rank=4, epochs=3, scheduler="serial",
                                        random_state=0, backend=backend).fit(train, eval_set=test)
                    for backend in ("threads", "gpu")]
            cpu, gpu = ([r.metrics["test_rmse"] for r in f.history_] for f in fits)
            np.testing.assert_allclose(gpu, cpu, rtol=1e-5)
            assert np.isclose(cpu[-1], np.sqrt(np.mean((fits[0].predict(*test[:2])
                                                        - test[2]) ** 2)), rtol=1e-5)
        print(len(copies))
        # empty rows and a rare class (issue 15): the device's test error is predict()'s
        X, y = make_sparse_classification(500, 200, nnz_per_row=6, seed=0, empty_fraction=0.1,
                                          positive_fraction=0.1)
        for fit_intercept in (True, False):
            fits = [SparseSVM(epochs=3, scheduler="serial", random_state=0, backend=backend,
                              shuffle_block=1, fit_intercept=fit_intercept).fit(
                                  X[:400], y[:400], eval_set=(X[400:], y[400:]))
                    for backend in ("threads", "gpu")]
            cpu, gpu = ([r.metrics["test_error"] for r in f.history_] for f in fits)
            assert gpu == cpu, (cpu, gpu)
            for fitted in fits:
                assert np.isclose(cpu[-1], 1 - fitted.score(X[400:], y[400:])), cpu
        print(len(copies))
    """)
    # one per fit, for the result; and for each SVM fit's penalty at its compile,
    # start and last epoch
    assert out.split() == ["2", "10"]


def test_data_larger_than_the_device_memory_is_streamed_through_it():
    """With HOGWILD_GPU_MEMORY set so that 12 of 50 ratings fit at once, the
    ratings are copied in chunks (the last one partial) through two buffers. On
    conflict-free ratings the order cannot matter, so streamed Hogwild! on two
    streams must give bitwise the in-memory serial result: every rating updated
    once per epoch, from the right chunk. On ordinary ratings streaming converges
    like the in-memory run."""
    out = simulate("""
        import os
        from hogwild.backends import gpu

        chunks = []
        stream_init = gpu.SampleStream.__init__
        def recording(self, *args):
            stream_init(self, *args)
            chunks.append(self.chunk)
        gpu.SampleStream.__init__ = recording

        def fit(ratings, memory, scheduler, workers, epochs=2):
            os.environ["HOGWILD_GPU_MEMORY"] = memory
            return MatrixFactorization(rank=4, epochs=epochs, scheduler=scheduler,
                                       workers=workers, random_state=0, shuffle_block=1,
                                       backend="gpu").fit(ratings)

        rng = np.random.default_rng(0)
        n = 50  # factors 2 x 50 x 4 x 4 B, biases 2 x 50 x 4 B, constants 12 B: 2012 B
        distinct = (np.arange(n), np.arange(n), rng.integers(1, 6, n).astype(np.float32))
        whole = fit(distinct, "", "serial", 1)
        streamed = fit(distinct, "2300", "hogwild", 2)  # + 2 chunks x 12 ratings x 12 B
        assert chunks == [12], chunks
        assert np.array_equal(whole.user_factors_, streamed.user_factors_)
        assert np.array_equal(whole.item_bias_, streamed.item_bias_)
        np.testing.assert_allclose([r.objective for r in streamed.history_],
                                   [r.objective for r in whole.history_], rtol=1e-12)
        assert [r.updates for r in streamed.history_] == [n, n]

        ratings = (rng.integers(0, 60, 3000), rng.integers(0, 40, 3000),
                   rng.integers(1, 6, 3000).astype(np.float32))
        whole, streamed = fit(ratings, "", "hogwild", 2, 4), fit(ratings, "30KB", "hogwild", 2, 4)
        assert abs(streamed.history_[-1].objective / whole.history_[-1].objective - 1) < 0.01
        assert len(chunks) == 2 and chunks[1] < 3000 / 2

        for memory in ("1KB", "lots"):
            os.environ["HOGWILD_GPU_MEMORY"] = memory
            try:
                hogwild.fit(svm(), epochs=1, workers=1, backend="gpu")
            except hogwild.HogwildError as error:
                print(error)
    """)
    small, unreadable = out.strip().splitlines()  # the SVM's CSR arrays cannot be cut by row
    assert small == ("backend 'gpu': the data (22.4 KB) does not fit in the 96 B of device "
                     "memory left by the parameters, and the arrays without one row per sample "
                     "(data[0] (401,), data[1] (2365,), data[2] (2365,), data[4] (200,), "
                     "data[5] (1,), data[6] (1,), data[7] (1,), data[8] (1,)) cannot be "
                     "streamed through it")
    assert unreadable == ("HOGWILD_GPU_MEMORY='lots': expected bytes such as 500000000, "
                          "512MB or 8GB")


def test_nan_checks_and_divergence_on_the_device():
    out = simulate("""
        from hogwild.backends.gpu import GpuBackend
        backend = GpuBackend(1)
        params, _ = backend.share((np.ones((3, 4), np.float32), np.zeros(5, np.float32)), ())
        print(backend.all_finite(params))
        bad = np.ones((3, 4), np.float32)
        bad[2, 1] = np.nan
        params, _ = backend.share((bad, np.zeros(5, np.float32)), ())
        print(backend.all_finite(params))
        for name in ("threads", "gpu"):
            try:
                hogwild.fit(svm(), epochs=3, step=1e30, scheduler="serial", workers=1,
                            backend=name)
            except hogwild.errors.DivergenceError as error:
                print(error)
    """)
    finite, with_nan, cpu, gpu = out.strip().splitlines()
    assert (finite, with_nan) == ("True", "False")
    diverged = (r"the objective grew from 1 to \S+ in epoch 1 \(step 1e\+30\): training "
                "diverged; try a smaller step")
    assert re.fullmatch(diverged, cpu) and re.fullmatch(diverged, gpu), (cpu, gpu)


def test_callbacks_progress_and_checkpoint_cadence_on_the_gpu_are_the_engines(tmp_path):
    """The GPU runs the engine's one epoch loop: the same callback, progress and
    checkpoint cadence as the CPU backends (the checkpoint holds the device's
    parameters, copied back)."""
    out = simulate(f"""
        import pathlib
        from hogwild.checkpoint import load_checkpoint
        path = pathlib.Path({str(tmp_path / "run.npz")!r})
        seen, moved, saved_before = [], [], []
        def callback(record):
            seen.append(record)
            saved_before.append(load_checkpoint(path).epoch if path.exists() else 0)
        result = hogwild.fit(svm(), epochs=3, step=0.2, scheduler="serial", seed=1,
                             workers=1, backend="gpu", checkpoint=path, checkpoint_every=2,
                             callback=callback,
                             progress=lambda done, total: moved.append((done, total)))
        saved = load_checkpoint(path)
        print(seen == result.history, saved_before, saved.epoch, moved[-1],
              np.array_equal(saved.params[0], result.params[0]))
    """)
    assert out.split() == ["True", "[0,", "0,", "2]", "3", "(1200,", "1200)", "True"]


def test_gpu_refuses_schedulers_it_does_not_run():
    out = simulate("""
        try:
            hogwild.fit(svm(), epochs=1, scheduler="colored", workers=2, backend="gpu")
        except hogwild.errors.HogwildError as error:
            print(error)
    """)
    assert out.strip() == "backend 'gpu' runs the schedulers hogwild, serial; got 'colored'"


COMPILE_FOR_AN_H100 = """
import types
import numba
import numpy as np
from numba import cuda
from numba.cuda.cudadrv import nvvm
try:
    nvvm.NVVM()
except Exception as error:
    print("no NVVM:", str(error).splitlines()[0])
    raise SystemExit(0)
import numba.cuda.dispatcher
# device functions are compiled for the current device: say it is an H100
numba.cuda.dispatcher.get_current_device = lambda: types.SimpleNamespace(
    compute_capability=(9, 0))

from hogwild.datasets.synthetic import make_sparse_classification
from hogwild.kernels.cuda import (count_non_finite, epoch_kernel, loss_sum_kernel,
                                  warp_epoch_kernel)
from hogwild.problems.graph_cuts import cut_objective
from hogwild.problems.matrix_completion import (factor_kernels, factor_warp_update,
                                                rmse_metric)
from hogwild.problems.sparse_svm import as_csr, binary_labels, error_rate_metric, svm_objective

def ptx(kernel, *args):
    signature = tuple(numba.typeof(a) for a in args)
    return cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))[0]

runs = np.zeros(4, np.int64)
def epoch(kernel, params, data):
    return ptx(kernel, runs, 0, 0, 1, 0, params, data, 0.0, 0)

def losses(loss, params, data):
    return ptx(loss_sum_kernel(loss), params, data, 0, np.zeros(1))

X, y = make_sparse_classification(40, 20, nnz_per_row=4, seed=0)
X = as_csr(X)
labels, _ = binary_labels(y, 40)
for loss in ("hinge", "logistic"):
    svm = svm_objective(X, labels, loss)
    epoch(epoch_kernel(svm.update), svm.params, svm.data)
    losses(svm.loss, svm.params, svm.data)
metric = error_rate_metric(X, labels)
losses(metric.value, svm.params, metric.data)

cuts, _, _ = cut_objective(4, [0, 1, 2], [1, 2, 3], [1.0, 1.0, 1.0], {0: 0, 3: 1}, 2)
epoch(epoch_kernel(cuts.update), cuts.params, cuts.data)
losses(cuts.loss, cuts.params, cuts.data)

ints = np.zeros(5, np.int32)
for dtype in (np.float32, np.float16):
    factors = np.zeros((10, 128), dtype)
    per_row = np.zeros(10, np.float32)
    for model, adaptive in (("paper", False), ("biased", False), ("biased", True)):
        params = (factors, factors) + ((per_row, per_row) if model == "biased" else ()) + (
            (per_row, per_row) if adaptive else ())
        data = (ints, ints, np.zeros(5, np.float32)) + (
            (np.zeros(5 if adaptive else 3, np.float32),) if model == "biased"
            else (per_row, per_row))
        update, loss = factor_kernels(128, model, adaptive)
        epoch(epoch_kernel(update), params, data)
        shuffles = epoch(warp_epoch_kernel(factor_warp_update(128, model, adaptive)), params,
                         data)
        assert "shfl.sync.bfly" in shuffles
        losses(loss, params, data)
        metric = rmse_metric(model, 128, ints, ints, np.zeros(5, np.float32), 3.5)
        losses(metric.value, params, metric.data)
    ptx(count_non_finite, factors.ravel(), np.zeros(1, np.int64))
print("compiled")
"""


def test_every_gpu_kernel_compiles_to_ptx_for_an_h100():
    """The simulator runs kernels as Python and types nothing; numba-cuda's compiler
    does, without a GPU, given NVVM. Every kernel the GPU backend launches, for
    each problem and both factor precisions, compiles to PTX for compute
    capability 9.0, and the warp kernels use butterfly shuffles."""
    pytest.importorskip("numba_cuda", reason="numba-cuda (the gpu extra) compiles for GPUs")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", COMPILE_FOR_AN_H100], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    if done.stdout.startswith("no NVVM"):
        pytest.skip(f"numba-cuda found no NVVM (CUDA toolkit) to compile with: {done.stdout}")
    assert done.stdout.strip() == "compiled"


def test_without_a_gpu_the_error_names_the_fix():
    from numba import cuda

    if cuda.is_available():
        pytest.skip("this machine has a GPU: the no-GPU message cannot be shown")
    from hogwild.backends.gpu import GpuBackend

    with pytest.raises(HogwildError) as error:
        GpuBackend(1)
    message = str(error.value)
    assert message.startswith("backend 'gpu' found no usable NVIDIA GPU (") and "\n" not in message
    assert message.endswith("; numba.cuda.is_available() is False); run on a machine with one "
                            "and pip install 'hogwild[gpu]', or set NUMBA_ENABLE_CUDASIM=1 for "
                            "the (slow) CUDA simulator")
    if ctypes.util.find_library("cuda") is None:  # no driver at all: numba's reason, on one line
        assert "(CUDA driver library cannot be found;" in message, message


def test_gpu_benchmark_quick_run_writes_its_json(tmp_path):
    """scripts/bench_gpu.py --quick under the simulator: valid JSON with the GPU and
    CPU figures side by side (speed is read from real-GPU runs, never asserted)."""
    import json
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "bench_gpu.py"
    out = tmp_path / "gpu.json"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, str(script), "--quick", "--out", str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["simulator"] is True and report["quick"] is True
    (mc,) = report["matrix_completion"]
    assert len(mc["gpu_test_rmse"]) == len(mc["cpu_test_rmse"]) == mc["epochs"] == 2
    assert len(mc["gpu_half_test_rmse"]) == 2 and mc["gpu_half_largest_rmse_gap"] < 0.01
    assert len(mc["gpu_streamed_test_rmse"]) == 2 and mc["gpu_streamed_largest_rmse_gap"] < 0.01
    assert mc["gpu_largest_rmse_gap"] < 0.01 and mc["gpu_ratings_per_s_median"] > 0
    (svm,) = report["svm"]
    assert svm["gpu_nonzeros_per_s"] > 0 and abs(svm["gpu_test_error"]
                                                 - svm["threads_test_error"]) < 0.05


def test_cli_streams_and_device():
    out = simulate("""
        import contextlib, io
        from hogwild.cli import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["run", "svm", "--backend", "gpu", "--device", "3", "--epochs", "1"])
        print(code, err.getvalue().strip())
        with contextlib.redirect_stderr(io.StringIO()):
            # a small generated click log: the simulator runs every GPU thread in Python
            code = main(["run", "svm", "--backend", "gpu", "--streams", "2", "--device", "0",
                         "--epochs", "1", "--data", "clicks:1000x500x10000", "--json"])
        print(code)
    """)
    lines = out.strip().splitlines()
    assert lines[0] == ("2 hogwild: error: --device 3: this machine has 1 CUDA device(s), "
                        "numbered 0..0")
    import json
    result = json.loads(lines[1])
    assert result["backend"] == "gpu" and result["workers"] == 2
    assert lines[2] == "0"


def test_without_numba_cuda_the_error_names_the_extra(monkeypatch):
    import importlib.util

    from hogwild.backends.gpu import check_gpu

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "numba_cuda" else find_spec(name,
                                                                                         *args))
    with pytest.raises(HogwildError) as error:
        check_gpu()
    assert str(error.value) == (
        "backend 'gpu' needs numba-cuda (numba's built-in numba.cuda is deprecated and cannot "
        "compile min() or max() in a kernel); install it with: pip install 'hogwild[gpu]'")


NUMPY_WITHOUT_ROW_STACK = """
import numpy as np
del np.row_stack  # as numpy 2.5 has it
from hogwild.backends.gpu import check_gpu
from hogwild.errors import HogwildError
try:
    check_gpu()
except HogwildError:  # no GPU here: the compile below needs none
    pass
from numba import cuda, float32

def double(x):
    x[0] = x[0] * 2

cuda.compile_ptx(double, (float32[:],), cc=(9, 0))
print("compiled")
"""


def test_numba_cuda_compiles_under_a_numpy_without_row_stack():
    """numba-cuda 0.30 overloads np.row_stack, gone from numpy 2.5 (seen on the H100's
    image: its first kernel compile raised AttributeError); check_gpu gives it back."""
    pytest.importorskip("numba_cuda", reason="numba-cuda (the gpu extra) compiles for GPUs")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", NUMPY_WITHOUT_ROW_STACK], env=env,
                          capture_output=True, text=True, timeout=600)
    if "NvvmSupportError" in done.stderr or "libnvvm" in done.stderr:
        pytest.skip("numba-cuda found no NVVM (CUDA toolkit) to compile with")
    assert done.returncode == 0 and done.stdout.strip() == "compiled", done.stderr[-3000:]
