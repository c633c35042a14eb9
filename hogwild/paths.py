"""Where hogwild reads shared data and keeps its caches (environment overridable)."""
import os
import stat
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


def cache_folder(*parts) -> Path:
    """cache_dir()/parts, created if needed, the cache folder itself mode 0700 (what
    a user cached says what they ran, and cached code is executed)."""
    root = cache_dir()
    root.parent.mkdir(parents=True, exist_ok=True)
    root.mkdir(mode=0o700, exist_ok=True)
    folder = root.joinpath(*parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def code_cache_folder(*parts) -> Path:
    """cache_dir()/parts for cached code (generated kernel modules, numba's machine
    code, which numba unpickles): each folder from cache_dir() down is created
    mode 0700, and a HogwildError refuses one that another user owns or may write
    to, since whoever can put a file there can run code in every hogwild run."""
    root = cache_dir()
    root.parent.mkdir(parents=True, exist_ok=True)
    folders = [root] + [root.joinpath(*parts[:i + 1]) for i in range(len(parts))]
    for folder in folders:
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        info = folder.stat()
        mode = stat.S_IMODE(info.st_mode)
        if info.st_uid != os.getuid() or mode & 0o022:
            whose = "owned by another user" if info.st_uid != os.getuid() else \
                f"writable by other users (mode {mode:o})"
            raise HogwildError(f"cache folder {folder} is {whose}: hogwild runs the code it "
                               "caches there, so it does not use it; make it yours with mode "
                               "0700, or set HOGWILD_CACHE_DIR to a private folder")
    return folders[-1]


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
