"""numba's on-disk caches of hogwild's own compiled functions, kept out of the
installed package.

numba caches a ``cache=True`` function beside its source, in ``__pycache__``,
whenever that folder is writable: inside site-packages for a regular install. pip
does not know those files, so uninstalling (or reinstalling editable, as the
README's second command does after the first) leaves ``hogwild/.../__pycache__``
folders behind, and an ``hogwild`` folder without ``__init__.py`` then imports as
an empty namespace package that shadows the real one. So hogwild's modules cache
under hogwild's cache directory instead (hogwild.paths.cache_dir()/numba, one
folder per source folder), like the generated kernel modules. NUMBA_CACHE_DIR,
when set, still wins; other packages' functions are not affected.
"""
import hashlib
import os
import types
import warnings
from pathlib import Path

from numba.core import caching

from hogwild.errors import HogwildError
from hogwild.paths import cache_dir, code_cache_folder

_PACKAGES = ("hogwild",)  # hogwild.problems and hogwild.datasets included


class HogwildCacheLocator(caching._CacheLocator):
    """Caches functions of hogwild's modules in cache_dir()/numba/<folder>_<hash of
    its path>, so two installs (a venv and a checkout) never share index files."""

    def __init__(self, py_func, py_file):
        self._py_file, self._py_func = py_file, py_func
        self._lineno = py_func.__code__.co_firstlineno
        folder = Path(py_file).resolve().parent
        self._folder_name = f"{folder.name}_{hashlib.sha1(str(folder).encode()).hexdigest()[:16]}"
        self._cache_path = str(cache_dir() / "numba" / self._folder_name)

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        stat = os.stat(self._py_file)
        return stat.st_mtime, stat.st_size, _callee_stamps(self._py_func, self._py_file)

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _ours(getattr(py_func, "__module__", None)) or not os.path.exists(py_file):
            return None
        locator = cls(py_func, py_file)
        try:
            code_cache_folder("numba", locator._folder_name)  # 0700, and nobody else's
            locator.ensure_cache_path()
        except (OSError, HogwildError):  # an unwritable or untrusted cache directory:
            # numba's user-wide cache rather than its in-tree one (the installed package)
            user_wide = getattr(caching, "UserWideCacheLocator", None) \
                or caching._UserWideCacheLocator
            return user_wide.from_function(py_func, py_file)
        return locator


def _callee_stamps(py_func, own_file):
    """(file, mtime, size) of every other source file of hogwild's whose functions
    ``py_func`` calls, directly or through them (or whose module it names): numba
    stamps a cache entry with its own file alone, so an edit to a helper that a
    kernel of another module inlines (a hash, a number scanner) would otherwise
    leave that kernel's old machine code in use."""
    files, seen = set(), set()

    def names(code):
        yield from code.co_names
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                yield from names(const)

    def visit(fn):
        if id(fn) in seen:
            return
        seen.add(id(fn))
        values = [fn.__globals__[name] for name in names(fn.__code__) if name in fn.__globals__]
        values += [cell.cell_contents for cell in fn.__closure__ or ()
                   if cell.cell_contents is not fn]
        for value in values:
            if isinstance(value, types.ModuleType):
                if _ours(value.__name__) and getattr(value, "__file__", None):
                    files.add(value.__file__)
                continue
            value = getattr(value, "py_func", value)
            if isinstance(value, types.FunctionType) and _ours(value.__module__):
                files.add(value.__code__.co_filename)
                visit(value)

    try:
        visit(py_func)
    except ValueError:  # a closure cell not yet filled: its function is stamped alone
        pass
    stamps = []
    for name in sorted(files - {own_file}):
        try:
            stat = os.stat(name)
        except OSError:
            continue
        stamps.append((name, stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def _ours(module):
    return (module or "").split(".")[0] in _PACKAGES


def install():
    """Put HogwildCacheLocator before numba's in-tree locator (idempotent); must
    run before hogwild's first ``cache=True`` function is defined."""
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    locators = list(impl._locator_classes)
    if any(c.__name__ == HogwildCacheLocator.__name__ for c in locators):
        return
    first = 1 if locators and "UserProvided" in locators[0].__name__ else 0
    locators.insert(first, HogwildCacheLocator)
    impl._locator_classes = locators
    _tolerate_cache_failures(caching.Cache)


_WARNED = set()


def _tolerate_cache_failures(cache_class):
    """A cache under hogwild's cache folder (hogwild's functions, the generated
    kernels) never fails a run: a file numba cannot write (a full or read-only
    disk) costs the cache, and a damaged index or data file is a miss, its index
    removed so that the function, compiled again, is cached anew; one warning per
    folder says so. Other packages' caches behave as numba made them."""
    save, load = cache_class.save_overload, cache_class.load_overload

    def ours(cache):
        return Path(cache.cache_path).is_relative_to(cache_dir())

    def forget(cache, what, error):
        """Drop the function's index (a damaged one would fail every later run)."""
        try:
            os.unlink(cache._cache_file._index_path)
        except (OSError, AttributeError):
            pass
        if cache.cache_path not in _WARNED:
            _WARNED.add(cache.cache_path)
            reason = getattr(error, "strerror", None) or f"{type(error).__name__}: {error}"
            warnings.warn(f"numba's cache in {cache.cache_path} cannot be {what} ({reason}); "
                          "hogwild compiles what it cannot cache", stacklevel=4)

    def save_overload(self, sig, data):
        try:
            return save(self, sig, data)
        except Exception as error:  # noqa: BLE001 - no space, read-only, a damaged index
            if not ours(self):
                raise
            forget(self, "written", error)
        try:  # once more, over no index
            return save(self, sig, data)
        except Exception:  # noqa: BLE001 - said once already
            return None

    def load_overload(self, sig, target_context):
        try:
            return load(self, sig, target_context)
        except Exception as error:  # noqa: BLE001 - a damaged file fails in many ways
            if not ours(self):
                raise
            forget(self, "read", error)
            return None

    cache_class.save_overload, cache_class.load_overload = save_overload, load_overload
