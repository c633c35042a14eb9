"""SparseSVM's defaults judged on data they were not tuned on, beside the tools its
users would otherwise pick: Vowpal Wabbit's defaults and scikit-learn's
SGDClassifier defaults. Prints one JSON document (also --out), Markdown tables
(--markdown) and a figure (--plot).

    python scripts/bench_linear_defaults.py --rounds 3     # about 15 minutes here
    python scripts/bench_linear_defaults.py --quick        # a smoke run

Data: families of generated click logs (hogwild.datasets.clicks: power-law hashed
fields, unit-norm rows, a planted linear model and label noise) around a base of
200,000 rows, 20 fields, 100,000 features and noise 0.5, one knob at a time
(fields 10 and 40, features 10^4 and 10^6, noise 0.25 and 1.0), the 10^6 x 10^6 x
2 x 10^7 log of issue 42, and the real sets in $HOGWILD_DATA (a9a, news20-bydate,
imdb-aclimdb) where present. None of them chose a default: the rules (AdaGrad's
step 2 / mean L1 norm, reg = max(n, p) / n^2 at most 1e-4) were set from a9a,
news20, imdb and the 10^6-row log, and are judged here on the rest too.

Runs, each on the same split:
  - hogwild-1, hogwild-2: SparseSVM() defaults (20 epochs) at 1 and 2 workers; the
    test error after each epoch, and the time of a whole default fit of the first
    epoch count that reaches the target (below), from the call to its return;
  - vw-1, vw-10: Vowpal Wabbit's defaults (--loss_function logistic -b 24; 10
    passes adds -c --passes 10, which holds out every 10th example and stops early
    as VW does by default), trained from its text format in this process, timed
    from the Workspace's creation to its end (its parsing included: that is how
    it reads data);
  - sgdclassifier: SGDClassifier() defaults (hinge, alpha 1e-4, its tolerance
    stop), fit timed.
The target of a set is the best peer's final test error; "to target" is the time
to reach it (None: never within 20 epochs). Medians over --rounds interleaved
rounds; VW and SGDClassifier are deterministic in their results, only their
times vary.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from hogwild.bench.machine import benchmark_arguments, machine_lines, publish, report_header
from hogwild.datasets.clicks import make_clicks
from hogwild.problems.sparse_svm import SparseSVM

BASE = {"rows": 200_000, "fields": 20, "features": 100_000, "noise": 0.5}
VARIATIONS = [{}, {"fields": 10}, {"fields": 40}, {"features": 10_000},
              {"features": 1_000_000}, {"noise": 0.25}, {"noise": 1.0}]
HEADLINE = {"rows": 1_000_000, "fields": 20, "features": 1_000_000, "noise": 0.5}
REAL_SETS = ("a9a", "news20-bydate", "imdb-aclimdb")
EPOCHS = 20
TEST_ROWS = 20_000  # held-out rows of every click log: a test error to +-0.3 points
VW_ARGS = "--loss_function logistic -b 24 --quiet"


def click_sets(quick, scratch):
    """(name, train, test) of the generated click logs (in the data cache, kept for
    the next run; --quick's in the scratch folder)."""
    shapes = [{**BASE, "rows": 20_000, "features": 20_000}] if quick else \
        [{**BASE, **change} for change in VARIATIONS] + [HEADLINE]
    sets = []
    for shape in shapes:
        nnz = shape["rows"] * shape["fields"]
        train, test, _ = make_clicks(shape["rows"], shape["features"], nnz,
                                     noise=shape["noise"], test_rows=TEST_ROWS,
                                     folder=scratch / "quick" if quick else "auto")
        name = f"clicks:{shape['rows']}x{shape['features']}x{nnz} noise {shape['noise']:g}"
        sets.append((name, train, test))
    return sets


def real_sets():
    from hogwild.datasets.registry import load_svm_data
    sets = []
    for name in REAL_SETS:
        try:
            train, test = load_svm_data(name)
        except Exception as exc:  # noqa: BLE001 - absent data: said, then skipped
            print(f"{name}: skipped ({str(exc).splitlines()[0]})", file=sys.stderr)
            continue
        sets.append((name, train, test))
    return sets


def signs(y):
    """Labels as +-1 (the larger class label +1), as VW's logistic loss wants."""
    y = np.asarray(y)
    return np.where(y == np.unique(y)[-1], 1, -1)


def write_vw(X, labels, path):
    """X's rows in Vowpal Wabbit's text format, one namespace."""
    X = X.tocsr()
    with open(path, "w") as out:
        for start in range(0, X.shape[0], 50_000):
            rows = X[start:start + 50_000]
            lines = []
            for r in range(rows.shape[0]):
                lo, hi = rows.indptr[r], rows.indptr[r + 1]
                features = " ".join(f"{j}:{v:.7g}" for j, v in
                                    zip(rows.indices[lo:hi].tolist(), rows.data[lo:hi].tolist()))
                lines.append(f"{labels[start + r]} |f {features}\n")
            out.writelines(lines)


def vw_run(folder, passes, test_labels):
    """(seconds to train, test error) of VW's defaults with ``passes`` passes."""
    import vowpalwabbit
    model, cache = folder / f"model{passes}", folder / f"cache{passes}"
    extra = f" -c --passes {passes} --cache_file {cache} -k" if passes > 1 else ""
    started = time.perf_counter()
    vowpalwabbit.Workspace(f"--data {folder / 'train.vw'} {VW_ARGS} -f {model}{extra}").finish()
    seconds = time.perf_counter() - started
    predictions = folder / f"predictions{passes}"
    vowpalwabbit.Workspace(f"-t -i {model} -d {folder / 'test.vw'} -p {predictions} "
                           "--quiet").finish()
    scores = np.loadtxt(predictions, usecols=0, ndmin=1)
    return seconds, float(np.mean(np.where(scores > 0, 1, -1) != test_labels))


def sgd_default(train, test, seed):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SGDClassifier(random_state=seed).fit(train.X, train.y)
    seconds = time.perf_counter() - started
    return seconds, float(1 - model.score(test.X, np.asarray(test.y)))


def ours_curve(train, test, workers, seed):
    """SparseSVM() defaults: test error after each epoch, and the objectives."""
    model = SparseSVM(workers=workers, random_state=seed, epochs=EPOCHS,
                      shuffle_rows=not train.random_order)
    model.fit(train.X, train.y, eval_set=(test.X, test.y), objective_every=1)
    return ([r.metrics["test_error"] for r in model.history_],
            [r.objective for r in model.history_], model)


def ours_to(train, workers, seed, errors, target):
    """Seconds of a whole default fit of the first epoch count whose error in
    ``errors`` reaches ``target`` (None if none does), with that count."""
    k = next((e for e, error in enumerate(errors, 1) if error <= target), None)
    if k is None:
        return None, None
    started = time.perf_counter()
    SparseSVM(workers=workers, random_state=seed, epochs=k,
              shuffle_rows=not train.random_order).fit(train.X, train.y)
    return time.perf_counter() - started, k


def vw_available():
    """Whether Vowpal Wabbit's Python package is installed (pip install vowpalwabbit,
    in the bench extra); without it the VW rows are left out and said to be."""
    try:
        import vowpalwabbit  # noqa: F401
    except ImportError:
        return False
    return True


def bench(name, train, test, rounds, seed, scratch, with_vw):
    folder = scratch / name.replace(":", "_").replace(" ", "_")
    folder.mkdir()
    test_labels = signs(test.y)
    if with_vw:
        write_vw(train.X, signs(train.y), folder / "train.vw")
        write_vw(test.X, test_labels, folder / "test.vw")
    runs = {key: [] for key in ("vw-1", "vw-10") if with_vw}
    runs["sgdclassifier"] = []
    curves = {}
    SparseSVM(workers=1, epochs=1, random_state=seed, shuffle_rows=not train.random_order).fit(
        train.X, train.y)  # the first fit of a process loads the compiled loops
    for r in range(rounds):
        for passes in (1, 10) if with_vw else ():
            runs[f"vw-{passes}"].append(vw_run(folder, passes, test_labels))
        runs["sgdclassifier"].append(sgd_default(train, test, seed + r))
        for workers in (1, 2):
            errors, objectives, model = ours_curve(train, test, workers, seed + r)
            curves.setdefault(f"hogwild-{workers}", []).append(
                {"test_error": errors, "objective": objectives, "reg": model.reg_,
                 "step": model.step_, "replication": model.replication_,
                 "replicated": model.replicated_})
    peers = {key: {"seconds": statistics.median(s for s, _ in values),
                   "test_error": statistics.median(e for _, e in values)}
             for key, values in runs.items()}
    target = min(peer["test_error"] for peer in peers.values())
    ours = {}
    for key, rounds_of in curves.items():
        workers = int(key.split("-")[1])
        timed = [ours_to(train, workers, seed + r, c["test_error"], target)
                 for r, c in enumerate(rounds_of)]
        seconds = [s for s, _ in timed]
        objectives = rounds_of[0]["objective"]
        ours[key] = {
            "test_error": statistics.median(c["test_error"][-1] for c in rounds_of),
            "seconds_to_target": None if None in seconds else statistics.median(seconds),
            "epochs_to_target": [k for _, k in timed],
            "objective_rises": max(sum(b > a for a, b in zip(c["objective"],
                                                             c["objective"][1:]))
                                   for c in rounds_of),
            "largest_rise": max(max((b - a) / abs(a) for a, b in zip(c["objective"],
                                                                      c["objective"][1:]))
                                for c in rounds_of),
            "objective_first_last": [objectives[0], objectives[-1]],
            "curve": [statistics.median(c["test_error"][e] for c in rounds_of)
                      for e in range(EPOCHS)],
            "reg": rounds_of[0]["reg"], "step": rounds_of[0]["step"],
            "replication": [c["replication"] for c in rounds_of]}
    return {"set": name, "rows": train.X.shape[0], "features": train.X.shape[1],
            "nnz": int(train.X.nnz), "target": target, "peers": peers, "ours": ours}


def whole_process(spec, scratch):
    """Issue 42's headline, as a user runs each from a shell: `hogwild run svm --data
    SPEC --epochs 10 --json` against VW's defaults on the same rows as text, each a
    whole process timed from its start; ours to VW's 1-pass error is the process's
    time before its first epoch plus the epochs' elapsed time."""
    from hogwild.datasets.clicks import parse_clicks_spec
    rows, features, nnz = parse_clicks_spec(spec)
    train, test, _ = make_clicks(rows, features, nnz)
    folder = scratch / "whole"
    folder.mkdir()
    test_labels = signs(test.y)
    write_vw(train.X, signs(train.y), folder / "train.vw")
    write_vw(test.X, test_labels, folder / "test.vw")
    vw_code = ("import vowpalwabbit; vowpalwabbit.Workspace("
               f"'--data {folder / 'train.vw'} {VW_ARGS} -f {folder / 'model1'}').finish()")
    results = {"vw": [], "hogwild": []}
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", vw_code], check=True)
        results["vw"].append(time.perf_counter() - started)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "hogwild.cli", "run", "svm", "--data", spec,
                               "--epochs", "10", "--json"], check=True, capture_output=True,
                              text=True)
        wall = time.perf_counter() - started
        import json
        report = json.loads(done.stdout)
        results["hogwild"].append({"process_seconds": wall, "report": {
            key: report[key] for key in ("test_error", "wall_seconds", "workers", "reg")},
            "history": [{k: h[k] for k in ("objective", "test_error", "elapsed_seconds")}
                        for h in report["history"]]})
    _, vw_error = vw_run(folder, 1, test_labels)
    before_run = [r["process_seconds"] - r["report"]["wall_seconds"] for r in results["hogwild"]]
    to_vw = []
    for r, lead in zip(results["hogwild"], before_run):
        hit = next((h["elapsed_seconds"] for h in r["history"] if h["test_error"] <= vw_error),
                   None)
        to_vw.append(None if hit is None else lead + hit)
    return {"spec": spec, "vw_1_pass_error": vw_error,
            "vw_process_seconds": statistics.median(results["vw"]),
            "hogwild_process_seconds_to_vw_error": None if None in to_vw
            else statistics.median(to_vw),
            "hogwild_final_test_error": statistics.median(
                r["report"]["test_error"] for r in results["hogwild"]),
            "rounds": results}


