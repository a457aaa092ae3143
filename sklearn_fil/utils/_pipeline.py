"""A fitted Pipeline seen by an attack: public prefix, private final model.

A :class:`~sklearn.pipeline.Pipeline` whose last step is the private model is
split into its prefix (the transformers) and that model. The prefix (scalers,
encoders, imputers) was fitted on all the data and is treated as public
knowledge of the adversary: the attacks transform the adversary's raw rows
with it and attack the final model in the transformed space. A released
pipeline is the same prefix followed by ``pipe[-1].release()`` in a new
``Pipeline`` (see :func:`released_pipeline`).

:func:`original_columns` maps each original (raw) column to its transformed
columns when the prefix ends with a fitted
:class:`~sklearn.compose.ColumnTransformer` (or is one): a
:class:`~sklearn.preprocessing.OneHotEncoder` column to the one-hot group of
its levels, a column-wise transformer (a scaler, ``"passthrough"``) to its one
column.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder


def split_pipeline(model):
    """``(prefix, final)`` of a fitted Pipeline; ``(None, model)`` otherwise.

    Parameters
    ----------
    model : estimator
        A fitted estimator or a fitted :class:`~sklearn.pipeline.Pipeline`.

    Returns
    -------
    prefix : Pipeline or None
        A new Pipeline of the fitted transformers of ``model`` (its steps but
        the last, shared, not copied), None when ``model`` is no Pipeline.
    final : estimator
        ``model[-1]``, or ``model`` itself.
    """
    if isinstance(model, Pipeline):
        return Pipeline(model.steps[:-1]), model[-1]
    return None, model


def released_pipeline(pipe):
    """The prefix of ``pipe`` followed by ``pipe[-1].release()`` (not cloned).

    The prefix's fitted transformers are shared with ``pipe``: they are public.
    """
    prefix, final = split_pipeline(pipe)
    if prefix is None:
        return final.release()
    return Pipeline([*prefix.steps, (pipe.steps[-1][0], final.release())])


def transform_dense(prefix, X):
    """``prefix.transform(X)`` as a float64 ndarray (sparse output densified)."""
    Xt = prefix.transform(X)
    if sp.issparse(Xt):
        Xt = Xt.toarray()
    return np.asarray(Xt, dtype=np.float64)


def _final_step(transformer):
    if isinstance(transformer, Pipeline):
        return transformer[-1]
    return transformer


def original_columns(prefix):
    """``{original column: (transformed column indices, levels)}``.

    Parameters
    ----------
    prefix : Pipeline or ColumnTransformer
        Fitted; its last step a :class:`~sklearn.compose.ColumnTransformer`.

    Returns
    -------
    columns : dict of str to (ndarray of int, ndarray or None)
        For a one-hot encoded column its group of levels and the levels
        (``categories_``); for a one-to-one column its index and None. Columns
        of other transformers (or one-hot encoders that drop a level) are
        absent: they have no such map.
    """
    ct = prefix[-1] if isinstance(prefix, Pipeline) else prefix
    if not isinstance(ct, ColumnTransformer):
        return {}
    names_in = list(getattr(ct, "feature_names_in_", range(ct.n_features_in_)))
    out = {}
    for name, trans, cols in ct.transformers_:
        if trans == "drop" or name not in ct.output_indices_:
            continue
        sl = ct.output_indices_[name]
        idx = np.arange(sl.start, sl.stop)
        selected = _selection(cols, names_in)
        step = _final_step(trans)
        if isinstance(step, OneHotEncoder):
            if step.drop_idx_ is not None or any(
                c is not None for c in getattr(step, "infrequent_categories_", [])
            ):
                continue
            start = 0
            for col, levels in zip(selected, step.categories_, strict=True):
                out[str(col)] = (idx[start : start + len(levels)], np.asarray(levels))
                start += len(levels)
        elif idx.size == len(selected):
            for col, j in zip(selected, idx, strict=True):
                out[str(col)] = (np.asarray([j]), None)
    return out


def _selection(cols, names_in):
    """Names of the columns a fitted ColumnTransformer's selection picks."""
    names = np.asarray(names_in, dtype=object)
    if isinstance(cols, slice):
        return names[cols]
    cols = np.atleast_1d(np.asarray(cols, dtype=object))
    if cols.size and isinstance(cols[0], bool | np.bool_):
        return names[cols.astype(bool)]
    if cols.size and isinstance(cols[0], str):
        return cols
    return names[cols.astype(np.int64)]
