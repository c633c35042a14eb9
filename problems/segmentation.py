"""Seeded image segmentation as a graph cut (Boykov and Jolly 2001), solved by the
multiway-cut relaxation of hogwild.problems.graph_cuts.

Pixels are vertices, 4- or 8-connected; an edge's weight is
exp(-(I_p - I_q)^2 / (2 sigma^2)) with sigma^2 the mean squared intensity
difference over the edges, so cutting across a strong edge of the image is cheap.
Seed pixels are terminals. Without more, the cheapest cut would only wall the
seeds in (graph cuts' shrinking bias), so, as Boykov and Jolly do, every pixel
also has an edge to one extra terminal vertex per label, weighted by how much
better its intensity fits that label's seed histogram than the worst label:
giving pixel p label l then costs unary * (-ln P(I_p | seeds of l)) plus a
constant. Reading and writing PNG needs Pillow
(pip install hogwild[images]).
"""
import numpy as np

from hogwild.atomic import atomic_file
from hogwild.errors import HogwildError
from hogwild.paths import check_regular
from hogwild.problems.graph_cuts import multiway_cut


MAX_UNARY = 1e6  # the intensity model alone decides long before; more overflows float32 sums


def pixel_graph(image, connectivity=4):
    """(u, v, w): the pixel grid's edges (pixel index = row * width + col)."""
    image = np.asarray(image, np.float64)
    if image.ndim != 2:
        raise HogwildError(f"expected a grayscale image (2-D), got shape {image.shape}")
    if not np.isfinite(image).all():
        raise HogwildError("the image has NaN or Inf gray levels")
    if connectivity not in (4, 8):
        raise HogwildError(f"connectivity must be 4 or 8, got {connectivity!r}")
    h, w = image.shape
    ids = np.arange(h * w).reshape(h, w)
    pairs = [(ids[:, :-1], ids[:, 1:]), (ids[:-1, :], ids[1:, :])]
    if connectivity == 8:
        pairs += [(ids[:-1, :-1], ids[1:, 1:]), (ids[:-1, 1:], ids[1:, :-1])]
    u = np.concatenate([a.ravel() for a, _ in pairs])
    v = np.concatenate([b.ravel() for _, b in pairs])
    flat = image.ravel()
    diff2 = (flat[u] - flat[v]) ** 2
    sigma2 = max(float(diff2.mean()), 1e-12)
    return u, v, np.exp(-diff2 / (2 * sigma2)).astype(np.float32)


def intensity_links(image, seeds, n_labels, unary, bins=16):
    """(u, v, w) from every pixel to the label terminals n_pixels + l (see the
    module docstring): -ln of each label's smoothed seed histogram at the pixel."""
    flat = np.asarray(image, np.float64).ravel()
    low, high = flat.min(), flat.max()
    bin_of = np.minimum(((flat - low) / max(high - low, 1e-12) * bins).astype(np.int64),
                        bins - 1)
    seeds = seeds.ravel()
    cost = np.empty((n_labels, flat.size))
    for label in range(n_labels):
        counts = np.bincount(bin_of[seeds == label], minlength=bins) + 1.0  # smoothing
        cost[label] = -np.log(counts / counts.sum())[bin_of]
    weights = unary * (cost.max(axis=0) - cost)  # >= 0; cost(l) = const + unary * cost_l
    pixels = np.arange(flat.size)
    u = np.tile(pixels, n_labels)
    v = np.repeat(flat.size + np.arange(n_labels), flat.size)
    return u, v, weights.ravel().astype(np.float32)


