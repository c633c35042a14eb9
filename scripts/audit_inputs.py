"""Audit of bad input: hundreds of generated cases over the command line and the
Python API, each run in a fresh process, as a hostile user or an unlucky
operator would run them, and what each one did.

A case gives an option an absurd value (NaN, inf, negative, huge, text, empty), a
choice a name that does not exist, a command a file that is malformed, empty,
binary, compressed badly, a FIFO, a device, a folder or missing, a checkpoint or
model file that is truncated, foreign or edited, or calls the API with arrays,
shapes, dtypes, ids, counts and settings it must refuse. Each is judged:

    error       refused with one line, 'hogwild: error: ...' (warnings aside), exit 2
    ok          ran to the end, exit 0 (right where the case is valid)
    traceback   a Python traceback on stderr
    raw         (API) an exception other than HogwildError (numba's, SciPy's, ...)
    hang        still running after --timeout seconds (killed)
    crash       ended by a signal (a segfault)
    unclear     another exit status, or an error that is not one line

and against what the case expects: 'silent_accept' counts the cases that must be
refused but ran (exit 0), 'wrongly_refused' the valid ones that were refused.

    python scripts/audit_inputs.py                  # every case, JSON on stdout
    python scripts/audit_inputs.py --quick          # one case in 12 (the CI test)
    python scripts/audit_inputs.py --out docs/audit_inputs.json --jobs 2

The cases run with a private HOGWILD_CACHE_DIR and touch only this machine.
"""
import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hogwild.bench.machine import publish

OUTCOMES = ("error", "ok", "traceback", "raw", "hang", "crash", "unclear")
FAILURES = ("traceback", "raw", "hang", "crash", "unclear", "silent_accept", "wrongly_refused")


@dataclass
class Case:
    group: str            # what is audited: an option, a file kind, an API entry point
    name: str             # the case, readable
    argv: list = None     # a command line (hogwild ARGV)
    code: str = None      # or a Python snippet for the API
    expect: str = "error"  # "error", "ok" or "either"


# --- files the cases read ----------------------------------------------------------------

def svm_text(rows=60, features=6, seed=0):
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(rows):
        cols = sorted(rng.choice(features, 3, replace=False) + 1)
        lines.append(f"{1 if i % 2 else -1} " + " ".join(f"{c}:{rng.random():.3f}"
                                                        for c in cols))
    return "\n".join(lines) + "\n"


# readable, their ids as text (-7, 1.5, 99999999999999999999 are no ids from 0 to
# 2**63 - 1); too few ratings to split off a test set
STRING_ID_RATINGS = ("user_text.ratings", "negative.ratings", "first_negative.ratings",
                     "huge_id.ratings", "float_id.ratings", "semicolons.ratings",
                     "unicode_digit.ratings")


def ratings_text(rows=400, users=30, items=20, seed=0):
    rng = np.random.default_rng(seed)
    return "".join(f"{rng.integers(users)} {rng.integers(items)} {rng.integers(1, 6)}\n"
                   for _ in range(rows))


def edges_text(vertices=30, edges=80, seed=0):
    rng = np.random.default_rng(seed)
    pairs = {tuple(sorted(rng.choice(vertices, 2, replace=False))) for _ in range(edges)}
    return "".join(f"{a} {b}\n" for a, b in sorted(pairs))


# Text files that each break one rule of a reader (or, a few, keep every rule).
BAD_TEXTS = {
    "label_text.svm": "x 1:1\n", "index_text.svm": "1 a:1\n", "value_text.svm": "1 1:b\n",
    "unsorted.svm": "1 3:1 2:1\n-1 1:1\n", "repeated.svm": "1 2:1 2:1\n-1 1:1\n",
    "nan.svm": "1 1:nan\n-1 2:1\n", "inf.svm": "1 1:inf\n-1 2:1\n",
    "huge_value.svm": "1 1:1e40\n-1 2:1\n", "huge_index.svm": "1 99999999999:1\n-1 2:1\n",
    "int64_index.svm": "1 99999999999999999999:1\n-1 2:1\n",
    "negative_index.svm": "1 -3:1\n-1 2:1\n", "empty.svm": "",
    "comments.svm": "# nothing\n# at all\n", "one_class.svm": "1 1:1\n1 2:1\n",
    "three_classes.svm": "1 1:1\n2 2:1\n3 3:1\n", "colon.svm": "1 1:\n-1 2:1\n",
    "double_colon.svm": "1 1::1\n-1 2:1\n", "nan_label.svm": "nan 1:1\n-1 2:1\n",
    "unicode_digit.svm": "1 \u0661:1\n-1 2:1\n", "nul.svm": "1 1:1\x00\n-1 2:1\n",
    "long_line.svm": "1 " + " ".join(f"{i}:1" for i in range(1, 20001)) + "\n-1 2:1\n",
    "no_features.svm": "1\n-1\n", "tabs.svm": "1\t1:1\t2:2\n-1\t2:1\n",
    "user_text.ratings": "a 1 3\n1 2 3\n", "negative.ratings": "1 2 3\n-7 3 4\n",
    "first_negative.ratings": "-7 3 4\n1 2 3\n", "two_fields.ratings": "1 2\n3 4 5\n",
    "nan.ratings": "1 2 nan\n2 3 4\n", "inf.ratings": "1 2 inf\n2 3 4\n",
    "huge_id.ratings": "99999999999999999999 1 3\n2 3 4\n",
    "float_id.ratings": "1.5 2 3\n2 3 4\n", "semicolons.ratings": "1;2;3\n2;3;4\n",
    "empty.ratings": "", "header_only.ratings": "user,item,rating\n",
    "unicode_digit.ratings": "\u0661 2 3\n2 3 4\n", "huge_rating.ratings": "1 2 1e39\n2 3 4\n",
    "one.ratings": "1 2 3\n",
    "superscript.edges": "1 2\n2 3\n3 \u00b2\n",
    "huge_id.edges": "1 2\n3 99999999999999999999\n",
    "negative.edges": "1 2\n-3 4\n", "nan_weight.edges": "1 2 nan\n2 3 1\n",
    "negative_weight.edges": "1 2 -1\n2 3 1\n", "inf_weight.edges": "1 2 inf\n2 3 1\n",
    "one_column.edges": "1\n2\n", "empty.edges": "", "self_loops.edges": "1 1\n2 2\n",
    "text.edges": "a b\nc d\n", "huge_weight.edges": "1 2 1e300\n2 3 1\n",
    "no_p_line.col": "e 1 2\n", "beyond_n.col": "p edge 3 1\ne 1 9\n",
    "huge_n.col": "p edge 99999999999 1\ne 1 2\n",
    "good.col": "p edge 4 3\ne 1 2\ne 2 3\ne 3 4\n",
}


