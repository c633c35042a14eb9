"""Checkpoints: a run's state after a whole epoch, written so that nothing is lost.

A checkpoint is an .npz file (no pickle) holding the parameter arrays, the
scheduler's own state (CYCLADES' batches) and a JSON header: format and version,
the objective's name and sample count, the parameters' shapes and dtypes, the
epochs done, the random generator's state, the next step size, the fit settings
and the history, and a SHA-256 of every array; the settings include a SHA-256 of
the objective's data, so that a resume can refuse other data or other settings
(which would silently break the bitwise-resume promise). It is written atomically
(hogwild.atomic: a temporary file, fsync, rename, fsync of the folder), so a crash
at any moment leaves either the previous checkpoint or the new one, never a
mixture. Loading refuses a truncated, corrupted or mismatched file with an error
that names what is wrong.

The header also carries a digest of itself (which holds the arrays' digests), so
header and arrays are checked together: an edit of any field (the settings that a
resume compares, the history, the random state) or of any array is refused. A
plain SHA-256 stops accidents and casual edits; whoever knows the format can
recompute it. With HOGWILD_CHECKPOINT_KEY set, the digest is an HMAC-SHA256 under
that key, which only holders of the key can make: a file without one, or with
another key's, is refused.
"""
import hashlib
import hmac
import json
import os
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from hogwild.atomic import atomic_file
from hogwild.disk_arrays import pieces
from hogwild.errors import HogwildError
from hogwild.paths import check_regular

FORMAT = "hogwild-checkpoint"
VERSION = 2
KEY_VARIABLE = "HOGWILD_CHECKPOINT_KEY"


@dataclass
class Checkpoint:
    epoch: int                # epochs completed
    params: tuple             # parameter arrays after that epoch
    rng_state: dict           # numpy bit generator state for the next epoch's plan
    step: float               # step size of the next epoch
    history: list             # EpochRecord fields, one dict per epoch done
    objective: str            # the objective's name
    n_samples: int
    settings: dict = field(default_factory=dict)   # fit settings, for the record
    planner: dict = field(default_factory=dict)    # scheduler state arrays


