"""Side features of the MovieLens sets in the shared data folder, for the hybrid
model (hogwild.problems.matrix_completion.hybrid): each movie's genres, each
user's age group, gender and occupation. Rows follow the ids asked for (the ids
of hogwild.datasets.ratings.Interactions), one-hot columns."""
import gzip

import numpy as np
import scipy.sparse as sp

from hogwild.errors import HogwildError
from hogwild.paths import shared_data_dir

# age groups (MovieLens 1M's): under 18, 18-24, 25-34, 35-44, 45-49, 50-55, 56+
AGE_GROUP_STARTS = (18, 25, 35, 45, 50, 56)
# release-year groups of MovieLens 100K's movies (rated in 1997-98): before 1960, the
# decades to 1990, then each year (new releases are what its users were watching)
YEAR_GROUP_STARTS = (1960, 1970, 1980, 1990, 1991, 1992, 1993, 1994, 1995, 1996, 1997,
                     1998)
# MovieLens 1M's (rated in 2000-03): the same, each year to 2000
YEAR_GROUP_STARTS_1M = YEAR_GROUP_STARTS + (1999, 2000)


def _lines(path):
    """The file's lines (latin-1, as GroupLens writes them), or a HogwildError."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="latin-1") as file:
            return [line.rstrip("\r\n") for line in file if line.strip()]
    except OSError as error:
        raise HogwildError(f"cannot read {path}: {error.strerror or error} (the MovieLens "
                           "side features come with the shared data folder, HOGWILD_DATA)"
                           ) from None


def _one_hot(ids, table, width, path):
    """Rows of ``table`` (id -> column list) for ``ids``, as a CSR matrix."""
    rows, columns = [], []
    for row, external in enumerate(np.asarray(ids).tolist()):
        if external not in table:
            raise HogwildError(f"id {external!r} is not in {path}")
        rows += [row] * len(table[external])
        columns += table[external]
    return sp.csr_matrix((np.ones(len(rows), np.float32), (rows, columns)),
                         shape=(len(ids), width))


def _malformed(path, number, line):
    return HogwildError(f"{path}, line {number}: not a MovieLens line: {line[:80]!r}")


def movielens_100k_item_features(item_ids, folder=None, years=True):
    """(items x (19 genres [+ 13 release-year groups]) CSR, column names): u.item's
    genre flags and, where ``years``, its release date's group (YEAR_GROUP_STARTS;
    a movie without a date has none)."""
    folder = folder or shared_data_dir() / "movielens-100k"
    names = [line.split("|")[0] for line in _lines(folder / "u.genre")]
    genres = len(names)
    if years:
        names += [f"year<{YEAR_GROUP_STARTS[0]}"] + [f"year>={y}" for y in YEAR_GROUP_STARTS]
    table = {}
    for number, line in enumerate(_lines(folder / "u.item"), 1):
        fields = line.split("|")
        flags, date = fields[-genres:], fields[2] if len(fields) > 2 else ""
        if len(fields) < genres + 2 or not all(f in ("0", "1") for f in flags) or \
                (date and not date[-4:].isdigit()):
            raise _malformed(folder / "u.item", number, line)
        table[int(fields[0])] = [g for g, flag in enumerate(flags) if flag == "1"]
        if years and date:
            table[int(fields[0])].append(genres + int(np.searchsorted(
                YEAR_GROUP_STARTS, int(date[-4:]), side="right")))
    return _one_hot(item_ids, table, len(names), folder / "u.item"), names


def movielens_100k_user_features(user_ids, folder=None):
    """(users x (7 age groups + 2 genders + occupations) CSR, column names):
    u.user's demographics (the zip code left out)."""
    folder = folder or shared_data_dir() / "movielens-100k"
    occupations = _lines(folder / "u.occupation")
    groups = len(AGE_GROUP_STARTS) + 1
    names = ([f"age<{AGE_GROUP_STARTS[0]}"] + [f"age>={a}" for a in AGE_GROUP_STARTS]
             + ["F", "M"] + occupations)
    table = {}
    for number, line in enumerate(_lines(folder / "u.user"), 1):
        fields = line.split("|")
        if len(fields) != 5 or not fields[1].isdigit() or fields[2] not in ("F", "M") \
                or fields[3] not in occupations:
            raise _malformed(folder / "u.user", number, line)
        age = int(np.searchsorted(AGE_GROUP_STARTS, int(fields[1]), side="right"))
        table[int(fields[0])] = [age, groups + (fields[2] == "M"),
                                 groups + 2 + occupations.index(fields[3])]
    return _one_hot(user_ids, table, len(names), folder / "u.user"), names


def movielens_1m_item_features(item_ids, folder=None, years=True):
    """(items x (18 genres [+ 15 release-year groups]) CSR, column names):
    movies.dat's genres and, where ``years``, the group (YEAR_GROUP_STARTS_1M) of
    the year its title ends with, by the original movie ids
    (ratings_partial_users1-2999.dat.gz's; the reindexed full set's ids are not
    these)."""
    folder = folder or shared_data_dir() / "movielens-1m"
    path = folder / "movies.dat.gz"
    genres, table, rows = {}, {}, []
    for number, line in enumerate(_lines(path), 1):
        fields = line.split("::")
        if len(fields) != 3 or not fields[0].isdigit():
            raise _malformed(path, number, line)
        title = fields[1].rstrip()
        year = int(title[-5:-1]) if title.endswith(")") and title[-5:-1].isdigit() else None
        rows.append((int(fields[0]), [genres.setdefault(g, len(genres))
                                      for g in fields[2].split("|")], year))
    names = list(genres)
    if years:
        names += [f"year<{YEAR_GROUP_STARTS_1M[0]}"] + [f"year>={y}"
                                                        for y in YEAR_GROUP_STARTS_1M]
    for movie, columns, year in rows:
        if years and year is not None:
            columns.append(len(genres) + int(np.searchsorted(YEAR_GROUP_STARTS_1M, year,
                                                             side="right")))
        table[movie] = columns
    return _one_hot(item_ids, table, len(names), path), names
