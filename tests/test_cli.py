"""The hogwild command line: results, JSON, and one-line errors."""
import json
import re
import signal
import subprocess

import numpy as np
import pytest

from hogwild.cli import main
from launchers import CONSOLE_SCRIPT


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_run_svm_json_on_the_embedded_default(capsys):
    status, out, err = run(capsys, "run", "svm", "--epochs", "3", "--workers", "2",
                           "--seed", "1", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["data"] == "a9a" and result["workers"] == 2 and result["epochs"] == 3
    assert (result["n_samples"], result["n_features"]) == (32561, 123)
    assert len(result["history"]) == 3
    assert result["test_error"] < 0.17 and result["train_error"] < 0.17
    assert result["updates_per_s"] > 0 and result["nonzeros_per_s"] > result["updates_per_s"]
    # the values used, not the parameters' None (two classes: the geometric schedule of
    # adaptive steps; the data's reg, a9a's 32,561 rows of 123 features: 1 / n)
    assert (result["schedule"], result["decay"], result["adaptive"]) == ("geometric", 0.9, True)
    assert result["reg"] == pytest.approx(1 / 32561)


def test_run_svm_text_report(capsys):
    status, out, _ = run(capsys, "run", "svm", "--epochs", "2", "--scheduler", "serial",
                         "--loss", "logistic", "--seed", "0")
    assert status == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("epoch   1/2  objective ") and "test error" in lines[0]
    assert "M updates/s" in lines[1]
    assert lines[-1].startswith("done: serial x 1 workers on a9a (32561 x 123, 451592 "
                                "nonzeros): objective ")


def test_run_svm_on_a_file_with_a_test_file(capsys, tmp_path):
    train = tmp_path / "train.svm"
    train.write_text("".join(f"{1 if i % 2 else -1} {1 + i % 2}:1 3:0.5\n" for i in range(40)))
    test = tmp_path / "test.svm"
    test.write_text("1 2:1\n-1 1:1 4:2\n")
    status, out, err = run(capsys, "run", "svm", "--data", str(train), "--test", str(test),
                           "--epochs", "5", "--json", "--seed", "0")
    assert status == 0, err
    result = json.loads(out)
    assert result["test_error"] == 0.0 and result["n_features"] == 3
    assert err == (f"hogwild: warning: {test}: dropped 1 values of 1 features beyond the "
                   "training data's 3 features\n")


def test_run_svm_on_a_generated_click_log_trains_on_its_rows_in_place(capsys, tmp_path,
                                                                      monkeypatch):
    """A click log is stored in random order: no shuffled copy of it is made, and a
    linear SVM learns its planted model (LIBLINEAR's held-out error on it: 0.19-0.22 at C 0.1-1)."""
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    status, out, err = run(capsys, "run", "svm", "--data", "clicks:20000x4000x400000",
                           "--epochs", "5", "--seed", "0", "--json")
    assert status == 0, err
    result = json.loads(out)
    assert (result["n_samples"], result["n_features"], result["nnz"]) == (20000, 4000, 400000)
    assert "shuffle" not in result["setup_phase_seconds"]
    # CSR, labels, reg_scale; the salt, the intercept's rate, the first penalised
    # epoch, the penalty's weight
    training = 400000 * 8 + 20001 * 4 + 20000 * 4 + 4000 * 4 + 8 + 4 + 8 + 8
    held_out = 20000 * 8 + 1001 * 4 + 1000 * 4  # the 1,000 test rows the run keeps
    assert result["data_bytes"] == training + held_out
    assert result["test_error"] < 0.25
    status, _, err = run(capsys, "run", "svm", "--data", "clicks:20x10", "--json")
    assert status == 2 and err == ("hogwild: error: bad click-log size 'clicks:20x10'; "
                                   "expected clicks:ROWSxFEATURESxNNZ, e.g. "
                                   "clicks:1000000x100000x40000000\n")


@pytest.mark.parametrize("argv,message", [
    (["--workers", "0"], "workers must be an integer >= 1, got 0"),
    (["--step", "-1"], "step must be a finite number > 0, got -1.0"),
    (["--step", "0"], "step must be a finite number > 0, got 0.0"),
    (["--scheduler", "fast"], "unknown scheduler 'fast'; choose one of: hogwild, locked, serial, "
                              "colored, cyclades"),
    (["--loss", "squared"], "unknown loss 'squared'; choose one of: hinge, logistic"),
    (["--data", "rcv1"], "unknown dataset 'rcv1'; choose one of: a9a, news20-bydate, "
                         "imdb-aclimdb, news20-bydate-multiclass, or give a file path"),
    (["--data", "missing/train.svm"], "cannot read missing/train.svm: no such file"),
    (["--reg", "-1"], "reg must be a finite number >= 0, got -1.0"),
    (["--step-schedule", "cosine"], "unknown step schedule 'cosine'; choose one of: constant, "
                               "geometric, inverse, inverse_updates"),
    (["--save", "/no-such-folder/m.npz"],
     "--save /no-such-folder/m.npz: the folder /no-such-folder does not exist"),
    (["--decay", "inf", "--step-schedule", "inverse"], "decay must be a finite number, got inf"),
    (["--decay", "nan"], "decay must be a finite number, got nan"),
    (["--seed", "-1"], "seed must be an integer >= 0, got -1"),
    (["--epochs", "99999999999999999999"], "epochs must be an integer from 1 to 1,000,000, got "
                                           "99999999999999999999"),
    (["--shuffle-block", "99999999999999999999"], "shuffle_block must be an integer from 1 "
                                                  "to 2,147,483,647, got 99999999999999999999"),
    (["--nodes", "0"], "--nodes must be an integer >= 1, got 0"),  # checked on every backend
    (["--staleness", "abc"], "--staleness: expected an integer >= 0 or inf, got 'abc'"),
    (["--scheduler", "cyclades"], "scheduler='cyclades' runs together only samples that share "
                                  "no coordinate, and an intercept is a coordinate of every "
                                  "sample; pass fit_intercept=False (--no-intercept) or another "
                                  "scheduler"),
])
def test_bad_input_prints_one_line_and_exits_2(capsys, argv, message):
    """Bad options, including (issue 16, item 9) values that only look numeric."""
    status, out, err = run(capsys, "run", "svm", "--epochs", "1", *argv)
    assert status == 2
    assert err == f"hogwild: error: {message}\n"


def test_malformed_file_names_file_and_line(capsys, tmp_path):
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\n-1 2:oops\n")
    status, _, err = run(capsys, "run", "svm", "--data", str(bad))
    assert status == 2
    assert err == (f"hogwild: error: {bad}, line 2: malformed svmlight line (a feature value "
                   "is not a number): '-1 2:oops'\n")


def test_datasets_lists_the_shipped_default_and_the_cache(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    status, out, _ = run(capsys, "datasets")
    assert status == 0
    lines = out.splitlines()
    a9a = next(line for line in lines if line.startswith("a9a "))
    assert "shipped" in a9a and "32561 x 123" in a9a and "451592" in a9a and "16281" in a9a
    cached = [line for line in lines if line.strip().endswith("a9a.gz")]
    assert len(cached) == 1 and "32561 x 123" in cached[0] and "451592 nonzeros, one-based" \
        in cached[0]
    monkeypatch.setenv("HOGWILD_DATA", str(tmp_path / "no-data-here"))
    status, out, _ = run(capsys, "datasets")
    graphs = [line for line in out.splitlines() if line.startswith("snap-")]
    assert status == 0 and len(graphs) == 3 and all("(absent)" in line for line in graphs)


def test_ctrl_c_checkpoints_and_exits_130_and_the_run_resumes(tmp_path):
    """The first Ctrl-C finishes the epoch, writes the checkpoint, says where, and
    exits 130; --resume continues from it to the requested total of epochs."""
    exe = CONSOLE_SCRIPT
    if exe is None:
        pytest.fail("the hogwild console script is neither beside this Python nor on PATH; "
                    "install the package")
    proc = subprocess.Popen([exe, "run", "svm", "--epochs", "100000", "--workers", "1",
                             "--seed", "0"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()  # training has started
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert first.startswith("epoch   1/100000")
    assert proc.returncode == 130
    last = err.strip().splitlines()[-1]
    match = re.fullmatch(r"hogwild: interrupted after epoch (\d+); checkpoint written to "
                         r"hogwild-svm-checkpoint.npz \(continue with --resume "
                         r"hogwild-svm-checkpoint.npz\)", last)
    assert match, last
    from hogwild.checkpoint import load_checkpoint
    saved = load_checkpoint(tmp_path / "hogwild-svm-checkpoint.npz")
    assert saved.epoch == int(match.group(1)) and saved.objective == "sparse-svm-hinge"
    done = subprocess.run([exe, "run", "svm", "--epochs", str(saved.epoch + 2), "--workers",
                           "1", "--seed", "0", "--resume", "hogwild-svm-checkpoint.npz",
                           "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [r["epoch"] for r in json.loads(done.stdout)["history"]] == \
        list(range(1, saved.epoch + 3))


def test_console_script_is_installed():
    exe = CONSOLE_SCRIPT
    if exe is None:
        pytest.fail("the hogwild console script is neither beside this Python nor on PATH; "
                    "install the package")
    done = subprocess.run([exe, "run", "svm", "--epochs", "1", "--json"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["epochs"] == 1


# --- matrix completion and downloads ---------------------------------------------------

def test_run_mc_on_a_jumbo_matrix_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path))
    status, out, err = run(capsys, "run", "mc", "--data", "jumbo:1000x1000x200000",
                           "--jumbo-rank", "3", "--jumbo-noise", "0.5", "--rank", "3",
                           "--model", "paper", "--reg", "1", "--epochs", "15", "--workers", "2",
                           "--scheduler", "blocked", "--seed", "0", "--json",
                           "--save", str(tmp_path / "m.npz"))
    assert status == 0, err
    result = json.loads(out)
    assert (result["n_ratings"], result["n_test"], result["workers"]) == (200000, 2000, 2)
    assert result["model"] == "paper" and len(result["history"]) == 15
    assert (result["reg"], result["bias_reg"], result["init_scale"]) == (1.0, 1.0, 0.1)
    assert result["test_rmse"] < 1.10 * 0.5  # the noise is the best achievable RMSE
    assert result["ratings_per_s"] > 0 and result["peak_rss_bytes"] > 0
    # training ratings and per-row regularisation; the test ratings, their mean and the
    # rating range predictions are clipped to
    assert result["data_bytes"] == 200000 * 12 + 2 * 1000 * 4 + (2000 * 12 + 12)
    assert result["params_bytes"] == 2 * 1000 * 3 * 4  # L and R of the paper model
    assert result["minimum_bytes"] == result["data_bytes"] + result["params_bytes"]
    assert result["peak_over_minimum"] == result["peak_rss_bytes"] / result["minimum_bytes"]
    assert list(result["setup_phase_seconds"]) == [
        "read data", "check ratings", "read cached layout", "read ratings", "map ids",
        "block layout", "initial factors", "share", "compile"]
    assert 0 < sum(result["setup_phase_seconds"].values()) \
        < result["first_epoch_after_launch_s"]  # from this process's start (pytest's here)
    assert (tmp_path / "m.npz").is_file()


def test_a_run_started_by_a_larger_process_reports_its_own_peak_memory():
    """getrusage's peak survives exec: a child of a 400 MB process would report
    400 MB. The JSON's peak_rss_bytes is the run's own."""
    import sys
    ballast = np.ones(400 * 2**20, np.uint8)  # touched: this process's peak >= 400 MB
    code = ("from hogwild.limits import peak_resident_bytes; import resource; "
            "print(peak_resident_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    own, inherited = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True,
                                             text=True, check=True).stdout.split())
    assert ballast.sum() == ballast.size
    assert own < 200 * 2**20, own
    if inherited * 1024 > 400 * 2**20:  # where the OS carries the peak over, it is ignored
        assert own < inherited * 1024 / 2


def test_run_mc_text_report_on_a_ratings_file(capsys, tmp_path):
    lines = "".join(f"{u},{i},{1 + (u * i) % 5}\n" for u in range(30) for i in range(20))
    (tmp_path / "r.csv").write_text("user,item,rating\n" + lines)
    status, out, err = run(capsys, "run", "mc", "--data", str(tmp_path / "r.csv"),
                           "--rank", "4", "--epochs", "2", "--seed", "0",
                           "--scheduler", "serial")
    assert status == 0, err
    report = out.strip().splitlines()
    assert report[0].startswith("epoch   1/2  objective ") and "test RMSE" in report[0]
    assert "M ratings/s" in report[0]
    assert report[-1].startswith("done: serial x 1 workers, biased rank 4 on ")
    assert "480 ratings, 30 users x 20 items; rating split 80%/20%, seed 0" in report[-1]


@pytest.mark.parametrize("argv,message", [
    (["--rank", "0"], "rank must be an integer from 1 to 512, got 0"),
    (["--data", "ml-3m"], "unknown dataset 'ml-3m'; choose one of: ml-100k, ml-1m, ml-10m, "
                          "ml-20m, ml-25m, ml-latest-small, or give a ratings file path"),
    (["--data", "jumbo:5x5"], "bad Jumbo size 'jumbo:5x5'; expected jumbo:ROWSxCOLSxNNZ, e.g. "
                              "jumbo:100000x20000x10000000"),
    (["--scheduler", "fast"], "unknown scheduler 'fast'; choose one of: hogwild, blocked, "
                              "fpsgd, serial, locked, colored, cyclades"),
    (["--test-fraction", "1"], r"test_fraction must be in (0, 1), got 1.0"),
    (["--data", "jumbo:50x40x400", "--test-fraction", "nan"],  # unused, still checked
     "test_fraction must be in (0, 1), got nan"),
    (["--data", "jumbo:50x40x400", "--split", "abc"], "unknown split 'abc'; choose one of: "
                                                      "rating, user"),
    (["--split", "movie"], "unknown split 'movie'; choose one of: rating, user"),
    (["--factor-dtype", "float64"], "unknown factor_dtype 'float64'; choose one of: float32, "
                                    "float16"),
    (["--factor-dtype", "float16"], "factor_dtype='float16' needs backend='gpu' (numba "
                                    "compiles no half precision for the CPU); got "
                                    "backend='threads'"),
])
def test_mc_bad_input_prints_one_line(capsys, tmp_path, argv, message):
    (tmp_path / "r.tsv").write_text("1\t1\t5\n2\t1\t3\n1\t2\t4\n2\t2\t2\n")
    status, _, err = run(capsys, "run", "mc", "--data", str(tmp_path / "r.tsv"), "--epochs",
                         "1", *argv)
    assert status == 2
    assert err == f"hogwild: error: {message}\n"


def test_mc_nan_rating_names_the_line(capsys, tmp_path):
    (tmp_path / "r.tsv").write_text("1\t1\t5\n2\t1\tNaN\n")
    status, _, err = run(capsys, "run", "mc", "--data", str(tmp_path / "r.tsv"))
    assert status == 2
    assert err == (f"hogwild: error: {tmp_path / 'r.tsv'}, line 2: malformed rating line "
                   "(the rating is NaN, Inf or beyond float32's range (|x| > 3.4e38)): "
                   "'2\\t1\\tNaN'\n")


@pytest.mark.parametrize("separator", [",", ";", "|", "\t"])
def test_mc_trains_on_string_ids_with_any_separator(capsys, tmp_path, separator):
    rng = np.random.default_rng(0)
    lines = {(f"user {u}", f"movie-{i}"): 1 + (u + i) % 5 for u, i in
             zip(rng.integers(0, 40, 600), rng.integers(0, 30, 600))}
    path = tmp_path / "ratings.txt"
    path.write_text(f"user{separator}title{separator}stars\n" + "".join(
        f"{u}{separator}{i}{separator}{r}\n" for (u, i), r in lines.items()))
    status, out, _ = run(capsys, "run", "mc", "--data", str(path), "--epochs", "2", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["n_ratings"] + result["n_test"] == len(lines) and result["n_users"] == 40


def test_download_command_from_a_mirror(capsys, tmp_path, monkeypatch):
    import hashlib
    import zipfile
    monkeypatch.setenv("HOGWILD_CACHE_DIR", str(tmp_path / "cache"))
    archive = tmp_path / "ml-1m.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("ml-1m/ratings.dat", "1::1193::5::978300760\n2::1193::4::978300761\n")
    sha256 = hashlib.sha256(archive.read_bytes()).hexdigest()
    status, out, err = run(capsys, "download", "ml-1m", "--url", archive.as_uri())
    assert status == 2 and err == ("hogwild: error: --url needs --sha256, the 64 hex digits of "
                                   "the mirror's archive (sha256sum prints them); got None\n")
    status, out, err = run(capsys, "download", "ml-1m", "--url", archive.as_uri(), "--sha256",
                           sha256)
    assert status == 0, err
    assert out.startswith("ml-1m: ratings in ") and out.strip().endswith("ratings.dat")
    status, out, _ = run(capsys, "datasets")
    line = next(x for x in out.splitlines() if x.startswith("ml-1m "))
    assert "downloaded" in line or "shared" in line


def test_stats_reports_the_papers_sparsity_statistics(capsys):
    from hogwild.datasets.registry import load_svm_data
    X = load_svm_data("a9a")[0].X
    status, out, err = run(capsys, "stats", "svm", "--json")
    assert status == 0, err
    stats = json.loads(out)
    assert stats["omega"] == int(np.diff(X.indptr).max())
    assert stats["delta"] == np.bincount(X.indices).max() / X.shape[0]
    assert stats["rho"] <= 1 and "cyclades" in stats["reading"]
    status, out, _ = run(capsys, "stats", "svm")
    assert out.splitlines()[0] == "svm on a9a: 32,561 samples, 123 coordinates"
    assert out.splitlines()[2].startswith("  Delta (most samples on one coordinate) 0.95")
    status, _, err = run(capsys, "stats", "graph")
    assert status == 2 and err == ("hogwild: error: unknown problem 'graph'; choose one of: "
                                   "svm, mc, cuts\n")
    status, out, _ = run(capsys, "stats", "cuts", "--data", "random:200x100", "--json")
    stats = json.loads(out)  # a random sparse graph: edges touch two vertices each
    from hogwild.datasets.registry import load_graph
    _, u, _, _, _ = load_graph("random:200x100")
    assert status == 0 and stats["omega"] == 2 and stats["samples"] == u.size


def test_run_cuts_on_a_weighted_edge_list_matches_the_exact_cut(capsys, tmp_path):
    """Two 6-cliques (weight 5) joined by edges of weight 1 and 2: the minimum cut is
    3 (SciPy's maximum flow agrees), and the rounded relaxation finds it."""
    lines = ["# two 6-cliques joined by a weight-1 and a weight-2 edge"]
    for base in (0, 10):
        lines += [f"{base + a} {base + b} 5" for a in range(6) for b in range(a + 1, 6)]
    lines += ["0 10 1", "3 13 2"]
    graph = tmp_path / "graph.txt"
    graph.write_text("\n".join(lines) + "\n")
    out_path = tmp_path / "labels.txt"
    status, out, err = run(capsys, "run", "cuts", "--data", str(graph), "--terminals",
                           "5:0,15:1", "--workers", "2", "--scheduler", "cyclades", "--seed",
                           "0", "--out", str(out_path), "--json")
    assert status == 0, err
    result = json.loads(out)
    assert result["edges"] == 32 and result["vertices"] == 12 and result["workers"] == 2
    assert result["exact_min_cut"] == 3.0 and result["cut"] == 3.0
    labels = dict(line.split() for line in out_path.read_text().splitlines())
    assert {labels[str(v)] for v in range(6)} == {"0"}
    assert {labels[str(v)] for v in range(10, 16)} == {"1"}


def test_run_cuts_text_report_on_a_random_graph(capsys):
    status, out, _ = run(capsys, "run", "cuts", "--data", "random:500x3000", "--labels", "4",
                         "--epochs", "3", "--scheduler", "colored", "--seed", "0")
    assert status == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("epoch   1/3  objective ") and "rounded cut" in lines[0]
    assert lines[-1].startswith("done: colored x ") and "4 labels on random:500x3000 " in lines[-1]
    assert "nearest-terminal baseline" in lines[-1] and "M edges/s" in lines[-1]


def test_run_cuts_segments_an_image(capsys, tmp_path):
    pytest.importorskip("PIL", reason="Pillow reads and writes the PNGs")
    from hogwild.problems.segmentation import read_gray, write_labels

    image = np.zeros((40, 60), np.int64)
    image[10:30, 15:45] = 1  # a bright rectangle on a dark background
    picture = tmp_path / "picture.png"
    write_labels(image, picture)
    out_path = tmp_path / "labels.png"
    status, out, err = run(capsys, "run", "cuts", "--data", str(picture), "--epochs", "40",
                           "--seed", "0", "--out", str(out_path), "--json")
    assert status == 0, err
    result = json.loads(out)
    assert (result["width"], result["height"]) == (60, 40) and result["seed_pixels"] == 60
    np.testing.assert_array_equal(read_gray(out_path) > 127, image == 1)


@pytest.mark.parametrize("argv,message", [
    (["--data", "random:9x0"], "expected random:VERTICESxEDGES with 2 to 2**31 - 1 vertices "
                               "and 1 to 2**31 - 1 edges, got 'random:9x0'"),
    (["--data", "nope"], "no graph 'nope': give one of snap-facebook-combined, "),
    (["--data", "random:20x40", "--terminals", "3-1"], "--terminals: expected ID:LABEL, got "
                                                        "'3-1'"),
    (["--data", "random:20x40", "--terminals", "99:0"], "--terminals: vertex 99 is not in "
                                                         "the graph"),
    (["--data", "random:20x40", "--terminals", "random:0"], "--terminals 'random:0': expected "
                                                             "random:K with K >= 1"),
    (["--data", "random:20x40", "--labels", "1"],
     "--labels must be an integer from 2 to 32,768, got 1"),
    (["--data", "random:20x40", "--unary", "nan"],
     "--unary must be a finite number from 0 to 1e+06, got nan"),
    (["--data", "random:20x40", "--unary", "-1"],
     "--unary must be a finite number from 0 to 1e+06, got -1.0"),
    (["--data", "random:20x40", "--terminals", "0:0,0:1"], "--terminals: vertex 0 is given "
                                                            "two labels, 0 and 1"),
])
def test_cuts_bad_input_prints_one_line(capsys, argv, message):
    status, _, err = run(capsys, "run", "cuts", "--epochs", "1", *argv)
    assert status == 2
    assert err.startswith("hogwild: error: " + message) and err.count("\n") == 1


# --- issue 15, item 3: a first run on unseen ratings --------------------------------

def long_tail_sample(ratings, n, seed):
    """n ratings drawn uniformly from a rating set: most items keep few ratings,
    and many only one or two (the long tail of a small catalogue export)."""
    pick = np.sort(np.random.default_rng(seed).choice(len(ratings), n, replace=False))
    return ratings.users[pick], ratings.items[pick], ratings.values[pick]


@pytest.mark.parametrize("name,sample", [("ml-100k", None), ("ml-1m", 100_000)])
def test_default_mc_run_beats_the_mean_plus_biases_on_unseen_ratings(capsys, tmp_path, name,
                                                                     sample):
    """Issue 15, item 3: `hogwild run mc --data ratings.csv` defaulted to the paper's
    model without biases, which on a 100,000-rating sample of ml-1m (a long tail
    of items rated once or twice) gave test RMSE 1.28 where the mean plus biases
    gives 0.948, and the biased model's old step and init 0.965. The defaults
    must beat the mean plus biases (Surprise's BaselineOnly) on the same split."""
    from conftest import shared_ratings
    from hogwild.datasets.ratings import split_ratings
    from reference.naive import mean_plus_biases_rmse

    ratings = shared_ratings(name)
    users, items, values = (ratings.users, ratings.items, ratings.values) if sample is None \
        else long_tail_sample(ratings, sample, seed=0)
    path = tmp_path / "ratings.csv"
    np.savetxt(path, np.column_stack([users, items, values]), fmt="%d", delimiter=",",
               header="user,item,rating", comments="")
    status, out, err = run(capsys, "run", "mc", "--data", str(path), "--workers", "2",
                           "--seed", "0", "--json")
    assert status == 0, err
    result = json.loads(out)
    assert result["model"] == "biased" and result["rank"] == 32
    from hogwild.datasets.ratings import Ratings
    train, test = split_ratings(Ratings(users, items, values.astype(np.float32)), 0.2, 0)
    baseline = mean_plus_biases_rmse(train.users, train.items, train.values, test.users,
                                     test.items, test.values)
    assert result["test_rmse"] < baseline - 0.002, (result["test_rmse"], baseline)


def test_svm_test_error_on_a_file_with_empty_rows_is_the_saved_models(capsys, tmp_path):
    """Issue 15, item 1: on a test file with 8.7% empty rows and 3% positives the
    CLI printed a test error of 10.14% in every line and the JSON, for a model
    whose 1 - score() is 1.69%. The reported error is now the model's."""
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    from test_sparse_svm import rare_class_split
    from hogwild.problems.sparse_svm import SparseSVM

    train, test, _ = rare_class_split()
    for part, name in ((train, "train.svm"), (test, "test.svm")):
        sklearn_datasets.dump_svmlight_file(part.X, part.y, str(tmp_path / name),
                                            zero_based=False)
    assert sum(line.strip() in ("1", "-1") for line in
               (tmp_path / "test.svm").read_text().splitlines()) > 1500  # empty rows
    for flag in ((), ("--no-intercept",)):
        status, out, err = run(capsys, "run", "svm", "--data", str(tmp_path / "train.svm"),
                               "--test", str(tmp_path / "test.svm"), "--epochs", "5",
                               "--reg", "1e-5", "--seed", "0", "--json", *flag,
                               "--save", str(tmp_path / "svm.npz"))
        assert status == 0, err
        result = json.loads(out)
        model = SparseSVM.load(tmp_path / "svm.npz")
        assert result["fit_intercept"] == (not flag) == model.fit_intercept
        assert result["intercept"] == model.intercept_[0]
        assert result["test_error"] == pytest.approx(1 - model.score(test.X, test.y),
                                                     abs=1e-12)
        assert result["test_error"] < 0.03


def test_cuts_out_into_a_missing_folder_is_refused_before_training(capsys):
    status, out, err = run(capsys, "run", "cuts", "--data", "random:50x100", "--epochs", "1",
                           "--out", "/no-such-folder/labels.txt")
    assert status == 2 and out == ""
    assert err == ("hogwild: error: --out /no-such-folder/labels.txt: the folder "
                   "/no-such-folder does not exist\n")


def test_an_unwritable_cache_folder_costs_caching_not_the_run(tmp_path):
    """A cache folder that cannot be created (here: below a regular file, which
    even root cannot write into) ended in a traceback from the dataset cache. Now
    the run completes with one warning; nothing is left in the temporary folder."""
    import os
    import sys
    (tmp_path / "a-file").write_text("")
    env = {**os.environ, "HOGWILD_CACHE_DIR": str(tmp_path / "a-file" / "cache"),
           "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", "from hogwild.cli import main; "
                           "raise SystemExit(main(['run', 'svm', '--epochs', '1', '--json']))"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["epochs"] == 1
    assert done.stderr.count("hogwild: warning: cannot keep compiled kernels in ") == 1
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_cache_folder_others_may_write_is_not_trusted_with_code_or_data(tmp_path):
    """Compiled kernels are executed from the cache folder and parsed data is trained
    on: one that other users may write to is not used for either (warnings; the run
    completes), and a new one is 0700."""
    import os
    import stat
    import sys
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    command = [sys.executable, "-c", "from hogwild.cli import main; raise SystemExit(main(["
               "'run', 'svm', '--epochs', '1', '--json']))"]
    done = subprocess.run(command, env={**os.environ, "HOGWILD_CACHE_DIR": str(shared)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (f"hogwild: warning: cannot keep compiled kernels in {shared / 'kernels'} (cache "
            f"folder {shared} is writable by other users (mode 777): hogwild runs the code and "
            "reads the data it caches there, so it does not use it;") in done.stderr
    assert (f"hogwild: warning: cache folder {shared} is writable by other users (mode 777): "
            "hogwild runs the code and reads the data it caches there, so it does not use it; "
            "make it yours with mode 0700, or set HOGWILD_CACHE_DIR to a private folder\n"
            ) in done.stderr  # the data cache's warning
    assert sorted(p.name for p in shared.iterdir()) == []
    fresh = tmp_path / "fresh-cache"
    done = subprocess.run(command, env={**os.environ, "HOGWILD_CACHE_DIR": str(fresh)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr[-2000:]
    for folder in (fresh, fresh / "kernels", fresh / "numba"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


# --- issue 16: hostile or unlucky input -------------------------------------------------

@pytest.mark.parametrize("problem,argv", [
    ("svm", ["--backend", "processes"]),
    ("mc", ["--data", "jumbo:50x40x400", "--scheduler", "blocked"]),
    ("cuts", ["--data", "random:20x40"]),
])
def test_more_than_four_workers_per_core_are_refused_before_starting(capsys, monkeypatch,
                                                                       problem, argv):
    monkeypatch.setattr("hogwild.limits.usable_cores", lambda: 2)
    status, out, err = run(capsys, "run", problem, "--epochs", "1", "--workers", "1000", *argv)
    assert status == 2 and out == ""
    assert err == ("hogwild: error: workers=1000 is more than 4 per usable core (2 here); use "
                   "at most 8, or oversubscribe=True (--oversubscribe) to run them anyway\n")
    status, out, err = run(capsys, "run", problem, "--epochs", "1", "--workers", "9",
                           "--oversubscribe", "--json", *argv)
    assert status == 0, err
    assert json.loads(out)["workers"] == 9


@pytest.mark.parametrize("argv,message", [
    (["--rounds", "-1"], "--rounds must be an integer >= 1, got -1"),
    (["--problems", ""], "--problems: expected a comma-separated list of svm, mc, cuts; got ''"),
    (["--workers", "1,99999999999999999999"], "workers=99999999999999999999 is more than 4 per "
                                              "usable core"),
])
def test_bench_bad_input_prints_one_line_before_any_work(capsys, tmp_path, argv, message):
    status, out, err = run(capsys, "bench", "--quick", "--out-dir", str(tmp_path / "b"), *argv)
    assert status == 2 and out == ""
    assert err.startswith(f"hogwild: error: {message}") and err.count("\n") == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("argv,message", [
    (["svm", "--checkpoint", "{tmp}"], "--checkpoint {tmp}: it is a directory; give a file path"),
    (["svm", "--save", "{tmp}"], "--save {tmp}: it is a directory; give a file path"),
    (["svm", "--checkpoint", "{tmp}/no/c.npz"], "--checkpoint {tmp}/no/c.npz: the folder "
                                                "{tmp}/no does not exist"),
    (["cuts", "--data", "{tmp}/missing.png"], "cannot read image {tmp}/missing.png: no such "
                                              "file"),
    (["cuts", "--data", "{tmp}/text.png"], "cannot read image {tmp}/text.png: not an image "
                                           "Pillow can read (UnidentifiedImageError)"),
    (["mc", "--data", "jumbo:100000000x100000000x100000000000"],
     "jumbo:100000000x100000000x100000000000 needs 1.2 TB on disk for its ratings, more than "
     "the "),
    (["mc", "--data", "jumbo:1000000000x1000000000x1000"],
     "jumbo:1000000000x1000000000x1000 needs 80.0 GB for its planted factors, more than "
     "this machine's "),
])
def test_unusable_paths_and_impossible_data_are_one_line_before_training(capsys, tmp_path,
                                                                           argv, message):
    pytest.importorskip("PIL", reason="reading images needs Pillow (hogwild[images])")
    (tmp_path / "text.png").write_text("not a picture\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    status, out, err = run(capsys, "run", *argv[:1], "--epochs", "1", *argv[1:])
    assert status == 2 and out == ""
    assert err.startswith("hogwild: error: " + message.replace("{tmp}", str(tmp_path)))
    assert err.count("\n") == 1


def test_out_of_memory_is_one_line(capsys, monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr("hogwild.datasets.registry.load_svm_data", exhausted)
    status, out, err = run(capsys, "run", "svm", "--epochs", "1")
    assert status == 1 and out == ""
    assert err == ("hogwild: error: out of memory; use smaller data (or a machine with more "
                   "memory)\n")


# --- one option group for every problem ------------------------------------------------

SHARED = "training options (the same for every problem):"


def test_every_problem_lists_the_shared_options_in_one_group(capsys, monkeypatch):
    """The same flags in the same order for every problem, each with the help of
    its row of hogwild.options.TRAINING (tests/test_options.py) and the problem's
    own default."""
    monkeypatch.setenv("COLUMNS", "100")
    sections = {}
    for problem in ("svm", "mc", "cuts"):
        with pytest.raises(SystemExit):
            main(["run", problem, "--help"])
        out = capsys.readouterr().out
        sections[problem] = out[out.index(SHARED):]  # the last group of the help
    flags = {problem: re.findall(r"^  (--[a-z-]+)", section, re.MULTILINE)
             for problem, section in sections.items()}
    assert flags["svm"] == flags["mc"] == flags["cuts"]
    for option in ("--epochs", "--step", "--decay", "--step-schedule", "--workers",
                   "--scheduler", "--shuffle-block", "--seed", "--backend", "--checkpoint",
                   "--checkpoint-every", "--resume", "--json", "--oversubscribe"):
        assert option in flags["svm"], option
    assert "\n  --rank RANK" not in sections["svm"] and "--loss" not in sections["mc"]
    assert "(default: 20)" in sections["svm"] and "(default: 200)" in sections["cuts"]


def test_each_problem_takes_its_defaults_from_the_library():
    from hogwild.cli import build_parser
    from hogwild.cli.options import control_fields
    from hogwild.problems.graph_cuts import CUT_TRAINING
    from hogwild.problems.matrix_completion import MatrixFactorization
    from hogwild.problems.sparse_svm import SparseSVM

    parser = build_parser()
    for problem, defaults in (("svm", SparseSVM().get_params()),
                              ("mc", MatrixFactorization().get_params()),
                              ("cuts", vars(CUT_TRAINING))):
        args = parser.parse_args(["run", problem])
        for name in ("epochs", "step", "decay", "step_schedule", "scheduler", "shuffle_block"):
            assert getattr(args, name) == defaults[name], (problem, name)
        assert args.checkpoint is None  # (given none, control_fields names the default)
        assert control_fields(args)["checkpoint"] == f"hogwild-{problem}-checkpoint.npz"
    assert parser.parse_args(["run", "svm", "--step-schedule", "inverse"]).step_schedule == \
        "inverse"


@pytest.mark.parametrize("problem, argv", [
    ("svm", []),
    ("mc", ["--data", "RATINGS"]),
    ("implicit", ["--data", "RATINGS"]),
    ("cuts", ["--data", "random:60x200"]),
])
def test_an_unseeded_run_records_its_drawn_seed_and_is_reproducible_from_it(
        capsys, tmp_path, problem, argv):
    ratings = tmp_path / "ratings.tsv"
    rng = np.random.default_rng(1)
    ratings.write_text("".join(f"{u}\t{i}\t{1 + (u * i) % 5}\n" for u, i in
                               zip(rng.integers(0, 50, 800), rng.integers(0, 40, 800))))
    argv = [str(ratings) if a == "RATINGS" else a for a in argv]
    common = ["run", problem, *argv, "--epochs", "2", "--workers", "1", "--json"]
    status, out, _ = run(capsys, *common)
    assert status == 0
    runs = [json.loads(out)]
    status, out, _ = run(capsys, *common, "--seed", str(runs[0]["seed"]))
    assert status == 0, out
    runs.append(json.loads(out))
    assert isinstance(runs[0]["seed"], int) and runs[0]["seed"] == runs[1]["seed"]
    assert runs[0]["history"][-1]["objective"] == runs[1]["history"][-1]["objective"]


@pytest.mark.parametrize("problem", ["svm", "mc", "implicit", "cuts"])
def test_help_speaks_the_command_lines_words(capsys, problem):
    """The training options' help comes from the library's table, written for the
    Python API: on the command line parameters are flags, and no attribute or
    constant of the code is named."""
    with pytest.raises(SystemExit):
        main(["run", problem, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for code in ("None:", "replicated_", "seed_", "step_ ", "SCHEDULE_BY_CLASSES",
                 "HOT_MERGE_EVERY", "FitResult", "hogwild.schedulers", "hogwild.replication",
                 "hogwild.streaming", "random_state", "early_stopping", "validation_fraction",
                 "hot_fraction", "fit_intercept=False", "shuffle_rows"):
        assert code not in text, (problem, code)
    # no fitted attribute (scheduler_), no constant (LOSS_DEFAULTS), and no "(default:
    # none)" after a help that states its default
    words = re.sub(r"(-\w|--[\w-]+),? [A-Z_]+\b", "", text)  # flags' metavars
    assert re.findall(r"\b[a-z]+_(?=[\s.,;)])|\b[A-Z]+_[A-Z_]+\b", words) == [], problem
    assert "(default: none)" not in text, problem
    assert "--validation-fraction of the training samples" in text


def test_a_flag_is_taken_only_as_written(capsys):
    """--schedule was another name of --step-schedule beside --scheduler; a prefix
    of a flag is no flag."""
    for argv in (["--schedule", "inverse"], ["--epoch", "2"]):
        with pytest.raises(SystemExit) as exit:
            main(["run", "svm", *argv])
        out, err = capsys.readouterr()
        assert exit.value.code == 2 and out == ""
        assert err == (f"hogwild: error: unrecognized arguments: {' '.join(argv)} (see "
                       "'hogwild --help')\n")