def _digest(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def data_fingerprint(arrays):
    """SHA-256 of data arrays: their dtypes, shapes and bytes, in order."""
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        for piece in pieces(array if array.ndim else array.reshape(1)):
            digest.update(memoryview(np.ascontiguousarray(piece).reshape(-1).view(np.uint8)))
    return digest.hexdigest()


def _authentication():
    """(name, key) of the digest this process writes and expects: HMAC-SHA256 under
    $HOGWILD_CHECKPOINT_KEY, else a plain SHA-256."""
    key = os.environ.get(KEY_VARIABLE)
    return ("hmac-sha256", key.encode()) if key else ("sha256", None)


def header_digest(header, key):
    """The digest of a header's every field but the digest itself (canonical JSON:
    sorted keys), keyed when ``key`` is given."""
    text = json.dumps({k: v for k, v in header.items() if k != "digest"}, sort_keys=True,
                      separators=(",", ":")).encode()
    return hmac.new(key, text, "sha256").hexdigest() if key else hashlib.sha256(text).hexdigest()


def _check_digest(path, header):
    """Refuse a header whose digest does not match it (an edit), or whose kind of
    digest is not the one this process expects."""
    kind, key = _authentication()
    written = header.get("authentication")
    if written != kind:
        if kind == "hmac-sha256":
            raise HogwildError(f"checkpoint {path} is not authenticated with a key, and "
                               f"{KEY_VARIABLE} is set: refused (anyone could have written it)")
        raise HogwildError(f"checkpoint {path} is authenticated with a key ({written}): set "
                           f"{KEY_VARIABLE} to the key it was written with")
    if not hmac.compare_digest(str(header.get("digest")), header_digest(header, key)):
        raise HogwildError(f"checkpoint {path} was edited or is corrupted: its header does not "
                           "match its digest" + (" (or it was written with another key)"
                                                 if key else ""))


# Header fields and the JSON types they must have; a file that differs was not
# written by hogwild (or was edited), and is refused before anything uses it.
HEADER_TYPES = {"epoch": int, "rng_state": dict, "step": (int, float), "history": list,
                "objective": str, "n_samples": int, "settings": dict, "shapes": list,
                "dtypes": list, "planner_names": list, "digests": dict}


def _check_header(path, header, arrays):
    for name, kind in HEADER_TYPES.items():
        value = header.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise HogwildError(f"checkpoint {path} has a malformed header: field {name!r} is "
                               "missing or of the wrong type")
    n_params = sum(name.startswith("param_") for name in arrays)
    if len(header["shapes"]) != n_params or len(header["dtypes"]) != n_params:
        raise HogwildError(f"checkpoint {path} has a malformed header: it describes "
                           f"{len(header['shapes'])} parameter arrays and holds {n_params}")
    if not all(f"planner_{name}" in arrays for name in header["planner_names"]):
        raise HogwildError(f"checkpoint {path} has a malformed header: field 'planner_names' "
                           "names arrays it does not hold")


def save_checkpoint(path, checkpoint):
    """Write ``checkpoint`` to ``path`` atomically (see the module docstring)."""
    path = Path(path)
    arrays = {f"param_{i}": np.asarray(p) for i, p in enumerate(checkpoint.params)}
    arrays.update({f"planner_{name}": np.asarray(a) for name, a in checkpoint.planner.items()})
    header = {key: value for key, value in asdict(checkpoint).items()
              if key not in ("params", "planner")}
    header.update(format=FORMAT, version=VERSION,
                  shapes=[list(p.shape) for p in checkpoint.params],
                  dtypes=[str(p.dtype) for p in checkpoint.params],
                  planner_names=sorted(checkpoint.planner),
                  digests={name: _digest(a) for name, a in arrays.items()})
    kind, key = _authentication()
    header.update(authentication=kind)
    header["digest"] = header_digest(header, key)
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as f:
        np.savez(f, **arrays)


def load_checkpoint(path):
    """The Checkpoint in ``path``; a HogwildError if it is missing, truncated,
    corrupted or not a hogwild checkpoint."""
    path = Path(path)
    if not path.exists():
        raise HogwildError(f"checkpoint {path} does not exist")
    check_regular(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as exc:
        raise HogwildError(f"checkpoint {path} is truncated or not a hogwild checkpoint "
                           f"({type(exc).__name__}: {exc})") from None
    try:
        header = json.loads(arrays.pop("header").tobytes().decode())
    except (KeyError, ValueError, UnicodeDecodeError):
        raise HogwildError(f"checkpoint {path} has no readable header: not a hogwild "
                           "checkpoint") from None
    if header.get("format") != FORMAT:
        raise HogwildError(f"{path} is not a hogwild checkpoint")
    if header.get("version") != VERSION:
        raise HogwildError(f"checkpoint {path} has format version {header.get('version')}; "
                           f"this hogwild reads version {VERSION}")
    _check_digest(path, header)
    _check_header(path, header, arrays)
    digests = header["digests"]
    if set(digests) != set(arrays):
        raise HogwildError(f"checkpoint {path} is corrupted: it lists arrays "
                           f"{sorted(digests)} but holds {sorted(arrays)}")
    for name, array in arrays.items():
        if _digest(array) != digests[name]:
            raise HogwildError(f"checkpoint {path} is corrupted: array {name!r} does not "
                               "match its checksum")
    params = tuple(arrays[f"param_{i}"] for i in range(len(header["shapes"])))
    return Checkpoint(epoch=header["epoch"], params=params, rng_state=header["rng_state"],
                      step=header["step"], history=header["history"],
                      objective=header["objective"], n_samples=header["n_samples"],
                      settings=header["settings"],
                      planner={name: arrays[f"planner_{name}"]
                               for name in header["planner_names"]})


def restore_field(path, field, restore):
    """restore(): use a checkpoint's ``field``; one that does not fit (a crafted or
    foreign header) is a HogwildError naming it, not a KeyError or TypeError."""
    try:
        return restore()
    except (KeyError, TypeError, ValueError, IndexError):
        raise HogwildError(f"checkpoint {path} has a malformed header: field {field!r} does "
                           "not fit this run") from None


def check_compatible(checkpoint, path, objective, epochs, settings):
    """Refuse to resume ``objective`` with fit ``settings`` from a checkpoint of
    something else, naming the first field that differs."""
    if checkpoint.objective != objective.name:
        raise HogwildError(f"checkpoint {path} is for objective {checkpoint.objective!r}, "
                           f"not {objective.name!r}")
    if checkpoint.n_samples != objective.n_samples:
        raise HogwildError(f"checkpoint {path} has {checkpoint.n_samples} samples, this "
                           f"objective {objective.n_samples}")
    if len(checkpoint.params) != len(objective.params):
        raise HogwildError(f"checkpoint {path} has {len(checkpoint.params)} parameter arrays, "
                           f"this objective {len(objective.params)}")
    for i, (saved, ours) in enumerate(zip(checkpoint.params, objective.params)):
        if saved.shape != ours.shape or saved.dtype != ours.dtype:
            raise HogwildError(f"checkpoint {path}: params[{i}] is {saved.dtype}{list(saved.shape)}"
                               f" there, {ours.dtype}{list(ours.shape)} here")
    if checkpoint.epoch > epochs:
        raise HogwildError(f"checkpoint {path} is after epoch {checkpoint.epoch}, beyond "
                           f"epochs={epochs}; ask for more epochs to continue it")
    saved = checkpoint.settings
    missing = [name for name in settings if name not in saved]
    if missing:
        raise HogwildError(f"checkpoint {path} does not record the setting {missing[0]!r}, so a "
                           "resume could not be checked against it: refused")
    if saved["data_sha256"] != settings["data_sha256"]:
        hint = ("; its run had seed=None, which orders the data differently every run: "
                "give a seed to make a run resumable") if saved.get("seed") is None else \
            "; resume with the same data and seed"
        raise HogwildError(f"checkpoint {path} was written for other data (or another order "
                           f"of it){hint}")
    for name, value in settings.items():
        if saved[name] != value:
            raise HogwildError(f"checkpoint {path} was written with {name}={saved[name]!r}, "
                               f"this run has {name}={value!r}; resume with the same {name} "
                               "(or start afresh without resume)")
