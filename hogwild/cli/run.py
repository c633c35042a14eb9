"""``hogwild run svm|mc|cuts``: train a problem with a progress bar and a line per
epoch, then print a summary (or one JSON object with --json)."""
import contextlib
import json
import sys
import time

import numpy as np

from hogwild.atomic import atomic_file
from hogwild.backends.mpi import job_rank
from hogwild.cli.options import (IMAGE_SUFFIXES, control_fields, estimator_fields,
                                  reading_of, training_fields)
from hogwild.cli.ranks import reports_here
from hogwild.config import TrainingConfig
from hogwild.disk_arrays import csr_row_blocks, on_disk
from hogwild.estimator import drawn_seed
from hogwild.errors import HogwildError
from hogwild.limits import peak_resident_bytes
from hogwild.phases import PhaseLog, phase, recording, seconds_since_launch


def _progress_bar(enabled, unit):
    """A tqdm bar over updates on stderr when tqdm is installed (pip install
    hogwild[cli]); the processes backend moves it during epochs too."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=None, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
                disable=None)


def _epoch_line(record, epochs, unit="updates"):
    test = record.metrics.get("test_error")
    test_text = f"  test error {100 * test:6.2f}%" if test is not None else ""
    if "test_rmse" in record.metrics:
        test_text = f"  test RMSE {record.metrics['test_rmse']:.4f}"
    precision = next((name for name in record.metrics if name.startswith("precision@")), None)
    if precision is not None:
        test_text = f"  {precision} {record.metrics[precision]:.4f}"
    if "rounded_cut" in record.metrics:
        test_text = f"  rounded cut {record.metrics['rounded_cut']:.6g}"
    test_text += "".join(f"  {name.replace('_', ' ')} {value:.4f}"
                         for name, value in record.metrics.items()
                         if name.startswith("validation_"))
    return (f"epoch {record.epoch:>3}/{epochs}  objective {record.objective:.6f}{test_text}"
            f"  {record.updates_per_s / 1e6:7.3f} M {unit}/s  ({record.seconds:.3f} s)")


@contextlib.contextmanager
def _progress(args, unit="updates"):
    """(report, progress, log) for a run: a tqdm bar on stderr that names each
    set-up phase as it starts and then counts updates, a line per epoch (none with
    --json), and the phases' times recorded into ``log`` (a hogwild.phases.PhaseLog)."""
    bar = _progress_bar(enabled=not args.json and job_rank() == 0, unit=unit)

    def report(record):
        if bar is not None:
            bar.write(_epoch_line(record, args.epochs, unit), file=sys.stdout)
        elif not args.json:
            print(_epoch_line(record, args.epochs, unit), flush=True)

    def progress(done, total):
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    log = PhaseLog(on_start=None if bar is None else bar.set_description_str)
    try:
        with recording(log):
            yield report, progress, log
    finally:
        if bar is not None:
            bar.close()


def _kept(model):
    """(the EpochRecord of the model kept, the JSON's and summary's fields of early
    stopping): the best epoch's where early stopping kept it (0: the start), else
    the last's."""
    history, best = model.history_, model.best_epoch_
    fields = {"epochs_run": len(history), "best_epoch": best}
    if best is None:
        return history[-1], fields, ""
    kept = "the start" if best == 0 else f"epoch {best}"
    return model.kept_record_, fields, (f" (early stopping: {kept} kept, {len(history)} "
                                        "epochs run)")


def _train_with_progress(args, train, unit="updates"):
    """Run train(callback, progress) under _progress's bar and epoch lines."""
    with _progress(args, unit) as (report, progress, _):
        train(report, progress)


def _setup_fields(log, model):
    """The JSON's record of set-up and memory: seconds per set-up phase, from launch
    to the first epoch, peak RSS against the data and parameters' own size, and
    how samples streamed from disk (None when they did not)."""
    data_bytes, params_bytes = model.data_bytes_, model.params_bytes_
    peak = peak_resident_bytes()
    first = None if log.training_started is None else \
        seconds_since_launch(log.training_started)
    return {"setup_phase_seconds": log.seconds, "first_epoch_after_launch_s": first,
            "peak_rss_bytes": peak, "data_bytes": data_bytes, "params_bytes": params_bytes,
            "minimum_bytes": data_bytes + params_bytes,
            "peak_over_minimum": peak / max(data_bytes + params_bytes, 1),
            "streaming": model.streaming_}