def make_files(root):
    """The files the cases name, in ``root``: good ones, and bad ones of every kind.
    Returns {name: path}."""
    root = Path(root)
    files = {}

    def write(name, content):
        path = root / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        files[name] = path
        return path

    good_svm = svm_text()
    write("good.svm", good_svm)
    write("good.svm.gz", gzip.compress(good_svm.encode()))
    write("binary.svm", np.random.default_rng(1).bytes(4000))
    write("utf16.svm", good_svm.encode("utf-16"))
    write("truncated.svm.gz", gzip.compress(good_svm.encode())[:40])
    write("not_gzip.svm.gz", b"\x1f\x8b" + b"not really gzip" * 10)
    write("bz2_broken.svm", b"BZh9" + b"\x00" * 50)

    good_ratings = ratings_text()
    write("good.ratings", good_ratings)
    write("binary.ratings", np.random.default_rng(2).bytes(4000))

    # text from other systems (issue 43): read as plain text, each pair once
    write("bom.svm", "\ufeff" + good_svm)
    write("crlf.svm", good_svm.replace("\n", "\r\n"))
    write("bom.ratings", "\ufeff" + good_ratings)
    write("cr.ratings", good_ratings.replace("\n", "\r"))
    write("twice.ratings", good_ratings + good_ratings)

    write("good.edges", edges_text())
    # inputs an output names by mistake (each its own copy: a case that replaced one
    # would spoil no other case)
    write("input.svm", good_svm)
    write("test_input.svm", good_svm)
    write("input.ratings", good_ratings)
    write("input.edges", edges_text())
    (root / "link_to_input.svm").symlink_to(root / "input.svm")
    files["link_to_input.svm"] = root / "link_to_input.svm"
    for name, content in BAD_TEXTS.items():
        write(name, content)

    from PIL import Image
    Image.fromarray((np.arange(24 * 32).reshape(24, 32) % 251).astype(np.uint8)).save(
        root / "photo.png")
    files["photo.png"] = root / "photo.png"
    seeds = np.zeros((24, 32), np.uint8)
    seeds[:3, :3], seeds[-3:, -3:] = 80, 160
    Image.fromarray(seeds).save(root / "seeds.png")
    files["seeds.png"] = root / "seeds.png"
    three = seeds.copy()
    three[12, 12] = 240
    Image.fromarray(three).save(root / "seeds3.png")
    files["seeds3.png"] = root / "seeds3.png"
    one = np.zeros((24, 32), np.uint8)
    one[:3, :3] = 80
    Image.fromarray(one).save(root / "seeds1.png")
    files["seeds1.png"] = root / "seeds1.png"
    Image.fromarray(np.zeros((5, 5), np.uint8)).save(root / "small_seeds.png")
    files["small_seeds.png"] = root / "small_seeds.png"
    Image.fromarray(np.zeros((1, 1), np.uint8)).save(root / "pixel.png")
    files["pixel.png"] = root / "pixel.png"
    write("text.png", "not an image")
    write("truncated.png", (root / "photo.png").read_bytes()[:60])
    header = (root / "photo.png").read_bytes()
    write("bomb.png", header[:16] + (60000).to_bytes(4, "big") + (60000).to_bytes(4, "big")
          + header[24:])

    fifo = root / "fifo"
    os.mkfifo(fifo)
    files["fifo"] = fifo
    os.mkfifo(root / "fifo.png")
    files["fifo.png"] = root / "fifo.png"
    (root / "folder").mkdir()
    files["folder"] = root / "folder"
    files["missing"] = root / "missing.svm"
    files["long_name"] = root / ("x" * 300)
    write("random.npz", np.random.default_rng(3).bytes(3000))
    write("text.npz", "hello")
    write("zip.npz", b"PK\x03\x04" + b"\x00" * 60)
    return files


