"""Fitted models on disk: one .npz archive of arrays plus JSON metadata naming the
model's kind and format version. No pickle, so loading a file runs no code; the
file is written beside its destination and renamed into place, so a crash never
leaves half a model under the final name."""
import dataclasses
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from hogwild.errors import HogwildError


def write_model(path, kind, version, meta, arrays):
    """Write ``arrays`` (name -> numpy array) and ``meta`` (JSON-able) to path."""
    path = Path(path)
    if path.exists() and not path.is_file():  # renaming would replace a folder or device
        raise HogwildError(f"cannot write {path}: it exists and is not a regular file")
    header = {"kind": kind, "version": version, **meta}
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise HogwildError(f"cannot write {path}: {error.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, meta=np.array(json.dumps(header, default=_plain)), **arrays)
        os.replace(tmp, path)
    except OSError as error:  # a full disk, say: the previous file, if any, is kept
        Path(tmp).unlink(missing_ok=True)
        raise HogwildError(f"cannot write {path}: {error.strerror or error}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_model(path, kind, version, description):
    """(meta, arrays) of a file written by write_model for this kind and version;
    anything else is refused with a one-line HogwildError. ``description`` names
    the kind for people ("matrix-factorization model")."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"])) if "meta" in archive.files else {}
            arrays = {name: archive[name] for name in archive.files if name != "meta"}
    except FileNotFoundError:
        raise HogwildError(f"cannot read {path}: no such file") from None
    except (OSError, ValueError, json.JSONDecodeError, AttributeError):
        raise HogwildError(f"{path} is not a hogwild model file (not an .npz archive)") from None
    if meta.get("kind") != kind:
        raise HogwildError(f"{path} is not a hogwild {description} (kind {meta.get('kind')!r})")
    if meta.get("version") != version:
        raise HogwildError(f"{path} is a version {meta.get('version')!r} model file; "
                           f"this hogwild reads version {version}")
    return meta, arrays


def _plain(value):
    """JSON for settings objects among the parameters (SSPSettings: its fields)."""
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot save a parameter of type {type(value).__name__}")