def segment(image, seeds, connectivity=4, unary=1.0, **fit_options):
    """Label image (int, same shape) from ``seeds``: an int array of the image's shape
    with a label >= 0 at seed pixels and -1 elsewhere. ``unary`` weighs the seed
    intensity model against the boundary term (0: boundary only). fit_options go
    to multiway_cut (a TrainingConfig, RunControls, or their fields)."""
    seeds = np.asarray(seeds)
    image = np.asarray(image)
    if isinstance(unary, bool) or not isinstance(unary, (int, float, np.number)) \
            or not 0 <= unary <= MAX_UNARY:
        raise HogwildError(f"unary must be a number from 0 to {MAX_UNARY:g}, got {unary!r}")
    if seeds.shape != image.shape[:2]:
        raise HogwildError(f"seeds have shape {seeds.shape}, the image {image.shape[:2]}")
    labels = np.unique(seeds[seeds >= 0])
    if labels.size < 2:
        raise HogwildError("give seed pixels of at least two labels")
    n_labels = int(labels.max()) + 1
    u, v, w = pixel_graph(image, connectivity)
    n = image.size
    if unary > 0:
        links = intensity_links(image, seeds, n_labels, unary)
        u, v, w = (np.concatenate([a, b]) for a, b in zip((u, v, w), links))
    flat = seeds.ravel()
    terminals = {int(p): int(flat[p]) for p in np.flatnonzero(flat >= 0)}
    terminals.update({n + label: label for label in range(n_labels)})
    result = multiway_cut(n + n_labels, u, v, w, terminals, n_labels, **fit_options)
    return result.labels[:n].reshape(image.shape), result


def auto_seeds(image, n_labels, per_label=30, seed=0):
    """Seeds without a user's scribbles: for label l, ``per_label`` random pixels
    (seeded) among those whose gray level ranks near the quantile
    0.03 + 0.94 l / (n_labels - 1) (within 1.5%), so label 0 seeds the darkest
    pixels and the last label the brightest. -1 marks unseeded pixels."""
    image = np.asarray(image, np.float64)
    ranks = np.empty(image.size)
    ranks[np.argsort(image, axis=None, kind="stable")] = np.arange(image.size) / image.size
    rng = np.random.default_rng(seed)
    seeds = np.full(image.size, -1)
    for label in range(n_labels):
        centre = 0.03 + 0.94 * label / max(n_labels - 1, 1)
        pool = np.flatnonzero(np.abs(ranks - centre) <= 0.015)
        seeds[rng.choice(pool, min(per_label, pool.size), replace=False)] = label
    return seeds.reshape(image.shape)


def read_seeds(path, shape):
    """Seeds drawn as an image of the same size: 0 (black) is unseeded, and the
    other gray levels are labels 0, 1, ... in increasing order."""
    levels = read_gray(path).astype(np.int64)
    if levels.shape != tuple(shape):
        raise HogwildError(f"{path}: seed image is {levels.shape[1]}x{levels.shape[0]}, the "
                           f"image {shape[1]}x{shape[0]}")
    values = np.unique(levels[levels > 0])
    seeds = np.full(levels.shape, -1)
    seeds[levels > 0] = np.searchsorted(values, levels[levels > 0])
    return seeds


def read_gray(path):
    """A PNG (or any Pillow-readable image) as a float 2-D array of gray levels."""
    Image = _pillow()
    check_regular(path, what="image ")  # Pillow would wait for ever on a FIFO
    try:
        with Image.open(path) as picture:
            return np.asarray(picture.convert("L"), np.float64)
    except FileNotFoundError:
        raise HogwildError(f"cannot read image {path}: no such file") from None
    except IsADirectoryError:
        raise HogwildError(f"cannot read image {path}: it is a directory") from None
    except PermissionError:
        raise HogwildError(f"cannot read image {path}: permission denied") from None
    except (OSError, ValueError, SyntaxError) as exc:  # PIL.UnidentifiedImageError is an OSError
        raise HogwildError(f"cannot read image {path}: not an image Pillow can read "
                           f"({type(exc).__name__})") from None


def write_labels(labels, path):
    """Write a label image as a PNG, labels spread over the gray range."""
    Image = _pillow()
    top = max(int(labels.max()), 1)
    with atomic_file(path) as f:
        Image.fromarray((labels * (255 // top)).astype(np.uint8), mode="L").save(f, format="PNG")


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise HogwildError("reading and writing images needs Pillow: pip install "
                           "'hogwild[images]'") from None
    return Image
