"""Seeded segmentation of a real photograph (scikit-image's coins, in the shared
data folder): seeds keep their labels, the cut beats trivial splits, and the
result agrees with the image's evident foreground."""
import numpy as np
import pytest

from hogwild import HogwildError
from hogwild.paths import shared_data_dir
from hogwild.problems.graph_cuts import cut_weight
from hogwild.problems.segmentation import (intensity_links, pixel_graph, read_gray, segment,
                                           write_labels)

pytest.importorskip("PIL", reason="Pillow reads the PNG (pip install 'hogwild[images]')")


@pytest.fixture(scope="module")
def coins():
    path = shared_data_dir() / "images-skimage" / "coins.png"
    if not path.exists():
        pytest.skip(f"{path} not found (set HOGWILD_DATA to the shared data folder)")
    image = read_gray(path)[::2, ::2]  # 152 x 192 keeps the test quick
    rng = np.random.default_rng(0)
    seeds = np.full(image.shape, -1)
    for label, pixels in ((1, np.argwhere(image > np.quantile(image, 0.97))),
                          (0, np.argwhere(image < np.quantile(image, 0.03)))):
        chosen = pixels[rng.choice(len(pixels), 30, replace=False)]
        seeds[chosen[:, 0], chosen[:, 1]] = label
    return image, seeds


def test_two_label_segmentation_of_a_photograph(coins, tmp_path):
    image, seeds = coins
    labels, result = segment(image, seeds, workers=2, seed=0)
    assert np.all(labels[seeds >= 0] == seeds[seeds >= 0])
    # the cut it minimises (boundary + intensity links) beats trivial labellings
    u, v, w = pixel_graph(image)
    lu, lv, lw = intensity_links(image, seeds, 2, 1.0)
    all_u, all_v, all_w = (np.concatenate(p) for p in ((u, lu), (v, lv), (w, lw)))

    def total_cut(pixel_labels):
        full = np.concatenate([pixel_labels.ravel(), [0, 1]])
        return cut_weight(all_u, all_v, all_w, full)

    half = np.zeros(image.shape, np.int64)
    half[:, image.shape[1] // 2:] = 1
    assert result.cut == pytest.approx(total_cut(labels), rel=1e-6)
    assert result.cut < total_cut(half)
    assert result.cut < total_cut(np.zeros(image.shape, np.int64))
    # the coins are brighter than the background: the labels follow that split
    assert np.mean(labels == (image > image.mean())) > 0.8
    path = tmp_path / "labels.png"
    write_labels(labels, path)
    np.testing.assert_array_equal(read_gray(path) > 127, labels == 1)


def test_segmentation_input_errors(coins):
    image, seeds = coins
    with pytest.raises(HogwildError, match="give seed pixels of at least two labels"):
        segment(image, np.where(seeds == 1, 1, -1))
    with pytest.raises(HogwildError, match=r"seeds have shape \(2, 2\), the image \(152, 192\)"):
        segment(image, np.zeros((2, 2)))
    with pytest.raises(HogwildError, match="connectivity must be 4 or 8, got 6"):
        pixel_graph(image, connectivity=6)
