"""The "files" family of scripts/fault_injection.py: faults in the data files of a
command-line run, during the run and between runs (see that script's docstring).

Every run is `hogwild run svm` on a generated click log or `hogwild run mc` on a
generated Jumbo matrix (drawn per trial), in a data and kernel cache of the
script's own (HOGWILD_CACHE_DIR), with one worker and a fixed seed: two runs that
read the same bytes end with the same figures, so a run that ends well on
damaged files must end with the figures of the same run on intact ones.
"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path



@dataclass(frozen=True)
class Problem:
    data: str
    cache_folder: str   # the generator's folder in the cache
    epochs: int         # about 2 s of training here
    figures: tuple      # of the JSON report: equal for equal bytes read
    streamed_files: tuple  # the files a run with STREAM_MEMORY reads chunk by chunk


PROBLEMS = {
    "svm": Problem("clicks:100000x20000x2000000", "clicks", 40,
                   ("objective", "train_error", "test_error", "epochs_run"),
                   ("train_indices.npy", "train_values.npy")),
    "mc": Problem("jumbo:20000x20000x2000000", "jumbo", 15,
                  ("objective", "test_rmse", "epochs_run"),
                  ("train_users.npy", "train_items.npy", "train_values.npy")),
}
STREAM_MEMORY = "8MB"  # below either's 16 or 24 MB of training samples
# exit statuses that are right (a Ctrl-C during the imports too ends in 130, not in
# CPython's death by SIGINT: hogwild_launcher)
EXPECTED_STATUS = {"truncate-mid-run": (0, 2), "edit-mid-run": (0, 2),
                   "truncate-between-runs": (0,), "edit-between-runs": (0,),
                   "fifo-in-cache": (0,), "ctrl-c-at-start": (130,),
                   "sigterm-at-start": (143,)}
AT_START_SIGNALS = {"ctrl-c-at-start": signal.SIGINT, "sigterm-at-start": signal.SIGTERM}
STREAMED = ("edit-mid-run",)
# A Ctrl-C in the first few tens of milliseconds lands in the interpreter's own
# start-up, before any line of hogwild runs: CPython then stops with this fatal
# error (exit 1), as any Python program would; a SIGTERM then kills it silently
# (within PYTHON_STARTUP_SECONDS of launch). Recorded, not counted.
PYTHON_STARTUP = "Fatal Python error: init_import_site"
PYTHON_STARTUP_SECONDS = 0.5


class Runs:
    """The cache the trials of one problem share, and the reference runs on intact
    files: their figures and how long their start-up and the whole run took."""

    def __init__(self, root, name):
        self.name, self.problem = name, PROBLEMS[name]
        self.cache = Path(root) / "cache"
        self.references = {}

    def entry(self):
        """The cache entry's folder (None before the first run makes it)."""
        folder = self.cache / self.problem.cache_folder
        found = sorted(p for p in folder.glob("*") if not p.name.startswith(".")) \
            if folder.is_dir() else []
        return found[0] if found else None

    def start(self, out, streamed):
        """A run in a session of its own, its JSON and stderr in files beside ``out``."""
        command = [sys.executable, "-m", "hogwild_launcher", "run", self.name, "--data",
                   self.problem.data, "--epochs", str(self.problem.epochs), "--workers", "1",
                   "--seed", "1", "--json"]
        if streamed:
            command += ["--memory", STREAM_MEMORY]
        env = dict(os.environ, HOGWILD_CACHE_DIR=str(self.cache))
        with open(out.with_suffix(".json"), "w") as stdout, \
                open(out.with_suffix(".stderr"), "w") as stderr:
            return subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env,
                                    start_new_session=True)

    def figures(self, report):
        return {name: report.get(name) for name in self.problem.figures}

    def reference(self, streamed, folder):
        """{figures, startup_s, run_s, startup_making_data_s} of a run on intact
        files, with the kernels compiled (made once); the last: the start-up of a
        run that must make the data first."""
        if streamed not in self.references:
            if not self.references:
                self._run(folder, streamed)  # compiles the kernels, makes the data
            report, seconds = self._run(folder, streamed)
            self.references[streamed] = {
                "figures": self.figures(report), "run_s": seconds,
                "startup_s": report["first_epoch_after_launch_s"]}
            if not streamed:
                shutil.rmtree(self.entry())
                self.references[streamed]["startup_making_data_s"] = \
                    self._run(folder, streamed)[0]["first_epoch_after_launch_s"]
        return self.references[streamed]

    def _run(self, folder, streamed):
        """(JSON report, seconds) of a run on intact files."""
        out = Path(folder) / f"reference-{int(streamed)}"
        started = time.monotonic()
        process = self.start(out, streamed)
        process.wait(timeout=600)
        return json.loads(out.with_suffix(".json").read_text()), time.monotonic() - started

    def data_files(self, streamed):
        """The entry's array files that a fault may hit (for an edit mid-run, those a
        streamed run reads chunk by chunk)."""
        files = sorted(self.entry().glob("*.npy"))
        return [f for f in files if f.name in self.problem.streamed_files] if streamed \
            else files


def truncate(rng, path):
    size = path.stat().st_size
    os.truncate(path, int(rng.integers(0, size)))


