"""Fault injection: kill, interrupt and break training runs at random moments, and
count what they leave behind.

Each trial starts a training run in a fresh process (a "victim": 2 workers, a
checkpoint after every epoch, an update slow enough that faults land inside
epochs), waits for its first epoch, sleeps a random fraction of an epoch and
injects one fault:

    kill-worker   SIGKILL of a worker process (processes backend only)
    kill-parent   SIGKILL of the training process
    sigterm       SIGTERM of the training process (must checkpoint and exit 143)
    ctrl-c        SIGINT of the training process (must checkpoint and exit 130)
    raise         an exception inside an update, in a random epoch and sample

Then it counts, all of which must be 0:

    hangs           the run had not ended 60 s after the fault
    wrong_exits     an exit status other than the fault's (143, 130, 2 for a
                    dead worker, 1 for an exception; any for kill-parent)
    tracebacks      a traceback on stderr where none belongs (every fault but
                    raise: a worker's BrokenPipeError or EOFError, say)
    orphans         a worker process alive 5 s after the training process ended
    leftover_bytes  bytes in the run's shared-memory files after it ended
    leftover_dirs   its shared-memory folders after the next run's start-up sweep
    corrupt         a checkpoint that does not load
    resume_diffs    a resumed run (one more epoch, in a new process) whose
                    parameters differ from an uninterrupted run's: bitwise for the
                    deterministic schedulers, "finishes" for hogwild and locked

    python scripts/fault_injection.py               # 50 trials per backend
    python scripts/fault_injection.py --quick       # 8 per backend (the CI test)
    python scripts/fault_injection.py --out docs/fault_injection.json

Prints one JSON document: the totals, a table per backend and fault, and the
trials. Linux only (it reads process states from /proc).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SCHEDULERS = ("hogwild", "locked", "serial", "blocked", "colored", "cyclades")
DETERMINISTIC = ("serial", "blocked", "colored", "cyclades")
BACKENDS = ("threads", "processes")
FAULTS = ("kill-worker", "kill-parent", "sigterm", "ctrl-c", "raise")
EXPECTED_STATUS = {"kill-worker": 2, "sigterm": 143, "ctrl-c": 130, "raise": 1}
N_SAMPLES = 40_000
HANG_SECONDS = 60
ORPHAN_SECONDS = 5
COUNTS = ("hangs", "wrong_exits", "tracebacks", "orphans", "leftover_bytes", "leftover_dirs",
          "corrupt", "resume_diffs")  # per trial; all must be 0


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


def fit_options(scheduler, backend):
    return dict(step=0.05, decay=0.95, scheduler=scheduler, backend=backend, seed=7,
                workers=1 if scheduler == "serial" else 2)


def victim(args):
    """The training process of a trial: prints each epoch and its workers' pids."""
    import multiprocessing

    from hogwild import fit
    from hogwild.errors import HogwildError, Interrupted

    objective = pair_objective((args.poison_epoch, args.poison_sample))

    def report(record):
        pids = " ".join(str(p.pid) for p in multiprocessing.active_children())
        print(f"epoch {record.epoch} pids {pids}", flush=True)

    try:
        fit(objective, epochs=args.epochs, checkpoint=args.checkpoint, checkpoint_every=1,
            resume=args.resume, callback=report, **fit_options(args.scheduler, args.backend))
    except Interrupted as stop:
        sys.exit(128 + stop.signum)
    except HogwildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


def start_victim(scheduler, backend, checkpoint, epochs, poison=(-1, -1), resume=None):
    """The victim in a session of its own (so that it and any worker it leaves can be
    killed together), its stderr in a file beside the checkpoint (an orphan that
    holds a pipe open would otherwise keep a reader waiting)."""
    command = [sys.executable, __file__, "--victim", "--scheduler", scheduler, "--backend",
               backend, "--checkpoint", str(checkpoint), "--epochs", str(epochs),
               "--poison-epoch", str(poison[0]), "--poison-sample", str(poison[1])]
    if resume is not None:
        command += ["--resume", str(resume)]
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


def segment_folders(pid):
    from hogwild.backends.shared_memory import PREFIX, segments_root

    return list(segments_root().glob(f"{PREFIX}{pid}-*"))


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


