"""Where hogwild reads shared data and keeps its caches (environment overridable)."""
import os
from pathlib import Path


def cache_dir() -> Path:
    """Compiled kernels and binary dataset caches: $HOGWILD_CACHE_DIR, else the
    XDG cache directory (~/.cache/hogwild)."""
    explicit = os.environ.get("HOGWILD_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "hogwild"


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
