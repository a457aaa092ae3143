"""The targets a private fit takes: no missing label, and a label set.

A classifier's ``classes_`` is published by ``release()``. Read from the
training labels, it tells neighbouring data sets apart (replace the only
example of a class and the label set changes), so a guarantee covers it only
as public: either the user fixes it in advance with the ``classes``
parameter, as scikit-learn's ``partial_fit`` takes it, or the guarantee lists
``"classes"`` among what it assumes public.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pandas as pd

# What a guarantee lists in ``public`` when the label set came from the data.
LABEL_SET = "classes"


def check_target(y, estimator_name, rows=None):
    """Refuse a target with missing values, before any other check.

    scikit-learn's own message for a string target with ``None`` ("Input
    contains NaN") names neither the input nor what to do.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The targets, as the user passed them (or one block of them).
    estimator_name : str
        Named in the error.
    rows : ndarray of shape (n_samples,), default=None
        The row number of each target (a block's rows); ``arange`` if None.

    Raises
    ------
    ValueError
        When ``y`` holds NaN, ``None`` or ``pd.NA`` (or inf, for a numeric
        target), naming the first rows.
    """
    values = y.to_numpy() if isinstance(y, (pd.Series, pd.DataFrame)) else y
    try:
        values = np.asarray(values)
    except (TypeError, ValueError):  # ragged: validate_data says what is wrong
        return
    if values.ndim == 0:  # None or a scalar: so does validate_data
        return
    numeric = values.dtype.kind in "fc"
    if numeric:
        bad = ~np.isfinite(values)
    elif values.dtype.kind == "O":
        bad = np.asarray(pd.isna(values), dtype=bool)
    else:
        return
    if not bad.any():
        return
    where = np.flatnonzero(bad.reshape(len(bad), -1).any(axis=1))
    if rows is not None:
        where = np.asarray(rows)[where]
    first = ", ".join(map(str, where[:5])) + (", ..." if where.size > 5 else "")
    raise ValueError(
        f"Input y (the target) of {estimator_name} has "
        f"{'missing or infinite' if numeric else 'missing'} values, at rows "
        f"{first}. Drop those rows before fitting (e.g. X[y.notna()], "
        "y[y.notna()]): a label cannot be imputed without spending privacy, "
        "and sklearn-fil does not guess it."
    )


def label_set(y, classes, estimator_name, n_classes=None):
    """``classes_`` of a fit: the given public label set, or ``y``'s labels.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        The validated labels.
    classes : array-like or None
        The ``classes`` parameter: every label the task can have, fixed
        before seeing the data. None reads them from ``y``.
    estimator_name : str
        Named in the errors.
    n_classes : int, default=None
        The number of classes the model supports (2 for a binary model), or
        None for at least 2.

    Returns
    -------
    classes_ : ndarray
        The sorted distinct labels.

    Raises
    ------
    ValueError
        When the label set has too few (or, with ``n_classes``, not that
        many) labels, or ``y`` has a label outside the given set.
    """
    given = classes is not None
    labels = np.unique(np.asarray(classes) if given else y)
    where = "the classes parameter" if given else "y"
    if labels.size < 2 or (n_classes is not None and labels.size != n_classes):
        needs = "at least 2" if n_classes is None else f"exactly {n_classes}"
        raise ValueError(
            f"{estimator_name} needs {needs} classes; {where} has {labels.size}: "
            f"{labels.tolist()}."
        )
    if given:
        outside = ~np.isin(y, labels)
        if outside.any():
            raise ValueError(
                f"y has labels outside classes={labels.tolist()}: "
                f"{np.unique(y[outside]).tolist()[:10]}. The classes parameter "
                "fixes the label set in advance (it is published with the "
                "model); list every label there, or drop those rows."
            )
    return labels
