"""LIBMF through its own C API (``mf_train``, ``mf_train_on_disk``, ``calc_rmse``), for
benchmarks at scale: in memory on the same ratings arrays as ours, and from disk on
a text file of the same ratings, as ``mf-train --disk`` trains.

Any build of the library works: the ``libmf`` wheel's (pip install hogwild[bench];
an older LIBMF) or one made from https://github.com/cjlin1/libmf with ``make lib``
(``libmf.so.2``). Their ``mf_parameter`` differ (the newer one has ``alpha`` and
``c`` after ``eta``); the layout is told from ``mf_get_default_param``, whose
``alpha`` is 1.0 in the newer build. Each fit runs in a spawned child killed after
a time limit (LIBMF's scheduler can stall: cjlin1/libmf issue 12), and reports
its own peak RSS.
"""
import ctypes
import os
import time

import numpy as np
from numba import njit, prange

from hogwild.bench.peers import in_child
from hogwild.limits import peak_resident_bytes

NODE = np.dtype([("u", np.int32), ("v", np.int32), ("r", np.float32)])
RATING_DECIMALS = 4  # the text file's ratings: 1e-4 apart, far below any RMSE here


class _Node(ctypes.Structure):
    _fields_ = [("u", ctypes.c_int), ("v", ctypes.c_int), ("r", ctypes.c_float)]


class _Problem(ctypes.Structure):
    _fields_ = [("m", ctypes.c_int), ("n", ctypes.c_int), ("nnz", ctypes.c_longlong),
                ("R", ctypes.POINTER(_Node))]


class _Model(ctypes.Structure):
    _fields_ = [("fun", ctypes.c_int), ("m", ctypes.c_int), ("n", ctypes.c_int),
                ("k", ctypes.c_int), ("b", ctypes.c_float),
                ("P", ctypes.POINTER(ctypes.c_float)), ("Q", ctypes.POINTER(ctypes.c_float))]


_COMMON = [("fun", ctypes.c_int), ("k", ctypes.c_int), ("nr_threads", ctypes.c_int),
           ("nr_bins", ctypes.c_int), ("nr_iters", ctypes.c_int),
           ("lambda_p1", ctypes.c_float), ("lambda_p2", ctypes.c_float),
           ("lambda_q1", ctypes.c_float), ("lambda_q2", ctypes.c_float),
           ("eta", ctypes.c_float)]
_FLAGS = [("do_nmf", ctypes.c_bool), ("quiet", ctypes.c_bool), ("copy_data", ctypes.c_bool)]


class _ParamNew(ctypes.Structure):
    _fields_ = _COMMON + [("alpha", ctypes.c_float), ("c", ctypes.c_float)] + _FLAGS


class _ParamOld(ctypes.Structure):
    _fields_ = _COMMON + _FLAGS


def default_library():
    """The library to measure: LIBMF_OBJ, else the libmf wheel's, else None."""
    if os.environ.get("LIBMF_OBJ"):
        return os.environ["LIBMF_OBJ"]
    try:
        import importlib.util
        spec = importlib.util.find_spec("libmf")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    found = sorted(f for f in os.listdir(site) if f.startswith("libmf") and f.endswith(".so"))
    return os.path.join(site, found[0]) if found else None


def _load(path):
    """(library, its mf_parameter class) with argument and result types set."""
    lib = ctypes.CDLL(path)
    lib.mf_get_default_param.restype = _ParamNew
    probe = lib.mf_get_default_param()
    param = _ParamNew if probe.alpha == 1.0 else _ParamOld
    lib.mf_get_default_param.restype = param
    lib.mf_train.restype = ctypes.POINTER(_Model)
    lib.mf_train.argtypes = [ctypes.POINTER(_Problem), param]
    lib.mf_train_with_validation.restype = ctypes.POINTER(_Model)
    lib.mf_train_with_validation.argtypes = [ctypes.POINTER(_Problem), ctypes.POINTER(_Problem),
                                             param]
    lib.mf_train_on_disk.restype = ctypes.POINTER(_Model)
    lib.mf_train_on_disk.argtypes = [ctypes.c_char_p, param]
    lib.calc_rmse.restype = ctypes.c_double
    lib.calc_rmse.argtypes = [ctypes.POINTER(_Problem), ctypes.POINTER(_Model)]
    lib.mf_destroy_model.argtypes = [ctypes.POINTER(ctypes.POINTER(_Model))]
    return lib, param


def _problem(nodes):
    m = int(nodes["u"].max()) + 1 if nodes.size else 0
    n = int(nodes["v"].max()) + 1 if nodes.size else 0
    return _Problem(m, n, nodes.size, nodes.ctypes.data_as(ctypes.POINTER(_Node)))


def nodes_of(users, items, values):
    """LIBMF's array of (u, v, r) nodes for ratings arrays."""
    nodes = np.empty(len(values), NODE)
    nodes["u"], nodes["v"], nodes["r"] = users, items, values
    return nodes


@njit(nogil=True, cache=True)
def _digits(x, out, at):
    """Write the non-negative integer x in decimal at out[at:]; the end position."""
    start = at
    while True:
        out[at] = 48 + x % 10
        at += 1
        x //= 10
        if x == 0:
            break
    i, j = start, at - 1
    while i < j:
        out[i], out[j] = out[j], out[i]
        i += 1
        j -= 1
    return at


