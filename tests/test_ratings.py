"""Rating files, splits, downloads and the Jumbo generator."""
import gzip
import hashlib
import http.server
import os
import threading
import zipfile

import numpy as np
import pytest

from hogwild import DataFormatError, HogwildError
from hogwild.datasets.jumbo import make_jumbo, parse_jumbo_spec
from hogwild.datasets.ratings import Ratings, read_ratings, split_ratings
from hogwild.datasets.registry import RATINGS_DATASETS, download_dataset, load_ratings


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))


def write(tmp_path, name, text, compress=False):
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


EXPECTED = ([1, 1, 2], [10, 20, 10], [5.0, 3.5, 1.0])


@pytest.mark.parametrize("name,text,compress", [
    ("u.data", "1\t10\t5\t881250949\n1\t20\t3.5\t881250950\n2\t10\t1\t881250951\n", False),
    ("ratings.dat", "1::10::5::978300760\n1::20::3.5::978302109\n2::10::1::978301968\n", False),
    ("ratings.csv", "userId,movieId,rating,timestamp\n1,10,5.0,964982703\n1,20,3.5,1\n"
                    "2,10,1.0,2\n", False),
    ("plain.txt", "# a comment\n\n1 10 5\r\n1  20 3.5\n2 10 1\n", False),
    ("r.tsv.gz", "1\t10\t5\n1\t20\t3.5\n2\t10\t1", True),
])
def test_reads_each_rating_format(tmp_path, name, text, compress):
    r = read_ratings(write(tmp_path, name, text, compress))
    np.testing.assert_array_equal(r.users, EXPECTED[0])
    np.testing.assert_array_equal(r.items, EXPECTED[1])
    np.testing.assert_array_equal(r.values, EXPECTED[2])
    assert r.values.dtype == np.float32 and r.users.dtype == np.int64


@pytest.mark.parametrize("text,users,items", [
    ("1,10,5\n2,x7,3\n", [1, 2], ["10", "x7"]),
    ("user,item,rating\n1,10,5\n-1,10,3\n", ["1", "-1"], [10, 10]),
    # issue 16, item 4: 2**64 + 1 and 2**65 + 1 overflowed the multiply and read as 1;
    # beyond int64 an id is its text, never another id's number
    ("1,10,5\n18446744073709551617,10,3\n", ["1", "18446744073709551617"], [10, 10]),
    ("1,10,5\n2,36893488147419103233,3\n", [1, 2], ["10", "36893488147419103233"]),
    ("1,10,5\n9223372036854775807,10,3\n", [1, 2 ** 63 - 1], [10, 10]),
    ('User-ID;ISBN;Book-Rating\n"276725";"034545104X";"0"\n"7";"0155061224";"5"\n',
     [276725, 7], ["034545104X", "0155061224"]),  # Book-Crossing: ';', quoted fields
    ("alice|The Matrix|5\nbob|Heat|4.5\n", ["alice", "bob"], ["The Matrix", "Heat"]),
    ("a b 3\n# c\n\nb  a\t4\n", ["a", "b"], ["b", "a"]),
])
def test_ids_that_are_not_all_integers_are_read_as_strings_per_column(tmp_path, text, users,
                                                                      items):
    r = read_ratings(write(tmp_path, "ids.txt", text))
    for got, expected in ((r.users, users), (r.items, items)):
        assert got.tolist() == expected
        assert got.dtype.kind == ("i" if isinstance(expected[0], int) else "U")
    assert r.values.dtype == np.float32 and len(r) == 2


@pytest.mark.parametrize("text,message", [
    ("a;b;5\nc;d\n", r"line 2: malformed rating line \(expected user, item and rating fields "
                      r"separated by ';', as on the first line\): 'c;d'"),
    ("a|b|5\nc||4\n", r"line 2: malformed rating line \(the item id is empty\): 'c\|\|4'"),
    ("a,b,5\nc,d,five\n", r"line 2: malformed rating line \(the rating is not a number\)"),
    ("a,b,5\nc,d,inf\n", r"line 2: malformed rating line \(the rating is NaN, Inf or beyond"),
    ("a b 5\n\xff c 4\n", r"line 2: not UTF-8 text \(at byte offset 6\), so not a rating "
                          r"file"),
])
def test_bad_lines_of_string_id_files_name_the_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(DataFormatError, match=str(path) + ", " + message):
        read_ratings(path)


