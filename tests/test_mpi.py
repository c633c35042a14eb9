"""backend="mpi": real MPI jobs (mpirun from Open MPI's wheel) of 2-3 ranks.

Each job runs tests/mpi_jobs.py or the command line under mpirun, so the pytest
process itself never initialises MPI."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hogwild.backends.mpi import AllreduceSettings, step_factor
from hogwild.backends.sharding import pieces_per_epoch
from hogwild.backends.shared_memory import PREFIX, segments_root
from hogwild.cli.ranks import child_pids
from hogwild.errors import HogwildError
from hogwild.paths import process_ended
from hogwild.problems.sparse_svm import INTERCEPT_PAD
from launchers import JOB_DEADLINE, MPIRUN, mpirun, mpmd

pytest.importorskip("mpi4py", reason="backend 'mpi' needs mpi4py (pip install 'hogwild[mpi]')")
if MPIRUN is None:
    pytest.skip("backend 'mpi' needs mpirun (pip install 'hogwild[mpi]' brings Open MPI's)",
                allow_module_level=True)

JOBS = str(Path(__file__).with_name("mpi_jobs.py"))
HOGWILD = [sys.executable, "-m", "hogwild.cli"]


def job(case, ranks=2, settings=None, **options):
    done = mpirun(ranks, [sys.executable, JOBS, case, json.dumps(settings or {}),
                          json.dumps(options)])
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_ranks_average_their_changes_as_synchronous_sgd_by_hand_bitwise():
    """With a serial engine on each rank, the run is bitwise synchronous averaging
    computed without MPI: dense allreduce and sparse allgather alike, and on three
    ranks (rank-order sums of the allgathered changes)."""
    for ranks, exchange in ((2, "dense"), (2, "sparse"), (3, "sparse")):
        digests = job("reference", ranks, {"sync_every": 400, "exchange": exchange})
        assert digests["mpi"] == digests["reference"], (ranks, exchange)


def test_every_rank_ends_with_the_same_parameters_whatever_the_allreduce_algorithm():
    """The six Open MPI algorithms forced in turn (MPI_T control variables on a
    duplicated communicator), and the hierarchical allreduce (a reduce to the
    node's leader and a broadcast, this machine being one node), give the same
    bits on 2 ranks, where each is one addition per coordinate; each run reports
    the algorithm it forced."""
    seen = set()
    for algorithm in ("basic_linear", "nonoverlapping", "recursive_doubling", "ring",
                      "segmented_ring", "rabenseifner", "hierarchical"):
        result = job("params", 2, {"algorithm": algorithm, "exchange": "dense",
                                   "sync_every": 700})
        assert len(set(result["digests"])) == 1  # rank 0 and rank 1 agree
        report = result["distributed"]
        assert report["algorithm"] == algorithm and report["algorithm_by"] == "user"
        assert report["algorithm_forced"] is True
        assert report["dense"]["syncs"] == report["syncs"] == 3 * 3
        seen.add(result["digests"][0])
    assert len(seen) == 1
    assert report["ranks_per_node"] == [2] and report["leaders_algorithm"] is None
    assert min(report["link_inside_node"]["message_s"]) > 0  # measured, at every size
    assert "link_between_nodes" not in report


def test_a_hierarchical_allreduce_of_three_ranks_trains_as_the_flat_one():
    """Three ranks: the node's reduce adds in another order than the ring, so the
    runs agree to rounding; one node has no network, so auto never picks it."""
    flat, by_node = (job("params", 3, {"algorithm": algorithm, "exchange": "dense",
                                       "sync_every": 700}) for algorithm in ("ring",
                                                                             "hierarchical"))
    assert len(set(by_node["digests"])) == 1
    assert by_node["history"] == pytest.approx(flat["history"], rel=1e-5)
    assert by_node["distributed"]["ranks_per_node"] == [3]
    assert "hierarchical" not in job("params", 3, {"exchange": "dense"})["distributed"][
        "predicted_seconds"]


def test_the_model_picks_the_algorithm_and_records_predicted_and_measured_sync_times():
    report = job("params", 2, {"exchange": "dense"})["distributed"]
    assert report["ranks"] == 2 and report["algorithm_by"] == "model"
    assert report["algorithm"] == report["model_choice"] == min(
        report["predicted_seconds"], key=report["predicted_seconds"].get)
    link = report["link"]
    # every pattern timed at every size; the affine summary never negative (on a
    # loaded host a stall at a small size can flatten the slope to beta 0)
    assert all(t > 0 for key in ("message_s", "exchange_round_s", "ring_step_s")
               for t in link[key]) and len(link["message_s"]) == len(link["bytes"]) > 1
    assert link["alpha_s"] >= 0 and link["beta_s_per_byte"] >= 0 and link["gamma_s_per_byte"] > 0
    assert report["predicted_sync_seconds"] == report["predicted_seconds"][report["algorithm"]]
    # a sync is measured (not None, not 0); on a loaded host one can stall for seconds
    assert 0 < report["measured_sync_seconds"] < 60
    assert report["message_bytes"] == 4 * (400 + INTERCEPT_PAD)  # w, the intercept: float32


def test_auto_exchange_allgathers_sparse_changes_and_allreduces_dense_ones():
    """A sync after 8 samples of 12 nonzeros changes about 100 of a rank's 432
    coordinates: allgathered; a sync per epoch changes them all: allreduced."""
    small = job("params", 2, {"sync_every": 8})["distributed"]
    assert small["sparse"]["syncs"] == small["syncs"] and small["dense"]["syncs"] == 0
    assert small["sparse"]["bytes"] < small["syncs"] * small["message_bytes"]
    whole = job("params", 2, {})["distributed"]
    assert whole["dense"]["syncs"] == whole["syncs"] == 3 and whole["sparse"]["syncs"] == 0


def test_replication_inside_each_rank_is_bitwise_the_shared_run_with_one_thread():
    """Copies inside each rank: a sync changes the shared parameters under the
    copies, which must take the new values, else the next merge would take them
    for the worker's changes undone. With one thread a replicated run is bitwise
    the serial one, so with the ranks' syncs it is bitwise the shared MPI run."""
    options = {"epochs": 3, "merge_every": 64, "hot_fraction": 0.05}
    shared = job("params", 2, {"sync_every": 300}, **options)
    for replication in ("worker", "hot"):
        replicated = job("params", 2, {"sync_every": 300}, replication=replication,
                         **options)
        assert replicated["replicated"]["merge_every"] == 64
        assert replicated["digests"] == shared["digests"], replication
    threads = job("params", 2, {"sync_every": 300}, scheduler="hogwild", workers=2,
                  oversubscribe=True, replication="hot", **options)
    assert threads["workers"] == 4 and len(set(threads["digests"])) == 1
    assert threads["objective"] == pytest.approx(shared["objective"], rel=0.05)


def test_the_command_line_runs_a_two_rank_job_within_half_a_point_of_one_process(tmp_path):
    """``hogwild run svm --ranks 2`` launches mpirun itself; only rank 0 prints (one
    JSON object) and writes the checkpoint; the test error is within 0.5 points of
    the single-process run's (a9a, shipped)."""
    common = ["run", "svm", "--epochs", "8", "--seed", "0", "--json"]
    single = subprocess.run(HOGWILD + common + ["--workers", "1"], capture_output=True,
                            text=True, timeout=JOB_DEADLINE)
    assert single.returncode == 0, single.stderr
    checkpoint = tmp_path / "ranks.npz"
    done = subprocess.run(HOGWILD + common + ["--ranks", "2", "--checkpoint", str(checkpoint),
                                              "--checkpoint-every", "4"],
                          capture_output=True, text=True, timeout=JOB_DEADLINE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    ranked = json.loads(done.stdout)  # one line: rank 1 printed nothing
    assert ranked["distributed"]["ranks"] == 2 and ranked["workers"] == 2
    assert ranked["backend"] == "mpi"
    assert abs(ranked["test_error"] - json.loads(single.stdout)["test_error"]) <= 0.005
    from hogwild.checkpoint import load_checkpoint
    saved = load_checkpoint(checkpoint)
    assert saved.epoch == 8 and saved.settings["backend"] == "mpi" \
        and saved.settings["ranks"] == 2


def test_ranks_given_part_files_read_their_own_and_train_as_one_process(tmp_path):
    """``--data`` a folder of part files under ``--ranks 2``: each rank reads a share
    of the parts (one disk here: shared out, none read twice), the statistics
    behind the automatic step and penalty are the job's, and the test error is
    within 0.5 points of one process's on the whole file; the whole file, each
    rank half of its bytes, the same. More ranks than parts is one line."""
    import gzip
    from hogwild.datasets.registry import SVM_DATASETS
    a9a = SVM_DATASETS["a9a"]
    with gzip.open(a9a.folder() / a9a.train, "rt") as f:
        lines = f.readlines()
    parts = tmp_path / "parts"
    parts.mkdir()
    cuts = [0, 9000, 20000, len(lines)]  # parts of uneven sizes
    for k in range(3):
        (parts / f"part-{k:05d}").write_text("".join(lines[cuts[k]:cuts[k + 1]]))
    whole = tmp_path / "a9a.svm"
    whole.write_text("".join(lines))
    common = ["run", "svm", "--epochs", "8", "--seed", "0", "--json", "--test",
              str(a9a.folder() / a9a.test)]
    single = subprocess.run(HOGWILD + common + ["--data", str(whole)], capture_output=True,
                            text=True, timeout=JOB_DEADLINE)
    assert single.returncode == 0, single.stderr[-3000:]
    done = subprocess.run(HOGWILD + common + ["--data", str(parts), "--ranks", "2"],
                          capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    one, ranked = json.loads(single.stdout), json.loads(done.stdout)
    shares = ranked["distributed"]["samples_by_rank"]
    assert ranked["distributed"]["samples"] == "own" and sum(shares) == len(lines) \
        and min(shares) > 0 and ranked["n_samples"] == one["n_samples"] == len(lines)
    assert ranked["n_features"] == one["n_features"] and ranked["reg"] == one["reg"]
    assert ranked["step"] == pytest.approx(one["step"], rel=1e-9)
    assert abs(ranked["test_error"] - one["test_error"]) <= 0.005
    assert len(ranked["hosts"]) == 1  # this machine's two ranks
    # one uncompressed file: each rank the lines that start in its half of the bytes
    halves = subprocess.run(HOGWILD + common + ["--data", str(whole), "--ranks", "2"],
                            capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert halves.returncode == 0, halves.stderr[-3000:]
    halved = json.loads(halves.stdout)
    shares = halved["distributed"]["samples_by_rank"]
    assert halved["distributed"]["samples"] == "own" and sum(shares) == len(lines) \
        and min(shares) > 0 and halved["reg"] == one["reg"]
    assert abs(halved["test_error"] - one["test_error"]) <= 0.005
    many = subprocess.run(HOGWILD + common + ["--data", str(parts), "--ranks", "4",
                                              "--oversubscribe"],
                          capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert many.returncode == 2
    assert err_lines(many.stderr, "hogwild:") == [
        f"hogwild: error: 4 ranks read the 3 part files of {parts}: each rank needs one at "
        "least (split them into more, e.g. split -n l/N)"]  # once for the job, by rank 0


def test_the_command_line_trains_beside_a_summation_server_and_refuses_too_many():
    """``--ranks 3 --summation-servers 1``: two ranks train, the third adds; the test
    error is within 0.5 points of two ranks alone, and the summary says who did
    what. Servers that would outnumber the ranks that train are one line, before
    mpirun starts."""
    common = ["run", "svm", "--epochs", "4", "--seed", "0", "--json"]
    runs = {}
    for extra in (["--ranks", "2"], ["--ranks", "3", "--summation-servers", "1"]):
        done = subprocess.run(HOGWILD + common + extra, capture_output=True, text=True,
                              timeout=JOB_DEADLINE)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[extra[1]] = json.loads(done.stdout)
    served = runs["3"]["distributed"]
    assert (served["summation_servers"], served["ranks_that_train"]) == (1, 2)
    assert served["algorithm"] == "summation_service" and runs["3"]["workers"] == 2
    assert abs(runs["3"]["test_error"] - runs["2"]["test_error"]) <= 0.005
    done = subprocess.run(HOGWILD + ["run", "svm", "--ranks", "4", "--summation-servers",
                                     "3"], capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert (done.returncode, done.stderr) == (2, (
        "hogwild: error: 3 summation servers in a job of 4 ranks: the servers add the "
        "changes of at least 2 ranks that train\n"))


def test_early_stopping_stops_every_rank_after_the_same_epoch_keeping_the_best():
    """Each rank scores the held-out rows on its averaged copy and the ranks agree
    on stopping (a rank that stopped alone would leave the others in an allreduce)."""
    done = subprocess.run(HOGWILD + ["run", "svm", "--ranks", "2", "--epochs", "30",
                                     "--early-stopping", "2", "--seed", "0", "--json"],
                          capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    best, history = report["best_epoch"], report["history"]
    assert report["epochs_run"] == len(history) == best + 2 < 30
    scores = [record["validation_error"] for record in history]
    assert scores[best - 1] == min(scores) and scores.index(min(scores)) == best - 1
    assert report["test_error"] == history[best - 1]["test_error"]


def test_mpirun_of_the_command_line_prints_the_ranks_in_the_summary():
    done = mpirun(2, HOGWILD + ["run", "svm", "--backend", "mpi", "--epochs", "2",
                                "--sync-every", "4096", "--allreduce", "ring"])
    assert done.returncode == 0, done.stderr[-3000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("done: hogwild x 2 ranks x 1 thread, changes averaged every "
                              "4096 updates by allreduce ring on a9a")
    assert done.stdout.count("done:") == 1


def test_ranks_that_disagree_on_the_run_fail_at_once_on_every_rank():
    """Different epochs per rank (mpirun's MPMD form) would hang in a collective:
    each rank names the difference and the job ends with an error."""
    svm = HOGWILD + ["run", "svm", "--backend", "mpi", "--epochs"]
    done = mpmd(svm + ["2"], svm + ["3"])
    assert done.returncode != 0
    assert err_lines(done.stderr, "hogwild:") == [
        "hogwild: error: the MPI ranks disagree on the run: rank 0 has epochs=2, rank 1 has "
        "epochs=3"]


def test_an_error_on_one_rank_ends_the_whole_job():
    """Rank 1 alone cannot read its data: the job ends non-zero, rank 0 does not
    wait for it."""
    svm = HOGWILD + ["run", "svm", "--backend", "mpi"]
    done = mpmd(svm, svm + ["--data", "/nonexistent/x.svm"])
    assert done.returncode != 0
    assert "hogwild: error: rank 1: " in done.stderr and "/nonexistent/x.svm" in done.stderr


# --- issue 28: nothing hangs on any rank -----------------------------------------------

PATCHED = [sys.executable, "-c", "import sys, time, hogwild.cli as cli; "  # a bug in run svm
           "cli.run_svm = lambda args: print(f'failing at {time.monotonic()}', file=sys.stderr, "
           "flush=True) or 1 / 0; sys.exit(cli.main(sys.argv[1:]))"]


def test_any_exception_on_one_rank_ends_the_job_within_seconds():
    """Only hogwild's own errors ended the job: another exception on one rank (a bug,
    here a ZeroDivisionError) left the other waiting for ever."""
    svm = ["run", "svm", "--backend", "mpi", "--epochs", "50"]
    done = mpmd(HOGWILD + svm, PATCHED + svm)
    ended = time.monotonic()
    failed = re.search(r"failing at (\S+)\n", done.stderr)
    assert failed and done.returncode != 0, done.stderr[-2000:]
    assert ended - float(failed.group(1)) < 30, done.stderr[-2000:]
    assert "hogwild: error: rank 1: ZeroDivisionError: division by zero\n" in done.stderr, \
        done.stderr
    assert "MPI_ABORT was invoked on rank 1" in done.stderr, done.stderr


def test_a_usage_error_on_one_rank_before_mpi_starts_ends_the_job():
    done = mpmd(HOGWILD + ["run", "svm", "--backend", "mpi"],
                HOGWILD + ["run", "svm", "--backend", "mpi", "--epochs", "many"])
    assert done.returncode != 0, done.stderr[-2000:]
    assert ("hogwild: error: argument --epochs: expected an integer, got 'many' (see 'hogwild "
            "run svm --help')\n") in done.stderr


def test_ranks_started_on_different_problems_fail_together():
    done = mpmd(HOGWILD + ["run", "svm", "--backend", "mpi"],
                HOGWILD + ["run", "cuts", "--backend", "mpi", "--data", "random:50x90"])
    assert done.returncode != 0, done.stderr[-2000:]
    assert err_lines(done.stderr, "hogwild:") == [
        "hogwild: error: the MPI ranks disagree on the command: rank 0 has problem='svm', "
        "rank 1 has problem='cuts'"]


def test_an_error_every_rank_shares_is_one_line_for_the_job(tmp_path):
    """A damaged --resume file was one line per rank: the ranks meet, and rank 0 says
    each distinct error once."""
    damaged = tmp_path / "run.npz"
    damaged.write_bytes(b"not a checkpoint")
    for resume, said in [(damaged, f"checkpoint {damaged} is truncated or not a hogwild "
                                   "checkpoint"),
                         (tmp_path / "missing.npz", f"checkpoint {tmp_path / 'missing.npz'} "
                                                    "does not exist")]:
        done = subprocess.run(HOGWILD + ["run", "svm", "--ranks", "3", "--epochs", "2",
                                         "--resume", str(resume)],
                              capture_output=True, text=True, timeout=JOB_DEADLINE)
        assert done.returncode == 2, done.stderr[-3000:]
        (line,) = err_lines(done.stderr, "hogwild:")
        assert line.startswith(f"hogwild: error: {said}"), done.stderr
    assert damaged.read_bytes() == b"not a checkpoint"


def test_a_rank_of_a_job_that_would_train_alone_is_refused():
    done = mpirun(2, HOGWILD + ["run", "svm", "--epochs", "1"])
    assert done.returncode != 0
    assert ("hogwild: error: rank 1: this process is rank 1 of an MPI job of 2 ranks, which "
            "would each train alone with --backend threads: give --backend mpi (or run without "
            "mpirun)\n") in done.stderr


@pytest.mark.parametrize("field,values", [("exchange", ("dense", "sparse")),
                                          ("algorithm", ("ring", "basic_linear")),
                                          ("sync_every", (100, 200))])
def test_ranks_of_a_script_with_other_settings_fail_together_naming_the_field(field, values):
    """From the Python API, exchange="dense" on rank 0 and "sparse" on rank 1 hung for
    150 s and more: every AllreduceSettings field is compared before any collective."""
    done = mpirun(2, [sys.executable, JOBS, "params", json.dumps({field: list(values)}),
                      json.dumps({})])
    assert done.returncode != 0
    for rank in (0, 1):
        assert (f"hogwild.errors.HogwildError: the MPI ranks disagree on the run: rank 0 has "
                f"{field}={values[0]!r}, rank 1 has {field}={values[1]!r}\n") in done.stderr
    assert "an uncaught HogwildError ends the MPI job (MPI_Abort)" in done.stderr


def test_the_epoch_records_keep_the_step_the_ranks_applied():
    """The linear scaling rule runs the schedule's step times the ranks; with a warm-up
    the factor grows piece by piece, and the record keeps the mean over the epoch's
    updates (4 pieces of 375 samples a rank: factors 1, 1.25, 1.5 and 1.75)."""
    scaled = job("params", 2, {"sync_every": 375})
    assert scaled["steps"] == pytest.approx([0.05 * 2, 0.045 * 2, 0.0405 * 2], rel=1e-12)
    warm = job("params", 2, {"sync_every": 375, "warmup_epochs": 1})
    assert warm["steps"] == pytest.approx([0.05 * 1.375, 0.045 * 2, 0.0405 * 2], rel=1e-12)
    plain = job("params", 2, {"step_scaling": "none"})
    assert plain["steps"] == pytest.approx([0.05, 0.045, 0.0405], rel=1e-12)


def test_threads_per_rank_may_differ():
    """Each rank's own workers count is not the job's: only it may differ (rank 0 asks
    for none, so it alone would have entered the node count's collective)."""
    result = job("params", 2, {}, workers=[None, 1])
    assert result["distributed"]["ranks"] == 2


def test_the_summation_service_gives_every_worker_the_exact_sum():
    """BytePS's parts (Theorem 1: a worker's share (w-k)/(w^2+kw-2k), a server's
    2(w-1)/(w^2+kw-2k)) on 4 ranks, none, one or two of them serving; integers in
    float32, so the sums are exact, whatever the servers hold (NaN)."""
    done = mpirun(4, [sys.executable, JOBS, "summation"])
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert outcome.pop("0 servers, parts of 1000") == [0, 250, 500, 750, 1000]
    assert outcome.pop("1 servers, parts of 1000") == [0, 200, 400, 600, 1000]
    assert outcome.pop("2 servers, parts of 1000") == [0, 0, 0, 500, 1000]
    assert len(outcome) == 18 and all(outcome.values()), outcome


def test_summation_servers_train_as_synchronous_sgd_by_hand_bitwise():
    """Two ranks train and a third only adds (BytePS's summation service): the run
    is bitwise synchronous averaging over the two computed without MPI, and the
    report names the service and its server."""
    result = job("reference", 3, {"sync_every": 400, "exchange": "dense",
                                  "summation_servers": 1})
    assert result["mpi"] == result["reference"]
    report = result["distributed"]
    assert (report["algorithm"], report["summation_servers"], report["ranks_that_train"],
            report["ranks"]) == ("summation_service", 1, 2, 3)
    assert report["dense"]["syncs"] == report["syncs"] > 0
    assert report["predicted_sync_seconds"] == report["predicted_seconds"]["summation_service"]


def test_a_lost_summation_server_or_trainer_is_survived():
    """Under ULFM, the summation server killed in epoch 1 costs no update: the two
    ranks that train redo the piece and go on with a flat allreduce, ending
    bitwise where the undisturbed run ends (the sums of two are the same bits).
    A rank that trains, killed, leaves one rank that trains and the server, which
    then adds zeros in a flat allreduce (and so holds the parameters too); the run
    still finishes, one line says so."""
    settings = {"sync_every": 100, "exchange": "dense", "summation_servers": 1}
    done, survivors = _losing(settings, 2)
    assert sorted(survivors) == [0, 1]
    undisturbed = job("params", 3, settings)
    assert {line["digest"] for line in survivors.values()} == {undisturbed["digests"][0]}
    assert survivors[0]["updates"] == [3000, 3000, 3000]
    report = survivors[0]["distributed"]
    assert (report["ranks"], report["ranks_at_start"]) == (2, 3)
    (lost,) = report["lost_ranks"]
    assert (lost["rank"], lost["summation_server"], lost["after_syncs"]) == (2, True, 11)
    (line,) = err_lines(done.stderr, "hogwild: summation server")
    assert line.startswith("hogwild: summation server 2 was lost in epoch 1 (after 11 "
                           "syncs); the ranks' ") and line.endswith(" allreduce adds the changes")
    done, survivors = _losing(settings, 1)
    assert sorted(survivors) == [0, 2]
    assert survivors[0]["digest"] == survivors[2]["digest"]  # the server's kept since
    report = survivors[0]["distributed"]
    assert (report["ranks"], report["summation_servers"], report["ranks_that_train"]) == (2, 1, 1)
    assert err_lines(done.stderr, "hogwild: rank") == [
        "hogwild: rank 1 was lost in epoch 1 (after 11 syncs); 1 rank goes on with its "
        "samples, its unfinished piece's updates (at most 100) lost"]
    assert abs(survivors[0]["objective"] - undisturbed["objective"]) \
        < 0.02 * undisturbed["objective"]


def test_an_allreduce_probe_of_absurd_size_is_one_error_on_every_rank():
    """--max-size 99999999999999999999 hit MPI_ERR_INTERN on one rank and hung."""
    done = mpirun(2, HOGWILD + ["allreduce-probe", "--max-size", "99999999999999999999",
                                "--plot", "none"])
    assert done.returncode != 0
    assert err_lines(done.stderr, "hogwild:") == [
        "hogwild: error: --max-size 99999999999999999999: the probe sends messages of at most "
        "4 GiB"]


def _job_segments(launcher):
    """The shared-memory folders of the MPI job whose launcher is ``launcher`` (its
    ranks make Open MPI's segments there): this job's alone, whatever other jobs
    on the host leave in /dev/shm."""
    return list(segments_root().glob(f"{PREFIX}{launcher}-mpi-*"))


def _mapped_segment_files(pid):
    """The paths of Open MPI's segment files that process ``pid`` maps."""
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {line.split(maxsplit=5)[5] for line in maps
            if len(line.split(maxsplit=5)) == 6 and "sm_segment." in line}


def _training_job():
    """(mpirun of a long 2-rank training, its ranks' pids), once the ranks train;
    their segments were made in the job's folder and have lost their names."""
    proc = mpirun(2, HOGWILD + ["run", "svm", "--backend", "mpi", "--epochs", "100000",
                                "--checkpoint-every", "1000000"], background=True)
    deadline = time.monotonic() + 120
    ranks = []
    while len(ranks) < 2 and time.monotonic() < deadline:
        ranks = _ranks_of(proc.pid)
        time.sleep(0.2)
    folder = str(segments_root() / f"{PREFIX}{proc.pid}-mpi-{os.getuid()}")

    def mapped():
        try:
            return set().union(*(_mapped_segment_files(pid) for pid in ranks))
        except OSError:  # a rank that ended: the assertion below says what it mapped
            return set()

    def unnamed(paths):  # every rank maps both segments, made in the job's folder and unlinked
        return len(paths) == 2 and all(path.startswith(folder + "/") and path.endswith(
            " (deleted)") for path in paths)

    while not unnamed(mapped()) and time.monotonic() < deadline:  # on a loaded host too
        time.sleep(0.1)
    assert unnamed(mapped()), mapped()
    assert _job_segments(proc.pid) == []  # the folder went once every rank mapped them
    return proc, ranks


def test_a_rank_killed_by_sigkill_ends_the_job_within_ten_seconds_leaving_nothing():
    proc, ranks = _training_job()
    try:
        assert len(ranks) == 2
        os.kill(ranks[1], signal.SIGKILL)
        killed = time.monotonic()
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - killed < 10
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert f"PID {ranks[1]}" in err and "signal 9" in err
    for pid in ranks:  # no orphan
        assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid)
    assert _job_segments(proc.pid) == []


def test_ranks_whose_mpirun_was_killed_exit_within_seconds_leaving_nothing():
    """mpirun killed by SIGKILL cannot clean up: the ranks' shared-memory segments
    lose their names once all are mapped, and a rank removes the launcher's
    session directory (the PMIx server's files)."""
    proc, ranks = _training_job()
    try:
        assert len(ranks) == 2
        session = dict(entry.split(b"=", 1) for entry in Path(
            f"/proc/{ranks[1]}/environ").read_bytes().split(b"\0") if b"=" in entry
                       )[b"PMIX_SERVER_TMPDIR"].decode()
        assert Path(session).is_dir()
        os.kill(proc.pid, signal.SIGKILL)  # mpirun itself
        proc.communicate(timeout=30)
        deadline = time.monotonic() + 10
        while any(_state(pid) not in ("gone", "Z") for pid in ranks) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_state(pid) in ("gone", "Z") for pid in ranks), ranks
        assert _job_segments(proc.pid) == []
        assert not Path(session).exists()
    finally:
        for pid in ranks:  # still ours if still running hogwild
            try:
                if b"hogwild" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # ended meanwhile
        return b""


def _ranks_of(pid):
    return sorted(child_pids(pid))


def _state(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return "gone"


def test_sigterm_to_a_ranks_launch_stops_every_rank_after_the_same_epoch(tmp_path):
    """--ranks forwards the first SIGTERM to the ranks, which agree on the epoch to
    stop after: rank 0 alone announces it and writes the checkpoint, and no rank
    is aborted."""
    from hogwild.checkpoint import load_checkpoint

    checkpoint = tmp_path / "run.npz"
    proc = subprocess.Popen(HOGWILD + ["run", "svm", "--ranks", "2", "--epochs", "100000",
                                       "--checkpoint", str(checkpoint)],
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                len(_ranks_of(launcher)) == 2 for launcher in _ranks_of(proc.pid)):
            time.sleep(0.2)
        first = proc.stdout.readline()  # training: rank 0 reported its first epoch
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert first.startswith("epoch "), (first, err[-3000:])
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert err.count("hogwild: stopping after this epoch (SIGTERM again to abandon it)") == 1
    assert "MPI_ABORT" not in err and "interrupted after epoch" in err
    saved = load_checkpoint(checkpoint)
    assert saved.epoch >= 1 and saved.settings["ranks"] == 2


@pytest.mark.determinism
def test_the_survivors_of_a_rank_killed_mid_epoch_agree_and_finish_the_run():
    """Under ULFM a rank that dies (here SIGKILL just before its 12th reconcile, in
    epoch 2) is survived: the others shrink, agree on the reconciled state and
    redo the unreconciled rest of the epoch split among them, ending with equal
    parameters, the lost rank and its piece in the report, and an objective
    within 1% of the run that lost no rank. With the serial engine the survivors'
    parameters are bitwise the same whichever rank died."""
    settings = {"sync_every": 100, "algorithm": "ring"}  # (auto's pick, by a measured
    # link, would change the sums' rounding from run to run)
    done, survivors = _losing(settings, 2)
    assert sorted(survivors) == [0, 1]
    assert survivors[0]["digest"] == survivors[1]["digest"]
    # the survivors' run does not depend on which rank died: rank 0 (the chief) alike
    _, without_chief = _losing(settings, 0)
    assert sorted(without_chief) == [1, 2]
    assert {line["digest"] for line in without_chief.values()} == {survivors[0]["digest"]}
    report = survivors[0]["distributed"]
    assert (report["ranks"], report["ranks_at_start"]) == (2, 3)
    (lost,) = report["lost_ranks"]
    assert (lost["rank"], lost["epoch"], lost["after_syncs"],
            lost["unfinished_piece_samples"]) == (2, 2, 11, 100)
    # epoch 2: 1 piece of 10 reconciled by 3 ranks, then 13 of 15 by 2 (100 each)
    assert survivors[0]["updates"] == [3000, 300 + 13 * 200, 3000]
    assert err_lines(done.stderr, "hogwild: rank") == [
        "hogwild: rank 2 was lost in epoch 2 (after 11 syncs); 2 ranks go on with its "
        "samples, its unfinished piece's updates (at most 100) lost"]
    whole = job("params", 3, settings)
    assert abs(survivors[0]["objective"] - whole["objective"]) < 0.01 * whole["objective"]


def _losing(settings, rank):
    """The lose job on 3 ranks under ULFM, ``rank`` killing itself before its 12th
    reconcile: (mpirun's outcome, {rank: the JSON line} of the survivors)."""
    done = mpirun(3, [sys.executable, JOBS, "lose", json.dumps(settings),
                      json.dumps({"lose_rank": rank, "lose_at": 12})], fault_tolerant=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, {line["rank"]: line for line in map(json.loads, done.stdout.splitlines())}


def err_lines(stderr, start):
    return [line for line in stderr.splitlines() if line.startswith(start)]


def _rank_pid(launcher, rank, deadline):
    """The pid of world rank ``rank`` among the ranks of mpirun ``launcher``."""
    while time.monotonic() < deadline:
        for pid in _ranks_of(launcher):
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ:
                return pid
        time.sleep(0.02)
    raise AssertionError(f"rank {rank} of mpirun {launcher} never started")


def _job_launcher(pid, deadline):
    """The mpirun that ``hogwild --ranks`` (process ``pid``) started for the job (not
    the ``mpirun --version`` it asks first)."""
    while time.monotonic() < deadline:
        for child in _ranks_of(pid):
            try:
                if b"\0-n\0" in Path(f"/proc/{child}/cmdline").read_bytes():
                    return child
            except OSError:
                continue
        time.sleep(0.02)
    raise AssertionError(f"process {pid} started no mpirun")


@pytest.mark.determinism
def test_the_chief_killed_mid_run_is_survived_within_half_a_point_and_as_a_resumed_job(tmp_path):
    """--ranks runs under ULFM: rank 0 (the chief) killed by SIGKILL once the run
    wrote its first checkpoint, the others train its samples and finish (exit 0);
    rank 1 writes the later checkpoints and prints the JSON, which names the lost
    rank and has every epoch's test error and time; the test error is within 0.5
    points of a run that lost nothing; and from the first checkpoint the survivors
    wrote, their run is bitwise a job of 2 ranks resumed from it."""
    from hogwild.checkpoint import load_checkpoint

    # 300 epochs: the survivors write a checkpoint every 20 ms or so, for 5 s here;
    # with 60 (1 s) a loaded machine's CI starved this process through all of them
    options = ["--epochs", "300", "--sync-every", "1000", "--seed", "5", "--allreduce", "ring",
               "--workers", "1", "--json"]
    checkpoint, copy = tmp_path / "run.npz", tmp_path / "survivors.npz"
    proc = subprocess.Popen(HOGWILD + ["run", "svm", "--ranks", "3", *options,
                                       "--save", str(tmp_path / "lost.npz"),
                                       "--checkpoint", str(checkpoint),
                                       "--checkpoint-every", "1"],
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not checkpoint.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(_rank_pid(_job_launcher(proc.pid, deadline), 0, deadline), signal.SIGKILL)
        while proc.poll() is None and not copy.exists():  # the survivors' first checkpoint
            try:
                if load_checkpoint(checkpoint).settings["ranks"] == 2:
                    shutil.copy(checkpoint, copy)
            except HogwildError:  # (being replaced: atomically, so read it again)
                pass
        out, err = proc.communicate(timeout=JOB_DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    result = json.loads(out)
    (lost,) = result["distributed"]["lost_ranks"]
    assert lost["rank"] == 0 and result["distributed"]["ranks"] == 2
    # the new chief reports every epoch as the lost one did, before the loss too
    assert [sorted(set(record) & {"test_error", "elapsed_seconds"})
            for record in result["history"]] == [["elapsed_seconds", "test_error"]] * 300
    assert err_lines(err, "hogwild: rank") == [
        f"hogwild: rank 0 was lost in epoch {lost['epoch']} (after {lost['after_syncs']:,} "
        "syncs); 2 ranks go on with its samples, its unfinished piece's updates (at most "
        f"{lost['unfinished_piece_samples']:,}) lost"]
    assert load_checkpoint(checkpoint).settings["ranks"] == 2
    whole = subprocess.run(HOGWILD + ["run", "svm", "--ranks", "3", *options],
                           capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert abs(result["test_error"] - json.loads(whole.stdout)["test_error"]) < 0.005
    assert load_checkpoint(copy).epoch < 300
    resumed = subprocess.run(HOGWILD + ["run", "svm", "--ranks", "2", *options, "--resume",
                                        str(copy), "--save", str(tmp_path / "resumed.npz")],
                             capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    survivors, again = np.load(tmp_path / "lost.npz"), np.load(tmp_path / "resumed.npz")
    for name in ("coef", "intercept"):
        assert np.array_equal(survivors[name], again[name]), name


@pytest.mark.parametrize("when", ["at once", "in MPI_Init"])
def test_a_rank_killed_while_a_users_own_ulfm_job_starts_ends_it_with_one_line(when):
    """Under a user's own ``mpirun --with-ft ulfm`` nothing of hogwild's watches the
    ranks from outside, the others would wait in MPI_Init for ever, and mpirun
    exits 0 when ranks die by a signal: each rank's start watcher ends the job
    with one line and mpirun's exit 1. Killed at once (before its watcher runs:
    another rank's sees it missing) or once its watcher runs (it sees it die)."""
    proc = mpirun(3, HOGWILD + ["run", "svm", "--backend", "mpi", "--epochs", "3"],
                  fault_tolerant=True, background=True)
    deadline = time.monotonic() + 120
    try:
        victim = _rank_pid(proc.pid, 1, deadline)
        while when == "in MPI_Init" and not any(
                b"starting.py" in _cmdline(child) for child in child_pids(victim)):
            assert time.monotonic() < deadline, "the rank started no watcher"
            time.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # the job hung: end it
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 1, err[-3000:]
    assert err_lines(err, "hogwild: error") in (
        ["hogwild: error: a rank of this machine died while the MPI job started; ending "
         "the job"], ["hogwild: error: rank 1 died while the MPI job started; ending the job"],
        ["hogwild: error: a rank died before the first epoch (MPI_ERR_PROC_FAILED: Process "
         "Failure); the job ends (its ranks survive a lost rank once training began)"]), err
    assert "\0" not in err and "MPI_ABORT" not in err and "Traceback" not in err


def test_a_rank_killed_while_the_job_starts_ends_it_with_one_line():
    """Under ULFM mpirun keeps a job whose rank dies, and the others would wait in
    MPI_Init for ever: --ranks ends the job when a rank dies before every rank
    marked itself started (here at once, before the launcher may have seen it),
    leaving nothing."""
    proc = subprocess.Popen(HOGWILD + ["run", "svm", "--ranks", "3", "--epochs", "3"],
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    launcher = _job_launcher(proc.pid, time.monotonic() + 120)
    try:
        victim = _rank_pid(launcher, 2, time.monotonic() + 120)
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # the job hung: end it, mpirun's session and all
            proc.kill()
            os.killpg(launcher, signal.SIGKILL)
    assert proc.returncode != 0
    (line,) = err_lines(err, "hogwild: error")
    assert line in [f"hogwild: error: {who} died while the MPI job started; ending the job"
                    for who in (f"rank 2 (pid {victim})", f"a rank (pid {victim})", "a rank")]
    # (as the launcher saw it: after its exec, before, or not at all)
    assert _job_segments(launcher) == []
    assert list(segments_root().glob(f"{PREFIX}{proc.pid}-*")) == []


def test_ctrl_c_while_the_ranks_start_ends_the_job_with_one_line():
    """The ranks cannot stop together before MPI_Init: a Ctrl-C to --ranks while they
    start ends the job at once (mpirun's SIGTERM, no rank's KeyboardInterrupt
    traceback), exit 130, leaving nothing."""
    proc = subprocess.Popen(HOGWILD + ["run", "svm", "--ranks", "3", "--epochs", "3"],
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    launcher = _job_launcher(proc.pid, time.monotonic() + 120)
    try:
        _rank_pid(launcher, 2, time.monotonic() + 120)  # started, far from MPI_Init
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            os.killpg(launcher, signal.SIGKILL)
    assert proc.returncode == 130, err[-3000:]
    assert err_lines(err, "hogwild:") == ["hogwild: interrupted while the MPI job started"]
    assert "Traceback" not in err
    assert _job_segments(launcher) == []
    assert list(segments_root().glob(f"{PREFIX}{proc.pid}-*")) == []


@pytest.mark.parametrize("phase", ["start", "training"])
def test_a_ranks_launcher_killed_leaves_nothing_behind(tmp_path, phase):
    """`hogwild --ranks` killed by SIGKILL, while its ranks start or once they train,
    left its /dev/shm/hogwild-PID-started folder (the ranks' marks past MPI_Init)
    for some later run's sweep. Nothing of the job is left now: mpirun and the
    ranks end (mpirun's SIGTERM when its parent dies), and neither shared-memory
    folders nor Open MPI's session directory stay."""
    import tempfile
    checkpoint = tmp_path / "run.npz"
    proc = subprocess.Popen(HOGWILD + ["run", "svm", "--ranks", "3", "--epochs", "3000",
                                       "--checkpoint", str(checkpoint),
                                       "--checkpoint-every", "1"],
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    launcher = _job_launcher(proc.pid, deadline)
    try:
        ranks = [_rank_pid(launcher, rank, deadline) for rank in range(3)]
        while phase == "training" and not checkpoint.exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.01)
        proc.kill()
        proc.communicate(timeout=60)
        for pid in [launcher, *ranks]:
            while not process_ended(pid):
                assert time.monotonic() < deadline, f"process {pid} outlived its launcher"
                time.sleep(0.02)
    finally:
        if not process_ended(launcher):  # the job outlived its launcher: end it all
            proc.kill()
            os.killpg(launcher, signal.SIGKILL)
    assert list(segments_root().glob(f"{PREFIX}{proc.pid}-*")) == []
    assert _job_segments(launcher) == []
    assert not (Path(tempfile.gettempdir()) / f"ompi.{launcher}").exists()


def test_mpirun_that_fails_before_any_rank_starts_is_named_in_a_line(tmp_path, monkeypatch,
                                                                     capsys):
    """mpirun that cannot start (a read-only TMPDIR: exit 213) printed only Open MPI's
    banner: hogwild's line follows it, with mpirun's status."""
    from hogwild.cli import ranks

    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho 'PMIx detected a call to mkdir was unable to create' >&2\n"
                    "exit 213\n")
    fake.chmod(0o755)
    monkeypatch.setattr(ranks, "find_mpirun", lambda: str(fake))
    monkeypatch.setattr(ranks, "fault_tolerance", lambda mpirun: ["--with-ft", "ulfm"])
    assert ranks.launch(2, ["run", "svm", "--epochs", "1"]) == 213
    assert capsys.readouterr().err == ("hogwild: error: mpirun failed (exit 213) before any "
                                       "rank started; its message is above\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a read-only tmpfs (needs root)")
def test_a_read_only_temporary_folder_is_one_line_before_mpirun(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)],
                      capture_output=True).returncode:
        pytest.skip("this machine does not let its root mount a tmpfs")
    try:
        done = subprocess.run(HOGWILD + ["run", "svm", "--ranks", "2", "--epochs", "1"],
                              capture_output=True, text=True, timeout=JOB_DEADLINE,
                              env={**os.environ, "TMPDIR": str(folder)})
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)
    assert (done.returncode, done.stderr) == (2, (
        f"hogwild: error: --ranks: the temporary folder {folder} is not writable, and Open "
        "MPI keeps its session files there: set TMPDIR to a writable folder\n"))


def test_a_job_of_one_rank_started_without_mpirun_leaves_no_shared_memory():
    """Open MPI's singleton would leave a 16 MiB segment in /dev/shm that no
    launcher removes; the backend starts it with the loopback transport alone, so
    the process maps no segment at all (judged from its own maps, not /dev/shm,
    which other jobs on the host share)."""
    done = subprocess.run([sys.executable, JOBS, "params"], capture_output=True, text=True,
                          timeout=JOB_DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["distributed"]["ranks"] == 1
    # and the transport is its alone: processes it starts get no such setting
    done = subprocess.run([sys.executable, "-c", "import os; from hogwild.backends.mpi.job "
                           "import import_mpi, _mapped_segments; import_mpi(); "
                           "print(_mapped_segments(), sorted(k for k in os.environ "
                           "if k.startswith('OMPI_MCA')))"],
                          capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert done.stdout.strip() == "[] []", done.stderr


def test_settings_are_checked_when_the_config_is_built():
    from hogwild.config import TrainingConfig
    for fields, message in [
        ({"sync_every": 0}, "sync_every must be an integer >= 1, got 0"),
        ({"algorithm": "tree"}, "unknown allreduce algorithm 'tree'; choose one of: auto, "
                                "basic_linear, nonoverlapping, recursive_doubling, ring, "
                                "segmented_ring, rabenseifner, hierarchical"),
        ({"exchange": "both"}, "unknown exchange 'both'; choose one of: auto, dense, sparse"),
        ({"step_scaling": "sqrt"}, "unknown step_scaling 'sqrt'; choose one of: linear, none"),
        ({"warmup_epochs": -1}, "warmup_epochs must be a number from 0 to 1,000,000, got -1"),
        ({"warmup_epochs": 2, "step_scaling": "none"}, "warmup_epochs ramps the step up to "
                                                       "the linear scaling rule's; it needs "
                                                       "step_scaling='linear'"),
        ({"summation_servers": -1}, "summation_servers must be an integer >= 0, got -1"),
        ({"summation_servers": 1, "algorithm": "ring"},
         "summation servers sum the changes themselves; allreduce algorithm 'ring' would "
         "not run: leave it 'auto'"),
    ]:
        with pytest.raises(HogwildError) as error:
            TrainingConfig(backend="mpi", distributed=fields)
        assert str(error.value) == message
    assert TrainingConfig(backend="mpi").distributed == AllreduceSettings()


def test_the_linear_scaling_rule_warms_up_linearly_over_its_epochs():
    warm = AllreduceSettings(warmup_epochs=2)
    assert [step_factor(warm, 4, done, 10) for done in (0, 5, 10, 15, 20, 100)] == \
        [1.0, 1.75, 2.5, 3.25, 4.0, 4.0]
    assert step_factor(AllreduceSettings(), 4, 0, 10) == 4.0
    assert step_factor(AllreduceSettings(step_scaling="none"), 4, 50, 10) == 1.0
    assert pieces_per_epoch(1001, 2, None) == 1
    assert pieces_per_epoch(1001, 2, 100) == 6  # the larger share, 501 samples
    assert np.isclose(step_factor(warm, 1, 0, 10), 1.0)


def test_the_probe_report_judges_predictions_and_choices_from_64_kib_up():
    from hogwild.cli.probe import build_report, markdown, parse_size
    from hogwild.collectives import ALGORITHMS, LinkCosts, predict

    link = LinkCosts(alpha=20e-6, beta=1e-9, gamma=0.1e-9, beta_exchange=2e-9)
    sizes = [1 << 10, 1 << 16, 1 << 20]
    measured = {name: {size: predict(name, 4, size, link) for size in sizes}
                for name in ALGORITHMS}
    report = build_report(4, sizes, link, measured, "test")
    assert report["predictions_within_2x"] and report["choices_within_20_percent"]
    assert report["sizes_checked"] == 2 and report["choice_matched_fastest"] == 2
    measured["ring"][1 << 20] *= 2.5  # the model's pick for 1 MiB, now 2.5x slower
    report = build_report(4, sizes, link, measured, "test")
    assert not report["predictions_within_2x"] and not report["choices_within_20_percent"]
    assert report["rows"][2]["model_choice"] == "ring" and report["rows"][2]["fastest"] != "ring"
    text = markdown(report)
    assert "| 1 MiB |" in text and "the model's choice within 20% of the fastest: no" in text
    # the GPU collectives, priced beside the measured algorithms and never run
    from hogwild.cluster_costs import double_binary_tree
    assert report["rows"][2]["priced_only"]["double_binary_tree"] == double_binary_tree(
        4, 1 << 20, link)[0]
    assert set(report["rows"][0]["priced_only"]) == {"double_binary_tree", "blink"}
    assert "Priced only (not run: GPU collectives): double binary tree, blink." in text
    assert "| choice / fastest | double binary tree (priced) | blink (priced) |" in text
    assert build_report(17, sizes, link, {name: {size: predict(name, 17, size, link)
                                                 for size in sizes} for name in ALGORITHMS}
                        )["priced_only_note"] == ("not run: GPU collectives; Blink priced up "
                                                  "to 16 ranks, on a link with a measured "
                                                  "rate")
    assert [parse_size(t) for t in ("4096", "64KiB", "256MiB", "1G")] == [4096, 65536,
                                                                            1 << 28, 1 << 30]
    with pytest.raises(HogwildError, match="size '12 parsecs': expected a positive number"):
        parse_size("12 parsecs")


def test_the_allreduce_probe_command_measures_every_algorithm(tmp_path):
    """Two workers and a summation server: Open MPI's algorithms on the workers, the
    summation service on all three."""
    done = subprocess.run(HOGWILD + ["allreduce-probe", "--ranks", "3", "--summation-servers",
                                     "1", "--max-size", "16KiB", "--budget", "0.005", "--json",
                                     "--plot", str(tmp_path / "probe.png")],
                          capture_output=True, text=True, timeout=JOB_DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ranks"] == 2 and report["summation_servers"] == 1
    assert [r["bytes"] for r in report["rows"]] == [1024, 4096, 16384]
    for row in report["rows"]:
        assert set(row["measured"]) == set(row["predicted"]) == {
            "basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring",
            "rabenseifner", "summation_service"}
        assert row["summation_servers_by_model"] in (0, 1)
        assert all(0 < t < 1 for t in row["measured"].values())
        assert set(row["priced_only"]) == {"double_binary_tree", "blink"}
    assert (tmp_path / "probe.png").stat().st_size > 10_000