@njit(nogil=True, cache=True, parallel=True)
def _format(users, items, values, out, line_ends, width):
    """Lines "u v r\\n" of each rating into out, each in its own ``width`` bytes;
    line_ends[i] gets line i's length (packed afterwards)."""
    scale = 10 ** RATING_DECIMALS
    for i in prange(values.size):
        at = i * width
        at = _digits(users[i], out, at)
        out[at] = 32
        at = _digits(items[i], out, at + 1)
        out[at] = 32
        at += 1
        fixed = int(round(abs(values[i]) * scale))
        if values[i] < 0 and fixed > 0:
            out[at] = 45
            at += 1
        at = _digits(fixed // scale, out, at)
        out[at] = 46
        at += 1
        fraction = fixed % scale
        for d in range(RATING_DECIMALS - 1, -1, -1):
            out[at + d] = 48 + fraction % 10
            fraction //= 10
        at += RATING_DECIMALS
        out[at] = 10
        line_ends[i] = at + 1 - i * width


def write_text(path, users, items, values, chunk=1 << 22):
    """Ratings as LIBMF's text format ("u v r" lines, 0-based ids, ratings to
    RATING_DECIMALS places) at ``path``, chunk by chunk on every core, written
    under a temporary name and renamed (a file that exists is whole)."""
    width = 48  # two int32 ids, a sign, 12 integer digits, the point and decimals
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        for lo in range(0, len(values), chunk):
            hi = min(lo + chunk, len(values))
            out = np.empty((hi - lo) * width, np.uint8)
            lengths = np.empty(hi - lo, np.int64)
            _format(np.asarray(users[lo:hi], np.int64), np.asarray(items[lo:hi], np.int64),
                    np.asarray(values[lo:hi], np.float64), out, lengths, width)
            keep = np.arange(width)[None, :] < lengths[:, None]
            f.write(out.reshape(-1, width)[keep].tobytes())
    os.replace(tmp, path)


def _child(results, *args):
    try:
        results.put(_fit(*args))
    except Exception as error:  # sent back, so that a broken library is not a stall
        results.put({"error": f"{type(error).__name__}: {error}"})


def _fit(library, source, test, rank, threads, iters, l2, eta, bins):
    lib, _ = _load(library)
    param = lib.mf_get_default_param()
    param.k, param.nr_threads, param.nr_bins, param.nr_iters = rank, threads, bins, iters
    param.lambda_p1 = param.lambda_q1 = 0.0
    param.lambda_p2 = param.lambda_q2 = l2
    param.eta, param.quiet, param.do_nmf = eta, True, False
    if source[0] == "curve":
        return _curve(lib, param, source[1], test)
    if source[0] == "memory":
        nodes = nodes_of(*(np.load(p, mmap_mode="r") for p in source[1]))
        param.copy_data = False
        problem = _problem(nodes)
        start = time.perf_counter()
        model = lib.mf_train(ctypes.byref(problem), param)
    else:
        start = time.perf_counter()
        model = lib.mf_train_on_disk(source[1].encode(), param)
    seconds = time.perf_counter() - start
    if not model:
        return {"error": "LIBMF refused its parameters"}
    test_nodes = nodes_of(*test)
    rmse = lib.calc_rmse(ctypes.byref(_problem(test_nodes)), model)
    lib.mf_destroy_model(ctypes.byref(model))
    return {"seconds": seconds, "test_rmse": rmse,
            "peak_rss_bytes": peak_resident_bytes()}


def _curve(lib, param, arrays, test):
    """{test_rmse_by_iteration}: LIBMF's own report of the test RMSE after each
    iteration (mf_train_with_validation, not quiet), read from its standard output
    (file descriptor 1, sent to a temporary file for the fit)."""
    import tempfile

    nodes = nodes_of(*(np.load(p, mmap_mode="r") for p in arrays))
    test_nodes = nodes_of(*test)
    param.copy_data, param.quiet = False, False
    with tempfile.TemporaryFile() as out:
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            model = lib.mf_train_with_validation(ctypes.byref(_problem(nodes)),
                                                 ctypes.byref(_problem(test_nodes)), param)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        lines = out.read().decode(errors="replace").splitlines()
    if not model:
        return {"error": "LIBMF refused its parameters"}
    lib.mf_destroy_model(ctypes.byref(model))
    rows = [line.split() for line in lines if line.split() and line.split()[0].isdigit()]
    return {"test_rmse_by_iteration": [float(row[2]) for row in rows]}


def libmf_train(library, source, test, rank, threads, iters, l2=0.05, eta=0.1, bins=None,
                timeout=1800):
    """{seconds, test_rmse, peak_rss_bytes} (or {error}) of one LIBMF fit of ``iters``
    iterations in a spawned child, or None when it did not finish within ``timeout``
    seconds. ``source``: ("memory", (users.npy, items.npy, values.npy)), ("disk",
    text file), or ("curve", (users.npy, ...)): then {test_rmse_by_iteration},
    untimed. ``test``: (users, items, values) arrays. ``bins``: LIBMF's grid
    (default: its rule of thumb, 2 x threads + 1 and at least 20)."""
    bins = max(20, 2 * threads + 1) if bins is None else bins
    return in_child(_child, (library, source, test, rank, threads, iters, l2, eta, bins),
                    timeout)


def iteration_seconds(one, many, iters):
    """(seconds, how) of one LIBMF iteration from fits of 1 and ``iters`` iterations:
    their difference over iters - 1 (the set-up cancels), or, where a loaded host made
    that difference noise at or below zero (tiny sets), the longer fit's share (an
    upper bound: its set-up included)."""
    difference = (many["seconds"] - one["seconds"]) / max(iters - 1, 1)
    if difference > 0:
        return difference, "difference of fits"
    return many["seconds"] / iters, "whole fit"