@pytest.mark.parametrize("text,message", [
    ("1,10,5\n2,11,nan\n", r"line 2: malformed rating line \(the rating is NaN, Inf or "
                           r"beyond float32's range \(\|x\| > 3.4e38\)\)"),
    ("1,10,5\n2,11,1e39\n", r"line 2: malformed rating line \(the rating is NaN, Inf or "
                            r"beyond float32's range"),
    ("1,10,5\n2,11,four\n", r"line 2: malformed rating line \(the rating is not a number\)"),
    ("1,10,5\n2,11\n", r"line 2: malformed rating line \(expected user, item and rating "
                       r"fields\): '2,11'"),
])
def test_bad_rating_lines_name_file_and_line(tmp_path, text, message):
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(DataFormatError, match=str(path) + ", " + message):
        read_ratings(path)


def test_missing_and_empty_rating_files(tmp_path):
    with pytest.raises(HogwildError, match=r"cannot read .*nope.csv: no such file"):
        read_ratings(tmp_path / "nope.csv")
    with pytest.raises(HogwildError, match=r"empty data: .*empty.csv holds no ratings"):
        read_ratings(write(tmp_path, "empty.csv", "# nothing\n"))


def test_unknown_rating_dataset_lists_the_names():
    with pytest.raises(HogwildError, match="unknown dataset 'ml-3m'; choose one of: ml-100k, "
                                           "ml-1m, ml-10m"):
        load_ratings("ml-3m")


def test_movielens_100k(ml100k):
    assert len(ml100k) == 100_000
    assert np.unique(ml100k.users).size == 943 and np.unique(ml100k.items).size == 1682
    assert ml100k.values.mean() == pytest.approx(3.5299, abs=1e-4)


def test_movielens_1m_split(ml1m_split):
    train, test = ml1m_split
    assert len(train) + len(test) == 1_000_209 and len(test) == 200_042


# --- splits -------------------------------------------------------------------------

