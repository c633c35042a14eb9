"""Initial parameter values drawn on every core, the same for any number of them.

10^7 x 32 factors are 3.2 x 10^8 normal draws: 4 s on one thread, a large part
of a run's set-up. Each fixed-size chunk of the array gets its own stream
spawned from the seed, so the values depend on the seed alone, and the chunks
are filled by a thread pool (numpy's generators release the GIL while filling).
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hogwild.backends.host import aligned_empty
from hogwild.errors import HogwildError
from hogwild.limits import available_memory, size_text, usable_cores

DRAWS_PER_STREAM = 1 << 18  # 1 MiB: each chunk is scaled while it is still in cache


def normal_array(shape, scale, seed):
    """A 64-byte aligned float32 array of N(0, scale^2) draws from ``seed`` (an int,
    None or a numpy SeedSequence); a HogwildError where it would not fit in the
    memory available (a matrix of 2 x 10^9 columns has as many factor rows)."""
    needed, memory = 4 * int(np.prod(shape, dtype=object)), available_memory()
    if memory is not None and needed > memory:
        raise HogwildError(f"memory {size_text(memory)} is less than the parameters need "
                           f"({size_text(needed)} for {' x '.join(f'{n:,}' for n in shape)} "
                           "factors)")
    out = aligned_empty(shape, np.float32)
    flat = out.reshape(-1)
    starts = range(0, flat.size, DRAWS_PER_STREAM)
    sequence = seed if isinstance(seed, np.random.SeedSequence) \
        else np.random.SeedSequence(seed)
    streams = sequence.spawn(len(starts))
    scale = np.float32(scale)

    def fill(chunk):
        part = flat[starts[chunk]:starts[chunk] + DRAWS_PER_STREAM]
        np.random.default_rng(streams[chunk]).standard_normal(out=part, dtype=np.float32)
        part *= scale

    with ThreadPoolExecutor(min(usable_cores(), max(len(starts), 1))) as pool:
        list(pool.map(fill, range(len(starts))))
    return out
