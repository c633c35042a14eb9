"""Fitted models on disk: one .npz archive of arrays plus JSON metadata naming the
model's kind and format version. No pickle, so loading a file runs no code; the
file is written atomically (hogwild.atomic), so a crash never leaves half a model
under the final name."""
import dataclasses
import json
import zipfile
from pathlib import Path

import numpy as np

from hogwild.atomic import atomic_file
from hogwild.backends.host import all_finite
from hogwild.errors import HogwildError
from hogwild.limits import available_memory, size_text
from hogwild.paths import check_regular


def write_model(path, kind, version, meta, arrays):
    """Write ``arrays`` (name -> numpy array) and ``meta`` (JSON-able) to path."""
    header = {"kind": kind, "version": version, **meta}
    for name, array in arrays.items():
        if array.dtype.hasobject:  # np.savez would pickle them, and np.load refuses that
            raise HogwildError(f"cannot save {name}: it holds Python objects, and a hogwild "
                               "model file holds numbers and strings only")
    with atomic_file(path) as f:
        np.savez(f, meta=np.array(json.dumps(header, default=_plain)), **arrays)


def read_model(path, kind, version, description, build):
    """``build(meta, arrays)`` on a file written by write_model for this kind and
    version; anything else, a damaged or edited file whose fields do not fit
    ``build`` included, is refused with a one-line HogwildError. ``description``
    names the kind for people ("matrix-factorization model")."""
    path = Path(path)
    check_regular(path)
    _check_declared_sizes(path, description)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"])) if "meta" in archive.files else {}
            arrays = {name: archive[name] for name in archive.files if name != "meta"}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, AttributeError):
        raise HogwildError(f"{path} is not a hogwild model file (not an .npz archive)") from None
    if not isinstance(meta, dict):
        raise HogwildError(f"{path} is not a hogwild model file (its metadata is not a "
                           "JSON object)")
    if meta.get("kind") != kind:
        raise HogwildError(f"{path} is not a hogwild {description} (kind {meta.get('kind')!r})")
    if meta.get("version") != version:
        raise HogwildError(f"{path} is a version {meta.get('version')!r} model file; "
                           f"this hogwild reads version {version}")
    params = meta.get("params")
    if isinstance(params, dict) and "seed" in params:  # saved before it was random_state
        params["random_state"] = params.pop("seed")
    try:
        return build(meta, arrays)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        detail = f"no {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
        raise HogwildError(f"{path} is a damaged or edited {description} file ({detail})") \
            from None


def _check_declared_sizes(path, description):
    """Each array's size as its .npy header declares it, checked before any array is
    read: no more than its archive member holds (an edited header), and all of them
    within the memory available (a small compressed file of zeros can expand to
    more than the machine has)."""
    members = []  # (name, declared bytes, bytes the member holds after its header)
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.infolist():
                with archive.open(member) as f:
                    read_header = np.lib.format.read_array_header_1_0 \
                        if np.lib.format.read_magic(f) == (1, 0) \
                        else np.lib.format.read_array_header_2_0
                    shape, _, dtype = read_header(f)
                    members.append((member.filename, int(np.prod(shape, dtype=object))
                                    * dtype.itemsize, member.file_size - f.tell()))
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, TypeError):
        raise HogwildError(f"{path} is not a hogwild model file (not an .npz archive)") from None
    for name, declared, held in members:
        if declared > held:
            raise HogwildError(f"{path} is a damaged or edited {description} file ({name} "
                               f"declares {size_text(declared)} and holds {size_text(held)})")
    total, memory = sum(declared for _, declared, _ in members), available_memory()
    if memory is not None and total > memory:
        raise HogwildError(f"{path}: its arrays take {size_text(total)}, more than the "
                           f"{size_text(memory)} of memory available")


def _plain(value):
    """JSON for settings objects among the parameters (SSPSettings: its fields)."""
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot save a parameter of type {type(value).__name__}")


def check_shapes(shapes, indptr, grouped, n_items, what):
    """A loaded model's arrays fit each other, or a ValueError naming the first that
    does not (an edited file would index past them): ``shapes`` = (name, array,
    expected shape) numeric arrays; (indptr, grouped) each user's item indices
    (CSR), all below ``n_items`` (``what``: the users' items, for the message)."""
    for name, array, shape in shapes:
        if array.shape != shape or array.dtype.kind not in "fiu" or min(shape) < 0:
            raise ValueError(f"{name} is {array.dtype}{list(array.shape)}, expected shape "
                             f"{list(shape)}")
        if array.dtype.kind == "f" and not all_finite([array]):
            raise ValueError(f"{name} holds NaN or Inf")
    if grouped.dtype.kind not in "iu" or indptr.dtype.kind not in "iu" or \
            (grouped.size and not 0 <= grouped.min() <= grouped.max() < n_items) or \
            indptr[0] != 0 or indptr[-1] != grouped.size or (np.diff(indptr) < 0).any():
        raise ValueError(f"{what} do not fit the item count")
