"""Compile a user's plain per-sample functions into cached, nogil epoch loops.

numba cannot cache a loop that receives a jitted function as an argument or as a
closure variable (the key changes every process), and a loop that calls a global
function is only as fresh as the file it lives in. So for each (update, loss)
pair we write a tiny module named by a fingerprint of the two functions' code,
the code of the helpers they call and the constants they read, then load it:
numba caches its loops like any module-level function, and an edited update gets
a new fingerprint and therefore a fresh compile, never stale machine code.
"""
import contextlib
import hashlib
import importlib.util
import sys
import types
import warnings
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
from numba.core import config as numba_config

from hogwild.atomic import atomic_file
from hogwild.errors import HogwildError
from hogwild.paths import cache_dir, code_cache_folder, process_temporary_folder

_TEMPLATE_PATH = Path(__file__).with_name("loops_template.py")
_TEMPLATE_MARKER = "# ---- template body ----\n"
_FINGERPRINT_VERSION = b"hogwild-kernels-3"

# key -> (update, loss): read by the generated module while it is being imported.
_registry: dict[str, tuple[Callable, Callable]] = {}
_loaded: dict[str, "CompiledLoops"] = {}


class LoopSource(NamedTuple):
    """What loops were compiled from: all a worker process needs to load the same
    loops from the cache (it pickles by value)."""

    update: Callable
    loss: Callable
    fastmath: bool


class CompiledLoops(NamedTuple):
    """The compiled loops of one objective (see loops_template.py for contracts)."""

    run_spans: Callable
    run_spans_locked: Callable
    run_gated_spans: Callable
    run_phased_spans: Callable
    run_free_blocks: Callable
    sum_loss: Callable
    sum_loss_checked: Callable
    source: LoopSource


def check_compiler():
    """Refuse to run without numba's compiler (NUMBA_DISABLE_JIT=1): the kernels'
    atomics and intrinsics have no pure-Python form, and pure Python would be some
    hundred times slower."""
    if numba_config.DISABLE_JIT:
        raise HogwildError("hogwild needs numba's compiler, which NUMBA_DISABLE_JIT=1 turns "
                           "off: unset NUMBA_DISABLE_JIT")


def registered_functions(key):
    """Called by a generated module to fetch the Python functions it compiles."""
    return _registry[key]


def python_function(fn):
    """The plain Python function behind fn (which may already be a numba dispatcher)."""
    fn = getattr(fn, "py_func", fn)
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"got {type(fn).__name__}")
    return fn


def _hash_value(value, h, seen):
    """Hash what numba freezes at compile time: helper functions and constants."""
    if isinstance(value, types.FunctionType) or hasattr(value, "py_func"):
        _hash_function(python_function(value), h, seen)
    elif isinstance(value, types.ModuleType):
        h.update(value.__name__.encode())
    elif isinstance(value, np.ndarray):
        h.update(str((value.dtype, value.shape)).encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (bool, int, float, complex, str, bytes, np.generic, type(None))):
        h.update(repr(value).encode())
    elif isinstance(value, tuple):
        for item in value:
            _hash_value(item, h, seen)
    else:
        h.update(type(value).__qualname__.encode())


def _hash_code(code, h):
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _hash_code(const, h)
        else:
            h.update(repr(const).encode())


def _hash_function(fn, h, seen):
    if id(fn) in seen:
        return
    seen.add(id(fn))
    h.update(f"{fn.__module__}.{fn.__qualname__}".encode())
    _hash_code(fn.__code__, h)
    for name in fn.__code__.co_names:
        if name in fn.__globals__:
            h.update(name.encode())
            _hash_value(fn.__globals__[name], h, seen)
    for cell in fn.__closure__ or ():
        _hash_value(cell.cell_contents, h, seen)


def fingerprint(*functions):
    """A hex key that changes whenever anything numba would compile changes."""
    h = hashlib.sha256(_FINGERPRINT_VERSION)
    h.update(_TEMPLATE_PATH.read_bytes())
    seen = set()
    for fn in functions:
        h.update(b"|")
        _hash_function(python_function(fn), h, seen)
    return h.hexdigest()[:24]


def takes_epoch(update):
    """True for update(e, params, data, step, epoch), False for update(e, params, data, step)."""
    return python_function(update).__code__.co_argcount == 5


def _cacheable(fn):
    """numba can reload cached machine code only for functions of a module that a
    fresh process can import (a file, or the __main__ of a script); code made by
    exec() or typed into a notebook is compiled afresh in each process instead.
    The module is imported if this process has not yet: a function unpickled by
    value in a worker process must get the cache key its parent used."""
    module = sys.modules.get(fn.__module__)
    if module is None:
        try:
            module = importlib.import_module(fn.__module__)
        except ImportError:
            return False
    return getattr(module, "__file__", None) is not None


# Fast-math flags that let LLVM vectorise floating-point reductions (reassociate,
# fuse multiply-adds) while keeping NaN/Inf semantics, so divergence is still seen.
FASTMATH_FLAGS = {"reassoc", "contract", "nsz", "arcp"}


