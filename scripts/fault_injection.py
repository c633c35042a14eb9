"""Fault injection: kill, interrupt and break training runs at random moments, from
their start-up on, and count what they leave behind.

Each trial starts a training run in a fresh process (a "victim": 2 workers, or an
MPI job of 2 ranks, a checkpoint after every epoch, an update slow enough that
faults land inside epochs) and injects one fault, at a random moment of an epoch
(after the first) or of the start-up:

    kill-worker            SIGKILL of a worker process (processes backend)
    kill-parent            SIGKILL of the training process
    sigterm                SIGTERM of the training process (must checkpoint and exit 143)
    ctrl-c                 SIGINT of the training process (must checkpoint and exit 130)
    sigterm-group          SIGTERM of the whole process group, as systemd, Kubernetes
                           and Slurm stop a job (the same: checkpoint, exit 143)
    sighup-group           SIGHUP of the whole process group, as a closed terminal
                           sends it (checkpoint, exit 129)
    sigstop-worker         SIGSTOP of a worker process (processes): the run ends with
                           an error naming it (exit 2), no hang
    raise                  an exception inside an update, in a random epoch and sample
    kill-at-start          SIGKILL of the training process before its first epoch
    kill-worker-at-start   SIGKILL of a worker process while it starts (processes)
    ctrl-c-while-workers-start
                           SIGINT of the whole process group, as a terminal's Ctrl-C,
                           while a worker process starts (processes: exit 130)
    kill-rank              SIGKILL of one rank of an MPI job
    kill-mpirun            SIGKILL of the job's mpirun
    kill-mpirun-at-start   SIGKILL of mpirun before the first epoch (MPI's own start-up)
    kill-rank-at-start-ulfm
                           SIGKILL of rank 1 as soon as it exists, under the user's
                           own `mpirun --with-ft ulfm` (which keeps a job whose rank
                           died, and exits 0 when ranks die by a signal): exit 1
    kill-rank-in-init-ulfm the same once rank 1 is starting MPI (its start watcher runs)
    raise-in-rank          an exception in an update on rank 1 alone
    mismatch               rank 1 started with another sync interval than rank 0

and, as the family "files", to the data of a command-line run (`hogwild run svm`
on a generated click log or `hogwild run mc` on a Jumbo matrix, in a cache of the
script's own, one worker, a fixed seed, so that every run on the same bytes ends
with the same figures: scripts/file_faults.py):

    truncate-mid-run       a data file of the cache entry cut short at a random
                           moment of the run (start-up included): same figures
                           (the run reads its data into memory) or one line naming
                           the file, exit 2
    edit-mid-run           bytes of a file that a streamed run (--memory) reads chunk
                           by chunk overwritten in place, the file's times put back:
                           one line naming the file, exit 2 (or the same figures,
                           where the edit lands before the file is checked)
    truncate-between-runs  a data file cut short before the run: the cache finds it
    edit-between-runs      bytes overwritten before the run, times put back: the
                           entry's checksums find it; made again, same figures
    fifo-in-cache          a FIFO where a data file or the entry's folder was: made
                           again, same figures, never a run blocked on the FIFO
    ctrl-c-at-start        SIGINT of the process group, as a terminal's Ctrl-C, at a
                           random moment before the first epoch (the imports, the
                           data being made or checked, compiling): exit 130
    sigterm-at-start       the same with SIGTERM, as a scheduler stops a job: exit 143

and, as the family "ray", to `hogwild run svm --backend ray --nodes 2` on a local
Ray instance (kill-driver, sigterm-group, sighup-group, kill-node: see
scripts/ray_faults.py, which also counts what the instance leaves in TMPDIR and
HOME, and its processes left running, as leftover_dirs and orphans).

Then it counts, all of which must be 0:

    hangs           the run had not ended 60 s after the fault
    wrong_exits     an exit status other than the fault's (143, 130, 2 for a dead
                    worker or a mismatch, 1 for an exception; non-zero for a killed
                    rank; any for a killed training process or mpirun)
    tracebacks      a traceback on stderr where none belongs (every fault but the
                    two that raise: a worker's BrokenPipeError or EOFError, say)
    orphans         a worker process or rank alive 5 s after the run ended
    leftover_bytes  bytes in the run's shared memory after it ended: the processes
                    backend's segments (anonymous, so never named), an MPI job's
                    segment folder (Open MPI makes its segments before hogwild code
                    runs, so this is counted after the next run's start-up sweep, and
                    what the sweep removed is reported as swept_bytes)
    leftover_dirs   its shared-memory folders, and an MPI launcher's session
                    directory, after the next run's start-up sweep
    corrupt         a checkpoint that does not load
    resume_diffs    a resumed run (one more epoch, in a new process or job) whose
                    parameters differ from an uninterrupted run's: bitwise for the
                    deterministic schedulers and for MPI jobs (one thread a rank),
                    "finishes" for hogwild and locked; for the files family, the
                    next run on the same cache, which must end with the figures
    wrong_answers   (files) a run that ended well (exit 0) with other figures than
                    the same run on intact files: a silent wrong answer

    python scripts/fault_injection.py               # 34 trials per family: 170
    python scripts/fault_injection.py --quick       # each fault once: 36 (the CI test)
    python scripts/fault_injection.py --out docs/fault_injection.json

Prints one JSON document: the totals, a table per backend and fault, and the
trials. Linux only (it reads process states from /proc); the MPI trials need
mpi4py and Open MPI's mpirun (pip install 'hogwild[mpi]') and are left out, saying
so, without them.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import file_faults  # scripts/file_faults.py, beside this script
import ray_faults  # scripts/ray_faults.py
import numpy as np

from hogwild.bench.machine import publish

SCHEDULERS = ("hogwild", "locked", "serial", "blocked", "colored", "cyclades")
MPI_SCHEDULERS = ("hogwild", "locked", "serial")
DETERMINISTIC = ("serial", "blocked", "colored", "cyclades")
BACKENDS = ("threads", "processes", "mpi", "files", "ray")
FAULTS = {
    "threads": ("kill-parent", "sigterm", "ctrl-c", "raise", "kill-at-start", "sigterm-group",
                "sighup-group"),
    "processes": ("kill-worker", "kill-parent", "sigterm", "ctrl-c", "raise", "kill-at-start",
                  "kill-worker-at-start", "ctrl-c-while-workers-start", "sigterm-group",
                  "sighup-group", "sigstop-worker"),
    "mpi": ("kill-rank", "kill-mpirun", "raise-in-rank", "mismatch", "kill-mpirun-at-start",
            "kill-rank-at-start-ulfm", "kill-rank-in-init-ulfm"),
    "files": ("truncate-mid-run", "edit-mid-run", "truncate-between-runs", "edit-between-runs",
              "fifo-in-cache", "ctrl-c-at-start", "sigterm-at-start"),
    "ray": ray_faults.FAULTS,
}
EXPECTED_STATUS = {"kill-worker": 2, "sigterm": 143, "ctrl-c": 130, "raise": 1,
                   "kill-worker-at-start": 2, "ctrl-c-while-workers-start": 130,
                   "sigterm-group": 143, "sighup-group": 129, "sigstop-worker": 2,
                   "mismatch": "non-zero", "kill-rank": "non-zero", "raise-in-rank": "non-zero",
                   "kill-rank-at-start-ulfm": 1, "kill-rank-in-init-ulfm": 1}
GROUP_SIGNALS = {"sigterm-group": signal.SIGTERM, "sighup-group": signal.SIGHUP}
RAISING = ("raise", "raise-in-rank")
RANK_AT_START = ("kill-rank-at-start-ulfm", "kill-rank-in-init-ulfm")
AT_START = ("kill-at-start", "kill-worker-at-start", "ctrl-c-while-workers-start",
            "kill-mpirun-at-start", "mismatch", *RANK_AT_START)
N_SAMPLES = 40_000
HANG_SECONDS = 60
ORPHAN_SECONDS = 5
COUNTS = ("hangs", "wrong_exits", "tracebacks", "orphans", "leftover_bytes", "leftover_dirs",
          "corrupt", "resume_diffs", "wrong_answers")  # per trial; all must be 0


def slow_pair_update(e, params, data, step, epoch):
    """Least squares on a[r] + b[c] = target, slowed down so that an epoch lasts
    long enough to be interrupted; raises on the poisoned (epoch, sample)."""
    r, c = data[0][e], data[1][e]
    if epoch == data[3][0] and e == data[3][1]:
        raise ValueError("injected failure")
    x = 0.0
    for i in range(200):
        x += np.sin(i * 0.001 + e)
    err = params[0][r] + params[1][c] - data[2][e] + x * 1e-9
    params[0][r] -= step * err
    params[1][c] -= step * err


def pair_loss(e, params, data):
    err = params[0][data[0][e]] + params[1][data[1][e]] - data[2][e]
    return 0.5 * err * err


def pair_objective(poison=(-1, -1)):
    """A bipartite least-squares problem with supports and a block layout, so that
    every scheduler runs it. ``poison`` = (epoch, sample) makes that update raise."""
    from hogwild import Objective
    from hogwild.structure import Supports
    from hogwild.structure import block_layout

    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, 300, N_SAMPLES), rng.integers(0, 200, N_SAMPLES)
    order, row_labels, col_labels, layout = block_layout(rows, cols, 4, rng)
    r = row_labels[rows[order]].astype(np.int64)
    c = col_labels[cols[order]].astype(np.int64)
    target = rng.standard_normal(N_SAMPLES)
    trigger = np.array([poison[0], poison[1]], np.int64)
    return Objective(slow_pair_update, pair_loss, (np.zeros(300), np.zeros(200)),
                     (r, c, target, trigger), N_SAMPLES, name="fault-pairs", blocks=layout,
                     supports=Supports.from_keys(r, c))


def fit_options(scheduler, backend, sync_every=None):
    options = dict(step=0.05, decay=0.95, scheduler=scheduler, backend=backend, seed=7,
                   workers=1 if scheduler == "serial" or backend == "mpi" else 2)
    if backend == "mpi":
        options["distributed"] = {"sync_every": sync_every or 5000}
    return options


def victim(args):
    """The training process of a trial (or each rank of an MPI job): prints each
    epoch and its workers' pids (rank 0 alone, in a job)."""
    import multiprocessing

    from hogwild import fit
    from hogwild.errors import HogwildError, Interrupted

    rank = 0
    if args.backend == "mpi":
        from hogwild.backends.mpi import import_mpi
        rank = import_mpi().COMM_WORLD.Get_rank()
    poisoned = args.poison_rank < 0 or args.poison_rank == rank
    objective = pair_objective((args.poison_epoch, args.poison_sample) if poisoned
                               else (-1, -1))
    sync_every = 7000 if args.mismatch and rank == 1 else None

    def report(record):
        pids = " ".join(str(p.pid) for p in multiprocessing.active_children())
        print(f"epoch {record.epoch} pids {pids}", flush=True)

    try:
        fit(objective, epochs=args.epochs, checkpoint=args.checkpoint, checkpoint_every=1,
            resume=args.resume, callback=report,
            **fit_options(args.scheduler, args.backend, sync_every))
    except Interrupted as stop:
        sys.exit(128 + stop.signum)
    except HogwildError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        from hogwild.cli.ranks import abort_job
        abort_job(2)  # every rank of a job, or nothing outside one
        sys.exit(2)


