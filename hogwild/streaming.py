"""Training from disk: samples larger than the memory a run may use, read chunk by
chunk while the workers train on the chunk before.

An objective's per-sample arrays (one row per sample: a rating's user, item and
value) that are read-only memory maps of .npy files (the binary caches of
hogwild.datasets, a Jumbo matrix) stay on disk when they do not fit in the
``memory`` a run may use beside its parameters. Each epoch then visits the
samples a chunk at a time through two in-memory slots: while the workers run the
chunk in one slot, a background thread reads the next one into the other (plain
file reads, which release the GIL and leave the pages in the kernel's cache, not
in this process). The parameters and every other array stay in memory. The GPU
backend's SampleStream and LIBMF's on-disk mode are the models.

The epoch's plan is drawn as for data in memory and cut into chunks:
- shuffled plans (hogwild, serial, locked): a chunk is a range of consecutive
  samples holding whole runs (shuffle_block); the chunks come in the order in
  which the plan's runs first reach them, each chunk's runs in the plan's order,
  dealt to the workers as in memory. With shuffle_block equal to the chunk, a
  serial run is bitwise the in-memory serial run with that shuffle_block.
- gated plans (blocked): a chunk is one round of the grid (blocks that share no
  row or column), read block by block; the rounds come in the plan's order, so
  the result is bitwise the in-memory blocked run (rounds meet gates in memory,
  a barrier here: each block sees the same parameters either way).
fpsgd, colored and cyclades plans have no such cut and are refused.

Rows of a sparse matrix (Objective.sample_offsets names its indptr) stream with
their nonzeros: a slot holds a chunk's per-sample arrays and offsets (those kept
in memory are copied in too, so that a sample is one index in the slot) and its
nonzeros, read from their files, with the offsets rebased to where they lie in
the slot; a chunk is cut at whole runs within both the slot's samples and its
nonzeros. A serial run is then bitwise the in-memory one as above, for kernels
that do not key draws by a sample's index (the SVM's thinned lazy draws are
keyed so: streamed hinge or intercept runs are equal in distribution only).

The epoch's objective is estimated on its last chunk: the mean loss of that
chunk's samples after the epoch's updates (a whole pass more would read the data
from disk twice an epoch, and a loss pass over every chunk in memory costs as much
as its updates). A file that is
truncated, replaced or modified while the run reads it is a HogwildError naming
it, never a silently different sample.
"""
import os
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from hogwild.disk_arrays import file_of, in_memory, on_disk, read_rows
from hogwild.errors import HogwildError
from hogwild.file_content import combined, recorded
from hogwild.limits import size_text
from hogwild.schedulers.plan import EpochPlan, even_spans

STREAMED_KINDS = ("spans", "locked", "gated")
SLOTS = 2  # one chunk trained while the next is read


@dataclass(frozen=True)
class _File:
    """Where one per-sample array lies on disk, and what it was when the run began."""

    path: str
    offset: int
    row_bytes: int
    identity: tuple  # (device, inode, size, modification time)


