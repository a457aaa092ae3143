"""Neighbouring data sets with a worst-case canary, for the audits."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pandas as pd
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_array, check_consistent_length

from sklearn_fil.utils._clipping import row_norms
from sklearn_fil.utils._onehot import onehot_columns
from sklearn_fil.utils._release import fitted_params

# A DP-SGD canary's norm in units of max_grad_norm: a logistic gradient with
# a misclassified label (|p - y| >= 1/2) then has norm >= 2 C and is clipped.
_DPSGD_CANARY_SCALE = 4.0


def _canary_norm(params, X_free):
    """The norm of the canary's free features."""
    largest = float(np.max(row_norms(X_free), initial=0.0))
    if params.get("data_norm") is not None:
        return float(params["data_norm"])
    if params.get("max_grad_norm") is not None:
        return max(_DPSGD_CANARY_SCALE * float(params["max_grad_norm"]), largest)
    return largest if largest > 0 else 1.0


def _least_varied_direction(X_free):
    """Unit vector along which the rows of X vary least (uncentred).

    The smallest right singular vector, its largest entry positive.
    """
    d = X_free.shape[1]
    if d == 0:
        return np.zeros(0)
    _, _, Vt = np.linalg.svd(X_free, full_matrices=True)
    u = Vt[-1] if Vt.shape[0] == d else np.eye(d)[0]
    return u if u[np.argmax(np.abs(u))] > 0 else -u


def _flipped_label(estimator, x_row, label):
    """A label other than ``label``: the least probable one when known."""
    classes = np.asarray(estimator.classes_)
    others = classes[classes != label]
    if others.size == 1 or not hasattr(estimator, "predict_proba"):
        return others[0]
    proba = np.asarray(estimator.predict_proba(x_row))[0]
    keep = classes != label
    return others[int(np.argmin(proba[keep]))]


def _canary_labels(estimator, row, params, label):
    """``(label, other, opposite)``: the canary's label in the first and the
    second data set, and whether its free features are negated in the second.
    """
    if is_classifier(estimator):
        label = np.asarray(estimator.predict(row))[0]
        return label, _flipped_label(estimator, row, label), False
    bound = params.get("label_bound")
    if bound is None:  # one label: opposite features
        return label, label, True
    return float(bound), -float(bound), False  # the same features


