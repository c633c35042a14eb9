"""The benchmarks' figures: side-by-side panels, one per dataset, saved as PNG."""


def panels(count):
    """(figure, axes): ``count`` panels in a row, drawn without a display (Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(1, count, figsize=(6 * count, 4.5), squeeze=False)
    return figure, list(axes[0])


def save(figure, path):
    figure.tight_layout()
    figure.savefig(path, dpi=110)
