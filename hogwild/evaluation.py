"""Per-epoch metrics: fit's ``evaluate`` turned into one function of the parameters,
computed by the backend where the parameters live."""
from hogwild.disk_arrays import in_memory, on_disk
from hogwild.errors import HogwildError
from hogwild.index_check import check_indices
from hogwild.kernels.compiler import compile_loops
from hogwild.objective import Metric


def held_out_bytes(evaluate):
    """Bytes of the held-out samples that fit's ``evaluate`` keeps for the whole run
    (its Metrics' data; 0 for a callable, whose data the engine cannot see)."""
    metrics = [evaluate] if isinstance(evaluate, Metric) else evaluate
    if not isinstance(metrics, (list, tuple)):
        return 0
    return sum(a.nbytes for m in metrics if isinstance(m, Metric) for a in m.data)


def _resident(metric, loops, objective):
    """A metric's data, read into memory and its ids checked where any of it is a
    file's memory map (a held-out set in a data cache): the file may be truncated
    or edited while the run scores on it."""
    if not any(on_disk(a) for a in metric.data):
        return metric.data
    data = tuple(in_memory(a) for a in metric.data)
    check_indices(loops, objective.params, data, metric.n_samples, objective,
                  what=f"metric '{metric.name}'")
    return data


def evaluator(evaluate, objective, runner):
    """params -> dict of metrics, from fit's ``evaluate``: a callable given host
    parameters, or a Metric (or a list of them) computed by ``runner`` where the
    parameters live, each metric's data placed there once."""
    if evaluate is None:
        return lambda params: {}
    metrics = [evaluate] if isinstance(evaluate, Metric) else evaluate
    if callable(metrics):
        return lambda params: dict(metrics(runner.to_host(params)))
    metrics = list(metrics) if isinstance(metrics, (list, tuple)) else []
    if not metrics or not all(isinstance(m, Metric) for m in metrics):
        raise HogwildError("evaluate must be a callable(params) -> dict, a hogwild.Metric "
                           "or a list of Metrics")
    prepared = []
    for m in metrics:
        loops = compile_loops(objective.update, m.value, objective.fastmath)
        prepared.append((m, loops, runner.place(_resident(m, loops, objective))))

    def evaluate_metrics(params):
        values = {}
        for metric, loops, data in prepared:
            mean = runner.loss_sum(loops, params, data, metric.n_samples) / metric.n_samples
            values[metric.name] = float(metric.finish(mean) if metric.finish else mean)
        return values

    return evaluate_metrics