def _identity(stat):
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def plan_stream(data, n_samples, params_bytes, memory, kind, run_length, backend,
                offsets=None, copy_limit=None, slots_bytes=None):
    """The SampleStream for a run, or None when its samples fit in ``memory``
    (bytes, beside the parameters) and in ``copy_limit`` (bytes; None: no other
    bound), or are not on disk. ``offsets``: the index of the data array of
    per-sample offsets into per-nonzero arrays (a CSR matrix's indptr;
    Objective.sample_offsets), whose nonzeros then stream with their samples.
    ``slots_bytes``: what the stream's slots may take (None: all the room left).
    A HogwildError when the parameters alone exceed ``memory``, or the data must
    stream but the scheduler or backend cannot."""
    roles = _roles(data, n_samples, offsets)
    streamable = [i for i, role in roles.items()
                  if on_disk(data[i]) and role in ("sample", "nonzero")]
    resident = sum(a.nbytes for i, a in enumerate(data) if i not in streamable)
    if params_bytes + resident > memory:
        raise HogwildError(
            f"memory {size_text(memory)} is less than the parameters need "
            f"({size_text(params_bytes)})" if params_bytes > memory else
            f"memory {size_text(memory)} is less than the run holds in memory: parameters "
            f"{size_text(params_bytes)} and data {size_text(resident)} (only samples in "
            "files on disk, read-only memory maps, can be streamed)")
    samples_bytes = sum(data[i].nbytes for i in streamable)
    room = memory - params_bytes - resident
    if samples_bytes <= room and (copy_limit is None or samples_bytes <= copy_limit):
        return None
    if slots_bytes is not None:
        room = min(room, slots_bytes)
    if kind not in STREAMED_KINDS or (offsets is not None and kind == "gated"):
        raise HogwildError(f"the samples ({size_text(samples_bytes)}) do not fit in memory "
                           f"{size_text(memory)} beside the parameters; streaming them from "
                           f"disk runs the schedulers hogwild, serial, locked and blocked, "
                           f"not this one (plan kind {kind!r})")
    if not backend.streams_samples:
        raise HogwildError(f"the samples ({size_text(samples_bytes)}) do not fit in memory "
                           f"{size_text(memory)} beside the parameters; streaming them from "
                           f"disk runs on the backends threads and processes, not "
                           f"{backend.name!r}")
    if offsets is None:
        roles = {i: roles[i] for i in streamable}  # arrays in memory stay whole
    sample_bytes = sum(_row_bytes(data[i]) for i, r in roles.items() if r != "nonzero")
    nonzero_bytes = sum(_row_bytes(data[i]) for i, r in roles.items() if r == "nonzero")
    per_sample = nonzero_bytes * (int(data[offsets][-1]) / n_samples if offsets is not None
                                  else 0)
    capacity = int(room // (SLOTS * (sample_bytes + per_sample)))
    nonzeros = int(capacity * per_sample // nonzero_bytes) if nonzero_bytes else 0
    needed = run_length if kind != "gated" else 1
    needed = max(needed, 1)
    if capacity < needed:
        raise HogwildError(f"memory {size_text(memory)} leaves {size_text(room)} for samples "
                           f"beside the parameters ({size_text(params_bytes)}): too little "
                           f"for two chunks of {needed:,} sample{'s' if needed > 1 else ''} "
                           f"({size_text(SLOTS * needed * (sample_bytes + per_sample))})")
    return SampleStream(data, n_samples, roles, capacity, nonzeros, memory)


def _roles(data, n_samples, offsets):
    """{index: "sample" | "offsets" | "nonzero"} of the data arrays that stream
    with the samples: per-sample arrays (one row per sample), and with ``offsets``
    that array and the per-nonzero arrays it indexes (those of its last offset's
    length that are on disk)."""
    roles = {}
    total = int(data[offsets][-1]) if offsets is not None else None
    for i, a in enumerate(data):
        if i == offsets:
            roles[i] = "offsets"
        elif total is not None and a.ndim == 1 and a.shape[0] == total and on_disk(a):
            roles[i] = "nonzero"
        elif a.ndim >= 1 and a.shape[0] == n_samples:
            roles[i] = "sample"
    if offsets is not None and "nonzero" not in roles.values():
        return {i: r for i, r in roles.items() if r == "sample"}  # nothing ragged on disk
    return roles


def _row_bytes(array):
    return array.itemsize * int(np.prod(array.shape[1:]))


class SampleStream:
    """Per-sample arrays read into SLOTS slots of ``capacity`` samples each (see the
    module docstring); with per-nonzero arrays (``roles`` has "offsets"), each slot
    also holds ``nonzeros`` of them, and the slot's offsets are rebased to point
    into it. ``data`` is the tuple the workers see: each streamed array replaced by
    its slots, the rest read into memory (a file's map may be truncated under the
    run); after the backend shares it, ``attach`` names the
    arrays to fill (shared memory for processes)."""

    def __init__(self, data, n_samples, roles, capacity, nonzeros, memory):
        self.n, self.capacity, self.nonzeros, self.memory = n_samples, capacity, nonzeros, memory
        self.roles = roles
        self.offsets = next((i for i, r in roles.items() if r == "offsets"), None)
        # a ragged slot keeps one sample more: its last sample's end offset
        self.stride = capacity + (self.offsets is not None)
        self.streamed = tuple(i for i in roles if on_disk(data[i]))
        self.sources = {i: data[i] for i in roles}
        self.files = {}
        # the whole array's CRC-32 as a data cache checked it, where one did: the
        # first epoch's reads must add up to it (see hogwild.file_content)
        self._unverified = {}
        for i in self.streamed:
            path, offset = file_of(data[i])
            with open(path, "rb") as f:
                stat = os.fstat(f.fileno())
            self.files[i] = _File(path, offset, _row_bytes(data[i]), _identity(stat))
            checked = recorded(data[i], stat)
            if checked is not None and roles[i] in ("sample", "nonzero"):
                self._unverified[i] = checked
        self.data = tuple(np.empty((SLOTS * (nonzeros if roles.get(i) == "nonzero" else
                                             self.stride),) + a.shape[1:], a.dtype)
                          if i in roles else in_memory(a) for i, a in enumerate(data))
        self.buffers = self.data
        self._handles = {i: open(f.path, "rb", buffering=0) for i, f in self.files.items()}
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="hogwild-reader")
        self.chunks_per_epoch = 0
        # Content, not the file's time: each range's CRC-32 at its first read, and the
        # ranges whose samples were index-checked (see attach)
        self._digests, self._seen, self._check_samples = {}, set(), None
        self.read_wait_seconds = 0.0  # workers idle for the disk, over the whole run
        self._starts = None

    def attach(self, shared, check):
        """The data tuple as the backend shared it: slots are filled there.
        ``check(first, last)`` runs the objective's loss with every index checked over
        samples first..last-1 of the slots (IndexError past an array's end): each
        range of samples is checked when it is first read, since the file may have
        changed since the run's whole-file check."""
        self.buffers, self._check_samples = shared, check

    def first_samples(self, count):
        """(data, k): samples 0..k-1 read into slot 0, k <= count as many as a slot
        holds, for the objective's value before training."""
        count = min(count, self.capacity)
        if self.offsets is not None:
            ends = self.sources[self.offsets]
            while count > 1 and int(ends[count]) - int(ends[0]) > self.nonzeros:
                count //= 2
        self._read(0, [(0, count)])
        return self._view(0, count), count

    def _view(self, slot, length):
        """The data with each per-sample array cut to ``slot``'s first ``length``
        samples (per-nonzero arrays whole: the slot's offsets point into them)."""
        base = slot * self.stride
        extra = {"sample": 0, "offsets": 1}
        return tuple(a[base:base + length + extra[self.roles[i]]]
                     if self.roles.get(i) in extra else a
                     for i, a in enumerate(self.buffers))

    def report(self):
        """The chunking, for FitResult.streaming and the CLI's JSON."""
        return {"memory_bytes": self.memory, "chunk_samples": self.capacity,
                "chunk_nonzeros": self.nonzeros if self.offsets is not None else None,
                "slots": SLOTS, "chunks_per_epoch": self.chunks_per_epoch,
                "slot_bytes": sum(self.data[i].nbytes for i in self.roles) // SLOTS,
                "read_wait_seconds": self.read_wait_seconds,
                "files": [f.path for f in self.files.values()]}

    def close(self):
        self._reader.shutdown(wait=True)
        for handle in self._handles.values():
            handle.close()

    # -- reading -------------------------------------------------------------------

    def _read(self, slot, ranges):
        """Fill ``slot`` with samples lo..hi-1 of each (lo, hi) of ``ranges``, one after
        another (one read at a time: run_epoch waits for a read before it asks for the
        next); with per-nonzero arrays, their nonzeros too, and the slot's offsets
        rebased to where they lie in it."""
        for i, file in self.files.items():
            self._check(i, file)
        at = slot * self.stride
        nonzero_at = slot * self.nonzeros
        first_read = any((lo, hi) not in self._seen for lo, hi in ranges)
        for lo, hi in ranges:
            if self.offsets is not None:
                ends = self.sources[self.offsets]
                first, last = int(ends[lo]), int(ends[hi])
                self._fill(self.offsets, at, lo, hi + 1)
                target = self.buffers[self.offsets][at:at + hi - lo + 1]
                target += target.dtype.type(nonzero_at - first)
            for i, role in self.roles.items():
                if role == "sample":
                    self._fill(i, at, lo, hi)
                elif role == "nonzero":
                    self._fill(i, nonzero_at, first, last)
            at += hi - lo
            if self.offsets is not None:
                nonzero_at += last - first
        for i, file in self.files.items():
            self._check(i, file)  # a write during the read changes the time
        if first_read and self._check_samples is not None:
            self._seen.update(ranges)
            base = slot * self.stride
            try:
                self._check_samples(base, base + sum(hi - lo for lo, hi in ranges))
            except IndexError:
                raise HogwildError(
                    f"a sample read from {', '.join(f.path for f in self.files.values())} "
                    "has an id beyond the array it indexes: a file was modified while the run "
                    "read it; the run stops rather than train on data other than the data it "
                    "started with") from None

    def _fill(self, i, at, lo, hi):
        """Rows lo..hi-1 of data array i into its slots' buffer from position ``at``."""
        if i not in self.files:
            self.buffers[i][at:at + hi - lo] = self.sources[i][lo:hi]
            return
        file = self.files[i]
        if not read_rows(self._handles[i].fileno(), self.buffers[i], at, hi - lo,
                         file.offset + lo * file.row_bytes):
            raise HogwildError(f"{file.path} was truncated while the run read it: "
                               f"rows {lo:,}..{hi - 1:,} are missing; the run "
                               "stops rather than train on part of its data")
        digest = zlib.crc32(self.buffers[i][at:at + hi - lo].reshape(-1).view(np.uint8))
        if self._digests.setdefault((i, lo, hi), digest) != digest:
            raise HogwildError(f"{file.path} was modified while the run read it: rows "
                               f"{lo:,}..{hi - 1:,} differ from the epoch before (its time "
                               "was put back); the run stops rather than train on data other "
                               "than the data it started with")

    def _check(self, i, file):
        try:
            now = _identity(os.stat(file.path))
        except OSError:
            now = None
        handle = _identity(os.fstat(self._handles[i].fileno()))
        if now != file.identity or handle != file.identity:
            what = "truncated" if handle[2] < file.identity[2] else \
                "replaced or removed" if now is None or now[:2] != file.identity[:2] else \
                "modified"
            raise HogwildError(f"{file.path} was {what} while the run read it from disk; the "
                               "run stops rather than train on data other than the data it "
                               "started with (restart it, or resume from a checkpoint)")

    # -- an epoch ------------------------------------------------------------------

    def chunks(self, plan, workers):
        """[(ranges, chunk plan)] of an epoch's plan (see the module docstring); slot
        i % SLOTS holds chunk i, and each chunk plan indexes that slot."""
        if plan.kind == "gated":
            return self._rounds(plan)
        return self._runs(plan, workers)

    def _chunk_starts(self, run_length):
        """The first sample of each chunk: whole runs of ``run_length`` samples, as
        many as a slot holds (samples, and nonzeros when ragged)."""
        if self._starts is not None and self._starts[0] == run_length:
            return self._starts[1]
        per_chunk = max(1, self.capacity // run_length)
        if self.offsets is None:
            starts = np.arange(0, self.n, per_chunk * run_length, dtype=np.int64)
        else:
            ends = np.asarray(self.sources[self.offsets][0:self.n:run_length], np.int64)
            ends = np.append(ends, int(self.sources[self.offsets][self.n]))  # run bounds
            sizes = np.diff(ends)
            if sizes.size and int(sizes.max()) > self.nonzeros:
                raise HogwildError(f"a run of {run_length:,} samples holds {int(sizes.max()):,} "
                                   f"nonzeros, more than the {self.nonzeros:,} a slot of "
                                   f"memory {size_text(self.memory)} holds; give more memory "
                                   "or a smaller shuffle_block")
            starts, run = [0], 0
            while True:
                cap = min(run + per_chunk, sizes.size)
                # the last run boundary within both the sample and the nonzero budget
                run = min(cap, int(np.searchsorted(ends, ends[run] + self.nonzeros,
                                                   side="right")) - 1)
                if run >= sizes.size:
                    break
                starts.append(run * run_length)
            starts = np.array(starts, np.int64)
        self._starts = (run_length, starts)
        return starts

    def _runs(self, plan, workers):
        run_length = plan.run_length
        starts = self._chunk_starts(run_length)
        runs_chunk = np.searchsorted(starts, plan.runs, side="right") - 1
        _, first = np.unique(runs_chunk, return_index=True)
        order = runs_chunk[np.sort(first)]
        position = np.empty(starts.size, np.int64)
        position[order] = np.arange(order.size)
        by_chunk = np.argsort(position[runs_chunk], kind="stable")
        runs = plan.runs[by_chunk]
        ends = np.cumsum(np.bincount(position[runs_chunk], minlength=order.size))
        cut = []
        for c, chunk_index in enumerate(order):
            lo = int(starts[chunk_index])
            hi = int(starts[chunk_index + 1]) if chunk_index + 1 < starts.size else self.n
            base = (c % SLOTS) * self.stride
            chunk_runs = runs[(ends[c - 1] if c else 0):ends[c]] - lo + base
            phase = tuple(np.array([(a, b, base + hi - lo)], np.int64)
                          for a, b in even_spans(chunk_runs.size, workers))
            cut.append(([(lo, hi)], EpochPlan(plan.kind, chunk_runs, run_length, (phase,))))
        return cut

    def _rounds(self, plan):
        (phase,) = plan.phases
        ends = {int(row[0]): int(row[2]) for share in phase for row in share}
        levels = sorted({int(row[5]) for share in phase for row in share})
        cut = []
        for c, level in enumerate(levels):
            base = (c % SLOTS) * self.stride
            at, ranges, runs, shares = base, [], [], []
            for share in phase:
                rows = []
                for row in share[share[:, 5] == level]:
                    lo, hi = int(plan.runs[row[0]]), ends[int(row[0])]
                    if at + hi - lo > base + self.capacity:
                        raise HogwildError(
                            f"a round of the block grid holds more than the "
                            f"{self.capacity:,} samples a slot of memory "
                            f"{size_text(self.memory)} holds; use a larger --grid")
                    rows.append((len(runs), len(runs) + 1, at + hi - lo, row[3], row[4], 0))
                    runs.append(at)
                    ranges.append((lo, hi))
                    at += hi - lo
                shares.append(np.array(rows, np.int64).reshape(-1, 6))
            cut.append((ranges, EpochPlan("gated", np.array(runs, np.int64),
                                          max(self.capacity, 1), (tuple(shares),),
                                          gates=plan.gates)))
        return cut

    def run_epoch(self, runner, loops, plan, params, steps, epoch, workers):
        """Run ``plan`` chunk by chunk; returns (updates, the mean loss of the last
        chunk after them: the epoch's objective, estimated)."""
        cut = self.chunks(plan, workers)
        self.chunks_per_epoch = len(cut)
        updates = 0
        pending = self._reader.submit(self._read, 0, cut[0][0])
        for c, (ranges, chunk_plan) in enumerate(cut):
            waited = time.perf_counter()
            pending.result()
            self.read_wait_seconds += time.perf_counter() - waited
            if c + 1 < len(cut):
                pending = self._reader.submit(self._read, (c + 1) % SLOTS, cut[c + 1][0])
            updates += runner.run_epoch(loops, chunk_plan, params, self.buffers,
                                        steps.over(c / len(cut), (c + 1) / len(cut)), epoch)
        self._verify_first_reads(sorted(r for ranges, _ in cut for r in ranges))
        length = sum(hi - lo for lo, hi in cut[-1][0])
        view = self._view((len(cut) - 1) % SLOTS, length)
        return updates, runner.loss_sum(loops, params, view, length) / max(length, 1)

    def _verify_first_reads(self, ranges):
        """Once an epoch's ``ranges`` (sorted) cover the samples: the first reads of
        each array that a cache checked must add up to the CRC-32 it recorded."""
        ends = self.sources[self.offsets] if self.offsets is not None else None
        for i, crc in list(self._unverified.items()):
            spans = ranges if self.roles[i] == "sample" else \
                [(int(ends[lo]), int(ends[hi])) for lo, hi in ranges]
            del self._unverified[i]
            rows = self.sources[i].shape[0]
            if not spans or spans[0][0] != 0 or spans[-1][1] != rows or any(
                    a[1] != b[0] for a, b in zip(spans, spans[1:])):
                continue  # not a cut of the whole array: nothing to compare
            file = self.files[i]
            if combined([(self._digests[(i, lo, hi)], (hi - lo) * file.row_bytes)
                          for lo, hi in spans]) != crc:
                raise HogwildError(f"{file.path} was modified after the run checked it "
                                   "(its time was put back): what the first epoch read of "
                                   "it differs from the content checked at the start; the "
                                   "run stops rather than train on data other than the "
                                   "data it started with")
