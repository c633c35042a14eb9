"""A user's first contact with their own file: the whole process, from the text
file to a trained model, beside the tool such a user would otherwise pick.

    python scripts/bench_readers.py --out docs/bench/readers.json

Three comparisons, each in interleaved rounds on the same machine (the median
reported), every round on a fresh copy of the file (a new file to hogwild: its
binary cache is made again):
  svm      a click log (clicks:, written as svmlight and as Vowpal Wabbit text by
           scripts/write_text.py): `hogwild run svm --data train.svm --test test.svm
           --epochs 1` against Vowpal Wabbit's one pass over the VW text
           (Workspace("-d train.vw --loss_function logistic -b 24 --quiet"), then
           its test error), with peak memory;
  vw-parse the Vowpal Wabbit text read by hogwild's reader (parsed into its cache)
           against Vowpal Wabbit's own parse (--noop);
  ratings  a Jumbo matrix as "user item rating" text: `hogwild run mc --epochs 1`
           against LIBMF's `mf-train -k 32 -l2 0.05 -t 1` (--libmf: its binary).
With --cgroup (root, cgroup v1), hogwild's runs are repeated inside a memory
cgroup (600 MB with --memory 300MB, 700 MB with --memory 400MB): the kernel's
bound, not the peak read afterwards. Prints one JSON object per comparison.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable


def timed(command, env=None, cwd=None):
    """(wall seconds, peak KB from /usr/bin/time, exit status, stdout) of a command."""
    started = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, capture_output=True,
                         text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - started
    try:
        peak = int(run.stderr.strip().splitlines()[-1])
    except (IndexError, ValueError):
        peak = None
    return wall, peak, run.returncode, run.stdout


def fresh(path, folder):
    """A copy of ``path`` under a new name (a file hogwild has not cached)."""
    copy = folder / f"r{time.monotonic_ns()}-{path.name}"
    shutil.copyfile(path, copy)
    return copy


VW_PASS = """
import sys, time
from vowpalwabbit import Workspace
vw = Workspace(f"-d {sys.argv[1]} --loss_function logistic -b 24 --quiet")
wrong = rows = 0
with open(sys.argv[2]) as test:
    for line in test:
        wrong += (vw.predict(line) > 0) != line.startswith("1")
        rows += 1
vw.finish()
print(wrong / rows)
"""

VW_PARSE = """
import sys
from vowpalwabbit import Workspace
Workspace(f"-d {sys.argv[1]} --noop --quiet -b 24").finish()
"""

OUR_PARSE = """
import sys
from hogwild.datasets.vw import load_vw
load_vw(sys.argv[1], hash_bits=24)
"""


def in_cgroup(limit_mb, command):
    """``command`` run inside a new cgroup-v1 memory group of ``limit_mb``, with the
    group's peak usage and OOM kills (None where cgroups cannot be used)."""
    group = Path(f"/sys/fs/cgroup/memory/hogwild-bench-{os.getpid()}-{time.monotonic_ns()}")
    try:
        group.mkdir()
        (group / "memory.limit_in_bytes").write_text(str(limit_mb << 20))
    except OSError:
        return None
    try:
        started = time.perf_counter()
        run = subprocess.run(["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "_",
                              *command], capture_output=True, text=True)
        oom = [line for line in (group / "memory.oom_control").read_text().splitlines()
               if line.startswith("oom_kill ")]
        return {"limit_mb": limit_mb, "exit": run.returncode,
                "seconds": time.perf_counter() - started,
                "max_usage_mb": int((group / "memory.max_usage_in_bytes").read_text()) >> 20,
                "oom_kills": int(oom[0].split()[1]) if oom else None,
                "stdout_tail": run.stdout[-2000:], "stderr_tail": run.stderr[-500:]}
    finally:
        group.rmdir()


def bench_svm(folder, rounds, cgroup):
    subprocess.run([PYTHON, str(HERE / "write_text.py"), "clicks:1000000x1000000x20000000",
                    "--as", "svmlight", "--out", str(folder)], check=True,
                   capture_output=True)
    subprocess.run([PYTHON, str(HERE / "write_text.py"), "clicks:1000000x1000000x20000000",
                    "--as", "vw", "--out", str(folder)], check=True, capture_output=True)
    ours, theirs = [], []
    for _ in range(rounds):
        train, test = fresh(folder / "train.svm", folder), fresh(folder / "test.svm", folder)
        wall, peak, status, out = timed(["hogwild", "run", "svm", "--data", str(train),
                                         "--test", str(test), "--epochs", "1", "--json"])
        result = json.loads(out.strip().splitlines()[-1]) if status == 0 else {}
        ours.append({"seconds": wall, "peak_kb": peak, "exit": status,
                     "test_error": result.get("test_error"),
                     "data_and_params_bytes": result.get("minimum_bytes")})
        train.unlink()
        test.unlink()
        wall, peak, status, out = timed([PYTHON, "-c", VW_PASS, str(folder / "train.vw"),
                                         str(folder / "test.vw")])
        theirs.append({"seconds": wall, "peak_kb": peak, "exit": status,
                       "test_error": float(out.strip() or "nan")})
    report = {"comparison": "svm", "rows": 1_000_000, "nonzeros": 20_000_000,
              "svmlight_bytes": (folder / "train.svm").stat().st_size,
              "vw_bytes": (folder / "train.vw").stat().st_size,
              "hogwild": ours, "vowpal_wabbit": theirs,
              "median_seconds": {"hogwild": statistics.median(r["seconds"] for r in ours),
                                 "vowpal_wabbit": statistics.median(r["seconds"]
                                                                    for r in theirs)}}
    if cgroup:
        train, test = fresh(folder / "train.svm", folder), fresh(folder / "test.svm", folder)
        report["cgroup"] = in_cgroup(600, ["hogwild", "run", "svm", "--data", str(train),
                                           "--test", str(test), "--epochs", "1",
                                           "--memory", "300MB"])
    return report


