"""Columns that alone (nearly) determine a binary target: possible target leaks."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pandas as pd
from pandas.api.types import is_numeric_dtype

from sklearn_fil.tabular._columns import MIN_ROWS_PER_LEVEL

_LEAK_SHARE = 0.9  # share of the gap to perfect accuracy one column must close
_THRESHOLD_LEAK_SHARE = 0.95  # the same for a threshold (real features reach 0.9)


def target_leaks(features, y, max_levels):
    """``{column: share}`` of the columns that alone (nearly) determine binary ``y``.

    A column with few values "predicts" the target for the rows whose value
    (missing counts as a value) is mostly found with that row's class; a
    numeric column with many values, for the rows on the right side of its
    best threshold (``affairs > 0``). It is reported when it closes
    ``_LEAK_SHARE`` of the gap between the majority rate and 1 (a threshold,
    picked among n - 1 cuts, ``_THRESHOLD_LEAK_SHARE``).
    """
    n, counts = len(y), y.value_counts()
    baseline = counts.max() / n
    is_first = (y == counts.index[0]).to_numpy()
    leaks = {}
    for name in features.columns:
        column = features[name]
        codes, levels = pd.factorize(column, use_na_sentinel=False)
        if len(levels) <= min(max_levels, n / MIN_ROWS_PER_LEVEL):
            share = pd.crosstab(codes, is_first).max(axis=1).sum() / n
            bar = _LEAK_SHARE
        elif is_numeric_dtype(column) and counts.min() >= MIN_ROWS_PER_LEVEL:
            share, bar = threshold_share(column, is_first), _THRESHOLD_LEAK_SHARE
        else:
            continue  # too many values, or a class too rare, to tell a leak
        if share - baseline >= bar * (1 - baseline) and share > baseline:
            leaks[name] = float(share)
    return leaks


def threshold_share(column, is_first):
    """Share of rows that the best rule ``column > t`` (or ``<=``) classifies right.

    Missing values are one more group, predicted by its majority. One sort:
    O(n log n).
    """
    values = pd.to_numeric(column).to_numpy(dtype=float, na_value=np.nan)
    missing = np.isnan(values)
    right = max(is_first[missing].sum(), (~is_first[missing]).sum())
    order = np.argsort(values[~missing], kind="stable")
    values, labels = values[~missing][order], is_first[~missing][order]
    cuts = np.r_[0, np.flatnonzero(values[1:] > values[:-1]) + 1, values.size]
    first_below = np.r_[0, np.cumsum(labels)][cuts]
    other_below = cuts - first_below
    first_above = first_below[-1] - first_below
    other_above = other_below[-1] - other_below
    right += np.maximum(first_below + other_above, other_below + first_above).max()
    return right / len(is_first)