SCORED_NONZEROS = 1 << 22  # what the training error reads at a time: 32 MB of nonzeros


def _train_error(model, train, pool):
    """The error over the training rows (every rank's, in ``pool``), read a block at
    a time (their files may be truncated or edited once training has read them),
    with their crossed features where they have them; None where any streamed
    from disk (a pass through their map would hold them)."""
    if pool.sum(int(model.streaming_ is not None)):
        return None
    rows = max(1, SCORED_NONZEROS * train.X.shape[0] // max(train.X.nnz, 1))
    crossings = getattr(train, "crossings", None)
    wrong = 0
    for start, (X, y) in zip(range(0, train.X.shape[0], rows),
                             csr_row_blocks(train.X, train.y, rows)):
        block = None if crossings is None else crossings.rows(start, start + X.shape[0])
        wrong += int(np.count_nonzero(model.predict(X, block) != y))
    return pool.sum(wrong) / pool.sum(train.X.shape[0])


def _memory_text(result):
    text = (f"peak memory {result['peak_rss_bytes'] / 2**20:,.0f} MiB "
            f"({result['peak_over_minimum']:.2f}x the data and parameters' "
            f"{result['minimum_bytes'] / 2**20:,.0f} MiB)")
    stream = result["streaming"]
    if stream is not None:
        text += (f", streamed from disk in {stream['chunks_per_epoch']:,} chunks of "
                 f"{stream['chunk_samples']:,} samples (workers waited "
                 f"{stream['read_wait_seconds']:.1f} s for reads)")
    return text


def _history(history, log=None, started=None):
    """The epochs' records for --json; with the run's PhaseLog and start, each
    epoch's elapsed_seconds: from the command's start to the epoch's report."""
    ended = log.epochs_ended[-len(history):] if log is not None else []
    return [{"epoch": r.epoch, "step": r.step, "seconds": r.seconds,
             "objective": r.objective, **r.metrics,
             **({"elapsed_seconds": ended[i] - started} if len(ended) == len(history) else {})}
            for i, r in enumerate(history)]


def workers_text(scheduler, workers, distributed):
    """The summary line's words on who trained: workers (and the Ray nodes that
    were restarted), or for an MPI job its ranks, their threads and the allreduce."""
    if distributed is None or "ranks" not in distributed:
        restarts = (distributed or {}).get("restarts", [])
        return f"{scheduler} x {workers} workers" + (" (restarted: " + ", ".join(
            f"node {r['node']} at clock {r['clock']}" for r in restarts) + ")" if restarts else "")
    dense, sparse = distributed["dense"]["syncs"], distributed["sparse"]["syncs"]
    ways = []
    servers = distributed.get("summation_servers", 0)
    if servers and (dense or not sparse):
        ways.append("the summation service" + (f" x {dense}" if sparse else ""))
    elif dense or not sparse:
        ways.append(f"allreduce {distributed['algorithm']}" + (
            " (the model's choice)" if distributed["algorithm_by"] == "model" else "")
            + (f" x {dense}" if sparse else ""))
    if sparse:
        ways.append("sparse allgather" + (f" x {sparse}" if dense else ""))
    threads, every = distributed["threads_per_rank"], distributed["sync_every"]
    lost = distributed.get("lost_ranks", [])
    survived = (f" ({len(lost)} of {distributed['ranks_at_start']} lost: " + ", ".join(
        f"rank {r['rank']} in epoch {r['epoch']}" for r in lost) + ")") if lost else ""
    ranks = (f"{distributed['ranks_that_train']} ranks and {servers} summation server"
             f"{'s' if servers > 1 else ''}" if servers else f"{distributed['ranks']} ranks")
    return (f"{scheduler} x {ranks}{survived} x {threads} "
            f"thread{'s' if threads != 1 else ''}, changes averaged every "
            f"{f'{every} updates' if every else 'epoch'} by {' and '.join(ways)}")


def replication_text(mode, replicated, asked=None):
    """The summary line's words on replication: nothing for a shared run nobody
    asked otherwise of (``asked``: the --replication given, None for the
    default) unless the default's "auto" chose it among several workers, else the
    mode, its merge rule, and what "auto" chose it from."""
    auto = (replicated or {}).get("auto")
    if mode == "shared" and (auto is None or asked is None and auto["why"] == "one worker"):
        return ""
    merge = f" merged {replicated['merge']}" if auto and auto.get("merge") else ""
    if auto and auto.get("fell_back"):  # copies, then shared from an epoch on
        back = auto["fell_back"]
        return (f", replication {auto['chose']}{merge} (auto: {auto['why']}), shared from "
                f"epoch {back['epoch']} on ({back['why']})")
    return f", replication {mode}{merge}" + (f" (auto: {auto['why']})" if auto else "")


def _format_text(rows):
    """What the JSON says of the rows' format: svmlight, or the hashed formats with
    their hash bits."""
    bits = getattr(rows, "hash_bits", None)
    name = {"VWData": "vw", "DelimitedData": "csv"}.get(type(rows).__name__, "svmlight")
    return name if bits is None else f"{name}, 2^{bits} hashed features"


def _svm_data(args):
    """(train, test, pool) of --data and --test: in an MPI job given part files (a
    folder or pattern), this rank's own share of them (read_own_parts), given one
    uncompressed file (and no summation servers, which hold no samples), its share
    of the file's bytes (read_own_share), and the pool that sums the statistics of
    every rank's; else the whole data set and LOCAL."""
    from hogwild.pooling import LOCAL, JobPool
    from hogwild.datasets.parts import part_files, read_in_shares
    from hogwild.datasets.registry import load_svm_data, reading_bar

    parts = shares = None
    if args.backend == "mpi":
        from hogwild.backends.mpi import agree, import_mpi
        parts = part_files(args.data)
        shares = parts is None and read_in_shares(args.data) and not args.summation_servers
        MPI = import_mpi()  # ranks that would read apart and whole would wait apart
        agree(MPI.COMM_WORLD, "the data", {"data read as": "parts of each host's" if parts
                                           else "shares of one file" if shares else "whole"})
    if parts is None and not shares:
        train, test = load_svm_data(args.data, args.test, progress=not args.json,
                                    reading=reading_of(args))
        return train, test, LOCAL
    from hogwild.datasets.formats import read_own_parts, read_own_share
    comm, bar = MPI.COMM_WORLD, reading_bar(not args.json and job_rank() == 0)
    if parts is None:
        train, test = read_own_share(args.data, reading_of(args), comm, args.test, bar)
    else:
        train, test = read_own_parts(parts, reading_of(args), comm, MPI.Get_processor_name(),
                                     args.test, bar)
    return train, test, JobPool(MPI)


def _hosts(pool, peak):
    """Where each rank held its own samples: the ranks and summed peak RSS of each
    host (None where the ranks hold the whole data set)."""
    if not pool.own:
        return None
    from hogwild.backends.mpi import import_mpi
    hosts = {}
    for rank, (host, rss) in enumerate(pool.every((import_mpi().Get_processor_name(), peak))):
        entry = hosts.setdefault(host, {"ranks": [], "peak_rss_bytes": 0})
        entry["ranks"].append(rank)
        entry["peak_rss_bytes"] += rss
    return hosts


def run_svm(args):
    from hogwild.problems.sparse_svm import SparseSVM

    started = time.perf_counter()
    with _progress(args) as (report, progress, log):
        with phase("read data"):
            train, test, pool = _svm_data(args)
        fields = estimator_fields(args)
        if pool.own:
            fields["distributed"] = {**fields["distributed"], "samples": "own"}
        model = SparseSVM(loss=args.loss, reg=args.reg, fit_intercept=args.fit_intercept,
                          multi_class=args.multi_class, adaptive=args.adaptive,
                          shuffle_rows=not train.trained_in_place, **fields)
        # the report prints every epoch's objective: measure each (fit's default is
        # the last epoch's alone)
        crossings = getattr(train, "crossings", None)
        model.fit(train.X, train.y, sample_weight=getattr(train, "weights", None),
                  eval_set=None if test is None else (test.X, test.y) if crossings is None
                  else (test.X, test.y, test.crossings), crossings=crossings,
                  callback=report, progress=progress, objective_every=1,
                  **control_fields(args))
    train_error = _train_error(model, train, pool) if pool.own or reports_here() else None
    samples, nnz = pool.sum(train.X.shape[0]), pool.sum(int(train.X.nnz))
    hosts = _hosts(pool, peak_resident_bytes())
    if not reports_here():  # in an MPI job, its chief alone writes and reports
        return
    if args.save:
        model.save(args.save)
    history = model.history_
    kept, stopping, stopping_text = _kept(model)
    update_seconds = sum(r.seconds for r in history)
    updates = sum(r.updates for r in history)
    result = {
        "problem": "svm", "data": str(args.data), "format": _format_text(train),
        "quadratic": (model.crossed_ or {}).get("pairs"),
        "n_samples": samples, "n_features": train.X.shape[1], "nnz": nnz, "loss": args.loss,
        "multi_class": args.multi_class,
        "reg": model.reg_, "adaptive": model.adaptive_, "fit_intercept": args.fit_intercept,
        "intercept": float(model.intercept_[0]), "step": model.step_, "decay": model.decay_,
        "schedule": model.step_schedule_,
        "scheduler": args.scheduler, "backend": args.backend, "workers": model.workers_,
        "replication": model.replication_, "replicated": model.replicated_,
        "distributed": model.distributed_,
        "startup_seconds": model.startup_seconds_, "epochs": args.epochs, **stopping,
        "seed": model.seed_, "objective": kept.objective,
        "train_error": train_error,
        "test_error": kept.metrics.get("test_error"),
        "update_seconds": update_seconds, "updates_per_s": updates / update_seconds,
        "nonzeros_per_s": len(history) * nnz / update_seconds,
        **_setup_fields(log, model), **({"hosts": hosts} if hosts else {}),
        "wall_seconds": time.perf_counter() - started,
        "history": _history(history, log, started),
    }
    if args.json:
        print(json.dumps(result))
        return
    train_text = (f", train error {100 * result['train_error']:.2f}%"
                  if result["train_error"] is not None else "")
    test_text = (f", test error {100 * result['test_error']:.2f}%"
                 if result["test_error"] is not None else "")
    print(f"done: {workers_text(args.scheduler, model.workers_, model.distributed_)}"
          f"{replication_text(model.replication_, model.replicated_, args.replication)} "
          f"on {args.data} "
          f"({samples} x {train.X.shape[1]}, {nnz} nonzeros): "
          f"objective {result['objective']:.6f}{train_text}{test_text}{stopping_text}; "
          f"{result['updates_per_s'] / 1e6:.2f} M updates/s, "
          f"{result['nonzeros_per_s'] / 1e6:.1f} M nonzeros/s in the update phase "
          f"({update_seconds:.2f} s), {result['wall_seconds']:.2f} s wall, "
          f"{_memory_text(result)}" + (f"; model saved to {args.save}" if args.save else ""))


def _mc_data(args):
    """(train, test, description, ratings stored in random order?)."""
    from hogwild.datasets.jumbo import make_jumbo, parse_jumbo_spec
    from hogwild.datasets.ratings import read_ratings, split_ratings
    from hogwild.datasets.registry import load_ratings

    if args.data.startswith("jumbo:"):
        if args.test is not None:
            raise HogwildError(f"--test {args.test}: {args.data} brings its own test ratings "
                               "(drawn like its training ratings); leave --test out")
        rows, cols, nnz = parse_jumbo_spec(args.data)
        train, test, info = make_jumbo(rows, cols, nnz, rank=args.jumbo_rank,
                                       noise=args.jumbo_noise, progress=not args.json)
        return train, test, (f"planted rank {info['rank']}, noise {info['noise']:g} (the best "
                             f"achievable RMSE)"), True
    ratings = load_ratings(args.data)
    if args.test is not None:
        return ratings, read_ratings(args.test), f"test file {args.test}", False
    train, test = split_ratings(ratings, args.test_fraction, args.split_seed, args.split)
    return train, test, (f"{args.split} split {1 - args.test_fraction:.0%}/"
                         f"{args.test_fraction:.0%}, seed {args.split_seed}"), False


def run_mc(args):
    from hogwild.problems.matrix_completion import MatrixFactorization

    started = time.perf_counter()
    with _progress(args, "ratings") as (report, progress, log):
        with phase("read data"):
            train, test, split_text, stored_random = _mc_data(args)
        model = MatrixFactorization(  # ratings in files on disk train where they are
            rank=args.rank, model=args.model, reg=args.reg, init_scale=args.init_scale,
            bias_reg=args.bias_reg, grid=args.grid,
            shuffle_ratings=not (stored_random or on_disk(np.asarray(train.values))),
            adaptive=args.adaptive,
            factor_dtype=args.factor_dtype, **estimator_fields(args))
        model.fit(train, eval_set=test, callback=report, progress=progress,
                  **control_fields(args))
    if not reports_here():
        return
    if args.save:
        model.save(args.save)
    history = model.history_
    kept, stopping, stopping_text = _kept(model)
    update_seconds = sum(r.seconds for r in history)
    result = {
        "problem": "mc", "data": str(args.data), "split": split_text,
        "n_ratings": len(train), "n_test": len(test), "n_users": len(model.user_ids_),
        "n_items": len(model.item_ids_), "rank": args.rank, "model": model.model,
        "reg": model.reg_, "bias_reg": model.bias_reg_, "init_scale": model.init_scale_,
        "adaptive": model.adaptive_, "rating_scale": model.rating_scale_,
        "step": model.step_,
        "decay": args.decay, "scheduler": model.scheduler_, "backend": args.backend,
        "replication": model.replication_,
        "workers": model.workers_, "distributed": model.distributed_,
        "replicated": model.replicated_,
        "startup_seconds": model.startup_seconds_,
        "epochs": args.epochs, **stopping, "seed": model.seed_, "objective": kept.objective,
        "test_rmse": kept.metrics["test_rmse"], "update_seconds": update_seconds,
        "ratings_per_s": sum(r.updates for r in history) / update_seconds,
        **_setup_fields(log, model),
        "wall_seconds": time.perf_counter() - started,
        "history": _history(history, log, started),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"done: {workers_text(model.scheduler_, model.workers_, model.distributed_)}"
          f"{replication_text(model.replication_, model.replicated_, args.replication)}, "
          f"{model.model} rank "
          f"{args.rank} "
          f"on {args.data} ({len(train):,} ratings, {result['n_users']:,} users x "
          f"{result['n_items']:,} items; {split_text}): test RMSE {result['test_rmse']:.4f}"
          f"{stopping_text}; "
          f"{result['ratings_per_s'] / 1e6:.2f} M ratings/s in the update phase "
          f"({update_seconds:.2f} s), {result['wall_seconds']:.2f} s wall, "
          f"{_memory_text(result)}" + (f"; model saved to {args.save}" if args.save else ""))


def run_implicit(args):
    from hogwild.datasets.ratings import interactions_from_ratings
    from hogwild.datasets.registry import load_ratings
    from hogwild.problems.matrix_completion import ImplicitFactorization

    started = time.perf_counter()
    with _progress(args, "interactions") as (report, progress, log):
        with phase("read data"):
            data = interactions_from_ratings(load_ratings(args.data), args.threshold,
                                             args.test_fraction, args.split_seed)
        model = ImplicitFactorization(rank=args.rank, loss=args.loss, reg=args.reg,
                                      init_scale=args.init_scale, adaptive=args.adaptive,
                                      max_sampled=args.max_sampled, **estimator_fields(args))
        model.fit(data.train, eval_set=data.test, k=args.k, callback=report,
                  progress=progress, **control_fields(args))
    if args.save:
        model.save(args.save)
    history = model.history_
    kept, stopping, stopping_text = _kept(model)
    update_seconds = sum(r.seconds for r in history)
    measures = kept.metrics
    split_text = (f"ratings >= {args.threshold:g}, per-user split {1 - args.test_fraction:.0%}/"
                  f"{args.test_fraction:.0%}, seed {args.split_seed}")
    result = {
        "problem": "implicit", "data": str(args.data), "split": split_text,
        "n_interactions": int(data.train.nnz), "n_test": int(data.test.nnz),
        "n_users": int(data.user_ids.size), "n_items": int(data.item_ids.size),
        "rank": args.rank, "loss": args.loss, "adaptive": model.adaptive_, "reg": model.reg_,
        "init_scale": model.init_scale_, "max_sampled": args.max_sampled,
        "step": model.step_, "decay": model.decay_, "scheduler": args.scheduler,
        "backend": args.backend, "workers": model.workers_, "epochs": args.epochs,
        **stopping, "seed": model.seed_, "objective": kept.objective, **measures,
        "update_seconds": update_seconds,
        "interactions_per_s": sum(r.updates for r in history) / update_seconds,
        **_setup_fields(log, model),
        "wall_seconds": time.perf_counter() - started,
        "history": _history(history, log, started),
    }
    if args.json:
        print(json.dumps(result))
        return
    k = args.k
    print(f"done: {workers_text(args.scheduler, model.workers_, model.distributed_)}, "
          f"{args.loss} rank {args.rank} on {args.data} ({data.describe()}; {split_text}): "
          f"precision@{k} {measures[f'precision@{k}']:.4f}, recall@{k} "
          f"{measures[f'recall@{k}']:.4f}, ndcg@{k} {measures[f'ndcg@{k}']:.4f}, AUC "
          f"{measures['auc']:.4f}{stopping_text}; "
          f"{result['interactions_per_s'] / 1e6:.2f} M interactions/s "
          f"in the update phase ({update_seconds:.2f} s), {result['wall_seconds']:.2f} s "
          f"wall, {_memory_text(result)}" + (f"; model saved to {args.save}" if args.save
                                             else ""))


def _graph_terminals(spec, n_labels, ids, seed):
    """{vertex index: label} from --terminals for a graph (see its help)."""
    spec = "random" if spec is None else spec
    if spec == "random" or spec.startswith("random:"):
        per_label = 1
        if spec != "random":
            tail = spec[len("random:"):]
            per_label = int(tail) if tail.isdigit() and int(tail) > 0 else 0
            if per_label < 1:
                raise HogwildError(f"--terminals {spec!r}: expected random:K with K >= 1")
        if per_label * n_labels > ids.size:
            raise HogwildError(f"--terminals {spec!r}: {per_label * n_labels} terminals but "
                               f"the graph has {ids.size} vertices")
        from hogwild.problems.graph_cuts import random_terminals
        return random_terminals(ids.size, n_labels, per_label, seed)
    index = {int(vertex_id): i for i, vertex_id in enumerate(ids)}
    terminals = {}
    for item in spec.split(","):
        vertex, _, label = item.strip().partition(":")
        if not (vertex.strip().isdigit() and label.strip().isdigit()):
            raise HogwildError(f"--terminals: expected ID:LABEL, got {item.strip()!r}")
        if int(vertex) not in index:
            raise HogwildError(f"--terminals: vertex {vertex.strip()} is not in the graph")
        given = terminals.setdefault(index[int(vertex)], int(label))
        if given != int(label):
            raise HogwildError(f"--terminals: vertex {int(vertex)} is given two labels, "
                               f"{given} and {int(label)}")
    return terminals


def _image_seeds(args, image, n_labels):
    """(seeds, labels) of an image: automatic seeds for ``n_labels``, or a seed
    image's, whose gray levels say how many labels there are (--labels, if given,
    must agree)."""
    from hogwild.problems import segmentation

    if args.terminals in (None, "auto"):
        return segmentation.auto_seeds(image, n_labels, seed=args.terminal_seed), n_labels
    seeds = segmentation.read_seeds(args.terminals, image.shape)
    levels = int(seeds.max()) + 1
    if args.labels is not None and args.labels != levels:
        raise HogwildError(f"--terminals {args.terminals}: the seed image has {levels} labels "
                           f"(gray levels other than 0), and --labels is {args.labels}; give "
                           f"--labels {levels} or leave it out")
    return seeds, levels


def run_cuts(args):
    from hogwild.datasets.registry import load_graph
    from hogwild.problems.graph_cuts import (cut_weight, exact_two_label_cut, multiway_cut,
                                             nearest_terminal_labels)
    from hogwild.problems import segmentation

    started = time.perf_counter()
    n_labels = args.labels or 2  # bounded by check_numbers
    seed = drawn_seed(args.seed, args.backend)  # recorded: --seed reproduces the run
    fit_options = dict(config=TrainingConfig(**{**training_fields(args), "seed": seed}),
                       **control_fields(args))
    result = {"problem": "cuts", "data": str(args.data),
              "scheduler": args.scheduler, "backend": args.backend, "epochs": args.epochs,
              "replication": args.replication, "seed": seed}
    image_input = str(args.data).lower().endswith(IMAGE_SUFFIXES)
    if image_input:
        image = segmentation.read_gray(args.data)
        seeds, n_labels = _image_seeds(args, image, n_labels)
        holder = {}
        _train_with_progress(args, lambda report, progress: holder.update(zip(
            ("labels", "fit"), segmentation.segment(
                image, seeds, connectivity=args.connectivity, unary=args.unary,
                callback=report, progress=progress, **fit_options))), unit="edges")
        if not reports_here():
            return
        labels, fit = holder["labels"], holder["fit"]
        n_edges = fit.history[0].updates  # pixel links and intensity links
        result.update(width=image.shape[1], height=image.shape[0],
                      seed_pixels=int((seeds >= 0).sum()))
        if args.out:
            segmentation.write_labels(labels, args.out)
    else:
        n, u, v, w, ids = load_graph(args.data, seed=args.terminal_seed)
        terminals = _graph_terminals(args.terminals, n_labels, ids, args.terminal_seed)
        holder = {}
        _train_with_progress(args, lambda report, progress: holder.update(fit=multiway_cut(
            n, u, v, w, terminals, n_labels, callback=report, progress=progress,
            **fit_options)), unit="edges")
        if not reports_here():
            return
        fit = holder["fit"]
        n_edges = u.size
        result.update(vertices=n, terminals=len(terminals), baseline_cut=cut_weight(
            u, v, w.astype(np.float32), nearest_terminal_labels(n, u, v, terminals)))
        if n_labels == 2:
            result["exact_min_cut"] = exact_two_label_cut(n, u, v, w, terminals)
        if args.out:
            with atomic_file(args.out, "w") as out:
                out.writelines(f"{vertex_id} {label}\n"
                               for vertex_id, label in zip(ids.tolist(), fit.labels.tolist()))
    history = fit.history
    update_seconds = sum(r.seconds for r in history)
    result.update(epochs_run=len(history), labels=n_labels, edges=int(n_edges),
                  workers=fit.workers, cut=fit.cut,
                  replication=fit.replication, replicated=fit.replicated,
                  distributed=fit.distributed,
                  relaxation=fit.relaxation, setup_seconds=fit.setup_seconds,
                  update_seconds=update_seconds,
                  edges_per_s=sum(r.updates for r in history) / update_seconds,
                  wall_seconds=time.perf_counter() - started, out=args.out,
                  history=_history(history))
    if args.json:
        print(json.dumps(result))
        return
    references = []
    if result.get("exact_min_cut") is not None:
        references.append(f"exact minimum cut {result['exact_min_cut']:.6g} (SciPy maximum flow)")
    if "baseline_cut" in result:
        references.append(f"nearest-terminal baseline {result['baseline_cut']:.6g}")
    print(f"done: {workers_text(args.scheduler, fit.workers, fit.distributed)}"
          f"{replication_text(fit.replication, fit.replicated, args.replication)}, "
          f"{n_labels} labels on {args.data} "
          f"({n_edges:,} edges): rounded cut {fit.cut:.6g}"
          + (f" ({'; '.join(references)})" if references else "")
          + f", relaxation {fit.relaxation:.6g}; {result['edges_per_s'] / 1e6:.2f} M edges/s "
          f"in the update phase ({update_seconds:.2f} s), {result['wall_seconds']:.2f} s wall"
          + (f"; labels written to {args.out}" if args.out else ""))
