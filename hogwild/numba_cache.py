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