def make_checkpoints(root, files, env):
    """A real checkpoint of a short svm run, and versions of it truncated and edited."""
    path, model = root / "svm.npz", root / "model.npz"
    subprocess.run([sys.executable, "-m", "hogwild.cli", "run", "svm", "--data",
                    str(files["good.svm"]), "--epochs", "2", "--seed", "0", "--checkpoint",
                    str(path), "--checkpoint-every", "1", "--save", str(model)], check=True,
                   capture_output=True, env=env, timeout=300)
    files["checkpoint.npz"] = path
    # a model file whose coef.npy declares 10^11 floats and holds 64 bytes (a bomb)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (10**11,)})
    files["bomb_model.npz"] = root / "bomb_model.npz"
    with zipfile.ZipFile(model) as source, zipfile.ZipFile(files["bomb_model.npz"], "w") as bomb:
        for member in source.infolist():
            bomb.writestr(member, header.getvalue() + bytes(64) if member.filename == "coef.npy"
                          else source.read(member.filename))
    raw = path.read_bytes()
    files["truncated_checkpoint.npz"] = root / "truncated_checkpoint.npz"
    files["truncated_checkpoint.npz"].write_bytes(raw[:len(raw) // 2])
    with np.load(path) as archive:
        arrays = dict(archive)
    header = json.loads(arrays.pop("header").tobytes())
    for name, change in (("settings_removed", ("settings", {})),
                         ("history_edited", ("history", [])), ("step_edited", ("step", 9.0)),
                         ("epoch_text", ("epoch", "2"))):
        edited = dict(header, **{change[0]: change[1]})
        target = root / f"{name}.npz"
        np.savez(target, **arrays, header=np.frombuffer(json.dumps(edited).encode(), np.uint8))
        files[f"{name}.npz"] = target


# --- the cases ---------------------------------------------------------------------------------

INT_VALUES = ("-1", "0", "abc", "1.5", "99999999999999999999", "", "1e3", "\u0661")
FLOAT_VALUES = ("nan", "inf", "-inf", "-1", "abc", "1e400", "")
SHARED_INTS = ("--epochs", "--workers", "--shuffle-block", "--seed", "--checkpoint-every",
               "--merge-every", "--nodes", "--clock-every", "--ranks", "--sync-every",
               "--streams", "--device")
SHARED_FLOATS = ("--step", "--decay", "--hot-fraction", "--warmup-epochs")
SHARED_CHOICES = ("--scheduler", "--backend", "--replication", "--merge", "--step-schedule",
                  "--allreduce", "--exchange", "--step-scaling", "--staleness")
QUICK_DATA = {"svm": [], "mc": ["--data", "jumbo:60x40x600"], "cuts": ["--data", "random:30x60"]}


def accepted_int(option, value):
    """Whether a shared integer option takes this value (then the run must work)."""
    if not value.isascii() or not value.isdigit():
        return False
    number = int(value)
    if option == "--seed":
        return True
    if option in ("--checkpoint-every", "--merge-every"):
        return number >= 1
    return False  # the rest: 0 is refused, huge counts are refused or would not end, and
    # the options of the ray and mpi backends are refused on these threads runs


def cli_cases(files):
    cases = []

    def add(group, name, argv, expect="error"):
        cases.append(Case(group, name, argv=[str(a) for a in argv], expect=expect))

    data, test = files["input.svm"], files["test_input.svm"]
    for name, argv in {
            "--save names --data": ["run", "svm", "--data", data, "--save", data],
            "--save names --data through a link": ["run", "svm", "--data", data, "--save",
                                                   files["link_to_input.svm"]],
            "--checkpoint names --data": ["run", "svm", "--data", data, "--checkpoint", data],
            "--save names --test": ["run", "svm", "--data", data, "--test", test, "--save",
                                    test],
            "--save names --resume": ["run", "svm", "--data", files["good.svm"], "--resume",
                                      files["checkpoint.npz"], "--save",
                                      files["checkpoint.npz"]],
            "run mc --save names --data": ["run", "mc", "--data", files["input.ratings"],
                                           "--save", files["input.ratings"]],
            "run cuts --out names --data": ["run", "cuts", "--data", files["input.edges"],
                                            "--out", files["input.edges"]]}.items():
        add("outputs naming inputs", name, argv + ["--epochs", "1"])

    for problem, data in QUICK_DATA.items():
        base = ["run", problem, *data, "--epochs", "1"]
        for option in SHARED_INTS:
            for value in INT_VALUES:
                expect = "ok" if accepted_int(option, value) else "error"
                if option == "--epochs" and value not in ("-1", "0"):
                    expect = "error"
                add(f"run {problem} {option}", f"{option} {value!r}",
                    ["run", problem, *data, option, value] + (
                        [] if option == "--epochs" else ["--epochs", "1"]), expect)
        for option in SHARED_FLOATS:
            for value in FLOAT_VALUES + ("0", "1e20"):
                expect = "error"  # --warmup-epochs 0 too: an mpi option on threads
                if option == "--decay" and value == "0":
                    expect = "either"
                if (problem, option, value) == ("svm", "--step", "1e20"):
                    expect = "either"  # the adaptive hinge step stops at the hinge: bounded
                add(f"run {problem} {option}", f"{option} {value!r}", base + [option, value],
                    expect)
        for option in SHARED_CHOICES:
            for value in ("garbage", "", "HOGWILD", "\u00e9"):
                add(f"run {problem} {option}", f"{option} {value!r}", base + [option, value])
        add(f"run {problem} combos", "--scheduler blocked --replication worker",
            base + ["--scheduler", "blocked", "--replication", "worker"])
        add(f"run {problem} combos", "--backend gpu (no GPU here)", base + ["--backend", "gpu"])
        add(f"run {problem} combos", "--ranks 2 --backend processes",
            base + ["--ranks", "2", "--backend", "processes"])
        add(f"run {problem} combos", "--staleness-aware --staleness 0",
            base + ["--backend", "ray", "--staleness-aware", "--staleness", "0"])
        add(f"run {problem} combos", "--warmup-epochs 2 --step-scaling none",
            base + ["--backend", "mpi", "--warmup-epochs", "2", "--step-scaling", "none"])
        add(f"run {problem} combos", "--nodes 4 (a ray option) on threads",
            base + ["--nodes", "4"])
        add(f"run {problem} combos", "--exchange dense (an mpi option) on ray",
            base + ["--backend", "ray", "--exchange", "dense"])
        add(f"run {problem} combos", "--ranks 2 --staleness 1 (a ray option)",
            base + ["--ranks", "2", "--staleness", "1"])
        add(f"run {problem} combos", "--workers 100000 --oversubscribe",
            base + ["--workers", "100000", "--oversubscribe"])
        add(f"run {problem} combos", "--ray-address x:y:z",
            base + ["--backend", "ray", "--ray-address", "x:y:z"])
        add(f"run {problem} combos", "--ray-address 127.0.0.1:1 (nothing listens)",
            base + ["--backend", "ray", "--ray-address", "127.0.0.1:1"])
        for output in ("--checkpoint", "--save", "--out"):
            if output == "--save" and problem == "cuts" or output == "--out" and problem != "cuts":
                continue
            for target in ("folder", "missing_folder", "/dev/full", "/proc/version"):
                path = files["folder"] if target == "folder" else \
                    files["folder"] / "no" / "such.npz" if target == "missing_folder" else target
                add(f"run {problem} {output}", f"{output} {target}", base + [output, path])
        for resume in ("missing", "fifo", "folder", "random.npz", "text.npz", "zip.npz",
                       "truncated_checkpoint.npz", "settings_removed.npz", "history_edited.npz",
                       "step_edited.npz", "epoch_text.npz", "checkpoint.npz"):
            add(f"run {problem} --resume", resume, base + ["--resume", files[resume]])

    for name in [n for n in files if n.endswith((".svm", ".svm.gz"))] + [
            "fifo", "folder", "missing", "long_name", "photo.png"]:
        expect = "ok" if name in ("good.svm", "good.svm.gz", "long_line.svm", "tabs.svm",
                                  "three_classes.svm",  # 3 classes: one-vs-rest
                                  "bom.svm", "crlf.svm",  # plain text
                                  "input.svm", "test_input.svm", "link_to_input.svm") \
            else "error"
        add("run svm --data", name, ["run", "svm", "--data", files[name], "--epochs", "1"],
            expect)
        test_set = name in ("one_class.svm", "no_features.svm")  # labels: a test needs no two
        unseen_class = name == "three_classes.svm"  # a test class the model never saw
        add("run svm --test", name, ["run", "svm", "--data", files["good.svm"], "--test",
                                     files[name], "--epochs", "1"],
            "ok" if (expect == "ok" and not unseen_class) or test_set else "error")
        labels_only = name in ("one_class.svm", "three_classes.svm")  # stats read no labels
        add("stats svm --data", name, ["stats", "svm", "--data", files[name]],
            "ok" if expect == "ok" or labels_only else "error")
    for name in [n for n in files if n.endswith(".ratings")] + ["fifo", "folder", "missing",
                                                               "binary.svm"]:
        plain = ("bom.ratings", "cr.ratings", "twice.ratings")  # read as plain text
        expect = "ok" if name in ("good.ratings", "input.ratings") + plain else "error"
        add("run mc --data", name, ["run", "mc", "--data", files[name], "--epochs", "1"], expect)
        add("run mc --test", name, ["run", "mc", "--data", files["good.ratings"], "--test",
                                    files[name], "--epochs", "1"],
            "ok" if name in ("good.ratings", "one.ratings") + STRING_ID_RATINGS + plain
            else "error")
    for name in [n for n in files if n.endswith((".edges", ".col"))] + ["fifo", "folder",
                                                                       "missing"]:
        expect = "ok" if name in ("good.edges", "good.col", "huge_weight.edges",
                                  "input.edges") else "error"
        if name == "huge_weight.edges":
            expect = "error"
        add("run cuts --data", name, ["run", "cuts", "--data", files[name], "--epochs", "2"],
            expect)
    for name in ("photo.png", "pixel.png", "text.png", "truncated.png", "bomb.png", "fifo.png"):
        expect = "ok" if name == "photo.png" else "error"
        add("run cuts --data (image)", name, ["run", "cuts", "--data", files[name],
                                              "--epochs", "2"], expect)
    for seeds, labels, expect in (("seeds.png", None, "ok"), ("seeds3.png", "2", "error"),
                                  ("seeds3.png", None, "ok"), ("seeds1.png", None, "error"),
                                  ("small_seeds.png", None, "error"), ("text.png", None, "error"),
                                  ("fifo", None, "error"), ("missing", None, "error")):
        add("run cuts --terminals (image)", f"{seeds} --labels {labels}",
            ["run", "cuts", "--data", files["photo.png"], "--terminals", files[seeds],
             "--epochs", "2"] + (["--labels", labels] if labels else []), expect)
    graph = ["run", "cuts", "--data", "random:30x60", "--epochs", "2"]
    for spec, expect in (("0:0", "error"), ("0:0,1:1", "ok"), ("0:0,0:1", "error"),
                         ("0:5", "error"), ("99:1,0:0", "error"), ("x:y", "error"), ("", "error"),
                         ("random:0", "error"), ("random:999", "error"), ("random:-1", "error"),
                         ("random:abc", "error"), ("0:0,1:1,", "error")):
        add("run cuts --terminals (graph)", spec, graph + ["--terminals", spec], expect)
    for option, values in (("--labels", ("1", "0", "65", "40000", "abc")),
                           ("--connectivity", ("5", "0", "abc")),
                           ("--unary", ("1e20", "nan", "-1", "inf", "abc")),
                           ("--terminal-seed", ("-1", "abc"))):
        for value in values:
            add(f"run cuts {option}", value, graph + [option, value])
    for data in ("random:1x1", "random:0x5", "random:5x0", "random:axb", "random:",
                 "random:99999999999x2", "nosuchgraph"):
        add("run cuts --data", data, ["run", "cuts", "--data", data, "--epochs", "1"])

    jumbo = ["run", "mc", "--data", "jumbo:60x40x600", "--epochs", "1"]
    for option, values in (("--rank", ("0", "-1", "513", "abc")),
                           ("--reg", ("nan", "-1", "inf")), ("--bias-reg", ("nan", "-1")),
                           ("--init-scale", ("nan", "-1", "1e30")),
                           ("--grid", ("0", "-1", "99999")), ("--jumbo-rank", ("0", "999")),
                           ("--jumbo-noise", ("nan", "-1")),
                           ("--model", ("garbage", "")), ("--split", ("garbage",)),
                           ("--factor-dtype", ("float16", "int8", "garbage")),
                           ("--test-fraction", ("0", "1", "nan", "-0.5", "2")),
                           ("--split-seed", ("-1", "abc"))):
        for value in values:
            add(f"run mc {option}", value, jumbo + [option, value])
    for data in ("jumbo:0x5x5", "jumbo:5x0x5", "jumbo:5x5x0", "jumbo:axbxc", "jumbo:5x5",
                 "jumbo:99999999999x5x5", "jumbo:1000000x1000000x99999999999999",
                 "jumbo:-5x5x5", "nosuchdataset"):
        add("run mc --data", data, ["run", "mc", "--data", data, "--epochs", "1"])
    for option, values in (("--reg", ("nan", "-1", "inf", "abc")),
                           ("--loss", ("garbage", "", "squared"))):
        for value in values:
            add(f"run svm {option}", value, ["run", "svm", "--epochs", "1", option, value])
    add("run svm combos", "--no-intercept --scheduler colored (a feature in 95% of a9a)",
        ["run", "svm", "--epochs", "1", "--no-intercept", "--scheduler", "colored"])
    add("run svm combos", "--no-intercept --scheduler cyclades",
        ["run", "svm", "--epochs", "1", "--no-intercept", "--scheduler", "cyclades"], "ok")
    add("run svm combos", "--scheduler colored (needs --no-intercept)",
        ["run", "svm", "--epochs", "1", "--scheduler", "colored"])
    add("run svm combos", "--scheduler blocked", ["run", "svm", "--epochs", "1", "--scheduler",
                                                  "blocked"])

    for argv, expect in ((["download", "nosuch"], "error"),
                         (["download", "ml-100k", "--url", "file:///nonexistent"], "error"),
                         (["download", "ml-100k", "--url", f"file://{files['fifo']}",
                           "--sha256", "0" * 64], "error"),
                         (["download", "ml-100k", "--url", f"file://{files['folder']}",
                           "--sha256", "0" * 64], "error"),
                         (["download", "ml-100k", "--url", f"file://{files['good.svm']}",
                           "--sha256", "xyz"], "error"),
                         (["download", "ml-100k", "--url", f"file://{files['good.svm']}",
                           "--sha256", "0" * 64], "error"),
                         (["download", "ml-100k", "--url", "http://127.0.0.1:1/ml.zip",
                           "--sha256", "0" * 64], "error"),
                         (["stats", "nosuch"], "error"), (["stats", "cuts", "--data",
                                                            "random:30x60"], "ok"),
                         (["allreduce-probe", "--max-size", "99999999999999999999"], "error"),
                         (["allreduce-probe", "--max-size", "abc"], "error"),
                         (["allreduce-probe", "--min-size", "2MiB", "--max-size", "1MiB"],
                          "error"),
                         (["allreduce-probe", "--budget", "nan"], "error"),
                         (["allreduce-probe"], "error"),  # one rank: needs two
                         (["bench", "--workers", "0"], "error"),
                         (["bench", "--rounds", "0"], "error"),
                         (["bench", "--problems", "garbage"], "error"),
                         (["nosuchcommand"], "error"), ([], "error"),
                         (["run", "nosuchproblem"], "error"),
                         (["run", "implicit", "--data", files["twice.ratings"], "--epochs",
                           "1"], "ok"),
                         (["run", "svm", "--schedule", "inverse"], "error"),  # no alias
                         (["run", "svm", "--epoch", "1"], "error")):  # nor a prefix
        argv = [str(a) for a in argv]
        add(f"{argv[0] if argv else '(none)'}", " ".join(argv[1:]) or "(no arguments)", argv,
            expect)
    return cases


API = textwrap.dedent("""
    import sys
    import numpy as np
    import hogwild
    from hogwild import HogwildError, Objective, fit

    def update(e, params, data, step):
        params[0][data[0][e]] -= step * (params[0][data[0][e]] - 1.0)

    def loss(e, params, data):
        return 0.5 * (params[0][data[0][e]] - 1.0) ** 2

    def good(**changes):
        fields = dict(update=update, loss=loss, params=(np.zeros(10),),
                      data=(np.arange(50) % 10,), n_samples=50)
        fields.update(changes)
        return Objective(**fields)

    try:
    {body}
    except HogwildError as error:
        print(f"hogwild: error: {{error}}", file=sys.stderr)
        sys.exit(2)
""")


def api_cases(files):
    cases = []

    def add(group, name, body, expect="error"):
        cases.append(Case(group, name, code=API.format(body=textwrap.indent(
            textwrap.dedent(body).strip(), "    ")), expect=expect))

    for name, change in (("params a list", "params=[[1.0, 2.0]]"),
                         ("params 0-d", "params=(np.array(3.0),)"),
                         ("params int", "params=(np.zeros(10, np.int64),)"),
                         ("params bool", "params=(np.zeros(10, bool),)"),
                         ("params complex", "params=(np.zeros(10, complex),)"),
                         ("params read-only", "params=(np.zeros(10)[::1].copy(),)"),
                         ("params not contiguous", "params=(np.zeros(20)[::2],)"),
                         ("params empty tuple", "params=()"),
                         ("data object", "data=(np.array([object()] * 50),)"),
                         ("data strings", "data=(np.array(['a'] * 50),)"),
                         ("data None", "data=None"),
                         ("n_samples 0", "n_samples=0"), ("n_samples -1", "n_samples=-1"),
                         ("n_samples 1.5", "n_samples=1.5"), ("n_samples text", "n_samples='50'"),
                         ("n_samples True", "n_samples=True"),
                         ("n_samples 10**20", "n_samples=10**20"),
                         ("n_samples beyond the data", "n_samples=5000"),
                         ("update arity", "update=lambda e, p: None"),
                         ("update not a function", "update=3"),
                         ("update a builtin", "update=len"),
                         ("loss arity", "loss=lambda e: 0.0"),
                         ("supports wrong type", "supports=3"),
                         ("ids beyond the data's rows",
                          "data=(np.arange(50) % 13,), n_samples=50"),
                         ("negative ids", "data=(np.arange(50) % 10 - 5,)")):
        body = f"objective = good({change})\n"
        if change == "params=(np.zeros(10)[::1].copy(),)":
            body = ("p = np.zeros(10); p.setflags(write=False)\n"
                    "objective = good(params=(p,))\n")
        body += "fit(objective, epochs=1, workers=1)"
        expect = "error"
        if name == "negative ids":
            expect = "either"  # numpy's negative indexing: reads from the end
        add("Objective", name, body, expect)
    add("Objective", "IdArray beyond params",
        "from hogwild.structure import IdArray\n"
        "good(data=(np.arange(50) % 12,), id_arrays=(IdArray(0, (0,)),))")
    add("Objective", "IdArray float ids",
        "from hogwild.structure import IdArray\n"
        "good(data=(np.arange(50) % 10 * 1.0,), id_arrays=(IdArray(0, (0,)),))")
    add("Objective", "IdArray names a missing array",
        "from hogwild.structure import IdArray\ngood(id_arrays=(IdArray(0, (3,)),))")
    add("Objective", "Supports with ids beyond coordinates",
        "from hogwild.structure import Supports\n"
        "o = good(supports=Supports(np.arange(51), np.arange(50) + 100, 10))\n"
        "fit(o, epochs=1, scheduler='colored')")
    add("Objective", "Supports of another sample count",
        "from hogwild.structure import Supports\n"
        "o = good(supports=Supports(np.arange(11), np.arange(10), 10))\n"
        "fit(o, epochs=1, scheduler='colored')")
    add("Objective", "a block layout that does not rise",
        "from hogwild.structure import BlockLayout\n"
        "o = good(blocks=BlockLayout(2, np.array([0, 30, 10, 40, 50])))\n"
        "fit(o, epochs=1, scheduler='blocked')")
    add("Objective", "an update numba cannot compile",
        "def bad(e, params, data, step):\n    params[0][0] = len(object())\n"
        "fit(good(update=bad), epochs=1)")
    add("Objective", "a loss that returns text",
        "def bad(e, params, data):\n    return 'x'\nfit(good(loss=bad), epochs=1)")
    for option, values in (("epochs", ("0", "-1", "1.5", "'3'", "None", "10**7")),
                           ("step", ("0", "float('nan')", "-1", "'fast'", "1e300")),
                           ("decay", ("-1", "float('nan')", "float('inf')")),
                           ("workers", ("0", "-1", "10**9", "1.5")),
                           ("scheduler", ("'garbage'", "None", "3")),
                           ("backend", ("'garbage'", "None")),
                           ("seed", ("-1", "'x'", "1.5")),
                           ("shuffle_block", ("0", "2**40")),
                           ("replication", ("'garbage'",)), ("merge_every", ("0",)),
                           ("hot_fraction", ("0", "1", "float('nan')")),
                           ("checkpoint_every", ("0",)),
                           ("evaluate", ("3", "'x'")), ("callback", ("3",)),
                           ("progress", ("'x'",)),
                           ("distributed", ("{'nodes': 2}",)),
                           ("resume", (f"{str(files['random.npz'])!r}",
                                       f"{str(files['missing'])!r}",
                                       f"{str(files['fifo'])!r}")),
                           ("checkpoint", (f"{str(files['folder'])!r}", "'/dev/full'"))):
        for value in values:
            add(f"fit {option}", f"{option}={value}",
                f"fit(good(), **{{'epochs': 1, {option!r}: {value}}})")
    add("fit", "an unknown option", "fit(good(), epochs=1, colour='red')", "TypeError")
    add("fit", "config of the wrong type", "fit(good(), config=3)")
    add("fit", "objective of the wrong type", "fit(3, epochs=1)")

    svm = "from hogwild.problems.sparse_svm import SparseSVM\nimport scipy.sparse as sp\n"
    for name, fit_call in (
            ("X a list", "SparseSVM(epochs=1).fit([[1, 0], [0, 1]], [0, 1])"),
            ("X with NaN", "SparseSVM(epochs=1).fit(np.array([[np.nan, 1.], [0., 1.]]), [0, 1])"),
            ("X with inf", "SparseSVM(epochs=1).fit(np.array([[np.inf, 1.], [0., 1.]]), [0, 1])"),
            ("X 1-D", "SparseSVM(epochs=1).fit(np.ones(4), [0, 1, 0, 1])"),
            ("X empty", "SparseSVM(epochs=1).fit(np.zeros((0, 3)), [])"),
            ("X no features", "SparseSVM(epochs=1).fit(np.zeros((4, 0)), [0, 1, 0, 1])"),
            ("X object", "SparseSVM(epochs=1).fit(np.array([[object()]] * 2), [0, 1])"),
            ("X a trillion features",
             "SparseSVM(epochs=1).fit(sp.csr_matrix((2, 10**12)), [0, 1])"),
            ("y of another length", "SparseSVM(epochs=1).fit(np.eye(4), [0, 1])"),
            ("y three classes", "SparseSVM(epochs=1).fit(np.eye(3), [0, 1, 2])"),
            ("y one class", "SparseSVM(epochs=1).fit(np.eye(3), [1, 1, 1])"),
            ("y with NaN", "SparseSVM(epochs=1).fit(np.eye(2), [0, np.nan])"),
            ("y 2-D", "SparseSVM(epochs=1).fit(np.eye(2), [[0], [1]])"),
            ("reg negative", "SparseSVM(reg=-1, epochs=1).fit(np.eye(2), [0, 1])"),
            ("reg NaN", "SparseSVM(reg=float('nan'), epochs=1).fit(np.eye(2), [0, 1])"),
            ("loss garbage", "SparseSVM(loss='x', epochs=1).fit(np.eye(2), [0, 1])"),
            ("fit_intercept text",
             "SparseSVM(fit_intercept='no', epochs=1).fit(np.eye(2), [0, 1])"),
            ("predict before fit", "SparseSVM().predict(np.eye(2))"),
            ("predict other features",
             "m = SparseSVM(epochs=1).fit(np.eye(2), [0, 1]); m.predict(np.eye(3))"),
            ("eval_set of another width",
             "SparseSVM(epochs=1).fit(np.eye(2), [0, 1], eval_set=(np.eye(3), [0, 1, 0]))"),
            ("load a random file", f"SparseSVM.load({str(files['random.npz'])!r})"),
            ("load a zip", f"SparseSVM.load({str(files['zip.npz'])!r})"),
            ("load a checkpoint", f"SparseSVM.load({str(files['checkpoint.npz'])!r})"),
            ("load a FIFO", f"SparseSVM.load({str(files['fifo'])!r})"),
            ("load a folder", f"SparseSVM.load({str(files['folder'])!r})"),
            ("load a file declaring 10^11 floats",
             f"SparseSVM.load({str(files['bomb_model.npz'])!r})"),
            ("3,000 classes of one sample", "SparseSVM(epochs=2).fit(np.eye(3000, 5), "
                                            "np.arange(3000))"),
            ("labels of mixed types", "SparseSVM(epochs=1).fit(np.eye(6, 4), "
                                      "np.array([1, 'b', 2.5] * 2, dtype=object))")):
        valid = name in ("X a list", "y three classes", "y 2-D")  # array-likes, one-vs-rest,
        add("SparseSVM", name, svm + fit_call, "ok" if valid else "error")  # a column of y

    mf = "from hogwild.problems.matrix_completion import MatrixFactorization as MF\n"
    ratings = "([0, 1, 2, 3], [0, 1, 0, 1], [1.0, 2.0, 3.0, 4.0])"
    for name, call in (
            ("lengths differ", "MF(epochs=1).fit(([0, 1], [0], [1.0, 2.0]))"),
            ("NaN rating", "MF(epochs=1).fit(([0, 1], [0, 1], [np.nan, 2.0]))"),
            ("inf rating", "MF(epochs=1).fit(([0, 1], [0, 1], [np.inf, 2.0]))"),
            ("empty", "MF(epochs=1).fit(([], [], []))"),
            ("rank 0", f"MF(rank=0, epochs=1).fit({ratings})"),
            ("rank 10**6", f"MF(rank=10**6, epochs=1).fit({ratings})"),
            ("reg NaN", f"MF(reg=float('nan'), epochs=1).fit({ratings})"),
            ("model garbage", f"MF(model='x', epochs=1).fit({ratings})"),
            ("grid 0", f"MF(grid=0, scheduler='blocked', epochs=1).fit({ratings})"),
            ("factor_dtype int", f"MF(factor_dtype='int8', epochs=1).fit({ratings})"),
            ("ratings of the wrong type", "MF(epochs=1).fit(3)"),
            ("ratings a 2-tuple", "MF(epochs=1).fit(([0, 1], [0, 1]))"),
            ("object ids (hashable: ids of any kind)",
             "MF(epochs=1).fit(([object(), object()], [0, 1], [1.0, 2.0]))"),
            ("predict before fit", "MF().predict([0], [0])"),
            ("recommend n 0", f"m = MF(epochs=1).fit({ratings}); m.recommend(0, n=0)"),
            ("load a random file", f"MF.load({str(files['random.npz'])!r})"),
            ("load a FIFO", f"MF.load({str(files['fifo'])!r})")):
        add("MatrixFactorization", name, mf + call, "either" if "hashable" in name else "error")

    serving = ("from hogwild.problems.matrix_completion import ImplicitFactorization as IF\n"
               "from hogwild.problems.matrix_completion import MatrixFactorization as MF\n"
               "from hogwild.problems.matrix_completion.ranking import sampled_negatives\n"
               "import scipy.sparse as sp\n"
               "X = sp.random(40, 30, density=0.2, random_state=0, format='csr')\n"
               "m = IF(epochs=1, workers=1, random_state=0).fit(X)\n"
               "mf = MF(rank=2, epochs=1, workers=1).fit(([0, 1, 2, 3], [0, 1, 0, 1], "
               "[1.0, 2.0, 3.0, 4.0]))\n")
    for name, call, expect in (
            ("fold_in a dense array", "m.fold_in(X.toarray())", "error"),
            ("fold_in of other items", "m.fold_in(sp.csr_matrix((2, 31)))", "error"),
            ("fold_in users beyond", "m.fold_in(X[:2], users=[0, 40])", "error"),
            ("fold_in users negative", "m.fold_in(X[:2], users=[-1, 0])", "error"),
            ("fold_in users float", "m.fold_in(X[:2], users=[0.5, 1.0])", "error"),
            ("fold_in users repeated", "m.fold_in(X[:2], users=[1, 1])", "error"),
            ("fold_in 10^9 users", "m.fold_in(sp.csr_matrix((10**9, 30)))", "error"),
            ("fold_in NaN values (stored entries that are not > 0: no interactions)",
             "Y = X[:2].copy(); Y.data[:] = np.nan; m.fold_in(Y)", "ok"),
            ("fold_in_items of other users", "m.fold_in_items(sp.csr_matrix((3, 2)))", "error"),
            ("fold_in_items 10^9 items", "m.fold_in_items(sp.csr_matrix((40, 10**9)))",
             "error"),
            ("fold_in after reg_ edited", "m.reg_ = 'x'; m.fold_in(X[:2])", "error"),
            ("partial_fit fewer users", "m.partial_fit(X[:10])", "error"),
            ("partial_fit a list", "m.partial_fit([[1, 0]])", "error"),
            ("partial_fit epochs 0", "m.partial_fit(X, epochs=0)", "error"),
            ("partial_fit 10^10 items", "m.partial_fit(sp.csr_matrix((40, 10**10)))", "error"),
            ("recommend_all n 0", "m.recommend_all(n=0)", "error"),
            ("recommend_all users text", "m.recommend_all(users=['a'])", "error"),
            ("recommend_all users 2-D", "m.recommend_all(users=[[0, 1]])", "error"),
            ("similar_users beyond", "m.similar_users(40)", "error"),
            ("MF fold_in NaN rating", "mf.fold_in(([9], [0], [np.nan]))", "error"),
            ("MF fold_in unknown items only", "mf.fold_in(([9], [7], [1.0]))", "error"),
            ("MF fold_in lengths differ", "mf.fold_in(([9, 9], [0], [1.0, 2.0]))", "error"),
            ("MF fold_in ids of another kind", "mf.fold_in((['a'], [0], [1.0]))", "error"),
            ("MF recommend_all n beyond the items", "mf.recommend_all(n=5)", "error"),
            ("sampled_negatives more than the items",
             "sampled_negatives(X, X, 100)", "error")):
        add("recommender serving", name, serving + call, expect)

    hybrid = ("from hogwild.problems.matrix_completion import HybridFactorization as HF\n"
              "import scipy.sparse as sp\n"
              "X = sp.random(40, 30, density=0.2, random_state=0, format='csr')\n"
              "F = sp.random(30, 5, density=0.3, random_state=1, format='csr')\n")
    fitted = "m = HF(epochs=1, workers=1, random_state=0).fit(X, item_features=F)\n"
    for name, call, expect in (
            ("item features of other rows", "HF(epochs=1).fit(X, item_features=F[:3])",
             "error"),
            ("item features infinite", "G = F.copy(); G.data[0] = np.inf\n"
                                       "HF(epochs=1).fit(X, item_features=G)", "error"),
            ("user features text", "HF(epochs=1).fit(X, user_features=[['a']] * 40)", "error"),
            ("user features 3-D", "HF(epochs=1).fit(X, user_features=np.ones((40, 2, 2)))",
             "error"),
            ("item features 10^12 columns",
             "HF(epochs=1).fit(X, item_features=sp.csr_matrix((30, 10**12)))", "error"),
            ("interactions 10^10 x 30", "HF(epochs=1).fit(sp.coo_matrix((10**10, 30)))",
             "error"),
            ("no identity, no features", "HF(user_identity=False, epochs=1).fit(X)", "error"),
            ("identity 1", "HF(item_identity=1, epochs=1).fit(X)", "error"),
            ("squared loss NaN rating", "Y = X.copy(); Y.data[0] = np.nan\n"
                                        "HF(loss='squared', epochs=1).fit(Y)", "error"),
            ("add_items other features", fitted + "m.add_items(np.ones((2, 4)))", "error"),
            ("add_items NaN", fitted + "m.add_items(np.full((2, 5), np.nan))", "error"),
            ("add_items 10^10 rows", fitted + "m.add_items(sp.coo_matrix((10**10, 5)))",
             "error"),
            ("add_users without user features (none fitted: zero of them)",
             fitted + "m.add_users(np.ones((2, 0)))", "ok"),
            ("predict floats", fitted + "m.predict([0.5], [1])", "error"),
            ("recommend a user beyond (popular items, a warning)", fitted + "m.recommend(99)",
             "ok"),
            ("load a random file", f"HF.load({str(files['random.npz'])!r})", "error")):
        add("HybridFactorization", name, hybrid + call, expect)

    cuts = "from hogwild.problems.graph_cuts import multiway_cut\n"

    def cut(u="[0, 1]", v="[1, 2]", w="[1., 1.]", terminals="{0: 0, 4: 1}", labels=2, n=5,
            more=""):
        return f"multiway_cut({n}, {u}, {v}, {w}, {terminals}, {labels}, epochs=1{more})"

    for name, call in (
            ("u beyond n", cut(u="[0, 9]")), ("v negative", cut(v="[1, -2]")),
            ("u float", cut(u="[0.5, 1]")), ("weights NaN", cut(w="[np.nan, 1.]")),
            ("weights negative", cut(w="[-1., 1.]")),
            ("weights beyond float32", cut(w="[1e39, 1.]")),
            ("terminal beyond n", cut(terminals="{0: 0, 9: 1}")),
            ("terminal label beyond", cut(terminals="{0: 0, 4: 7}")),
            ("a label without terminal", cut(terminals="{0: 0}")),
            ("no terminals", cut(terminals="{}")), ("labels 1", cut(labels=1)),
            ("labels 65", cut(labels=65)), ("n_vertices 0", cut(n=0)),
            ("n_vertices 2**40", cut(n="2**40")),
            ("n_vertices 2**31 - 1 (too big for memory)", cut(n="2**31 - 1", labels=64)),
            ("no edges", cut(u="[]", v="[]", w="[]")),
            ("evaluate given", cut(more=", evaluate=lambda p: {}"))):
        add("multiway_cut", name, cuts + call)
    seg = ("from hogwild.problems.segmentation import segment\n"
           "image = np.random.default_rng(0).random((8, 9))\n")
    for name, call in (
            ("image 1-D", "segment(np.ones(5), np.zeros(5), epochs=1)"),
            ("image 3-D", "segment(np.ones((4, 4, 3)), np.zeros((4, 4)), epochs=1)"),
            ("seeds of another shape", "segment(image, np.zeros((3, 3)), epochs=1)"),
            ("one seed label", "s = np.full((8, 9), -1); s[0, 0] = 0; segment(image, s, epochs=1)"),
            ("no seeds", "segment(image, np.full((8, 9), -1), epochs=1)"),
            ("unary 1e20", "s = np.full((8, 9), -1); s[0, 0] = 0; s[7, 8] = 1\n"
                           "segment(image, s, unary=1e20, epochs=1)"),
            ("connectivity 5", "s = np.full((8, 9), -1); s[0, 0] = 0; s[7, 8] = 1\n"
                               "segment(image, s, connectivity=5, epochs=1)"),
            ("image with NaN", "s = np.full((8, 9), -1); s[0, 0] = 0; s[7, 8] = 1\n"
                               "image[2, 2] = np.nan; segment(image, s, epochs=1)")):
        add("segment", name, seg + call)

    readers = "from hogwild.datasets.svmlight import load_svmlight\n" \
              "from hogwild.datasets.ratings import read_ratings, split_ratings, Ratings\n" \
              "from hogwild.datasets.jumbo import make_jumbo\n" \
              "from hogwild.structure import Graph\n" \
              "from hogwild.checkpoint import load_checkpoint\n"
    good_svm = str(files["good.svm"])
    for name, call in (
            ("load_svmlight n_features 0", f"load_svmlight({good_svm!r}, n_features=0)"),
            ("load_svmlight n_features too small", f"load_svmlight({good_svm!r}, n_features=2)"),
            ("load_svmlight zero_based garbage", f"load_svmlight({good_svm!r}, zero_based='x')"),
            ("load_svmlight extra_features garbage",
             f"load_svmlight({good_svm!r}, extra_features='x')"),
            ("load_svmlight a FIFO", f"load_svmlight({str(files['fifo'])!r})"),
            ("read_ratings a FIFO", f"read_ratings({str(files['fifo'])!r})"),
            ("read_ratings a folder", f"read_ratings({str(files['folder'])!r})"),
            ("split_ratings test_fraction 0",
             f"split_ratings(read_ratings({str(files['good.ratings'])!r}), 0)"),
            ("split_ratings test_fraction NaN",
             f"split_ratings(read_ratings({str(files['good.ratings'])!r}), float('nan'))"),
            ("split_ratings by garbage",
             f"split_ratings(read_ratings({str(files['good.ratings'])!r}), 0.2, by='x')"),
            ("split_ratings of one rating", "split_ratings(Ratings([1], [1], [1.0]), 0.5)"),
            ("Ratings of unequal lengths", "Ratings([1, 2], [1], [1.0])"),
            ("make_jumbo rows 0", "make_jumbo(0, 5, 5, folder=None)"),
            ("make_jumbo rank beyond", "make_jumbo(5, 5, 5, rank=9, folder=None)"),
            ("make_jumbo noise NaN", "make_jumbo(5, 5, 5, noise=float('nan'), folder=None)"),
            ("make_jumbo seed -1", "make_jumbo(5, 5, 5, seed=-1, folder=None)"),
            ("make_jumbo test_ratings 0", "make_jumbo(5, 5, 5, test_ratings=0, folder=None)"),
            ("make_jumbo folder a file", f"make_jumbo(5, 5, 5, folder={good_svm!r})"),
            ("Graph.from_edges beyond n", "Graph.from_edges(3, [0, 5], [1, 2])"),
            ("Graph.from_edges negative n", "Graph.from_edges(-3, [0], [1])"),
            ("load_checkpoint random", f"load_checkpoint({str(files['random.npz'])!r})"),
            ("load_checkpoint edited", f"load_checkpoint({str(files['step_edited.npz'])!r})"),
            ("load_checkpoint a FIFO", f"load_checkpoint({str(files['fifo'])!r})"),
            ("Metric of no samples", "hogwild.Metric('m', loss, (np.zeros(3),), 0)"),
            ("Metric value arity", "hogwild.Metric('m', lambda e: 0.0, (np.zeros(3),), 3)"),
            ("vertex_program of no graph", "hogwild.vertex_program(3, update, (np.zeros(3),))"),
            ("vertex_program consistency garbage",
             "g = Graph.from_edges(3, [0], [1])\n"
             "hogwild.vertex_program(g, update, (np.zeros(3),), consistency='x')"),
            ("download unknown", "from hogwild.datasets.registry import download_dataset\n"
                                 "download_dataset('nosuch')"),
            ("download url without sha", "from hogwild.datasets.registry import download_dataset\n"
                                         "download_dataset('ml-100k', url='file:///x')"),
            ("download a FIFO", "from hogwild.datasets.registry import download_dataset\n"
                                f"download_dataset('ml-100k', url='file://{files['fifo']}', "
                                "sha256='0' * 64)")):
        add("readers and structures", name, readers + call)
    return cases


# --- running and judging ---------------------------------------------------------------------

def judge_output(status, err, timed_out, api):
    """The outcome of a finished (or killed) case."""
    if timed_out:
        return "hang"
    if status < 0:
        return "crash"
    if "Traceback (most recent call last)" in err:
        return "raw" if api else "traceback"
    if status == 0:
        return "ok"
    if api:  # an exception: its message may go on (numba's explanation, say)
        first = [line for line in err.splitlines() if not line.startswith("hogwild: warning: ")]
        return "error" if status == 2 and first and first[0].startswith("hogwild: error: ") \
            else "unclear"
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("hogwild: error: ")]
    others = [line for line in lines if not line.startswith(("hogwild: error: ",
                                                             "hogwild: warning: "))]
    if status == 2 and len(errors) == 1 and not others:
        return "error"
    return "unclear"


def run_case(case, env, timeout, folder):
    """Run one case in ``folder`` (what a run writes by default, a checkpoint on
    Ctrl-C say, stays in the audit's temporary folder)."""
    started = time.monotonic()
    command = [sys.executable, "-m", "hogwild.cli", *case.argv] if case.argv is not None \
        else [sys.executable, "-c", case.code]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True, env=env, cwd=folder,
                               start_new_session=True)
    try:
        _, err = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        _, err = process.communicate()
        timed_out = True
    outcome = judge_output(process.returncode, err, timed_out, case.code is not None)
    raw_type = None
    if outcome == "raw":
        raw_type = err.strip().splitlines()[-1].split(":")[0].strip()
        if case.expect == raw_type:  # a Python convention kept on purpose (TypeError)
            outcome = "error"
    record = {"group": case.group, "case": case.name, "kind": "api" if case.code else "cli",
              "expect": case.expect, "outcome": outcome, "status": process.returncode,
              "seconds": round(time.monotonic() - started, 2)}
    verdict = None
    if outcome == "ok" and case.expect in ("error", "TypeError"):
        verdict = "silent_accept"
    elif outcome == "error" and case.expect == "ok":
        verdict = "wrongly_refused"
    elif outcome not in ("ok", "error"):
        verdict = outcome
    record["failure"] = verdict
    if verdict is not None or outcome == "error":
        record["stderr"] = err.strip()[-600:] if verdict else err.strip().splitlines()[-1][:300]
    if raw_type:
        record["exception"] = raw_type
    return record


