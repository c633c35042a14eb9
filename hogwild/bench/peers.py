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


def in_child(target, args, timeout):
    """What ``target(results, *args)`` puts on ``results`` in a spawned child, or
    None when nothing comes within ``timeout`` seconds; the child is killed either
    way."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=target, args=(results,) + tuple(args), daemon=True)
    child.start()
    try:
        return results.get(timeout=timeout)
    except queue.Empty:
        return None
    finally:
        child.kill()
        child.join()
        results.close()


def libmf_fit(X, rank, threads, epochs, l2, timeout=300):
    """(seconds for ``epochs`` iterations, seconds for 1, P, Q, b) of LIBMF on the
    (user, item, rating) rows of X, or None if LIBMF did not finish in time."""
    return in_child(_libmf_child, (X, rank, threads, epochs, l2), timeout)


def dense_triples(train, test):
    """Training triples with dense 0-based ids, and the test ids mapped alike (-1: unseen)."""
    from hogwild.problems.matrix_completion import IdIndex

    users, u = IdIndex.build(train.users)
    items, i = IdIndex.build(train.items)
    X = np.column_stack([u, i, train.values]).astype(np.float32)
    return X, users.find(test.users), items.find(test.items)


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


def sgd_classifier_peer(X, y, X_test, y_test, loss, reg, epochs, seed, fit_intercept=True):
    """scikit-learn's SGDClassifier on the same objective (alpha = reg, an
    unregularised intercept unless fit_intercept=False, as ours; ``loss`` "hinge"
    or "log_loss"): updates/s and test error."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier

    X64 = X.astype(np.float64)

    def fit(max_iter):
        model = SGDClassifier(loss=loss, alpha=reg, max_iter=max_iter, tol=None,
                              fit_intercept=fit_intercept, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            model.fit(X64, y)
            return time.perf_counter() - start, model

    rate, model, seconds = _marginal_rate(fit, X.shape[0], epochs)
    return {"updates_per_s": rate, "fit_seconds": seconds,
            "test_error": float(np.mean(model.predict(X_test) != y_test))}


def liblinear_peer(X, y, X_test, y_test, reg, bias=True):
    """LIBLINEAR (liblinear-official), L2-regularised hinge-loss SVM solved in the
    dual (-s 3) to its default tolerance, C = 1 / (n reg) so that its objective is
    ours times n, with a bias feature of 1 (-B 1, its intercept, regularised with
    the weights) unless bias=False: fit seconds and test error (not SGD: no
    updates/s)."""
    import scipy.sparse as sp
    from liblinear.liblinearutil import predict, train

    C = 1.0 / (X.shape[0] * reg)
    start = time.perf_counter()
    model = train(np.asarray(y, np.float64), sp.csr_matrix(X, dtype=np.float64),
                  f"-s 3 -c {C:.10g} -B {1 if bias else -1} -q")
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



# --- the PyTorch Hogwild! pattern --------------------------------------------------
#
# What a PyTorch user writes for Hogwild!: a model whose parameters are moved to
# shared memory (share_memory()), W processes from torch.multiprocessing each
# running torch.optim.SGD over its share of the mini-batches, sparse embedding
# gradients so that a step touches only its rows. A batch's loss is summed, not
# averaged, so one batch step is about ``batch`` of our per-sample steps at the
# same step size and decay. Timed from a barrier passed once every process is set
# up (imports and start-up excluded, as for ours) to the last process's end.

def _torch_svm_loss(model, first, last, tensors):
    """Hinge loss plus the degree-scaled L2 of the batch's features (our objective)."""
    import torch
    import torch.nn.functional as F

    indptr, indices, values, labels, reg_scale = tensors
    lo, hi = int(indptr[first]), int(indptr[last])
    features = indices[lo:hi]
    scores = F.embedding_bag(features, model.weight, indptr[first:last] - lo, mode="sum",
                             per_sample_weights=values[lo:hi], sparse=True)[:, 0]
    weights = F.embedding(features, model.weight, sparse=True)[:, 0]
    hinge = torch.clamp(1 - labels[first:last] * scores, min=0).sum()
    return hinge + 0.5 * (reg_scale[features] * weights * weights).sum()


def _torch_mc_loss(model, first, last, tensors):
    """Half the squared error plus the L2 of the rows touched (our biased model)."""
    users, items, ratings, settings = tensors
    u, v = users[first:last], items[first:last]
    p, q = model[0](u), model[1](v)
    bu, bi = model[2](u)[:, 0], model[3](v)[:, 0]
    err = settings[2] + bu + bi + (p * q).sum(1) - ratings[first:last]
    return 0.5 * ((err * err).sum() + settings[0] * ((p * p).sum() + (q * q).sum())
                  + settings[1] * ((bu * bu).sum() + (bi * bi).sum()))


_TORCH_LOSSES = {"svm": _torch_svm_loss, "mc": _torch_mc_loss}


def _torch_worker(me, workers, kind, model, tensors, n, batch, epochs, step, decay, seed,
                  barrier, times):
    """One Hogwild! process: SGD on its share of each epoch's shuffled batches."""
    import torch

    torch.set_num_threads(1)
    loss_of = _TORCH_LOSSES[kind]
    optimizer = torch.optim.SGD(model.parameters(), lr=step)
    starts = torch.arange(0, n, batch)
    barrier.wait()
    start = time.perf_counter()
    for epoch in range(epochs):
        for group in optimizer.param_groups:
            group["lr"] = step * decay ** epoch
        order = torch.randperm(starts.numel(),
                               generator=torch.Generator().manual_seed(seed * 1000 + epoch))
        for first in starts[order[me::workers]].tolist():
            optimizer.zero_grad()
            loss_of(model, first, min(first + batch, n), tensors).backward()
            optimizer.step()
    times.put((start, time.perf_counter()))


def _torch_hogwild(kind, model, tensors, n, workers, batch, epochs, step, decay, seed):
    """Run the W processes; returns the seconds from the barrier to the last end."""
    import torch.multiprocessing as mp

    model.share_memory()
    context = mp.get_context("spawn")
    barrier, times = context.Barrier(workers + 1), context.Queue()
    processes = [context.Process(target=_torch_worker, daemon=True, args=(
        me, workers, kind, model, tensors, n, batch, epochs, step, decay, seed, barrier,
        times)) for me in range(workers)]
    for process in processes:
        process.start()
    spans = []
    try:
        barrier.wait(timeout=300)
        while len(spans) < workers:
            try:
                spans.append(times.get(timeout=1))
            except queue.Empty:
                dead = [p.exitcode for p in processes if p.exitcode]
                if dead:
                    raise RuntimeError(f"a PyTorch Hogwild! process exited with code "
                                       f"{dead[0]}") from None
    finally:
        for process in processes:  # done: one stuck in interpreter teardown is killed
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
    return max(end for _, end in spans) - min(start for start, _ in spans)


def torch_svm_peer(X, y, X_test, y_test, reg, epochs, step, decay, workers, seed,
                   batch=32):
    """The PyTorch Hogwild! pattern on our hinge-loss SVM objective (an
    EmbeddingBag of width 1 is the weight vector): updates/s and test error."""
    import torch

    torch.manual_seed(seed)
    n, d = X.shape
    degree = np.bincount(X.indices, minlength=d)
    reg_scale = np.where(degree > 0, reg * n / np.maximum(degree, 1), 0).astype(np.float32)
    tensors = (torch.from_numpy(X.indptr.astype(np.int64)),
               torch.from_numpy(X.indices.astype(np.int64)),
               torch.from_numpy(X.data.astype(np.float32)),
               torch.from_numpy(np.where(y > 0, 1.0, -1.0).astype(np.float32)),
               torch.from_numpy(reg_scale))
    model = torch.nn.EmbeddingBag(d, 1, mode="sum", sparse=True)
    torch.nn.init.zeros_(model.weight)
    seconds = _torch_hogwild("svm", model, tensors, n, workers, batch, epochs, step,
                             decay, seed)
    w = model.weight.detach().numpy()[:, 0]
    predicted = np.where(X_test @ w > 0, 1, -1)
    return {"updates_per_s": n * epochs / seconds, "fit_seconds": seconds,
            "test_error": float(np.mean(predicted != np.where(y_test > 0, 1, -1)))}


def torch_mc_peer(train, test, rank, reg, bias_reg, init_scale, epochs, step, decay,
                  workers, seed, batch=256):
    """The PyTorch Hogwild! pattern on our biased matrix factorisation (sparse
    Embeddings for the factors and biases): ratings/s and test RMSE."""
    import torch

    torch.manual_seed(seed)
    user_ids, users = np.unique(train.users, return_inverse=True)
    item_ids, items = np.unique(train.items, return_inverse=True)
    order = np.random.default_rng(seed).permutation(users.size)
    mean = float(np.mean(train.values, dtype=np.float64))
    tensors = (torch.from_numpy(users[order].astype(np.int64)),
               torch.from_numpy(items[order].astype(np.int64)),
               torch.from_numpy(train.values[order].astype(np.float32)),
               torch.tensor([reg, bias_reg, mean], dtype=torch.float32))
    model = torch.nn.ModuleList([
        torch.nn.Embedding(user_ids.size, rank, sparse=True),
        torch.nn.Embedding(item_ids.size, rank, sparse=True),
        torch.nn.Embedding(user_ids.size, 1, sparse=True),
        torch.nn.Embedding(item_ids.size, 1, sparse=True)])
    with torch.no_grad():
        for table, scale in zip(model, (init_scale, init_scale, 0, 0)):
            if scale:
                table.weight.normal_(0, scale)
            else:
                table.weight.zero_()
    seconds = _torch_hogwild("mc", model, tensors, users.size, workers, batch, epochs,
                             step, decay, seed)
    P, Q, bu, bi = (table.weight.detach().numpy() for table in model)
    u = np.searchsorted(user_ids, test.users).clip(0, user_ids.size - 1)
    v = np.searchsorted(item_ids, test.items).clip(0, item_ids.size - 1)
    known_u, known_v = user_ids[u] == test.users, item_ids[v] == test.items
    predicted = mean + np.where(known_u, bu[u, 0], 0) + np.where(known_v, bi[v, 0], 0) \
        + np.where(known_u & known_v, (P[u] * Q[v]).sum(1), 0)
    return {"updates_per_s": users.size * epochs / seconds, "fit_seconds": seconds,
            "test_rmse": float(np.sqrt(np.mean((predicted - test.values) ** 2)))}