def edit(rng, path):
    """Overwrite 512 bytes at a random place with random ones, and put the file's
    times back (as `touch -r` would): its size and times say nothing changed."""
    stat = path.stat()
    with open(path, "r+b") as f:
        f.seek(int(rng.integers(0, max(stat.st_size - 512, 1))))
        f.write(rng.bytes(512))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def plant_fifo(rng, runs):
    """A FIFO where a data file, or the whole entry's folder, was."""
    entry, files = runs.entry(), runs.data_files(False)
    target = files[int(rng.integers(len(files)))] if rng.random() < 0.7 else entry
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    os.mkfifo(target)
    return target


def inject(rng, runs, fault, process, reference, started, making_data):
    """Wait for the moment of a fault that lands during the run, and inject it; for a
    Ctrl-C, when it was sent (seconds after launch) and whether the run had ended."""
    if fault in AT_START_SIGNALS:
        startup = reference["startup_making_data_s" if making_data else "startup_s"]
        time.sleep(rng.uniform(0, startup))
        sent = {"startup_s": startup, "sent_after_s": time.monotonic() - started,
                "ended_before": process.poll() is not None}
        os.killpg(process.pid, AT_START_SIGNALS[fault])  # the whole group, as a terminal does
        return sent
    moment = rng.uniform(0, reference["run_s"] * 0.8)
    while time.monotonic() - started < moment and process.poll() is None:
        time.sleep(0.005)
    entry = runs.entry()
    if entry is None or process.poll() is not None:
        return
    files = runs.data_files(fault in STREAMED)
    target = files[int(rng.integers(len(files)))]
    try:
        (truncate if fault == "truncate-mid-run" else edit)(rng, target)
    except OSError:  # the run was making the entry again: that file is gone
        pass


def trial(rng, all_runs, fault, folder, hang_seconds, counts):
    """One trial of the files family on a problem drawn from ``all_runs`` (name ->
    Runs): its record, with each of ``counts`` (those of fault_injection's records)."""
    name = sorted(all_runs)[int(rng.integers(len(all_runs)))]
    runs = all_runs[name]
    streamed = fault in STREAMED
    reference = runs.reference(streamed, folder)
    record = {"backend": "files", "scheduler": "default", "problem": name, "fault": fault}
    entry = runs.entry()
    making_data = fault in AT_START_SIGNALS and rng.random() < 0.5
    if making_data:
        shutil.rmtree(entry)  # so that the Ctrl-C may land while the data is made
    record["making_data"] = making_data
    if fault in ("truncate-between-runs", "edit-between-runs"):
        files = runs.data_files(False)
        (truncate if fault.startswith("truncate") else edit)(
            rng, files[int(rng.integers(len(files)))])
    elif fault == "fifo-in-cache":
        record["fifo"] = plant_fifo(rng, runs).name
    out = Path(folder) / "run"
    started = time.monotonic()
    process = runs.start(out, streamed)
    if fault not in ("truncate-between-runs", "edit-between-runs", "fifo-in-cache"):
        sent = inject(rng, runs, fault, process, reference, started, making_data)
        if sent:
            record["signal"] = sent
    judge(record, runs, process, out, reference, fault, hang_seconds, counts)
    # the next run on the same cache, with nothing injected: the cache mends itself
    after = Path(folder) / "after"
    process = runs.start(after, streamed)
    next_record = {}
    judge(next_record, runs, process, after, reference, "none", hang_seconds, counts)
    record["hangs"] += next_record["hangs"]
    record["resume_diffs"] = int(next_record["status"] != 0 or next_record["wrong_answers"]
                                 or bool(next_record["tracebacks"]))
    if record["resume_diffs"]:
        record["next_stderr"] = next_record.get("stderr", "")
    record["leftover_dirs"] = len(list((runs.cache / runs.problem.cache_folder).glob(".tmp-*")))
    return record


def judge(record, runs, process, out, reference, fault, hang_seconds, counts):
    """Fill ``record``'s counts from the ended (or hung, then killed) run."""
    try:
        process.wait(timeout=hang_seconds)
        hung = False
    except subprocess.TimeoutExpired:
        hung = True
    try:
        os.killpg(process.pid, signal.SIGKILL)  # anything it left in its session
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
    err = out.with_suffix(".stderr").read_text(errors="replace")
    errors = [line for line in err.splitlines() if line.startswith("hogwild: error:")]
    status = process.returncode
    record.update(dict.fromkeys(counts, 0))
    record["status"] = status
    record["hangs"] = int(hung)
    allowed = EXPECTED_STATUS.get(fault, (0,))
    sent_after = record.get("signal", {}).get("sent_after_s", math.inf)
    python_startup = (fault == "ctrl-c-at-start" and PYTHON_STARTUP in err
                      or fault == "sigterm-at-start" and status == -signal.SIGTERM
                      and err == "" and sent_after < PYTHON_STARTUP_SECONDS)
    if python_startup:
        record["python_startup"] = True
        allowed = (1, -signal.SIGTERM)
    # a refusal is one line naming the file; anything else (a signal) is wrong
    record["wrong_exits"] = int(not hung and (status not in allowed or status == 2 and not (
        len(errors) == 1 and ".npy" in errors[0])))
    record["tracebacks"] = int("Traceback" in err and not python_startup)
    if status == 0:
        try:
            got = runs.figures(json.loads(out.with_suffix(".json").read_text()))
        except ValueError:
            got = None
        record["wrong_answers"] = int(got != reference["figures"])
        if record["wrong_answers"]:
            record["figures"] = got
    if status == 2 and errors:
        record["error"] = errors[0][:300]
    if record["wrong_exits"] or record["tracebacks"] or record["wrong_answers"] or hung:
        record["stderr"] = err[-500:]
