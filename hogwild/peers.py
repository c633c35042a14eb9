"""Peers that benchmarks compare against, run so that they cannot stall a benchmark.

LIBMF (through the ``libmf`` PyPI binding) sometimes never returns from a
multi-threaded fit on small problems (its block scheduler waits forever; seen
here on a 100,000-rating matrix with 2 threads). So each LIBMF measurement runs
in a spawned child process that is killed after a time limit, and a stall is
reported instead of hanging the benchmark.
"""
import contextlib
import io
import multiprocessing
import queue
import time

import numpy as np


def load_libmf():
    """(the libmf binding's module, the path of the library it loaded), or (None,
    None). The binding prints that path on import, so its output is swallowed;
    LIBMF_OBJ in the environment selects another build of the library."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            from libmf import mf
        except (ImportError, OSError):
            return None, None
    return mf, getattr(mf, "compiled_src", None)


def _libmf_child(results, X, rank, threads, epochs, l2):
    """Fit E and 1 iterations, twice each (the faster kept); send back both times
    and the E-iteration factors."""
    mf, _ = load_libmf()

    def fit(iters):
        best = None
        for _ in range(2):
            model = mf.MF(k=rank, nr_threads=threads, nr_iters=iters, quiet=True,
                          lambda_p1=0.0, lambda_q1=0.0, lambda_p2=l2, lambda_q2=l2)
            start = time.perf_counter()
            model.fit(X)
            seconds = time.perf_counter() - start
            best = seconds if best is None else min(best, seconds)
        return best, model

    full, model = fit(epochs)
    one, _ = fit(1)
    results.put((full, one, model.p_factors(), model.q_factors(), float(model.model.b)))


def libmf_fit(X, rank, threads, epochs, l2, timeout=300):
    """(seconds for ``epochs`` iterations, seconds for 1, P, Q, b) of LIBMF on the
    (user, item, rating) rows of X, or None if LIBMF did not finish in time."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_libmf_child, args=(results, X, rank, threads, epochs, l2),
                            daemon=True)
    child.start()
    try:
        return results.get(timeout=timeout)
    except queue.Empty:
        return None
    finally:
        child.kill()
        child.join()
        results.close()


def libmf_predict(P, Q, b, users, items):
    """LIBMF's predictions: P_u . Q_v, or b (its mean) for rows it never saw or
    left empty (NaN factors)."""
    known = (users >= 0) & (items >= 0)
    predictions = np.full(users.size, b, np.float64)
    predictions[known] = np.einsum("ij,ij->i", P[users[known]], Q[items[known]])
    predictions[np.isnan(predictions)] = b
    return predictions