def mpirun_command(ranks, ulfm=False):
    from hogwild.cli.ranks import find_mpirun

    command = [find_mpirun(), "-n", str(ranks)] + (["--with-ft", "ulfm"] if ulfm else [])
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return command


def start_victim(scheduler, backend, checkpoint, epochs, poison=(-1, -1), resume=None,
                 poison_rank=-1, mismatch=False, ulfm=False):
    """The victim (under mpirun for backend mpi) in a session of its own (so that it
    and any worker it leaves can be killed together), its stderr in a file beside
    the checkpoint (an orphan that holds a pipe open would otherwise keep a reader
    waiting)."""
    command = [sys.executable, __file__, "--victim", "--scheduler", scheduler, "--backend",
               backend, "--checkpoint", str(checkpoint), "--epochs", str(epochs),
               "--poison-epoch", str(poison[0]), "--poison-sample", str(poison[1]),
               "--poison-rank", str(poison_rank)]
    if mismatch:
        command.append("--mismatch")
    if resume is not None:
        command += ["--resume", str(resume)]
    if backend == "mpi":
        command = mpirun_command(2, ulfm) + command
    with open(Path(checkpoint).with_suffix(".stderr"), "w") as stderr:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                start_new_session=True)


def finish(process, timeout):
    """Wait for the victim to end; True if it did within ``timeout`` s."""
    try:
        process.wait(timeout=timeout)
        ended = True
    except subprocess.TimeoutExpired:
        ended = False
    return ended


