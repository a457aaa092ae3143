"""A fitted Pipeline seen by an attack: public prefix, private final model.

The prefix (scalers, encoders, imputers) is treated as public knowledge of
the adversary: the attacks transform the adversary's raw rows with it and
attack the final model in the transformed space. This module is the one owner
of the map from original columns to the final step's attributes
(:func:`original_columns`, :func:`attribute_labels`): the attacks, the
displays and :mod:`sklearn_fil.report_io` read it from here.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

from sklearn_fil.exceptions import PrivacyLeakWarning
from sklearn_fil.utils._onehot import onehot_columns
from sklearn_fil.utils._release import fitted_params


def split_pipeline(model):
    """``(prefix, final)`` of a fitted Pipeline; ``(None, model)`` otherwise.

    The prefix is a new Pipeline of the steps but the last, shared, not copied.
    """
    if isinstance(model, Pipeline):
        return Pipeline(model.steps[:-1]), model[-1]
    return None, model


def release(model, *, public_prefix=False):
    """What may be published of a fitted private model or pipeline.

    For one of sklearn-fil's estimators, ``model.release()``: the noised
    weights and metadata, no privacy report, no training data. For a
    :class:`~sklearn.pipeline.Pipeline` whose last step is one (or a
    Pipeline that ends in one), a new Pipeline of copies of the fitted
    prefix (the steps before the last) followed by the last step's release.

    The final model's noise and its ``guarantee_`` cover that model alone.
    The prefix is published as fitted: a scaler's means and scales, an
    encoder's categories, an imputer's fill values. When the prefix was
    fitted on the private data, those values leak it, unprotected; the
    guarantee covers the released pipeline only when the prefix was fitted
    on public data, e.g. a :class:`~sklearn.frozen.FrozenEstimator` of
    transformers fitted on a public sample.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted estimator with a ``release()`` method, or a fitted Pipeline
        whose last step has one.
    public_prefix : bool, default=False
        Whether the caller declares the pipeline's prefix public (fitted on
        public data only); see Warns.

    Returns
    -------
    released : estimator or Pipeline
        ``model.release()``, or the Pipeline of the prefix's copies and the
        last step's release (with the last step's name).

    Warns
    -----
    PrivacyLeakWarning
        When ``model`` is a Pipeline with a prefix and ``public_prefix`` is
        False: the prefix is not protected by the noise.

    Raises
    ------
    TypeError
        When ``model`` (or a Pipeline's last step) has no ``release()``
        method, or ``public_prefix`` is not a bool.
    sklearn.exceptions.NotFittedError
        When the model is not fitted.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_fil import OutputPerturbedLogisticRegression, release
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X_public, X_private, y_private = X[:100], X[100:], y[100:]
    >>> scaler = FrozenEstimator(StandardScaler().fit(X_public))
    >>> model = OutputPerturbedLogisticRegression(sigma=0.1, lam=0.1)
    >>> pipe = make_pipeline(scaler, model).fit(X_private, y_private)
    >>> published = release(pipe, public_prefix=True)  # the scaler saw no private row
    >>> hasattr(published[-1], "privacy_report_")
    False
    >>> bool((published.predict(X_private) == pipe.predict(X_private)).all())
    True
    """
    if not isinstance(public_prefix, bool):
        raise TypeError(f"public_prefix must be True or False, got {public_prefix!r}.")
    released = _released(model, "model")
    fitted = _prefix_steps(model)
    if fitted and not public_prefix:
        warnings.warn(
            f"The pipeline's prefix {fitted} is released as fitted: its values "
            "(e.g. a scaler's means, an encoder's categories) are not protected "
            "by the final model's noise nor covered by its guarantee_, and leak "
            "the data it was fitted on. If it was fitted on public data only, "
            "say so with release(model, public_prefix=True); otherwise fit the "
            "prefix on public data (e.g. sklearn.frozen.FrozenEstimator).",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    return released


def _released(model, what):
    """:func:`release` without the warning; ``what`` names ``model`` in errors."""
    if isinstance(model, Pipeline):
        *steps, (name, final) = model.steps
        prefix = [(n, copy.deepcopy(step)) for n, step in steps]
        return Pipeline([*prefix, (name, _released(final, f"its last step {name!r}"))])
    if not callable(getattr(model, "release", None)):
        raise TypeError(
            f"Cannot release {what}, a {type(model).__name__}: release() takes a "
            "fitted sklearn-fil estimator (one with a release() method) or a "
            "Pipeline whose last step is one. For a search, release its "
            "best_estimator_."
        )
    return model.release()


def _prefix_steps(model):
    """Names of the fitted steps before the private model (nested too)."""
    if not isinstance(model, Pipeline):
        return []
    *steps, (_, final) = model.steps
    fitted = [
        name for name, step in steps if step is not None and step != "passthrough"
    ]
    return fitted + _prefix_steps(final)


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
    prefix : Pipeline or ColumnTransformer or transformer
        Fitted: the transformers before the private model.

    Returns
    -------
    columns : dict of str to (ndarray of int, ndarray or None)
        When ``prefix`` ends with a :class:`~sklearn.compose.ColumnTransformer`:
        for a one-hot encoded column its group of levels and the levels
        (``categories_``); for a one-to-one column its index and None; columns
        of other transformers (or one-hot encoders that drop a level) are
        absent: they have no such map. When it maps none (or there is no
        ColumnTransformer), a prefix whose output names are its input names
        (a scaler, an imputer without indicators, fitted on a DataFrame) maps
        column ``j`` to ``([j], None)``; otherwise the dict is empty.
    """
    if isinstance(prefix, Pipeline) and not prefix.steps:
        return {}
    ct = prefix[-1] if isinstance(prefix, Pipeline) else prefix
    mapping = (
        _column_transformer_columns(ct) if isinstance(ct, ColumnTransformer) else {}
    )
    return mapping or _one_to_one_columns(prefix)


def _column_transformer_columns(ct):
    """:func:`original_columns` of a fitted ColumnTransformer."""
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


def _one_to_one_columns(prefix):
    """``{original column: ([index], None)}`` of a prefix that keeps its columns."""
    names_in = getattr(prefix, "feature_names_in_", None)
    try:
        names_out = prefix.get_feature_names_out()
    except (AttributeError, ValueError, TypeError):
        return {}
    if names_in is None or not np.array_equal(names_in, names_out):
        return {}
    return {str(name): (np.asarray([j]), None) for j, name in enumerate(names_in)}


def attribute_labels(estimator):
    """``{attribute of the report: its name in original columns}`` of a Pipeline.

    The naming of :func:`sklearn_fil.report_io.privacy_report`: an attribute
    whose columns are exactly those an original column became is named after
    it, a one-hot level measured on its own ``column=level``; attributes the
    prefix does not map and the label are absent.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator or a fitted :class:`~sklearn.pipeline.Pipeline`.

    Returns
    -------
    labels : dict of str to str
        Empty for anything but a Pipeline, and where the prefix does not say
        (see :func:`original_columns`).
    """
    prefix, final = split_pipeline(estimator)
    if prefix is None or not prefix.steps or not hasattr(final, "n_features_in_"):
        return {}
    columns = original_columns(prefix)
    n_features = final.n_features_in_
    names_in = getattr(final, "feature_names_in_", None)
    names = [f"x{j}" for j in range(n_features)] if names_in is None else names_in
    groups = fitted_params(final).get("onehot_groups")
    groups = onehot_columns(groups, names_in, n_features) if groups else {}
    by_columns = {tuple(sorted(idx.tolist())): col for col, (idx, _) in columns.items()}
    levels = {
        int(j): f"{col}={level}"
        for col, (idx, values) in columns.items()
        if values is not None
        for j, level in zip(idx, values, strict=True)
    }
    labels = {}
    for group, cols in groups.items():
        if tuple(sorted(cols)) in by_columns:
            labels[str(group)] = by_columns[tuple(sorted(cols))]
    for j, name in enumerate(names):
        if (j,) in by_columns:
            labels[str(name)] = by_columns[(j,)]
        elif j in levels:
            labels[str(name)] = levels[j]
    return labels


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
