"""The streaming text readers: blocks of whole lines on every core into the binary
cache (hogwild.datasets.ingest), compression, Vowpal Wabbit text with its
hashing, delimited columns, the Criteo-layout generator, and the format sniffing."""
import bz2
import json
import gzip
import lzma
import re
import warnings

import numpy as np
import pytest

from hogwild import DataFormatError, HogwildError
from hogwild.datasets import ingest
from hogwild.datasets.criteo import write_criteo
from hogwild.datasets.delimited import load_delimited
from hogwild.datasets.formats import Reading, read_rows, sniff
from hogwild.datasets.hashing import hash_text
from hogwild.datasets.svmlight import load_svmlight
from hogwild.datasets.vw import load_vw


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 4 KiB, four in flight on two threads: a few hundred lines make many
    blocks, so that every block boundary case is met."""
    budget = ingest.Budget(4096, 4, 2)
    monkeypatch.setattr(ingest.Budget, "for_memory", classmethod(lambda cls, *a, **k: budget))
    return budget


def random_svmlight(rng, rows, features=50):
    lines = []
    for _ in range(rows):
        chosen = np.sort(rng.choice(features, rng.integers(0, 8), replace=False))
        values = rng.normal(size=chosen.size)
        lines.append(" ".join([str(rng.choice([-1, 1]))] +
                              [f"{i + 1}:{v:.6g}" for i, v in zip(chosen, values)]))
    return "\n".join(lines) + "\n"


# --- the streaming read ----------------------------------------------------------------

@pytest.mark.parametrize("opener,suffix", [(open, ""), (gzip.open, ".gz"), (bz2.open, ".bz2"),
                                           (lzma.open, ".xz")])
def test_a_file_of_many_blocks_reads_as_scikit_learn_reads_it(tmp_path, small_blocks, opener,
                                                              suffix):
    from sklearn.datasets import load_svmlight_file
    text = random_svmlight(np.random.default_rng(0), 3000)
    path = tmp_path / f"data.svm{suffix}"
    with opener(path, "wt") as f:
        f.write(text)
    ours = load_svmlight(path)
    plain = tmp_path / "plain.svm"
    plain.write_text(text)
    X, y = load_svmlight_file(str(plain), n_features=ours.X.shape[1], zero_based=False)
    np.testing.assert_array_equal(ours.y, y)
    assert (ours.X != X.astype(np.float32)).nnz == 0
    # the lines each row came from, across block boundaries
    lines = [i + 1 for i, line in enumerate(text.splitlines())]
    np.testing.assert_array_equal(ours.row_lines, lines)


def test_a_zstd_file_reads_where_zstandard_is_installed(tmp_path):
    zstandard = pytest.importorskip("zstandard", reason="the zstd extra (zstandard) is absent")
    text = random_svmlight(np.random.default_rng(1), 200)
    path = tmp_path / "data.svm.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    plain = tmp_path / "plain.svm"
    plain.write_text(text)
    assert (load_svmlight(path).X != load_svmlight(plain).X).nnz == 0


def test_a_bad_line_far_into_a_file_is_named_by_its_number(tmp_path, small_blocks):
    text = random_svmlight(np.random.default_rng(2), 2000).splitlines()
    text[1733] = "1 3:4 x:5"
    path = tmp_path / "data.svm"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(DataFormatError, match=r"data.svm, line 1734: malformed svmlight line "
                                              r"\(a feature index is not a non-negative "
                                              r"integer\): '1 3:4 x:5'"):
        load_svmlight(path)
    cache = tmp_path / "cache" / "datasets"
    assert not any(cache.iterdir())  # no entry, whole or partial


def test_a_truncated_gzip_file_is_named_with_the_byte_it_ends_at(tmp_path):
    path = tmp_path / "data.svm.gz"
    whole = gzip.compress(random_svmlight(np.random.default_rng(3), 20000).encode())
    path.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(DataFormatError, match=rf"cannot decompress .*data.svm.gz: it ends "
                                              rf"before its end-of-stream marker \(truncated\?\)"
                                              rf", at byte {len(whole) // 2:,} of "
                                              rf"{len(whole) // 2:,}"):
        load_svmlight(path)
    assert not any((tmp_path / "cache" / "datasets").iterdir())


def test_line_ends_and_byte_order_marks(tmp_path):
    for name, raw in (("crlf", b"1 1:2\r\n-1 2:3\r\n"), ("cr", b"1 1:2\r-1 2:3\r"),
                      ("bom", b"\xef\xbb\xbf1 1:2\n-1 2:3")):
        data = load_svmlight(tmp_path / name if (tmp_path / name).write_bytes(raw) else None)
        assert data.X.toarray().tolist() == [[2, 0], [0, 3]], name
        assert data.y.tolist() == [1, -1]
    (tmp_path / "utf16").write_bytes("1 1:2\n".encode("utf-16"))
    with pytest.raises(DataFormatError, match="is UTF-16 text"):
        load_svmlight(tmp_path / "utf16")


def test_a_line_longer_than_the_reader_holds_is_refused_by_name(tmp_path, small_blocks,
                                                               monkeypatch):
    monkeypatch.setattr(ingest.Budget, "max_line_bytes", property(lambda self: 1 << 16))
    path = tmp_path / "long.svm"
    path.write_bytes(b"1 " + b"1:1 " * 50_000)  # 200 kB and no line end
    with pytest.raises(DataFormatError, match=r"long.svm: a line at byte 0 is longer than "
                                              r"65.5 kB"):
        load_svmlight(path)


def test_a_file_changed_while_it_is_read_is_refused(tmp_path, small_blocks, monkeypatch):
    path = tmp_path / "data.svm"
    path.write_text(random_svmlight(np.random.default_rng(4), 2000))
    parse = ingest._parsed

    def edit_then_parse(fmt, data, first):
        if first:
            with open(path, "a") as f:
                f.write("1 1:1\n")
        return parse(fmt, data, first)

    monkeypatch.setattr(ingest, "_parsed", edit_then_parse)
    with pytest.raises(DataFormatError, match="data.svm changed while it was read"):
        load_svmlight(path)
    assert not any((tmp_path / "cache" / "datasets").iterdir())


def test_the_disk_filling_while_the_cache_is_written_is_one_line_and_leaves_nothing(
        tmp_path, small_blocks, monkeypatch):
    path = tmp_path / "data.svm"
    path.write_text(random_svmlight(np.random.default_rng(5), 2000))
    writes = []

    def full(self, name, array, crc=None):
        writes.append(name)
        if len(writes) > 20:
            raise self._failed(OSError(28, "No space left on device"))
        return append(self, name, array, crc)

    append = ingest.EntrySink.append
    monkeypatch.setattr(ingest.EntrySink, "append", full)
    with pytest.raises(HogwildError, match=r"cannot write the binary cache of .*data.svm in "
                                           r".*: No space left on device; free space there"):
        load_svmlight(path)
    assert not any((tmp_path / "cache" / "datasets").iterdir())


def test_entries_are_reused_and_checked(tmp_path):
    path = tmp_path / "data.vw"
    path.write_text("1 |a x y\n-1 |a z\n")
    first = load_vw(path, hash_bits=10)
    assert type(first.X.data).__name__ == "ndarray" and first.trained_in_place
    again = load_vw(path, hash_bits=10)
    assert (first.X != again.X).nnz == 0
    other = load_vw(path, hash_bits=12)  # another hashing, another entry
    assert other.X.shape[1] == 4096


# --- Vowpal Wabbit text ------------------------------------------------------------------

def test_hashes_are_murmurhash3_as_scikit_learn_computes_it():
    from sklearn.utils import murmurhash3_32
    for name in ("user", "age", "a", "ab", "abc", "abcd", "abcde", "é", "x" * 37, "日本"):
        for seed in (0, 1, 2509520141):
            assert hash_text(name, seed) == murmurhash3_32(name.encode(), seed=seed,
                                                           positive=True)
    assert hash_text("17", 100) == 117 and hash_text("", 5) == 5  # numbers: added to the seed


def test_vowpal_wabbit_text_hashes_as_vowpal_wabbit_does(tmp_path):
    vowpalwabbit = pytest.importorskip("vowpalwabbit",
                                       reason="Vowpal Wabbit (the bench extra) is absent")
    lines = ["1 2.0 'tag1 |user age:0.3 city=paris 17 |ad id_17",
             "-1 |user:2 age:0.5 |ad id_18 :2 :3 s:text",
             "0 'x|user a b |  17:4"]
    path = tmp_path / "t.vw"
    path.write_text("\n".join(lines) + "\n")
    ours = load_vw(path, hash_bits=24)
    vw = vowpalwabbit.Workspace("--quiet -b 24")
    for row, line in enumerate(lines):
        ex = vw.parse(line)
        theirs = {}
        for ns in range(ex.num_namespaces()):
            for j in range(ex.num_features_in(ns)):
                index = ex.feature(ns, j) & ((1 << 24) - 1)
                theirs[index] = theirs.get(index, 0) + ex.feature_weight(ns, j)
        del theirs[11650396]  # Vowpal Wabbit's constant: our intercept
        lo, hi = ours.X.indptr[row], ours.X.indptr[row + 1]
        mine = dict(zip(ours.X.indices[lo:hi].tolist(), ours.X.data[lo:hi].tolist()))
        assert mine.keys() == theirs.keys()
        np.testing.assert_allclose([mine[k] for k in theirs], list(theirs.values()), rtol=1e-6)
    assert ours.y.tolist() == [1, -1, 0] and ours.weights.tolist() == [2, 1, 1]


def test_vowpal_wabbit_labels_weights_and_errors(tmp_path):
    path = tmp_path / "t.vw"
    path.write_text("1 |a x\n-1 0.5 'id |a y\n")
    data = load_vw(path, hash_bits=8)
    assert data.y.tolist() == [1, -1] and data.weights.tolist() == [1, 0.5]
    unweighted = tmp_path / "u.vw"
    unweighted.write_text("1 |a x\n")
    assert load_vw(unweighted, hash_bits=8).weights is None
    for text, reason in (("|a x", "no label before the first '|'"),
                         ("1 -2 |a x", "the importance weight .* is not a number >= 0"),
                         ("1 1 0.5 |a x", "a third number in the label .* is not supported"),
                         ("yes |a x", "the label is not a number"),
                         ("1 |a:abc x", r"a namespace's scale \(\|name:scale\) is not a finite"),
                         ("1 |a x:inf", "a value is NaN, Inf")):
        path.write_text("1 |a x\n" + text + "\n")
        with pytest.raises(DataFormatError, match=rf"t.vw, line 2: malformed Vowpal Wabbit line "
                                                  rf"\({reason}"):
            load_vw(path, hash_bits=8, cache=False)
    with pytest.raises(HogwildError, match="hash_bits must be an integer from 1 to 31"):
        load_vw(path, hash_bits=40)
    with pytest.raises(HogwildError, match=r"quadratic pairs are two namespace letters"):
        load_vw(path, quadratic=["abc"])


def test_quadratic_sides_keep_each_namespaces_features_in_order(tmp_path):
    path = tmp_path / "t.vw"
    path.write_text("1 |u a b |x q |a c\n-1 |a d\n1 |b z\n")
    data = load_vw(path, hash_bits=20, quadratic=["ua"], cache=False)
    sides = data.crossings
    assert sides.letters == "au" and sides.pairs.tolist() == [[1, 0]]
    mask = (1 << 20) - 1
    u, a = hash_text("u"), hash_text("a")
    expected = [[hash_text("c", a) & mask], [hash_text("a", u) & mask, hash_text("b", u) & mask],
                [hash_text("d", a) & mask], [], [], []]
    for slot, want in enumerate(expected):
        lo, hi = sides.offsets[slot], sides.offsets[slot + 1]
        assert sides.indices[lo:hi].tolist() == want


# --- delimited columns -------------------------------------------------------------------

def test_delimited_columns_are_read_off_the_first_lines(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('label,age,city,n\n1,3,paris,1e3\n0,,lyon,5\n1,2.5,"pa,ris",\n')
    data = load_delimited(path, hash_bits=20, cache=False)
    assert data.columns == (("label", 1), ("age", 2), ("city", 3), ("n", 2))
    assert data.separator == "," and data.y.tolist() == [1, 0, 1]
    mask = (1 << 20) - 1
    city = hash_text("city")
    rows = [{hash_text("age") & mask: np.log1p(3), hash_text("paris", city) & mask: 1,
             hash_text("n") & mask: np.log1p(1000)},
            {hash_text("lyon", city) & mask: 1, hash_text("n") & mask: np.log1p(5)},
            {hash_text("age") & mask: np.log1p(2.5), hash_text("pa,ris", city) & mask: 1}]
    for r, want in enumerate(rows):
        lo, hi = data.X.indptr[r], data.X.indptr[r + 1]
        got = dict(zip(data.X.indices[lo:hi].tolist(), data.X.data[lo:hi].tolist()))
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=1e-6)
    raw = load_delimited(path, hash_bits=20, numeric_scale="raw", categorical=["age"],
                         cache=False)
    assert raw.columns[1] == ("age", 3)
    assert sorted(raw.X.data[raw.X.indptr[0]:raw.X.indptr[1]].tolist()) == [1, 1, 1000]


def test_delimited_errors_name_the_line_and_column(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("1\t2\tab\n0\t3\tcd\n")
    for text, reason in (("1\t2", "its number of fields differs from the first line's; "
                                  "column '2'"),
                         ("1\tx\tab", "a numeric column holds text .*; column '1'"),
                         ("\t2\tab", "the label is missing; column '0'"),
                         ('1\t"2\tab', "a quoted field does not end with a quote")):
        path.write_text("1\t2\tab\n0\t3\tcd\n" + text + "\n")
        with pytest.raises(DataFormatError, match=rf"t.tsv, line 3: malformed line \({reason}"):
            load_delimited(path, numeric=[1], cache=False)  # (x would make it categorical)
    with pytest.raises(HogwildError, match=r"label column 'click' is not a column of .*t.tsv"):
        load_delimited(path, label="click")


def test_criteo_layout_files_read_as_the_generator_hashed_them(tmp_path, small_blocks):
    tsv, svm = tmp_path / "c.tsv", tmp_path / "c.svm"
    write_criteo(tsv, 3000, seed=3, svmlight=svm, hash_bits=20)
    lines = tsv.read_text().splitlines()
    assert len(lines) == 3000 and all(len(line.split("\t")) == 40 for line in lines)
    data = load_delimited(tsv, hash_bits=20)
    assert [role for _, role in data.columns] == [1] + [2] * 13 + [3] * 26
    copy = load_svmlight(svm, n_features=1 << 20, zero_based=True)
    np.testing.assert_array_equal(data.y, copy.y)
    assert (data.X != copy.X).nnz == 0
    assert 0.15 < data.y.mean() < 0.4  # clicks
    again = tmp_path / "again.tsv"
    write_criteo(again, 3000, seed=3)
    assert again.read_bytes() == tsv.read_bytes()  # the seed's alone


def test_formats_are_told_by_name_or_first_line(tmp_path):
    cases = {"a.svm": "1 1:2\n", "b.vw.gz": None, "c.tsv": "1\t2\n", "d.txt": "1 |a x\n",
             "e.txt": "-1 3:4 qid:2 5:6\n", "f.data": "1,2,3\n"}
    expected = {"a.svm": "svmlight", "b.vw.gz": "vw", "c.tsv": "csv", "d.txt": "vw",
                "e.txt": "svmlight", "f.data": "csv"}
    for name, text in cases.items():
        path = tmp_path / name
        path.write_bytes(gzip.compress(b"1 |a x\n") if text is None else text.encode())
        assert sniff(path) == expected[name], name
    train = read_rows(tmp_path / "d.txt", Reading(hash_bits=10))
    test = read_rows(tmp_path / "d.txt", like=train)
    assert test.X.shape == train.X.shape == (1, 1024)
    with pytest.raises(HogwildError, match="unknown format 'parquet'; choose one of: auto, "
                                           "svmlight, vw, csv"):
        Reading(format="parquet")


# --- the command line on users' files ------------------------------------------------

def run(capsys, *argv):
    from hogwild.cli import main
    status = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_line_trains_on_each_format(tmp_path, capsys):
    tsv, svm = tmp_path / "c.tsv", tmp_path / "c.svm"
    write_criteo(tsv, 6000, seed=5, svmlight=svm, hash_bits=18)
    write_criteo(tmp_path / "t.tsv", 2000, seed=5, part=1, svmlight=tmp_path / "t.svm",
                 hash_bits=18)
    errors = {}
    for name, test in ((tsv, tmp_path / "t.tsv"), (svm, tmp_path / "t.svm")):
        status, out, err = run(capsys, "run", "svm", "--data", name, "--test", test,
                               "--epochs", "3", "--hash-bits", "18", "--seed", "0",
                               "--workers", "1", "--json")
        assert status == 0, err
        result = json.loads(out)
        errors[name.suffix] = result["test_error"]
        assert result["format"] == ("csv, 2^18 hashed features" if name == tsv else
                                    "svmlight")
    # the same features (the generator's own copy): the same model, bit for bit
    assert errors[".tsv"] == errors[".svm"] < 0.3


@pytest.mark.parametrize("argv,message", [
    (["--format", "parquet"], "unknown format 'parquet'; choose one of: auto, svmlight, vw, "
                              "csv"),
    (["--hash-bits", "40"], "hash_bits must be an integer from 1 to 31, got 40"),
    (["-q", "abc"], "quadratic pairs are two namespace letters each (as Vowpal Wabbit's -q "
                    "ab), got 'abc'"),
])
def test_bad_reading_options_are_one_line(tmp_path, capsys, argv, message):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x\n-1 |a y\n")
    status, out, err = run(capsys, "run", "svm", "--data", data, "--epochs", "1", *argv)
    assert status == 2 and out == ""
    assert err == f"hogwild: error: {message}\n"


def test_a_bad_line_on_the_command_line_names_it_and_caches_nothing(tmp_path, capsys):
    data = tmp_path / "d.vw"
    data.write_text("1 |a x\n-1 |a y\nmaybe |a z\n")
    status, _, err = run(capsys, "run", "svm", "--data", data, "--epochs", "1")
    assert status == 2
    assert err == (f"hogwild: error: {data}, line 3: malformed Vowpal Wabbit line (the label "
                   "is not a number): 'maybe |a z'\n")
    assert not any((tmp_path / "cache" / "datasets").iterdir())


def test_a_file_near_the_memory_available_trains_from_disk_by_itself(tmp_path, monkeypatch):
    """Copied into memory, samples the page cache holds too would take twice their
    size: beyond a quarter of the memory available they stream, by themselves."""
    from hogwild import engine
    from hogwild.problems.sparse_svm import SparseSVM
    path = tmp_path / "d.svm"
    path.write_text(random_svmlight(np.random.default_rng(6), 4000))
    data = load_svmlight(path)
    samples = data.X.data.nbytes + data.X.indices.nbytes + data.X.indptr.nbytes
    fits = {}
    for times in (3, 20):
        monkeypatch.setattr(engine, "available_memory", lambda: times * samples + 4096)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = SparseSVM(epochs=2, random_state=0, shuffle_rows=False).fit(data.X, data.y)
        fits[times] = model.streaming_ is not None
        if fits[times]:
            assert any("are more than 25% of the" in str(w.message) and "read from disk chunk "
                       "by chunk" in str(w.message) for w in caught)
    assert fits == {3: True, 20: False}


# --- part files ----------------------------------------------------------------------

def test_a_folder_of_part_files_reads_as_the_one_file_they_were_cut_from(tmp_path,
                                                                         small_blocks):
    """Parts (Spark's part-00000..., compressed or not, with its _SUCCESS marker) in
    name order are the rows of the whole file; a glob pattern names the same parts;
    a bad line names its part and its line in that part."""
    text = random_svmlight(np.random.default_rng(8), 1500)
    lines = text.splitlines(keepends=True)
    whole = tmp_path / "whole.svm"
    whole.write_text(text)
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-00000").write_text("".join(lines[:400]))
    with gzip.open(parts / "part-00001.gz", "wt") as f:
        f.write("".join(lines[400:1100]).rstrip("\n"))  # a part may end without a newline
    (parts / "part-00002").write_text("".join(lines[1100:]))
    (parts / "_SUCCESS").write_text("")
    (parts / ".part-00000.crc").write_bytes(b"\x00\x01")
    expected = load_svmlight(whole)
    for spec in (parts, f"{parts}/part-*"):
        got = load_svmlight(spec)
        assert got.X.shape == expected.X.shape and (got.X != expected.X).nnz == 0
        np.testing.assert_array_equal(got.y, expected.y)
    (parts / "part-00002").write_text("".join(lines[1100:1200]) + "1 3:x\n")
    with pytest.raises(DataFormatError, match=r"^.*part-00002, line 101: malformed svmlight "
                                              r"line \(a feature value is not a number\)"):
        load_svmlight(parts)


def test_parts_are_read_in_name_order_with_numbers_by_value(tmp_path):
    """Criteo's day_0 ... day_23: day_2 before day_10."""
    from hogwild.datasets.parts import part_files
    for day in (10, 2, 0, 1):
        (tmp_path / f"day_{day}").write_text(f"{day % 2} 1:{day + 1}\n")
    assert [p.name for p in part_files(tmp_path)] == ["day_0", "day_1", "day_2", "day_10"]
    assert load_svmlight(tmp_path).X.data.tolist() == [1, 2, 3, 11]


def test_delimited_parts_each_with_a_header_read_as_one_file(tmp_path):
    header = "click\tage\tcity\n"
    body = [f"{i % 2}\t{i % 50}\tc{i % 7}\n" for i in range(300)]
    (tmp_path / "whole.tsv").write_text(header + "".join(body))
    parts = tmp_path / "parts"
    parts.mkdir()
    for k in range(3):
        (parts / f"part-{k}.tsv").write_text(header + "".join(body[100 * k:100 * (k + 1)]))
    whole = load_delimited(tmp_path / "whole.tsv")
    cut = load_delimited(parts)
    assert cut.columns == whole.columns and (cut.X != whole.X).nnz == 0
    np.testing.assert_array_equal(cut.y, whole.y)


@pytest.mark.parametrize("spec,message", [
    ("empty", "is a folder without data files (hidden files and names starting with '_' "
              "are not read)"),
    ("nothing-*.svm", "no file matches "),
])
def test_a_folder_or_pattern_without_files_is_one_line(tmp_path, spec, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_SUCCESS").write_text("")
    with pytest.raises(HogwildError, match=re.escape(message)):
        load_svmlight(tmp_path / spec if "*" not in spec else f"{tmp_path}/{spec}")


def test_parts_are_shared_out_by_the_hosts_that_hold_them():
    """Each distinct part to one rank of the hosts holding it, the largest first to
    the least loaded; a part several hosts hold (a shared disk) read once; every
    rank needs a part of its own host's."""
    from hogwild.datasets.parts import assign
    a, b, c, d = ("a", 40, 1), ("b", 30, 2), ("c", 20, 3), ("d", 10, 4)
    # two hosts of two ranks, each host its own two parts
    assert assign([("h0", [a, b]), ("h0", [a, b]), ("h1", [c, d]), ("h1", [c, d])],
                  "p") == [["a"], ["b"], ["c"], ["d"]]
    # a shared disk: every rank sees every part; balanced by bytes
    assert assign([("h0", [a, b, c, d]), ("h1", [a, b, c, d])], "p") == [["a", "d"],
                                                                           ["b", "c"]]
    # the same name with other bytes is another part
    other = ("a", 40, 99)
    assert assign([("h0", [a]), ("h1", [other])], "p") == [["a"], ["a"]]
    with pytest.raises(HogwildError, match=r"^3 ranks read the 2 part files of p: each rank "
                                           r"needs one at least"):
        assign([("h0", [a, b])] * 3, "p")
    with pytest.raises(HogwildError, match=r"^rank 3 \(host h1\) has no part file of p to "
                                           r"read: every rank needs one on its own host"):
        assign([("h0", [a, b, c]), ("h0", [a, b, c]), ("h1", [d]), ("h1", [d])], "p")


def test_byte_shares_of_one_file_hold_each_line_once(tmp_path, small_blocks):
    """The lines that start in each of N byte shares are the file's, each once, in
    order, whatever N (a delimited file's header in the first share alone); a
    compressed file cannot be shared and says so; a bad line names its share."""
    import scipy.sparse as sp
    from hogwild.datasets.delimited import delimited_layout
    from hogwild.datasets.parts import share_of_file
    path = tmp_path / "rows.svm"
    path.write_text(random_svmlight(np.random.default_rng(9), 900))
    whole = load_svmlight(path)
    for count in (1, 2, 3, 8):
        shares = [load_svmlight(share_of_file(path, k, count), n_features=whole.X.shape[1])
                  for k in range(count)]
        assert (sp.vstack([s.X for s in shares]) != whole.X).nnz == 0
        np.testing.assert_array_equal(np.concatenate([s.y for s in shares]), whole.y)
    table = tmp_path / "t.csv"
    table.write_text("click,age,city\n" + "".join(f"{i % 2},{i % 9},c{i % 4}\n"
                                                  for i in range(400)))
    layout = delimited_layout(table)
    shares = [load_delimited(share_of_file(table, k, 3), like=layout) for k in range(3)]
    assert sum(s.X.shape[0] for s in shares) == 400
    assert (sp.vstack([s.X for s in shares]) != load_delimited(table).X).nnz == 0
    packed = tmp_path / "rows.svm.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(HogwildError, match=r"rows.svm.gz is gzip-compressed: a share of its "
                                           r"bytes cannot be read apart \(give part files\)"):
        load_svmlight(share_of_file(packed, 1, 2))
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:600]) + "1 3:x\n" + "".join(lines[600:]))
    second = share_of_file(path, 1, 2)
    with pytest.raises(DataFormatError, match=rf"rows.svm \(bytes {second.first:,} to "
                                              rf"{second.last:,}\), line \d+: malformed"):
        load_svmlight(second)