def kill_session(process):
    """Kill the victim's session (an orphan worker included): the script leaves
    nothing running."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
    process.stdout.close()


def running(pid):
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def children(pid):
    from hogwild.cli.ranks import child_pids

    return child_pids(pid)


def leftovers(pid):
    """(bytes in files, folders) that the run of ``pid`` (the victim, or an MPI job's
    mpirun) left in shared memory, and its launcher session directory."""
    from hogwild.backends.shared_memory import PREFIX, segments_root

    folders = list(segments_root().glob(f"{PREFIX}{pid}-*"))
    sessions = [p for p in Path(tempfile.gettempdir()).glob(f"ompi.{pid}") if p.is_dir()]
    size = sum(f.stat().st_size for d in folders for f in d.rglob("*") if f.is_file())
    return size, folders + sessions


def sweep():
    """What the next run's start-up does (the processes backend's and an MPI job's)."""
    from hogwild.backends.mpi import remove_stale_sessions
    from hogwild.backends.shared_memory import remove_stale_folders

    remove_stale_folders()
    remove_stale_sessions()


def read_epoch(process, deadline):
    """(epoch, worker pids) from the victim's next epoch line, or None at its end."""
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            return None
        fields = line.split()
        if fields[:1] == ["epoch"]:
            return int(fields[1]), [int(p) for p in fields[3:]]
    return None


