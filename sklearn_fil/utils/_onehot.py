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
