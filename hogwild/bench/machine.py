"""What a benchmark needs to say about the machine it ran on: CPU, cores, memory,
library versions, and the ceiling a 2-thread run can reach here."""
import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time

import numpy as np

from hogwild.limits import usable_cores


def timed_threads(calls):
    """Run each (function, args) of ``calls`` on its own thread at once; the wall
    seconds until the last one ends (the functions release the GIL: nogil loops)."""
    threads = [threading.Thread(target=function, args=args) for function, args in calls]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def compute_ceiling(seconds=1.0):
    """2-thread / 1-thread throughput of a pure-compute nogil loop (no shared data)."""
    from numba import njit

    @njit(nogil=True)
    def spin(n):
        acc = 0.0
        for i in range(n):
            acc += (i % 7) * 0.5
        return acc

    spin(10)
    n = 10_000_000
    start = time.perf_counter()
    spin(n)
    n = int(n * seconds / (time.perf_counter() - start))
    rates = {1: [], 2: []}
    for _ in range(3):
        for threads in (1, 2):
            workers = [threading.Thread(target=spin, args=(n,)) for _ in range(threads)]
            start = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            rates[threads].append(threads * n / (time.perf_counter() - start))
    return statistics.median(rates[2]) / statistics.median(rates[1])


def describe_machine(extra_packages=()):
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import numba
    import scipy
    versions = {"python": platform.python_version(), "numpy": np.__version__,
                "numba": numba.__version__, "scipy": scipy.__version__}
    from importlib.metadata import PackageNotFoundError, version
    for package in extra_packages:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "usable_cores": usable_cores(), "memory_gib": round(memory_gib, 1),
            "platform": platform.platform(), "versions": versions}


def progress_bar(total, unit, enabled=True):
    """A tqdm bar of ``total`` steps on stderr (None when disabled, when tqdm is not
    installed, or when stderr is not a terminal)."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit=unit, file=sys.stderr, leave=False, disable=None)


def publish(report, to_markdown, out=None, markdown_path=None):
    """Print a benchmark report as JSON on stdout, and also write it to ``out`` and
    its Markdown rendering ``to_markdown(report)`` to ``markdown_path`` if given."""
    text = json.dumps(report, indent=1)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    if markdown_path:
        with open(markdown_path, "w") as f:
            f.write(to_markdown(report) + "\n")


def benchmark_arguments(description, quick_help):
    """The options every benchmark script takes: --quick, --rounds, --seed, --out,
    --markdown."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the JSON document to this file")
    parser.add_argument("--markdown", help="also write the results as Markdown tables here")
    return parser


def report_header(name, args, extra_packages=()):
    """The opening of every benchmark report: its name, whether it was --quick, the
    machine, and the machine's own 2-thread compute ceiling."""
    return {"benchmark": name, "quick": args.quick,
            "machine": describe_machine(extra_packages),
            "compute_ceiling_2_over_1": compute_ceiling(0.3 if args.quick else 1.0)}


def machine_lines(report):
    """Markdown lines naming the machine of a report and its 2-thread ceiling."""
    m = report["machine"]
    return [f"Machine: {m['cpu']}, {m['usable_cores']} usable cores, {m['memory_gib']} GiB; "
            f"{', '.join(f'{k} {v}' for k, v in m['versions'].items())}.",
            f"Pure-compute ceiling for 2 threads vs 1 on this machine: "
            f"{report['compute_ceiling_2_over_1']:.2f}x.", ""]


def update_seconds_to(target, seconds, rmse):
    """Summed ``seconds`` until ``rmse`` (per epoch) first is <= ``target``, or None."""
    reached = [k for k, value in enumerate(rmse) if value <= target]
    return float(np.sum(seconds[:reached[0] + 1])) if reached else None