def trial(rng, backend, scheduler, fault, folder, references):
    """Run one trial; returns its record (counts of each kind of failure)."""
    from hogwild.backends.shared_memory import SegmentSet
    from hogwild.checkpoint import load_checkpoint

    checkpoint = folder / "run.npz"
    poison = (int(rng.integers(1, 3)), int(rng.integers(0, N_SAMPLES))) \
        if fault == "raise" else (-1, -1)
    process = start_victim(scheduler, backend, checkpoint, 1000, poison)
    record = {"backend": backend, "scheduler": scheduler, "fault": fault,
              **dict.fromkeys(COUNTS, 0)}
    first = read_epoch(process, time.monotonic() + 120)
    started = time.monotonic()
    second = read_epoch(process, time.monotonic() + 60)  # an epoch's length, for timing
    workers = (second or first or (0, []))[1]
    epoch_seconds = time.monotonic() - started
    if fault != "raise":
        time.sleep(rng.uniform(0, 1.5) * epoch_seconds)  # a random moment of an epoch
        if fault == "kill-worker":
            os.kill(workers[0], signal.SIGKILL)
        else:
            process.send_signal({"kill-parent": signal.SIGKILL, "sigterm": signal.SIGTERM,
                                 "ctrl-c": signal.SIGINT}[fault])
    record["hangs"] = int(not finish(process, HANG_SECONDS))
    if record["hangs"]:
        kill_session(process)
    record["status"] = process.returncode
    if fault in EXPECTED_STATUS and process.returncode != EXPECTED_STATUS[fault]:
        record["wrong_exits"] = 1
    deadline = time.monotonic() + ORPHAN_SECONDS
    while any(running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    record["orphans"] = sum(running(pid) for pid in workers)
    kill_session(process)
    err = checkpoint.with_suffix(".stderr").read_text()  # an orphan's words included
    record["tracebacks"] = int(fault != "raise" and "Traceback" in err)
    if record["wrong_exits"] or record["tracebacks"]:
        record["stderr"] = err[-500:]
    folders = segment_folders(process.pid)
    record["leftover_bytes"] = sum(f.stat().st_size for d in folders for f in d.iterdir())
    SegmentSet().close()  # what the next run's start-up does
    record["leftover_dirs"] = len(segment_folders(process.pid))
    if not checkpoint.exists():
        return record
    try:
        saved = load_checkpoint(checkpoint)
    except Exception:  # noqa: BLE001 - counted, with its message
        record["corrupt"] = 1
        return record
    record["checkpoint_epoch"] = saved.epoch
    if fault == "raise":
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
    elif scheduler in DETERMINISTIC:
        want = reference(references, scheduler, backend, saved.epoch + 1)
        got = load_checkpoint(resumed_path).params
        record["resume_diffs"] = int(not all(np.array_equal(a, b) for a, b in zip(want, got)))
    return record


def reference(cache, scheduler, backend, epochs):
    """The parameters of an uninterrupted run of ``epochs`` epochs."""
    from hogwild import fit

    key = (scheduler, epochs)
    if key not in cache:
        cache[key] = fit(pair_objective(), epochs=epochs,
                         **fit_options(scheduler, "threads")).params  # the same bits
    return cache[key]


def plan(trials_per_backend, rng):
    """(backend, scheduler, fault) for each trial: every fault and scheduler in
    turn, so that even the quick form covers each fault on each backend."""
    runs = []
    for backend in BACKENDS:
        faults = [f for f in FAULTS if backend == "processes" or f != "kill-worker"]
        for i in range(trials_per_backend):
            fault = faults[i % len(faults)]
            choices = [s for s in SCHEDULERS if fault != "kill-worker" or s != "serial"]
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
    parser.add_argument("--quick", action="store_true", help="8 trials per backend")
    parser.add_argument("--trials", type=int, default=None, help="trials per backend "
                        "(default: 50, or 8 with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random moments")
    parser.add_argument("--out", help="also write the JSON document here")
    parser.add_argument("--victim", action="store_true", help=argparse.SUPPRESS)
    for name, kind in (("--scheduler", str), ("--backend", str), ("--checkpoint", str),
                       ("--resume", str), ("--epochs", int), ("--poison-epoch", int),
                       ("--poison-sample", int)):
        parser.add_argument(name, type=kind, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.victim:
        return victim(args)
    if not os.path.isdir("/proc"):
        sys.exit("fault_injection.py reads process states from /proc (Linux)")
    trials = args.trials or (8 if args.quick else 50)
    rng = np.random.default_rng(args.seed)
    references, records = {}, []
    started = time.monotonic()
    for i, (backend, scheduler, fault) in enumerate(plan(trials, rng)):
        with tempfile.TemporaryDirectory(prefix="hogwild-faults-") as folder:
            record = trial(rng, backend, scheduler, fault, Path(folder), references)
        records.append(record)
        bad = {k: record[k] for k in COUNTS if record[k]}
        print(f"[{i + 1}] {backend} {scheduler} {fault}: status {record.get('status')}"
              + (f", FAILED {bad}" if bad else ""), file=sys.stderr, flush=True)
    report = summarise(records)
    report["seconds"] = round(time.monotonic() - started, 1)
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