@contextlib.contextmanager
def slp_vectorizer(enabled=True):
    """Compile, inside this block, with LLVM's SLP vectoriser on.

    numba turns it off by default (numba PR #8852, after miscompilations), which
    leaves short fixed-length reductions such as a rank-32 dot product as one chain
    of dependent scalar multiply-adds (LLVM unrolls such loops fully before its loop
    vectoriser runs); with it, they become SIMD, 3-4x faster. The engine enables it
    for fastmath objectives only, and this project's kernels are tested against
    NumPy references. numba reads the setting whenever it builds an optimisation
    pipeline, so setting it around a compilation is enough; it is process-wide
    meanwhile.
    """
    if not enabled:
        yield
        return
    previous = numba_config.SLP_VECTORIZE
    numba_config.SLP_VECTORIZE = 1
    try:
        yield
    finally:
        numba_config.SLP_VECTORIZE = previous


def _module_source(key, functions, cache, fastmath):
    """The generated module. update and loss are inlined into the loops at numba's IR
    level: as separately compiled calls they ran about 1.3x slower per sample."""
    template = _TEMPLATE_PATH.read_text()
    body = template[template.index(_TEMPLATE_MARKER) + len(_TEMPLATE_MARKER):]
    flags = ", ".join(repr(flag) for flag in sorted(FASTMATH_FLAGS))
    # NumPy's error model: a float division is one instruction, not a test for zero
    # with a path that raises ZeroDivisionError, which kept the adaptive kernels'
    # rank loops from vectorising (2x slower). A zero divisor gives Inf or NaN, which
    # the engine's finite check reports after the epoch.
    options = f"cache={cache}, error_model='numpy'" + \
        (f", fastmath={{{flags}}}" if fastmath else "")
    body = body.replace("cache=True", options)
    names = ("update", "loss")
    prelude = ["# Generated by hogwild.kernels.compiler from loops_template.py; do not edit."]
    prelude += [f"# {name}: {fn.__module__}.{fn.__qualname__}"
                for name, fn in zip(names, functions)]
    prelude += [
        "from numba import njit as _njit",
        "from hogwild.kernels.compiler import registered_functions as _registered_functions",
        "",
        f"_update_py, _loss_py = _registered_functions({key!r})",
        "update = _njit(nogil=True, inline='always')(_update_py)",
        "loss = _njit(nogil=True, inline='always')(_loss_py)",
    ]
    if takes_epoch(functions[0]):
        prelude += ["update_sample = update", ""]
    else:
        prelude += [
            "",
            "",
            "@_njit(nogil=True, inline='always')",
            "def update_sample(e, params, data, step, epoch):",
            "    update(e, params, data, step)",
            "",
        ]
    return "\n".join(prelude) + body


def _write_module(path, text):
    """Write a generated module with the project's one atomic writer; a folder that
    cannot be written raises OSError or HogwildError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, "w") as f:
        f.write(text)


_warned_private = []  # whether this process said its kernels have no cache


def _private_folder(wanted, error):
    """A temporary folder for this process's generated modules when the cache
    folder cannot be written (a read-only disk) or trusted (others may write to
    it): the run works, with one warning, and kernels are compiled afresh in each
    process. Removed at exit."""
    if not _warned_private:
        _warned_private.append(True)
        reason = getattr(error, "strerror", None) or error
        warnings.warn(f"cannot keep compiled kernels in {wanted} ({reason}); "
                      "they are compiled afresh in every process (set HOGWILD_CACHE_DIR to a "
                      "writable folder to cache them)", stacklevel=3)
    folder = process_temporary_folder() / "kernels"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def compile_loops(update, loss, fastmath=False) -> CompiledLoops:
    """The epoch loops for (update, loss), compiled lazily and cached on disk;
    ``fastmath`` compiles them with FASTMATH_FLAGS."""
    functions = (python_function(update), python_function(loss))
    cache = all(_cacheable(fn) for fn in functions)
    key = fingerprint(*functions) + ("_fastmath" if fastmath else "") + \
        ("" if cache else "_nocache")
    if key in _loaded:
        return _loaded[key]
    module_name = f"hogwild_loops_{key}"
    try:
        folder = code_cache_folder("kernels")
    except (OSError, HogwildError) as error:  # read-only, or others could write there
        folder = _private_folder(cache_dir() / "kernels", error)
    path = folder / f"{module_name}.py"
    source = _module_source(key, functions, cache, fastmath)
    if not path.exists() or path.read_text() != source:
        try:
            _write_module(path, source)
        except (OSError, HogwildError) as error:
            path = _private_folder(path.parent, error) / path.name
            _write_module(path, source)
    _registry[key] = functions
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    loops = CompiledLoops(module.run_spans, module.run_spans_locked, module.run_gated_spans,
                          module.run_phased_spans, module.run_free_blocks, module.sum_loss,
                          module.sum_loss_checked,
                          LoopSource(functions[0], functions[1], fastmath))
    _loaded[key] = loops
    return loops