def toy_ratings(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    return Ratings(rng.integers(0, 300, n), rng.integers(0, 100, n),
                   rng.integers(1, 6, n).astype(np.float32))


def as_set(r):
    return set(zip(r.users.tolist(), r.items.tolist(), r.values.tolist(), strict=True))


def test_random_split_is_deterministic_disjoint_and_complete():
    r = Ratings(np.arange(1000), np.arange(1000) % 7, np.arange(1000, dtype=np.float32))
    train, test = split_ratings(r, 0.2, seed=3)
    again, _ = split_ratings(r, 0.2, seed=3)
    other, _ = split_ratings(r, 0.2, seed=4)
    assert len(test) == 200 and len(train) == 800
    assert as_set(train) | as_set(test) == as_set(r) and not as_set(train) & as_set(test)
    np.testing.assert_array_equal(train.users, again.users)
    assert not np.array_equal(train.users, other.users)


def test_per_user_split_holds_out_each_users_share():
    r = toy_ratings()
    train, test = split_ratings(r, 0.25, seed=0, by="user")
    assert len(train) + len(test) == len(r)
    counts = np.bincount(r.users, minlength=300)
    held = np.bincount(test.users, minlength=300)
    np.testing.assert_array_equal(held, np.minimum(np.round(0.25 * counts), counts - 1))
    assert set(np.unique(train.users)) == set(np.unique(r.users))  # nobody left out


@pytest.mark.parametrize("kwargs,message", [
    ({"test_fraction": 0}, r"test_fraction must be in \(0, 1\), got 0"),
    ({"test_fraction": 1.5}, r"test_fraction must be in \(0, 1\), got 1.5"),
    ({"by": "item"}, "unknown split 'item'; choose one of: rating, user"),
    ({"test_fraction": 0.001}, "test_fraction 0.001 of 10 ratings leaves an empty test set"),
])
def test_split_errors(kwargs, message):
    r = Ratings(np.arange(10), np.arange(10), np.ones(10, np.float32))
    with pytest.raises(HogwildError, match=message):
        split_ratings(r, **kwargs)


# --- downloads (offline: file:// URLs and a loopback HTTP server) --------------------

def movielens_zip(tmp_path, member="ml-100k/u.data", text="1\t10\t5\t0\n2\t10\t3\t0\n"):
    archive = tmp_path / "ml-100k.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(member, text)
        z.writestr("ml-100k/README", "readme")
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def test_download_verifies_and_extracts_from_a_file_url(tmp_path):
    archive, sha256 = movielens_zip(tmp_path)
    path = download_dataset("ml-100k", url=archive.as_uri(), sha256=sha256, progress=False)
    assert path == RATINGS_DATASETS["ml-100k"].downloaded_path()
    assert read_ratings(path).users.tolist() == [1, 2]
    assert not any(p.name.endswith(".zip") for p in path.parent.iterdir())


def test_download_over_http_on_loopback(tmp_path):
    archive, sha256 = movielens_zip(tmp_path)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{archive.name}"
        path = download_dataset("ml-100k", url=url, sha256=sha256, progress=False)
    finally:
        server.shutdown()
    assert read_ratings(path).values.tolist() == [5.0, 3.0]


def test_download_refuses_a_bad_checksum_and_leaves_nothing(tmp_path):
    archive, _ = movielens_zip(tmp_path)
    with pytest.raises(HogwildError, match=r"checksum mismatch for file:.*ml-100k.zip: sha256 "
                                           r"[0-9a-f]{64}, expected 0{64}"):
        download_dataset("ml-100k", url=archive.as_uri(), sha256="0" * 64, progress=False)
    folder = RATINGS_DATASETS["ml-100k"].downloaded_path().parent
    assert not folder.exists() or not any(folder.iterdir())


@pytest.mark.parametrize("sha256", [None, "", "abc", "z" * 64, 7])
def test_a_mirror_needs_a_sha256(tmp_path, sha256):
    archive, _ = movielens_zip(tmp_path)
    with pytest.raises(HogwildError) as error:
        download_dataset("ml-100k", url=archive.as_uri(), sha256=sha256, progress=False)
    assert str(error.value) == ("--url needs --sha256, the 64 hex digits of the mirror's "
                                f"archive (sha256sum prints them); got {sha256!r}")


def test_oversized_downloads_and_zip_bombs_are_refused(tmp_path, monkeypatch):
    import hogwild.datasets.download as download
    archive, sha256 = movielens_zip(tmp_path, text="1\t10\t5\t0\n" * 20_000)
    monkeypatch.setattr(download, "MAX_EXTRACTED_BYTES", 100_000)  # inflates to 160 kB
    with pytest.raises(HogwildError) as error:
        download_dataset("ml-100k", url=archive.as_uri(), sha256=sha256, progress=False)
    assert str(error.value).startswith("ml-100k/u.data in ")
    assert str(error.value).endswith("is larger than 100,000 bytes: refused (a download or archive "
                                     "that large is not a rating dataset)")
    monkeypatch.setattr(download, "MAX_DOWNLOAD_BYTES", 100)
    with pytest.raises(HogwildError, match=r"the download of file:.*ml-100k.zip is larger "):
        download_dataset("ml-100k", url=archive.as_uri(), sha256=sha256, progress=False)
    folder = RATINGS_DATASETS["ml-100k"].downloaded_path().parent
    assert not folder.exists() or not any(folder.iterdir())


def test_download_errors_are_one_line(tmp_path):
    with pytest.raises(HogwildError, match=r"cannot download file:.*missing.zip: "):
        download_dataset("ml-100k", url=(tmp_path / "missing.zip").as_uri(), sha256="0" * 64,
                         progress=False)
    archive, sha256 = movielens_zip(tmp_path, member="other/u.data")
    with pytest.raises(HogwildError, match=r"ml-100k.zip has no ml-100k/u.data; it holds: "
                                           r"other/u.data, ml-100k/README"):
        download_dataset("ml-100k", url=archive.as_uri(), sha256=sha256, progress=False)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="writes into /dev/full")
