"""Bounds on a run that every backend and problem applies the same way: the usable
cores, the most workers per core, the most epochs, the memory data may take."""
import math
import os

from hogwild.errors import HogwildError, check_int


def usable_cores():
    """Cores this process may run on (respects affinity masks and cgroups' cpusets)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


MAX_EPOCHS = 1_000_000  # more is a typo (and epochs x samples could overflow int64)
OVERSUBSCRIBE_FACTOR = 4  # workers per usable core allowed without oversubscribe=True
OVERSUBSCRIBED_FACTOR = 64  # and with it: beyond, threads or processes only thrash
# The default worker count gives each worker at least this much of the samples'
# data: a smaller share is over before a second thread is worth starting (SVM
# epochs measured here: 2 workers take 0.52x one's rate at 16 KiB, 1.01x at 164 KiB,
# 1.20x at 492 KiB), and one worker is also bitwise reproducible.
MIN_DATA_BYTES_PER_WORKER = 128 << 10
# What a linear model needs per feature, at least: weights and their degree-scaled
# regulariser (float32 each), the feature degrees (int64) and the engine's copy of
# the weights (float32).
MODEL_BYTES_PER_FEATURE = 20


def check_workers(workers, oversubscribe=False, name="workers"):
    """The number of CPU workers (default: the usable cores). More than
    OVERSUBSCRIBE_FACTOR per usable core is refused unless ``oversubscribe``:
    they would mostly wait for a core, and 1000 processes can exhaust memory; more
    than OVERSUBSCRIBED_FACTOR per core is refused even then. ``name`` says what
    is counted (workers, MPI ranks, Ray node threads)."""
    if workers is None:
        return usable_cores()
    workers = check_int(name, workers, 1)
    cores = usable_cores()
    if workers > OVERSUBSCRIBE_FACTOR * cores and not oversubscribe:
        raise HogwildError(f"{name}={workers} is more than {OVERSUBSCRIBE_FACTOR} per usable "
                           f"core ({cores} here); use at most {OVERSUBSCRIBE_FACTOR * cores}, or "
                           "oversubscribe=True (--oversubscribe) to run them anyway")
    if workers > OVERSUBSCRIBED_FACTOR * cores:
        raise HogwildError(f"{name}={workers} is more than {OVERSUBSCRIBED_FACTOR} per usable "
                           f"core ({cores} here), even oversubscribed; use at most "
                           f"{OVERSUBSCRIBED_FACTOR * cores}")
    return workers


def default_workers(cores, data_bytes):
    """Workers for a run that did not ask: the usable ``cores``, but no more than
    one per MIN_DATA_BYTES_PER_WORKER of the samples' ``data_bytes``."""
    return max(1, min(cores, data_bytes // MIN_DATA_BYTES_PER_WORKER))


def physical_memory():
    """This machine's memory in bytes (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def return_freed_memory():
    """Hand memory that large freed temporaries left in the allocator back to the
    kernel. glibc raises its mmap threshold (up to 32 MiB) after a large block is
    freed, so later blocks below it come from per-thread arenas, which keep them
    once freed: chunks made on every core by a generator then stay in the process's
    resident memory for the whole run (measured: 60 MB of 800 MB of data). A no-op
    without glibc."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def peak_resident_bytes():
    """This process's peak resident memory in bytes. Linux's VmHWM belongs to the
    process's own address space; getrusage's ru_maxrss (the fallback elsewhere)
    survives exec, so a process started by a larger one would report its parent's
    peak (measured: 4.05 GB for a 10 MB run launched from a benchmark)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def available_memory():
    """The memory a new allocation can have now without swapping or the OOM killer,
    in bytes: Linux's MemAvailable (free memory plus the page cache it can drop),
    else the free pages, else the physical memory, else None; and no more than
    this process's control group has left. Data that cannot fit is refused up
    front, naming what it needs, rather than discovered by the OOM killer."""
    available = None
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            available = physical_memory()
    left = _control_group_left()
    return left if available is None or (left is not None and left < available) else available


def _control_group_left():
    """Bytes this process's memory control group may still take (cgroup v2 or v1),
    or None where it sets no limit."""
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit) as f:
                cap = f.read().strip()
            with open(usage) as f:
                used = int(f.read())
        except (OSError, ValueError):
            continue
        if cap.isdigit() and int(cap) < 2**60:
            return max(int(cap) - used, 0)
    return None


def size_text(nbytes):
    """Bytes for a person: 8.0 GB, 512.0 MB (decimal units, as --memory takes them)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{int(nbytes)} bytes"


def parse_size(text):
    """Bytes of a size such as 8GB, 512MB, 1.5GiB or 4096 (a HogwildError otherwise)."""
    units = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "k": 1e3, "m": 1e6,
             "g": 1e9, "t": 1e12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
    raw = str(text).strip().lower().replace(" ", "").replace("_", "")
    number = raw.rstrip("kmgtib")
    unit = raw[len(number):]
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise HogwildError(f"memory {text!r}: expected a size such as 8GB, 512MB, 1.5GiB or a "
                           "number of bytes")
    return int(value)
