"""Where hogwild reads shared data and keeps its caches (environment overridable),
and which files it will read."""
import os
import stat
import warnings
from pathlib import Path

from hogwild.errors import HogwildError


def cache_dir() -> Path:
    """Compiled kernels and binary dataset caches: $HOGWILD_CACHE_DIR, else the
    XDG cache directory (~/.cache/hogwild)."""
    explicit = os.environ.get("HOGWILD_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "hogwild"


def private_folder(*parts) -> Path:
    """cache_dir()/parts, each folder from cache_dir() down created mode 0700 and
    checked: a HogwildError refuses one that another user owns or may write to, or
    whose parent others may write to without the sticky bit (they could swap the
    folder), since whoever can put a file there decides what every hogwild run
    executes (cached code) or trains on (cached data). OSError where a folder
    cannot be made (a read-only or full disk)."""
    root = cache_dir()
    root.parent.mkdir(parents=True, exist_ok=True)
    parent = root.parent.stat()
    if stat.S_IMODE(parent.st_mode) & 0o002 and not parent.st_mode & stat.S_ISVTX:
        raise HogwildError(f"cache folder {root} is in {root.parent}, which other users may "
                           "write to without the sticky bit: hogwild does not use it; set "
                           "HOGWILD_CACHE_DIR to a private folder")
    folders = [root] + [root.joinpath(*parts[:i + 1]) for i in range(len(parts))]
    for folder in folders:
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        info = folder.lstat()
        if folder == root and stat.S_ISLNK(info.st_mode) and info.st_uid == os.getuid():
            info = _linked_folder(folder)  # the user's link to their cache's new place
        mode = stat.S_IMODE(info.st_mode)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or mode & 0o022:
            whose = "not a folder" if not stat.S_ISDIR(info.st_mode) else \
                "owned by another user" if info.st_uid != os.getuid() else \
                f"writable by other users (mode {mode:o})"
            raise HogwildError(f"cache folder {folder} is {whose}: hogwild runs the code and "
                               "reads the data it caches there, so it does not use it; make "
                               "it yours with mode 0700, or set HOGWILD_CACHE_DIR to a "
                               "private folder")
    return folders[-1]


def _linked_folder(link):
    """The stat of the folder that ``link`` (the cache folder, a link of the user's
    own) leads to, checked as the cache folder's parent is: one that others could
    swap is refused. A link that leads nowhere is reported as not a folder."""
    try:
        target = link.resolve(strict=True)
        info = target.stat()
    except (OSError, RuntimeError):  # a dangling link, or a loop of links
        return link.lstat()
    parent = target.parent.stat()
    if stat.S_IMODE(parent.st_mode) & 0o002 and not parent.st_mode & stat.S_ISVTX:
        raise HogwildError(f"cache folder {link} leads to {target}, in {target.parent}, "
                           "which other users may write to without the sticky bit: hogwild "
                           "does not use it; set HOGWILD_CACHE_DIR to a private folder")
    return info


_temporary = []  # this process's own temporary folder, once made


def process_temporary_folder() -> Path:
    """A temporary folder of this process's own (mode 0700), removed at exit: where
    compiled code goes when the cache folder cannot be written or trusted, rather
    than anywhere the user did not name (numba's own fallback is ~/.cache/numba)."""
    if not _temporary:
        import atexit
        import shutil
        import tempfile

        _temporary.append(Path(tempfile.mkdtemp(prefix="hogwild-code-")))
        atexit.register(shutil.rmtree, _temporary[0], True)
    return _temporary[0]


code_cache_folder = private_folder  # cached code: callers fall back to a temporary folder

_DATA_CACHE_WARNED = set()


def data_cache_folder(*parts, create=True):
    """private_folder(*parts) for cached data (parsed files, generated and downloaded
    datasets), or None where it cannot be made or trusted: the data is then read or
    made afresh, never taken from there, and one warning per process says why. A
    full or read-only disk costs the cache, not the run. ``create=False``: None,
    quietly, where the folder does not exist yet (a lookup)."""
    if not create and not cache_dir().joinpath(*parts).is_dir():
        return None
    try:
        return private_folder(*parts)
    except HogwildError as error:
        reason = str(error)
    except OSError as error:
        reason = (f"cannot keep data in {cache_dir().joinpath(*parts)} "
                  f"({error.strerror or error}); it is read afresh every run")
    if reason not in _DATA_CACHE_WARNED:
        _DATA_CACHE_WARNED.add(reason)
        warnings.warn(reason, stacklevel=3)
    return None


def shared_data_dir() -> Path:
    """Real benchmark data: $HOGWILD_DATA, else ../shared/data from the repository
    root (from the working directory when hogwild is installed outside a checkout)."""
    explicit = os.environ.get("HOGWILD_DATA")
    if explicit:
        return Path(explicit).expanduser()
    repo_root = Path(__file__).resolve().parent.parent
    if (repo_root / "pyproject.toml").is_file():
        return repo_root.parent / "shared" / "data"
    return Path("..") / "shared" / "data"


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def not_regular(mode):
    """What a file of this st_mode is when it is not a regular file ('a FIFO (named
    pipe)', ...), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def check_regular(path, fd=None, what=""):
    """Refuse anything but a regular file at ``path`` (or open as ``fd``), with a
    one-line HogwildError, 'cannot read WHAT PATH: ...', that says what it is."""
    try:
        mode = os.fstat(fd).st_mode if fd is not None else os.stat(path).st_mode
    except FileNotFoundError:
        raise HogwildError(f"cannot read {what}{path}: no such file") from None
    except OSError as exc:
        raise HogwildError(f"cannot read {what}{path}: {exc.strerror}") from None
    kind = not_regular(mode)
    if kind is not None:
        raise HogwildError(f"cannot read {what}{path}: it is {kind}, not a regular file")


def process_ended(pid):
    """Whether process ``pid`` no longer runs: gone, or a zombie nobody has reaped
    yet (read from /proc; where there is none, whether it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as status:
            return status.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except (OSError, IndexError):  # no /proc to ask
        return not pid_alive(pid)


def pid_alive(pid):
    """Whether process ``pid`` exists on this machine (a zombie counts): a file or
    folder named for the process that made it is stale once it is gone."""
    if not 0 < pid < 2**31:  # 0 and negative numbers would name process groups
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True