def wait_for_worker(process, deadline):
    """The pid of the victim's first worker process as soon as it starts (a child
    spawned by multiprocessing, not a tool some library runs), or None."""
    while time.monotonic() < deadline and process.poll() is None:
        for child in children(process.pid):
            try:
                if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                    return child
            except OSError:
                continue
        time.sleep(0.005)
    return None


def inject(rng, process, backend, fault, record):
    """Wait for the moment and inject ``fault``; returns the pids that must be gone
    after the run (workers, ranks)."""
    mpi = backend == "mpi"
    if fault in AT_START:
        if fault in ("kill-worker-at-start", "ctrl-c-while-workers-start"):
            child = wait_for_worker(process, time.monotonic() + 60)
            time.sleep(rng.uniform(0, 0.6))  # while it imports, attaches and loads the loops
            if fault == "ctrl-c-while-workers-start":
                os.killpg(process.pid, signal.SIGINT)  # the parent, its children
            elif child is not None and running(child):
                os.kill(child, signal.SIGKILL)
            return [child] if child else []
        if fault == "mismatch":
            return []
        if fault in RANK_AT_START:
            return kill_starting_rank(process, fault == "kill-rank-in-init-ulfm")
        time.sleep(rng.uniform(0, 2.5))  # the interpreter, numba, MPI_Init, the workers
        watched = children(process.pid)
        process.send_signal(signal.SIGKILL)
        return watched
    first = read_epoch(process, time.monotonic() + 120)
    started = time.monotonic()
    second = read_epoch(process, time.monotonic() + 60)  # an epoch's length, for timing
    epoch_seconds = time.monotonic() - started
    workers = children(process.pid) if mpi else (second or first or (0, []))[1]
    if fault in RAISING:
        return workers
    time.sleep(rng.uniform(0, 1.5) * epoch_seconds)  # a random moment of an epoch
    if fault == "kill-worker" or fault == "kill-rank":
        os.kill(workers[-1], signal.SIGKILL)
    elif fault == "sigstop-worker":
        os.kill(workers[-1], signal.SIGSTOP)
    elif fault in GROUP_SIGNALS:
        os.killpg(process.pid, GROUP_SIGNALS[fault])  # the training process and workers
    else:
        process.send_signal({"kill-parent": signal.SIGKILL, "kill-mpirun": signal.SIGKILL,
                             "sigterm": signal.SIGTERM, "ctrl-c": signal.SIGINT}[fault])
    record["second_epoch_seen"] = second is not None
    return workers


