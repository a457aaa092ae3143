"""Column indices of the constrained one-hot groups a user names."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np


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
        block = X[:, cols]
        if not (np.all((block == 0) | (block == 1)) and np.all(block.sum(axis=1) == 1)):
            raise ValueError(
                f"{label} (columns {cols.tolist()}) is not a one-hot "
                "encoding: every value must be 0 or 1 with exactly one 1 per row. "
                "A constrained group needs all its levels (do not drop one)."
            )
    return groups