def summarise(records, seconds):
    counts = {outcome: sum(r["outcome"] == outcome for r in records) for outcome in OUTCOMES}
    failures = {name: sum(r["failure"] == name for r in records) for name in FAILURES}
    groups = {}
    for r in records:
        row = groups.setdefault(r["group"], {"cases": 0, **dict.fromkeys(FAILURES, 0)})
        row["cases"] += 1
        if r["failure"]:
            row[r["failure"]] += 1
    return {"cases": len(records), "cli_cases": sum(r["kind"] == "cli" for r in records),
            "api_cases": sum(r["kind"] == "api" for r in records), "seconds": round(seconds, 1),
            "outcomes": counts, "failures": failures,
            "failed_cases": [r for r in records if r["failure"]], "groups": groups,
            "records": records}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one case in 12")
    parser.add_argument("--timeout", type=float, default=60,
                        help="seconds before a case counts as a hang (default 60)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--only", default=None, help="only the groups containing this text")
    parser.add_argument("--out", help="also write the JSON document here")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hogwild-audit-") as folder:
        folder = Path(folder)
        cache = folder / "cache"
        env = {**os.environ, "HOGWILD_CACHE_DIR": str(cache), "PYTHONWARNINGS": "ignore"}
        env.pop("RAY_ADDRESS", None)
        files = make_files(folder)
        make_checkpoints(folder, files, env)
        cases = cli_cases(files) + api_cases(files)
        if args.only:
            cases = [c for c in cases if args.only in c.group]
        if args.quick:
            cases = cases[::12]
        with ThreadPoolExecutor(args.jobs) as pool:
            records = list(pool.map(lambda case: run_case(case, env, args.timeout, folder),
                                    cases))
    for record in records:
        if record["failure"]:
            print(f"{record['failure']}: {record['group']}: {record['case']}: "
                  f"{record.get('stderr', '')[-200:]!r}", file=sys.stderr)
    report = summarise(records, time.monotonic() - started)
    publish(report, None, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