def to_markdown(report):
    lines = ["# SparseSVM defaults beside Vowpal Wabbit and SGDClassifier", "",
             *machine_lines(report),
             "Test error (median of rounds) and seconds to the best peer's final error "
             "(a whole default fit; VW's from its Workspace's start, parsing included).", "",
             "| set | target | ours 1w | ours 2w | to target 1w | to target 2w | VW 1 pass "
             "| VW 10 passes | SGDClassifier | objective: rises, largest, last/first |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def seconds(value):
        return "never" if value is None else f"{value:.2f} s"

    def peer(p, key):
        if key not in p:
            return "not installed"
        return f"{100 * p[key]['test_error']:.2f}% ({p[key]['seconds']:.2f} s)"
    for r in report["sets"]:
        o, p = r["ours"], r["peers"]
        first, last = o["hogwild-1"]["objective_first_last"]
        last_over_first = last / first
        lines.append(
            f"| {r['set']} | {100 * r['target']:.2f}% "
            f"| {100 * o['hogwild-1']['test_error']:.2f}% "
            f"| {100 * o['hogwild-2']['test_error']:.2f}% "
            f"| {seconds(o['hogwild-1']['seconds_to_target'])} "
            f"| {seconds(o['hogwild-2']['seconds_to_target'])} "
            f"| {peer(p, 'vw-1')} | {peer(p, 'vw-10')} | {peer(p, 'sgdclassifier')} "
            f"| {o['hogwild-1']['objective_rises']}, {o['hogwild-2']['objective_rises']}; "
            f"{100 * max(o[k]['largest_rise'] for k in o):+.2f}%; {last_over_first:.3f} |")
    whole = report.get("whole_process")
    if whole:
        ours = seconds(whole["hogwild_process_seconds_to_vw_error"])
        lines += ["", f"Whole processes on {whole['spec']}: Vowpal Wabbit's 1 pass "
                      f"{whole['vw_process_seconds']:.2f} s to "
                      f"{100 * whole['vw_1_pass_error']:.2f}%; `hogwild run svm --epochs 10` "
                      f"{ours} to that error, {100 * whole['hogwild_final_test_error']:.2f}% "
                      "after 10 epochs (medians of 3)."]
    return "\n".join(lines)


def plot(report, path):
    from hogwild.bench.figures import panels, save
    sets = report["sets"]
    figure, axes = panels(len(sets))
    for ax, r in zip(axes, sets):
        epochs = range(1, EPOCHS + 1)
        for key in ("hogwild-1", "hogwild-2"):
            ax.plot(epochs, [100 * e for e in r["ours"][key]["curve"]], label=key)
        for key, style in (("vw-1", ":"), ("vw-10", "--"), ("sgdclassifier", "-.")):
            if key not in r["peers"]:
                continue
            ax.axhline(100 * r["peers"][key]["test_error"], linestyle=style, color="grey",
                       label=key)
        ax.set_title(r["set"], fontsize=8)
        ax.set_xlabel("epoch")
        ax.set_ylabel("test error (%)")
        ax.legend(fontsize=7)
    save(figure, path)


def main(argv=None):
    parser = benchmark_arguments(__doc__.split("\n\n")[0], "small generated data, 1 round")
    parser.add_argument("--plot", help="also draw the error curves to this PNG")
    parser.add_argument("--no-whole", action="store_true",
                        help="leave out the whole-process comparison on the 10^6-row log")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    report = report_header("linear_defaults", args, ("vowpalwabbit", "scikit-learn"))
    with_vw = vw_available()
    report["vowpalwabbit"] = with_vw
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        sets = click_sets(args.quick, scratch) + ([] if args.quick else real_sets())
        report["sets"] = []
        for name, train, test in sets:
            print(f"{name} ...", file=sys.stderr, flush=True)
            report["sets"].append(bench(name, train, test, rounds, args.seed, scratch,
                                        with_vw))
        if with_vw and not (args.quick or args.no_whole):
            report["whole_process"] = whole_process(
                f"clicks:{HEADLINE['rows']}x{HEADLINE['features']}x"
                f"{HEADLINE['rows'] * HEADLINE['fields']}", scratch)
    publish(report, to_markdown, args.out, args.markdown)
    if args.plot:
        plot(report, args.plot)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
