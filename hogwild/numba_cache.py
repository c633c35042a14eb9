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
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        folder = Path(py_file).resolve().parent
        self._folder_name = f"{folder.name}_{hashlib.sha1(str(folder).encode()).hexdigest()[:16]}"
        self._cache_path = str(cache_dir() / "numba" / self._folder_name)

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        stat = os.stat(self._py_file)
        return stat.st_mtime, stat.st_size

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        module = getattr(py_func, "__module__", None) or ""
        if module.split(".")[0] not in _PACKAGES or not os.path.exists(py_file):
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
