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


def _marginal_rate(fit, n_updates, epochs):
    """(updates/s, model): a peer without a per-epoch timer is timed by its marginal
    epoch, (fit of E epochs - fit of 1) / (E - 1), which leaves out its one-off
    input conversion; each fit runs twice and the faster counts (less noise)."""
    one = min(fit(1)[0] for _ in range(2))
    full, model = min((fit(epochs) for _ in range(2)), key=lambda timed: timed[0])
    return n_updates * (epochs - 1) / max(full - one, 1e-9), model, full


def sgd_classifier_peer(X, y, X_test, y_test, loss, reg, epochs, seed):
    """scikit-learn's SGDClassifier on the same objective (alpha = reg, no intercept,
    ``loss`` "hinge" or "log_loss"): updates/s and test error."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier

    X64 = X.astype(np.float64)

    def fit(max_iter):
        model = SGDClassifier(loss=loss, alpha=reg, max_iter=max_iter, tol=None,
                              fit_intercept=False, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            model.fit(X64, y)
            return time.perf_counter() - start, model

    rate, model, seconds = _marginal_rate(fit, X.shape[0], epochs)
    return {"updates_per_s": rate, "fit_seconds": seconds,
            "test_error": float(np.mean(model.predict(X_test) != y_test))}


def liblinear_peer(X, y, X_test, y_test, reg):
    """LIBLINEAR (liblinear-official), L2-regularised hinge-loss SVM solved in the
    dual (-s 3) to its default tolerance, C = 1 / (n reg) so that its objective is
    ours times n, no bias: fit seconds and test error (not SGD: no updates/s)."""
    import scipy.sparse as sp
    from liblinear.liblinearutil import predict, train

    C = 1.0 / (X.shape[0] * reg)
    start = time.perf_counter()
    model = train(np.asarray(y, np.float64), sp.csr_matrix(X, dtype=np.float64),
                  f"-s 3 -c {C:.10g} -B -1 -q")
    seconds = time.perf_counter() - start
    with contextlib.redirect_stdout(io.StringIO()):
        labels, _, _ = predict(np.asarray(y_test, np.float64),
                               sp.csr_matrix(X_test, dtype=np.float64), model, "-q")
    return {"fit_seconds": seconds,
            "test_error": float(np.mean(np.asarray(labels) != np.asarray(y_test)))}


def surprise_peer(train, test, rank, epochs, seed):
    """Surprise's SVD (n_factors=rank, n_epochs, its other defaults; one thread):
    ratings/s by its marginal epoch and test RMSE (its predictions are clipped to
    the rating scale by its own test())."""
    import pandas as pd
    from surprise import SVD, Dataset, Reader

    frame = pd.DataFrame({"user": train.users, "item": train.items, "rating": train.values})
    low, high = float(train.values.min()), float(train.values.max())
    trainset = Dataset.load_from_df(frame, Reader(rating_scale=(low, high))) \
        .build_full_trainset()

    def fit(n_epochs):
        algo = SVD(n_factors=rank, n_epochs=n_epochs, random_state=seed)
        start = time.perf_counter()
        algo.fit(trainset)
        return time.perf_counter() - start, algo

    rate, algo, seconds = _marginal_rate(fit, len(train), epochs)
    testset = list(zip(test.users.tolist(), test.items.tolist(), test.values.tolist()))
    predictions = np.array([p.est for p in algo.test(testset)])
    return {"updates_per_s": rate, "fit_seconds": seconds,
            "test_rmse": float(np.sqrt(np.mean((predictions - test.values) ** 2)))}
