"""Example: segment an image into labels by a multiway cut of its pixel grid, and
write the labels as a PNG.

    python scripts/examples/segmentation.py                          # coins.png (shared data)
    python scripts/examples/segmentation.py --image photo.png --labels 3 --out seg.png

Seeds are chosen automatically (the darkest pixels seed label 0, the brightest the
last label); `hogwild run cuts --terminals SEEDS.png` takes hand-drawn ones. Needs
Pillow (pip install 'hogwild[images]').
"""
import argparse

import numpy as np

from hogwild.datasets.outputs import check_script_outputs
from hogwild.paths import shared_data_dir
from hogwild.problems import segmentation


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", default=str(shared_data_dir() / "images-skimage" /
                                               "coins.png"),
                        help="a grayscale or colour image (default: the shared coins.png)")
    parser.add_argument("--labels", type=int, default=2,
                        help="how many segments, seeded dark to bright (default: 2)")
    parser.add_argument("--epochs", type=int, default=100,
                        help="passes over the pixel graph's edges (default: 100)")
    parser.add_argument("--out", default="segmentation.png",
                        help="the label PNG to write (default: segmentation.png)")
    args = parser.parse_args()
    check_script_outputs(parser, {"--out": args.out}, {"--image": args.image})

    image = segmentation.read_gray(args.image)
    seeds = segmentation.auto_seeds(image, args.labels, seed=0)
    print(f"{args.image}: {image.shape[1]} x {image.shape[0]} pixels, "
          f"{int((seeds >= 0).sum())} seed pixels")

    # Each pixel is a vertex linked to its 4 neighbours (weights fall across edges of
    # the image) and to one terminal per label (the seeds' intensity model).
    labels, result = segmentation.segment(image, seeds, epochs=args.epochs, seed=0)
    print(f"cut weight {result.cut:.6g} after {args.epochs} epochs "
          f"({sum(r.seconds for r in result.history):.2f} s of updates)")
    for label in range(args.labels):
        print(f"  label {label}: {100 * np.mean(labels == label):5.1f}% of the pixels")
    segmentation.write_labels(labels, args.out)
    print(f"labels written to {args.out}")


if __name__ == "__main__":
    main()