def test_a_download_into_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    """An OSError (ENOSPC) traceback: the download's file is written to /dev/full."""
    import hogwild.datasets.download as download
    archive, sha256 = movielens_zip(tmp_path)
    made, mkstemp = [], download.tempfile.mkstemp

    def full_disk_file(dir, prefix):
        fd, path = mkstemp(dir=dir, prefix=prefix)
        os.dup2(os.open("/dev/full", os.O_WRONLY), fd)
        made.append(path)
        return fd, path

    monkeypatch.setattr(download.tempfile, "mkstemp", full_disk_file)
    destination = RATINGS_DATASETS["ml-100k"].downloaded_path()
    with pytest.raises(HogwildError) as error:
        download_dataset("ml-100k", url=archive.as_uri(), sha256=sha256, progress=False)
    assert str(error.value).startswith("cannot write ")
    assert str(error.value).endswith(": No space left on device; free space there, or set "
                                     "HOGWILD_CACHE_DIR to a folder with room")
    assert made and not any(os.path.exists(path) for path in made)
    assert not destination.exists()


def test_a_missing_named_dataset_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HOGWILD_DATA", str(tmp_path / "nothing"))
    with pytest.raises(HogwildError, match="dataset 'ml-20m' is not here: run "
                                           "'hogwild download ml-20m'"):
        load_ratings("ml-20m")


# --- Jumbo --------------------------------------------------------------------------------

def test_jumbo_plants_a_low_rank_matrix_with_the_stated_noise():
    train, test, info = make_jumbo(3000, 2000, 200_000, rank=4, noise=0.25, seed=1, folder=None)
    assert len(train) == 200_000 and len(test) == 2000 and info["noise"] == 0.25
    assert train.users.max() < 3000 and train.items.max() < 2000
    assert train.values.std() == pytest.approx(np.sqrt(1 + 0.25 ** 2), rel=0.05)
    again, _, _ = make_jumbo(3000, 2000, 200_000, rank=4, noise=0.25, seed=1, folder=None)
    np.testing.assert_array_equal(train.values, again.values)


def test_jumbo_files_are_memory_mapped_and_reused(tmp_path):
    first = make_jumbo(100, 50, 10_000, rank=3, seed=2, folder=tmp_path / "j")
    second = make_jumbo(100, 50, 10_000, rank=3, seed=2, folder=tmp_path / "j")
    assert isinstance(second[0].values, np.memmap)
    np.testing.assert_array_equal(first[0].values, second[0].values)
    assert sorted(p.name for p in (tmp_path / "j").iterdir())[:2] == ["info.json",
                                                                       "test_items.npy"]


@pytest.mark.parametrize("spec,expected", [("jumbo:2000x1000x100000", (2000, 1000, 100000)),
                                           ("jumbo:1e6x1e5x1e8", (10**6, 10**5, 10**8))])
def test_jumbo_spec(spec, expected):
    assert parse_jumbo_spec(spec) == expected


def test_bad_jumbo_spec():
    with pytest.raises(HogwildError, match="bad Jumbo size 'jumbo:10x10'; expected "
                                           "jumbo:ROWSxCOLSxNNZ"):
        parse_jumbo_spec("jumbo:10x10")


def test_the_largest_int64_id_reads_exactly(tmp_path):
    r = read_ratings(write(tmp_path, "big.csv", "9223372036854775807,10,3\n1,2,4\n"))
    assert r.users.tolist() == [2 ** 63 - 1, 1]
