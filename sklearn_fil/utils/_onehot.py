"""Column indices of the constrained one-hot groups a user names."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np

from sklearn_fil.utils._sparse import issparse


def onehot_columns(onehot_groups, feature_names, n_features):
    """``{group: [column indices]}`` from columns given by name or index.

    Parameters
    ----------
    onehot_groups : dict or None
        ``{name: [columns]}``, each column a feature name or an index.
    feature_names : sequence of str or None
        The names of the features (``feature_names_in_``), if any.
    n_features : int
        Number of features.

    Returns
    -------
    columns : dict of str to list of int
        Empty when ``onehot_groups`` is None or empty.

    Examples
    --------
    >>> from sklearn_fil.utils._onehot import onehot_columns
    >>> onehot_columns({"colour": ["red", 2]}, ["age", "red", "blue"], 3)
    {'colour': [1, 2]}
    """
    if not onehot_groups:
        return {}
    names = [] if feature_names is None else list(feature_names)
    out = {}
    for group, cols in onehot_groups.items():
        idx = []
        for col in cols:
            if isinstance(col, Integral | np.integer) and not isinstance(col, bool):
                if not 0 <= col < n_features:
                    raise ValueError(
                        f"onehot_groups[{group!r}] names column index {col}, "
                        f"outside [0, {n_features})."
                    )
                idx.append(int(col))
            elif col in names:
                idx.append(names.index(col))
            else:
                raise ValueError(
                    f"onehot_groups[{group!r}] names {col!r}, which is not a "
                    "feature of X."
                )
        out[group] = idx
    return out


def check_onehot_groups(onehot_groups, X, names=None):
    """Validate constrained one-hot groups; return a list of index arrays.

    ``names`` labels the groups in error messages (default: their position).
    """
    if onehot_groups is None:
        return []
    d = X.shape[1]
    if names is None:
        labels = [f"onehot_groups[{g}]" for g in range(len(onehot_groups))]
    else:
        labels = [f"one-hot group {name!r}" for name in names]
    seen = np.zeros(d, dtype=bool)
    groups = []
    for label, cols in zip(labels, onehot_groups, strict=True):
        cols = np.asarray(cols)
        if cols.ndim != 1 or cols.size < 2 or not np.issubdtype(cols.dtype, np.integer):
            raise ValueError(
                f"{label} must list at least two integer column indices; "
                f"got {cols.tolist()!r}."
            )
        if cols.min() < 0 or cols.max() >= d:
            raise ValueError(
                f"{label} has column indices outside [0, {d}): {cols.tolist()}."
            )
        if np.unique(cols).size != cols.size or seen[cols].any():
            raise ValueError(
                f"{label} repeats a column or overlaps another group: {cols.tolist()}."
            )
        seen[cols] = True
        groups.append(cols.astype(np.int64))
    for label, cols in zip(labels, groups, strict=True):
        if not _is_onehot_block(X, cols):
            raise ValueError(
                f"{label} (columns {cols.tolist()}) is not a one-hot "
                "encoding: every value must be 0 or 1 with exactly one 1 per row. "
                "A constrained group needs all its levels (do not drop one)."
            )
    return groups


def _is_onehot_block(X, cols):
    """Whether ``X[:, cols]`` is 0/1 with exactly one 1 per row (X dense or CSR)."""
    block = X[:, cols]
    if issparse(block):
        values = block.data  # the entries not stored are 0
        row_sums = np.asarray(block.sum(axis=1)).ravel()
    else:
        values, row_sums = block, block.sum(axis=1)
    return bool(np.all((values == 0) | (values == 1)) and np.all(row_sums == 1))


class _Columns:
    """Dense columns of a dense or sparse ``X``, one at a time.

    A sparse ``X`` is read through one CSC copy of its stored values; each
    column comes out as a dense vector of ``n`` entries (never ``n x d``).
    """

    def __init__(self, X):
        self.n, self.d = X.shape
        self.sparse = issparse(X)
        if self.sparse:
            self.X = X.tocsc(copy=True)
            self.X.sum_duplicates()
            col_of = np.repeat(np.arange(self.d), np.diff(self.X.indptr))
            values = self.X.data
            self.binary = np.ones(self.d, dtype=bool)
            self.binary[col_of[(values != 0) & (values != 1)]] = False
        else:
            self.X = X
            self.binary = np.all((X == 0) | (X == 1), axis=0)

    def __getitem__(self, j):
        if not self.sparse:
            return self.X[:, j]
        start, stop = self.X.indptr[j], self.X.indptr[j + 1]
        col = np.zeros(self.n)
        col[self.X.indices[start:stop]] = self.X.data[start:stop]
        return col


def _group_name(names):
    """A one-hot group's name: its columns' common prefix, cut at its last ``_``.

    That is the name :class:`~sklearn.preprocessing.OneHotEncoder` joined to
    each level (``onehot__race`` of ``onehot__race_Asian``).
    """
    names = [str(name) for name in names]
    prefix = min(names)
    other = max(names)  # the sorted extremes share only the common prefix
    end = next(
        (i for i, (a, b) in enumerate(zip(prefix, other, strict=False)) if a != b),
        min(len(prefix), len(other)),
    )
    prefix = prefix[:end]
    cut = prefix.rfind("_")
    name = prefix[:cut] if cut > 0 else prefix
    return name or "|".join(names)


def detect_onehot_groups(X, feature_names=None):
    """``{group: [column names]}`` of the one-hot blocks of ``X``, for ``"auto"``.

    A block is a run of adjacent 0/1 columns with exactly one 1 per row, as
    :class:`~sklearn.preprocessing.OneHotEncoder` writes one input column
    (its levels are adjacent, and each level of the training data occurs, so no
    shorter run of them sums to one). Runs are found left to right, each the
    shortest one from its first column; a column of zeros right after a block
    (a level that never occurs) joins it. The group is named after its columns'
    common prefix (see ``_group_name``): ``race`` for ``race_Asian, race_Other``;
    ``x1|x2`` without feature names.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The validated training data; a sparse one is read column by column.
    feature_names : sequence of str or None
        ``feature_names_in_``; ``x0, x1, ...`` when None.

    Returns
    -------
    groups : dict of str to list of str or int
        Column names (indices when ``feature_names`` is None), by group name.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.utils._onehot import detect_onehot_groups
    >>> X = np.array([[0.5, 1, 0, 0], [1.5, 0, 1, 0], [2.0, 0, 0, 1]])
    >>> detect_onehot_groups(X, ["age", "race_A", "race_B", "race_C"])
    {'race': ['race_A', 'race_B', 'race_C']}
    """
    d = X.shape[1]
    names = [f"x{j}" for j in range(d)] if feature_names is None else feature_names
    columns = _Columns(X)
    binary = columns.binary
    groups = {}
    j = 0
    while j < d:
        if not binary[j]:
            j += 1
            continue
        total = columns[j].copy()
        k = j
        while not np.all(total == 1) and k + 1 < d and binary[k + 1]:
            k += 1
            total += columns[k]
            if total.max() > 1:
                break
        if k == j or not np.all(total == 1):
            j += 1
            continue
        while k + 1 < d and binary[k + 1] and not columns[k + 1].any():
            k += 1
        cols = list(range(j, k + 1))
        if feature_names is None:
            name = "|".join(names[c] for c in cols)
        else:
            name = _group_name([names[c] for c in cols])
        while name in groups or (name in names and name not in cols):
            name = f"{name}_"
        groups[name] = cols if feature_names is None else [names[c] for c in cols]
        j = k + 1
    return groups