def kill_starting_rank(process, in_init, rank=1):
    """SIGKILL of ``rank`` of the victim's job as soon as it exists or (``in_init``)
    once its start watcher runs (hogwild.backends.mpi.starting); returns the job's
    ranks, which must all be gone after."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ranks = children(process.pid)
        for pid in ranks:
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                watching = any(b"starting.py" in Path(f"/proc/{child}/cmdline").read_bytes()
                               for child in children(pid))
            except OSError:
                continue
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ and (watching or not in_init):
                os.kill(pid, signal.SIGKILL)
                return ranks
        time.sleep(0.01)
    return children(process.pid)


def trial(rng, backend, scheduler, fault, folder, references):
    """Run one trial; returns its record (counts of each kind of failure)."""
    from hogwild.checkpoint import load_checkpoint

    checkpoint = folder / "run.npz"
    first = N_SAMPLES // 2 + 1 if fault == "raise-in-rank" else 0  # within rank 1's share
    poison = (int(rng.integers(1, 3)), int(rng.integers(first, N_SAMPLES))) \
        if fault in RAISING else (-1, -1)
    process = start_victim(scheduler, backend, checkpoint, 1000, poison,
                           poison_rank=1 if fault == "raise-in-rank" else -1,
                           mismatch=fault == "mismatch", ulfm=fault in RANK_AT_START)
    record = {"backend": backend, "scheduler": scheduler, "fault": fault,
              **dict.fromkeys(COUNTS, 0)}
    workers = inject(rng, process, backend, fault, record)
    record["hangs"] = int(not finish(process, HANG_SECONDS))
    if record["hangs"]:
        kill_session(process)
    record["status"] = process.returncode
    expected = EXPECTED_STATUS.get(fault)
    if expected == "non-zero" and process.returncode == 0 or \
            isinstance(expected, int) and process.returncode != expected:
        record["wrong_exits"] = 1
    deadline = time.monotonic() + ORPHAN_SECONDS
    while any(running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    record["orphans"] = sum(running(pid) for pid in workers)
    kill_session(process)
    err = checkpoint.with_suffix(".stderr").read_text()  # an orphan's words included
    record["tracebacks"] = int(fault not in RAISING and "Traceback" in err)
    if record["wrong_exits"] or record["tracebacks"]:
        record["stderr"] = err[-500:]
    size, named = leftovers(process.pid)
    sweep()
    record["leftover_dirs"] = len(leftovers(process.pid)[1])
    if backend == "mpi":
        record["swept_bytes"] = size
        size = leftovers(process.pid)[0]
    record["leftover_bytes"] = size
    if not checkpoint.exists():
        return record
    try:
        saved = load_checkpoint(checkpoint)
    except Exception:  # noqa: BLE001 - counted, with its message
        record["corrupt"] = 1
        return record
    record["checkpoint_epoch"] = saved.epoch
    if fault in RAISING:
        return record  # a resume would rerun the poisoned epoch and raise again
    resumed_path = folder / "resumed.npz"
    resumed = start_victim(scheduler, backend, resumed_path, saved.epoch + 1, resume=checkpoint)
    ended = finish(resumed, HANG_SECONDS * 2)
    kill_session(resumed)
    if not ended:
        record["hangs"] += 1
        return record
    if resumed.returncode != 0:
        record["resume_diffs"] = 1
        record["stderr"] = resumed_path.with_suffix(".stderr").read_text()[-500:]
    elif scheduler in DETERMINISTIC or backend == "mpi":
        want = reference(references, scheduler, backend, saved.epoch + 1, folder)
        got = load_checkpoint(resumed_path).params
        record["resume_diffs"] = int(not all(np.array_equal(a, b) for a, b in zip(want, got)))
    return record


def reference(cache, scheduler, backend, epochs, folder):
    """The parameters of an uninterrupted run of ``epochs`` epochs (an MPI job's for
    backend mpi; the threads backend's for the others, which give the same bits)."""
    from hogwild import fit
    from hogwild.checkpoint import load_checkpoint

    key = (scheduler, backend == "mpi", epochs)
    if key not in cache:
        if backend == "mpi":
            path = folder / "reference.npz"
            job = start_victim(scheduler, "mpi", path, epochs)
            finish(job, HANG_SECONDS * 2)
            kill_session(job)
            cache[key] = load_checkpoint(path).params
        else:
            cache[key] = fit(pair_objective(), epochs=epochs,
                             **fit_options(scheduler, "threads")).params
    return cache[key]


def mpi_available():
    """Why MPI trials cannot run here, or None when they can."""
    try:
        import mpi4py  # noqa: F401
        from hogwild.cli.ranks import find_mpirun
        find_mpirun()
    except Exception as exc:  # noqa: BLE001 - said in the report
        return f"{type(exc).__name__}: {exc}"
    return None


def ray_available():
    """Why Ray trials cannot run here, or None when they can."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def plan(trials_per_backend, rng, backends):
    """(backend, scheduler, fault) for each trial: every fault and scheduler in
    turn, so that even the quick form covers each fault on each backend;
    trials_per_backend None: each fault once."""
    runs = []
    for backend in backends:
        faults = FAULTS[backend]
        for i in range(trials_per_backend or len(faults)):
            fault = faults[i % len(faults)]
            choices = MPI_SCHEDULERS if backend == "mpi" else ("default",) \
                if backend == "files" else ("hogwild",) if backend == "ray" else \
                [s for s in SCHEDULERS if "worker" not in fault or s != "serial"]
            runs.append((backend, choices[int(rng.integers(len(choices)))], fault))
    return runs


def summarise(records):
    table = {}
    for r in records:
        row = table.setdefault(f"{r['backend']} / {r['fault']}", {"trials": 0,
                                                                  **dict.fromkeys(COUNTS, 0)})
        row["trials"] += 1
        for name in COUNTS:
            row[name] += r[name]
    totals = {name: sum(r[name] for r in records) for name in COUNTS}
    return {"trials": len(records), "totals": totals, "table": table, "records": records}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="each fault once on each backend")
    parser.add_argument("--trials", type=int, default=None, help="trials per backend "
                        "(default: 34; with --quick, one per fault)")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help=f"comma-separated, of {', '.join(BACKENDS)} (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random moments")
    parser.add_argument("--out", help="also write the JSON document here")
    parser.add_argument("--victim", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mismatch", action="store_true", help=argparse.SUPPRESS)
    for name, kind in (("--scheduler", str), ("--backend", str), ("--checkpoint", str),
                       ("--resume", str), ("--epochs", int), ("--poison-epoch", int),
                       ("--poison-sample", int), ("--poison-rank", int)):
        parser.add_argument(name, type=kind, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.victim:
        return victim(args)
    # The Ctrl-C trials play a terminal's Ctrl-C on a command in the foreground. Started
    # in the background of a script, this process inherits SIGINT ignored, and so would
    # the runs it starts; a handler here leaves them Python's default instead.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not os.path.isdir("/proc"):
        sys.exit("fault_injection.py reads process states from /proc (Linux)")
    backends = [b for b in args.backends.split(",") if b]
    unknown = set(backends) - set(BACKENDS)
    if unknown:
        sys.exit(f"unknown backends {sorted(unknown)}; choose from {', '.join(BACKENDS)}")
    missing = mpi_available() if "mpi" in backends else None
    if missing:
        backends.remove("mpi")
        print(f"MPI trials left out: {missing}", file=sys.stderr)
    no_ray = ray_available() if "ray" in backends else None
    if no_ray:
        backends.remove("ray")
        print(f"Ray trials left out: {no_ray}", file=sys.stderr)
    trials = args.trials or (None if args.quick else 34)
    rng = np.random.default_rng(args.seed)
    references, records = {}, []
    started = time.monotonic()
    files_root = Path(tempfile.mkdtemp(prefix="hogwild-faults-files-"))
    file_runs = {name: file_faults.Runs(files_root, name)  # one data and kernel cache
                 for name in file_faults.PROBLEMS}
    for i, (backend, scheduler, fault) in enumerate(plan(trials, rng, backends)):
        folder = Path(tempfile.mkdtemp(prefix="hogwild-faults-"))
        try:
            record = file_faults.trial(rng, file_runs, fault, folder, HANG_SECONDS, COUNTS) \
                if backend == "files" else \
                ray_faults.trial(rng, fault, folder, HANG_SECONDS, COUNTS) if backend == "ray" \
                else \
                trial(rng, backend, scheduler, fault, folder, references)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        records.append(record)
        bad = {k: record[k] for k in COUNTS if record[k]}
        print(f"[{i + 1}] {backend} {record.get('problem', scheduler)} {fault}: status "
              f"{record.get('status')}"
              + (f", FAILED {bad}" if bad else ""), file=sys.stderr, flush=True)
    shutil.rmtree(files_root, ignore_errors=True)
    report = summarise(records)
    report["seconds"] = round(time.monotonic() - started, 1)
    report["mpi_left_out"] = missing
    report["ray_left_out"] = no_ray
    publish(report, None, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
