"""numba's cache of hogwild's compiled functions read as untrusted input: a damaged
data or index file (a disk error, a crash mid-write), a FIFO or a link to a device
in its place is a miss with one warning, never an abort, a hang or a cache that
stays broken; the run compiles, caches anew, and the next run loads from it."""
import os
import subprocess
import sys

import numpy as np
import pytest

COMPILE_ONE = """
import numpy as np
from hogwild.index_check import _nondecreasing
print(_nondecreasing(np.arange(5)), sum(_nondecreasing.stats.cache_hits.values()))
"""


def _run(cache):
    """COMPILE_ONE in a fresh process on the cache folder ``cache``: (status, its
    line, "True" and the cache's hits: 1 where it was loaded, 0 where compiled,
    stderr)."""
    done = subprocess.run([sys.executable, "-c", COMPILE_ONE], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HOGWILD_CACHE_DIR": str(cache)})
    return done.returncode, done.stdout.strip(), done.stderr


def _damage_bytes(path):
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 256] = np.random.default_rng(0).bytes(256)
    path.write_bytes(bytes(data))


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _device_link(path):
    path.unlink()
    path.symlink_to("/dev/zero")


@pytest.mark.parametrize("damage", [_damage_bytes, _fifo, _device_link])
@pytest.mark.parametrize("suffix", [".nbc", ".nbi"])
def test_a_damaged_compiled_code_cache_is_a_miss_then_repaired(tmp_path, damage, suffix):
    assert _run(tmp_path)[:2] == (0, "True 0")
    [path] = tmp_path.glob(f"numba/*/index_check._nondecreasing-*{suffix}")
    damage(path)

    status, out, err = _run(tmp_path)
    assert (status, out) == (0, "True 0"), err[-2000:]
    assert "cannot be read (DamagedCacheFile: " in err and str(path) in err
    assert "hogwild compiles what it cannot cache" in err

    status, out, err = _run(tmp_path)  # compiled again and cached: loaded, no warning
    assert (status, out) == (0, "True 1"), err[-2000:]
    assert "DamagedCacheFile" not in err


def test_a_cache_file_in_numbas_own_format_is_compiled_again_in_silence(tmp_path):
    """An index numba wrote unsigned (an older hogwild's) is another version's."""
    assert _run(tmp_path)[:2] == (0, "True 0")
    [index] = tmp_path.glob("numba/*/index_check._nondecreasing-*.nbi")
    index.write_bytes(index.read_bytes().split(b"\n", 1)[1][32:])  # the signature taken off
    status, out, err = _run(tmp_path)
    assert (status, out) == (0, "True 0") and "Damaged" not in err, err[-2000:]
    assert _run(tmp_path)[:2] == (0, "True 1")


MOVED_AFTER_IMPORT = """
import os, sys
import numpy as np
from hogwild.index_check import _nondecreasing  # its cache is where the folder was
os.environ["HOGWILD_CACHE_DIR"] = sys.argv[1]
print(_nondecreasing(np.arange(5)), sum(_nondecreasing.stats.cache_hits.values()))
"""


def test_signed_files_load_after_the_cache_folder_moves_under_a_process(tmp_path):
    """A function's cache stays where numba made it when HOGWILD_CACHE_DIR changes
    later (as tests do): its signed files must still load, not reach numba's reader."""
    assert _run(tmp_path)[:2] == (0, "True 0")
    done = subprocess.run([sys.executable, "-c", MOVED_AFTER_IMPORT, str(tmp_path / "moved")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HOGWILD_CACHE_DIR": str(tmp_path)})
    assert (done.returncode, done.stdout.strip()) == (0, "True 1"), done.stderr[-2000:]


def test_an_unusable_cache_folder_keeps_compiled_code_in_a_private_folder_gone_at_exit(
        tmp_path):
    """Where the cache folder cannot be used (here a file), numba's own fallback put
    compiled code in ~/.cache/numba, outside every folder the user named."""
    home, temporary = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    temporary.mkdir()
    (tmp_path / "cache").write_text("")
    done = subprocess.run([sys.executable, "-c", COMPILE_ONE], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HOGWILD_CACHE_DIR": str(tmp_path /
                                                                                    "cache"),
                                            "HOME": str(home), "TMPDIR": str(temporary),
                                            "XDG_CACHE_HOME": str(home / ".cache")})
    assert (done.returncode, done.stdout.strip()) == (0, "True 0"), done.stderr
    assert list(home.iterdir()) == [] and list(temporary.iterdir()) == []


def test_a_cache_folder_that_is_the_users_link_to_their_own_folder_is_used(tmp_path):
    """A cache moved to a bigger disk and linked from its old place was refused as
    "not a folder": every run compiled again."""
    real = tmp_path / "bigger-disk" / "hogwild"
    real.mkdir(parents=True, mode=0o700)
    link = tmp_path / "cache"
    link.symlink_to(real)
    assert _run(link)[:2] == (0, "True 0")
    assert _run(link)[:2] == (0, "True 1")  # loaded from the linked folder
    assert (real / "numba").is_dir()