def bench_vw_parse(folder, rounds):
    ours, theirs = [], []
    for _ in range(rounds):
        copy = fresh(folder / "train.vw", folder)
        ours.append(timed([PYTHON, "-c", OUR_PARSE, str(copy)])[0])
        copy.unlink()
        theirs.append(timed([PYTHON, "-c", VW_PARSE, str(folder / "train.vw")])[0])
    return {"comparison": "vw-parse", "bytes": (folder / "train.vw").stat().st_size,
            "hogwild_seconds": ours, "vowpal_wabbit_seconds": theirs,
            "median_seconds": {"hogwild": statistics.median(ours),
                               "vowpal_wabbit": statistics.median(theirs)}}


def bench_ratings(folder, rounds, libmf, cgroup):
    subprocess.run([PYTHON, str(HERE / "write_text.py"), "jumbo:200000x50000x20000000",
                    "--as", "ratings", "--out", str(folder)], check=True,
                   capture_output=True)
    ours, theirs = [], []
    for _ in range(rounds):
        train = fresh(folder / "train.tsv", folder)
        wall, peak, status, out = timed(["hogwild", "run", "mc", "--data", str(train),
                                         "--test", str(folder / "test.tsv"), "--epochs", "1",
                                         "--json"])
        result = json.loads(out.strip().splitlines()[-1]) if status == 0 else {}
        ours.append({"seconds": wall, "peak_kb": peak, "exit": status,
                     "test_rmse": result.get("test_rmse")})
        train.unlink()
        if libmf:
            wall, peak, status, _ = timed([libmf, "-k", "32", "-l2", "0.05", "-t", "1",
                                           str(folder / "train.tsv"), str(folder / "m.model")])
            theirs.append({"seconds": wall, "peak_kb": peak, "exit": status})
    report = {"comparison": "ratings", "ratings": 20_000_000,
              "bytes": (folder / "train.tsv").stat().st_size, "hogwild": ours, "libmf": theirs,
              "median_seconds": {"hogwild": statistics.median(r["seconds"] for r in ours),
                                 "libmf": statistics.median(r["seconds"] for r in theirs)
                                 if theirs else None}}
    if cgroup:
        train = fresh(folder / "train.tsv", folder)
        report["cgroup"] = in_cgroup(700, ["hogwild", "run", "mc", "--data", str(train),
                                           "--test", str(folder / "test.tsv"), "--epochs",
                                           "3", "--memory", "400MB"])
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("svm", "vw-parse", "ratings"), action="append")
    parser.add_argument("--libmf", default=os.environ.get("LIBMF_TRAIN"),
                        help="LIBMF's mf-train binary (make in github.com/cjlin1/libmf)")
    parser.add_argument("--cgroup", action="store_true",
                        help="also run hogwild inside memory cgroups (root, cgroup v1)")
    parser.add_argument("--folder", help="where the text files go (default: a temporary "
                                         "folder, removed at the end)")
    parser.add_argument("--out", help="also write the JSON objects to this file")
    args = parser.parse_args(argv)
    only = args.only or ["svm", "vw-parse", "ratings"]
    folder = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="bench-readers-"))
    folder.mkdir(parents=True, exist_ok=True)
    reports = []
    try:
        if "svm" in only or "vw-parse" in only:
            if "svm" in only:
                reports.append(bench_svm(folder, args.rounds, args.cgroup))
            if "vw-parse" in only:
                if not (folder / "train.vw").exists():
                    subprocess.run([PYTHON, str(HERE / "write_text.py"),
                                    "clicks:1000000x1000000x20000000", "--as", "vw", "--out",
                                    str(folder)], check=True, capture_output=True)
                reports.append(bench_vw_parse(folder, args.rounds))
        if "ratings" in only:
            reports.append(bench_ratings(folder, args.rounds, args.libmf, args.cgroup))
    finally:
        if not args.folder:
            shutil.rmtree(folder, ignore_errors=True)
    for report in reports:
        print(json.dumps(report))
    if args.out:
        Path(args.out).write_text("\n".join(json.dumps(r) for r in reports) + "\n")


if __name__ == "__main__":
    main()
