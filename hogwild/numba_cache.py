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

Those files are input like any other: numba loads a data file's machine code as it
finds it, and 256 damaged bytes in one (a disk error, a crash mid-write) ended every
later run in an LLVM assertion (SIGABRT). So each file hogwild's caches hold starts
with the SHA-256 of what numba wrote, checked before numba reads it; a damaged file,
or one that is no regular file (a FIFO, a link to a device), is a miss with a warning,
compiled and cached anew.
"""
import hashlib
import io
import os
import pickle
import types
import warnings
from pathlib import Path

from numba.core import caching

from hogwild.errors import HogwildError
from hogwild.paths import cache_dir, code_cache_folder, not_regular, process_temporary_folder

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
            # this process's own temporary folder, not numba's user-wide cache (outside
            # the folder the user named) nor its in-tree one (the installed package)
            try:
                locator._cache_path = str(process_temporary_folder() / "numba" /
                                          locator._folder_name)
                locator.ensure_cache_path()
            except OSError:  # no temporary folder either: numba's next locator
                return None
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
    _sign_cache_files(caching.IndexDataCacheFile)


_SIGNED = b"hogwild-signed numba cache 1\n"  # then the SHA-256 of numba's bytes, then them
MAX_CACHE_FILE = 1 << 30  # bytes: far more than any compiled function's


class DamagedCacheFile(Exception):
    """A cache file whose bytes are not those hogwild wrote, or no regular file."""


def _signed(payload):
    return _SIGNED + hashlib.sha256(payload).digest() + payload


def _verified(path):
    """numba's bytes in the cache file ``path``, their SHA-256 checked; None for an
    unsigned file (numba's own format). FileNotFoundError where there is none;
    DamagedCacheFile for one damaged, too large, or no regular file (read without
    blocking on a FIFO or following a link)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as error:  # a link (ELOOP), a folder, no permission
        raise DamagedCacheFile(f"{path}: {error.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        kind = not_regular(info.st_mode)
        if kind is not None or info.st_size > MAX_CACHE_FILE:
            raise DamagedCacheFile(f"{path} is {kind or 'larger than any compiled function'}")
        data = f.read()
    if not data.startswith(_SIGNED):
        return None
    digest, payload = data[len(_SIGNED):len(_SIGNED) + 32], data[len(_SIGNED) + 32:]
    if hashlib.sha256(payload).digest() != digest:
        raise DamagedCacheFile(f"{path} is damaged: its bytes are not those written")
    return payload


def _signed_payload(path, strict):
    """_verified(path) where the file is signed; None for an unsigned one. ``strict``
    (a file of hogwild's cache folder): every file read as _verified reads it; else
    (another package's cache, or one of hogwild's written before the cache folder
    moved) the file is first opened as numba opens it, and only a signed one is
    verified, so other caches behave as numba made them."""
    if not strict:
        try:
            with open(path, "rb") as f:
                if f.read(len(_SIGNED)) != _SIGNED:
                    return None
        except OSError:
            return None  # numba's own reader says what it is
    return _verified(path)


def _sign_cache_files(file_class):
    """numba's index and data files under hogwild's cache folder written signed
    (_signed), and a signed file read only once verified, wherever it lies (a test,
    or a user, may move HOGWILD_CACHE_DIR after numba made a function's cache): in
    hogwild's folder an unsigned index (another version's) is an empty one, an
    unsigned or damaged data file a DamagedCacheFile (which
    _tolerate_cache_failures turns into a miss)."""
    save_index, load_index = file_class._save_index, file_class._load_index
    save_data, load_data = file_class._save_data, file_class._load_data

    def ours(cache_file):
        return Path(cache_file._cache_path).is_relative_to(cache_dir())

    def _load_index(self):
        strict = ours(self)
        try:
            payload = _signed_payload(self._index_path, strict)
        except FileNotFoundError:
            return {}
        if payload is None:
            return {} if strict else load_index(self)
        stream = io.BytesIO(payload)
        if pickle.load(stream) != self._version:
            return {}
        stamp, overloads = pickle.loads(stream.read())
        return overloads if stamp == self._source_stamp else {}

    def _save_index(self, overloads):
        if not ours(self):
            return save_index(self, overloads)
        payload = pickle.dumps(self._version, protocol=-1) + \
            self._dump((self._source_stamp, overloads))
        with self._open_for_write(self._index_path) as f:
            f.write(_signed(payload))

    def _load_data(self, name):
        strict, path = ours(self), self._data_path(name)
        payload = _signed_payload(path, strict)  # (a missing file: numba's load sees a miss)
        if payload is None:
            if not strict:
                return load_data(self, name)
            raise DamagedCacheFile(f"{path} is not signed: not a file hogwild wrote")
        return pickle.loads(payload)

    def _save_data(self, name, data):
        if not ours(self):
            return save_data(self, name, data)
        with self._open_for_write(self._data_path(name)) as f:
            f.write(_signed(self._dump(data)))

    file_class._save_index, file_class._load_index = _save_index, _load_index
    file_class._save_data, file_class._load_data = _save_data, _load_data


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
            if not (ours(self) or isinstance(error, DamagedCacheFile)):
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
            if not (ours(self) or isinstance(error, DamagedCacheFile)):
                raise
            forget(self, "read", error)
            return None

    cache_class.save_overload, cache_class.load_overload = save_overload, load_overload
