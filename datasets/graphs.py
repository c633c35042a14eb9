"""Graph files: DIMACS (.col, the colouring benchmark format) and edge lists
(SNAP), plain or compressed, as hogwild.structure.Graph."""
from pathlib import Path

import numpy as np

from hogwild.structure import Graph
from hogwild.datasets.files import read_text_bytes
from hogwild.errors import DataFormatError
from hogwild.limits import available_memory


def _lines(path):
    return read_text_bytes(path).decode("utf-8", "replace").splitlines()


def read_dimacs(path):
    """A DIMACS graph: 'c' comment lines, 'p edge N M', then 'e u v' (1-based).
    Edges listed twice or in both directions count once."""
    path = Path(path)
    n = None
    u, v = [], []
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        if not fields or fields[0] == "c":
            continue
        if fields[0] == "p" and len(fields) >= 4 and n is None \
                and _number(fields[2], MAX_VERTICES) is not None:
            n = _number(fields[2], MAX_VERTICES)
            _check_vertices_fit(n, f"{path}, line {number}: {line.strip()[:80]!r}")
        elif fields[0] == "e" and len(fields) >= 3 and n is not None:
            a, b = (_number(field, n) or 0 for field in fields[1:3])
            if not (1 <= a <= n and 1 <= b <= n):
                raise DataFormatError(f"{path}, line {number}: edge endpoints must be "
                                      f"integers in 1..{n}: {line.strip()!r}")
            u.append(a - 1)
            v.append(b - 1)
        else:
            expected = "'p edge N M'" if n is None else "'e u v' or 'c ...'"
            raise DataFormatError(f"{path}, line {number}: expected {expected}: "
                                  f"{line.strip()[:80]!r}")
    if n is None:
        raise DataFormatError(f"{path}: no 'p edge N M' line")
    return Graph.from_edges(n, u, v)


def read_edge_list(path):
    """(graph, ids): an edge list of 'u v [more]' lines with '#' comments (SNAP).
    Vertex ids may be any non-negative integers; ids[i] is the file's id of vertex
    i. Lines with a single number before the first edge (a vertex or edge count,
    as some copies of SNAP files carry) are skipped."""
    n, u, v, _, ids = read_weighted_edges(path)
    return Graph.from_edges(n, u, v), ids


def read_weighted_edges(path):
    """(n_vertices, u, v, w, ids) of an edge list as read_edge_list reads it, each
    undirected edge once (u < v; an edge listed again, e.g. in the other
    direction, keeps its first weight; self loops are dropped). The weight is the
    third column when every edge line has a number there, else 1."""
    path = Path(path)
    u, v, w = [], [], []
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        if not fields or fields[0].startswith(("#", "%")):
            continue
        if len(fields) == 1 and not u and _number(fields[0]) is not None:
            continue
        ends = [_number(field) for field in fields[:2]]
        if len(fields) < 2 or None in ends:
            raise DataFormatError(f"{path}, line {number}: expected two integer vertex ids "
                                  f"from 0 to 2**63 - 1: {line.strip()[:80]!r}")
        u.append(ends[0])
        v.append(ends[1])
        w.append(_weight(fields, path, number) if len(fields) > 2 else None)
    if not u:
        raise DataFormatError(f"{path}: no edges")
    ids, dense = np.unique(np.concatenate([u, v]), return_inverse=True)
    a, b = dense[:len(u)], dense[len(u):]
    weights = np.ones(len(u)) if None in w else np.array(w, np.float64)
    keep = a != b
    low, high = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    _, first = np.unique(low * ids.size + high, return_index=True)
    return ids.size, low[first], high[first], weights[keep][first], ids


MAX_VERTICES = 2**31 - 1  # a DIMACS graph's vertices are numbered in int32
BYTES_PER_VERTEX = 16  # the graph's row index and one array a vertex beside it


def _check_vertices_fit(n, header):
    """A header's vertex count, against the memory available before anything of
    that size is made (a one-edge file declaring 2e9 vertices was killed by the
    kernel)."""
    needed, memory = BYTES_PER_VERTEX * (n + 1), available_memory()
    if memory is not None and needed > memory:
        raise DataFormatError(f"{header} declares {n:,} vertices, which need "
                              f"{needed / 2**30:.1f} GiB, more than the "
                              f"{memory / 2**30:.1f} GiB of memory available")


def _number(text, largest=2**63 - 1):
    """The integer that ``text`` spells in ASCII digits, if it is at most ``largest``
    (int() would also take '٣' and '1_000'), else None."""
    if not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= largest else None


def _weight(fields, path, number):
    try:
        weight = float(fields[2])
    except ValueError:
        return None  # not a weight column (e.g. a timestamp label): unweighted
    if not np.isfinite(weight) or weight < 0:
        raise DataFormatError(f"{path}, line {number}: edge weight must be a finite "
                              f"number >= 0, got {fields[2]!r}")
    return weight