def canary_neighbours(estimator, X, y):
    """Two neighbouring data sets, built from X and y with a worst-case canary.

    The relation is the one the fitted estimator's ``guarantee_`` states.
    The canary's features are ``R u``: ``u`` the unit direction along which
    the rows of ``X`` vary least (where the model's curvature is smallest)
    and ``R`` the largest norm the mechanism lets through: ``data_norm``
    (one-hot columns keep row 0's values); for DP-SGD the larger of ``4 *
    max_grad_norm`` and the largest row norm, so that a misclassified
    canary's gradient is clipped; otherwise the largest row norm of ``X``.

    * ``"replace_one"``: row 0 of ``X`` replaced by the canary in both. A
      classifier's canary has its predicted label in the first and the least
      probable other label in the second. A regressor with a
      ``label_bound`` ``B`` has the labels ``B`` in the first and ``-B`` in
      the second, the same features, ``u`` signed to point away from the
      mean row: ridge minimisers then differ by ``2 B (A + x x^T)^{-1} x``
      whatever the other labels (``A`` the other rows' Gram matrix plus the
      penalty, ``x`` the canary's row with its intercept column, which lies
      least along the others' rows when ``u`` points away from their mean).
      Any other estimator keeps row 0's label, with the features ``R u`` in
      the first and ``-R u`` in the second.
    * ``"add_remove"``: ``X`` itself, and ``X`` with the canary appended,
      labelled as in the second data set above (a classifier's: against its
      prediction).

    Parameters
    ----------
    estimator : estimator object
        A fitted estimator with a ``guarantee_`` (a
        :class:`~sklearn_fil.accounting.Guarantee`), read for the relation;
        classifiers also need ``predict`` and ``classes_``.
    X : {array-like, DataFrame} of shape (n_samples, n_features)
        Data; a DataFrame keeps its columns.
    y : array-like of shape (n_samples,)
        Targets.

    Returns
    -------
    X_base : ndarray or DataFrame
        Features of the first data set.
    y_base : ndarray
        Its targets.
    X_neighbour : ndarray or DataFrame
        Features of the neighbouring data set.
    y_neighbour : ndarray
        Its targets.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.audit import canary_neighbours
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(scale=0.3, size=(20, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = OutputPerturbedLogisticRegression(
    ...     sigma=1.0, lam=0.1, fit_intercept=False, data_norm=1.0, delta=0.01,
    ...     random_state=0).fit(X, y)
    >>> X0, y0, X1, y1 = canary_neighbours(clf, X, y)
    >>> round(float(np.linalg.norm(X1[0])), 6), bool(y0[0] != y1[0])
    (1.0, True)
    >>> bool((X0[1:] == X[1:]).all() and (X1 == X0).all())
    True

    Ridge regression with bounded labels: the same row, the labels at the
    bounds.

    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> reg = OutputPerturbedLinearRegression(
    ...     sigma=0.1, lam=1.0, data_norm=1.0, label_bound=2.0, delta=0.01,
    ...     random_state=0).fit(X, X[:, 0])
    >>> X0, y0, X1, y1 = canary_neighbours(reg, X, X[:, 0])
    >>> float(y0[0]), float(y1[0]), bool((X1 == X0).all())
    (2.0, -2.0, True)
    """
    if isinstance(estimator, Pipeline):
        raise TypeError(
            "canary_neighbours builds the canary in the space the model is "
            "trained in; for a Pipeline pass its final step and the rows "
            "transformed by its prefix: canary_neighbours(pipe[-1], "
            "pipe[:-1].transform(X), y)."
        )
    guarantee = getattr(estimator, "guarantee_", None)
    if guarantee is None or not guarantee.holds:
        raise ValueError(
            "canary_neighbours needs a fitted estimator whose guarantee_ holds: "
            "the neighbouring relation comes from it."
        )
    columns = X.columns if isinstance(X, pd.DataFrame) else None
    X_arr = check_array(X, dtype=np.float64, copy=True)
    y_arr = np.array(y, copy=True)
    check_consistent_length(X_arr, y_arr)
    # the fit's parameters, with the groups onehot_groups="auto" found
    params = fitted_params(estimator)
    groups = onehot_columns(params.get("onehot_groups"), columns, X_arr.shape[1])
    exempt = sorted({j for cols in groups.values() for j in cols})
    free = np.setdiff1d(np.arange(X_arr.shape[1]), exempt)
    u = _least_varied_direction(X_arr[:, free])
    bounded = not is_classifier(estimator) and params.get("label_bound") is not None
    if bounded:
        y_arr = y_arr.astype(np.float64)  # labels at +-label_bound
        if u @ X_arr[:, free].mean(axis=0) > 0:
            u = -u  # away from the mean row
    radius = _canary_norm(params, X_arr[:, free])
    canary = X_arr[0].copy()
    canary[free] = radius * u

    def frame(A):
        return A if columns is None else pd.DataFrame(A, columns=columns)

    row = frame(canary[None, :])
    label, other, opposite = _canary_labels(estimator, row, params, y_arr[0])
    if guarantee.neighboring_relation == "add_remove":
        X1 = np.vstack([X_arr, canary])
        return frame(X_arr), y_arr, frame(X1), np.append(y_arr, other)
    X_arr[0] = canary
    X1 = X_arr.copy()
    if opposite:
        X1[0, free] = -canary[free]
    y0, y1 = y_arr.copy(), y_arr.copy()
    y0[0], y1[0] = label, other
    return frame(X_arr), y0, frame(X1), y1
