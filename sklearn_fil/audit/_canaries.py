"""Neighbouring data sets with a worst-case canary, for the audits."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_array, check_consistent_length

from sklearn_fil._glm import GLMProblem, newton
from sklearn_fil._multinomial import MultinomialProblem, fit_multinomial
from sklearn_fil._threads import small_work
from sklearn_fil.accounting import gelu_clip_max_norm
from sklearn_fil.utils._clipping import clip_rows, row_norms
from sklearn_fil.utils._onehot import onehot_columns
from sklearn_fil.utils._release import fitted_params

# A DP-SGD canary's norm in units of max_grad_norm: a logistic gradient with
# a misclassified label (|p - y| >= 1/2) then has norm >= 2 C and is clipped.
_DPSGD_CANARY_SCALE = 4.0
# The two-point canary's mixing ``a`` (its weight on the fitted direction) is
# chosen on this grid of [-1, 1] by exact refits, then refined between the
# best point's neighbours to this absolute tolerance.
_MIXING_GRID = 11
_MIXING_XTOL = 1e-2
# Newton's options for the refits that choose the canary (a full step below
# tol leaves an error of order tol^2: only their distances are read).
_NEWTON_TOL, _NEWTON_MAX_ITER = 1e-8, 200


def _dpsgd_canary_norm(params, estimator, largest):
    """The canary's norm for DP-SGD with clipping bound C.

    GELU clipping of a binary logistic regression (no hidden layer): the
    norm whose gradient at the zero initialisation, ``(p - y)(x, 1)`` with
    ``|p - y| = 1/2`` for either label, has the raw norm that GELU clipping
    lets through largest, ``u* C``: ``R = sqrt((2 u* C)^2 - 1)`` (0 when even
    the intercept's part alone is larger). Otherwise the larger of ``4 C``
    (a misclassified logistic gradient, ``|p - y| >= 1/2``, is clipped) and
    the largest row norm.
    """
    C = float(params["max_grad_norm"])
    binary = len(getattr(estimator, "classes_", ())) == 2
    if (
        params.get("clipping") == "gelu"
        and binary
        and not params.get("hidden_layer_sizes")
    ):
        raw = gelu_clip_max_norm(C, return_raw_norm=True)[1]
        return float(np.sqrt(max((2.0 * raw) ** 2 - 1.0, 0.0)))
    return max(_DPSGD_CANARY_SCALE * C, largest)


def _canary_norm(params, X_free, estimator=None):
    """The norm of the canary's free features (``estimator``, fitted, tells a
    binary logistic DP-SGD model's GELU canary; None: not one)."""
    largest = float(np.max(row_norms(X_free), initial=0.0))
    if params.get("data_norm") is not None:
        return float(params["data_norm"])
    if params.get("max_grad_norm") is not None:
        return _dpsgd_canary_norm(params, estimator, largest)
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


def _logistic_problem(estimator, params):
    """The problem (without data) of an output-perturbed logistic GLM with
    ``data_norm``: a :class:`GLMProblem` for two classes, a
    :class:`MultinomialProblem` for more; None for any other estimator."""
    n_classes = len(getattr(estimator, "classes_", ()))
    if not (
        is_classifier(estimator)
        and hasattr(estimator, "lam_")
        and hasattr(estimator, "penalize_intercept_")
        and params.get("data_norm") is not None
        and n_classes >= 2
    ):
        return None
    lam, intercept = float(estimator.lam_), bool(params.get("fit_intercept", False))
    penalised = bool(estimator.penalize_intercept_)
    if n_classes > 2:
        return MultinomialProblem(
            None, None, None, n_classes, lam, intercept, penalised
        )
    return GLMProblem("logistic", lam, intercept, penalised)


def _fit(problem, w0=None):
    """The exact minimiser of ``problem`` (binary or multinomial)."""
    if isinstance(problem, MultinomialProblem):
        return fit_multinomial(problem, _NEWTON_TOL, _NEWTON_MAX_ITER, W0=w0)[0]
    return newton(problem, _NEWTON_TOL, _NEWTON_MAX_ITER, w0=w0)[0]


def _minimiser(problem, row, label, w0):
    """The exact minimiser on ``problem``'s data with row 0 set to ``row, label``."""
    X, y = problem.X.copy(), problem.y.copy()
    X[0], y[0] = row, label
    return _fit(replace(problem, X=X, y=y), w0)


def _distance(problem, pair, w0):
    """``||w*(D) - w*(D')||`` of the data sets with row 0 set to each of ``pair``."""
    (x0, y0), (x1, y1) = pair
    moved = _minimiser(problem, x0, y0, w0) - _minimiser(problem, x1, y1, w0)
    return float(np.linalg.norm(moved))


def _misclassified(problem, w, row):
    """The 0/1 label that the weights ``w`` get wrong on ``row``."""
    return 0.0 if problem.margin(w, row[None, :])[0] > 0 else 1.0


def _two_point(problem, w, base, free, radius, v, u, a):
    """The pair ``R (a v + b u)``, ``R (a v - b u)`` (``b = sqrt(1 - a^2)``) on
    the free columns of ``base``, both labelled as ``w`` misclassifies the
    first."""
    b = np.sqrt(max(0.0, 1.0 - a * a))
    x0, x1 = base.copy(), base.copy()
    x0[free] = radius * (a * v + b * u)
    x1[free] = radius * (a * v - b * u)
    label = _misclassified(problem, w, x0)
    return (x0, label), (x1, label)


def _logistic_canary(problem, base, free, radius, u):
    """The canary pair ``((x, y), (x', y'))`` of a binary logistic GLM, labels
    0/1: of the two-point pairs and the flipped label at ``R u``, the one whose
    exact minimisers lie farthest apart.

    ``problem`` holds the rows as fitted, ``base`` the row whose one-hot
    columns the canary keeps, ``radius`` the free columns' norm budget and
    ``u`` the least-varied direction of the free columns.
    """
    w = _fit(problem)
    flipped = base.copy()
    flipped[free] = radius * u
    label = 1.0 - _misclassified(problem, w, flipped)  # the one predicted
    pair = ((flipped, label), (flipped, 1.0 - label))
    farthest = (_distance(problem, pair, w), pair)
    w_free = w[free]
    v = w_free / max(np.linalg.norm(w_free), np.finfo(np.float64).tiny)
    u_perp = u - (u @ v) * v  # a direction the fitted weights do not use
    if np.linalg.norm(u_perp) <= 1e-8 or not np.linalg.norm(w_free) > 0:
        return farthest[1]
    u_perp /= np.linalg.norm(u_perp)

    def candidate(a):
        pair = _two_point(problem, w, base, free, radius, v, u_perp, a)
        return _distance(problem, pair, w), pair

    return max([farthest, *_best_mixing(candidate)], key=lambda c: c[0])[1]


def _best_mixing(candidate):
    """The best of ``candidate(a) = (distance, pair)`` on the grid of ``a`` in
    ``[-1, 1]``, and Brent's refinement between its neighbours: both."""
    grid = np.linspace(-1.0, 1.0, _MIXING_GRID)
    on_grid = [candidate(a) for a in grid]
    i = int(np.argmax([distance for distance, _ in on_grid]))
    refined = minimize_scalar(
        lambda a: -candidate(a)[0],
        bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]),
        method="bounded",
        options={"xatol": _MIXING_XTOL},
    )
    return [on_grid[i], candidate(refined.x)]


def _unit_outside(u, V):
    """``u`` without its part in the column span of ``V``, normalised; None
    where nothing is left."""
    basis = np.linalg.svd(V, full_matrices=False)[0]
    basis = basis[:, : np.linalg.matrix_rank(V)]
    rest = u - basis @ (basis.T @ u)
    norm = float(np.linalg.norm(rest))
    return rest / norm if norm > 1e-8 else None


def _row_logits(problem, W, row):
    """The logits ``W x~`` of one row."""
    return replace(problem, X=row[None, :]).logits(W)[0]


def _multinomial_canary(problem, base, free, radius, u):
    """The canary pair of a multinomial logistic GLM, labels class codes: of
    the two-point pairs along each class's direction and the flipped label at
    ``R u``, the one whose exact minimisers lie farthest apart.

    The two-point pair ``R (a v_k + b u_k)``, ``R (a v_k - b u_k)`` has
    ``v_k`` the direction of ``W_k - mean(W)`` on the free columns (along
    which the fitted ``W`` favours class ``k`` most), ``u_k`` the
    least-varied direction outside the span of ``W``'s rows there (else
    orthogonal to ``v_k``), both labelled with the class ``W`` finds least
    probable at the first. Arguments as :func:`_logistic_canary`'s.
    """
    W = _fit(problem)
    flipped = base.copy()
    flipped[free] = radius * u
    logits = _row_logits(problem, W, flipped)  # most and least probable:
    pair = ((flipped, int(np.argmax(logits))), (flipped, int(np.argmin(logits))))
    found = [(_distance(problem, pair, W), pair)]
    W_free = W[:, free]
    fresh = _unit_outside(u, W_free.T)  # a direction no class's weights use
    for k in range(problem.n_classes):
        c = W_free[k] - W_free.mean(axis=0)
        if not np.linalg.norm(c) > 0:
            continue
        v = c / np.linalg.norm(c)
        u_k = _unit_outside(u, v[:, None]) if fresh is None else fresh
        if u_k is None:
            continue

        def candidate(a, v=v, u_k=u_k):
            b = np.sqrt(max(0.0, 1.0 - a * a))
            x0, x1 = base.copy(), base.copy()
            x0[free] = radius * (a * v + b * u_k)
            x1[free] = radius * (a * v - b * u_k)
            label = int(np.argmin(_row_logits(problem, W, x0)))  # least probable
            pair = ((x0, label), (x1, label))
            return _distance(problem, pair, W), pair

        found.extend(_best_mixing(candidate))
    return max(found, key=lambda c: c[0])[1]


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


def _check_weights(sample_weight, n_samples):
    """``sample_weight`` as float64 scaled to a largest weight 1, or None."""
    if sample_weight is None:
        return None
    omega = np.asarray(sample_weight, dtype=np.float64)
    if omega.shape != (n_samples,):
        raise ValueError(
            f"sample_weight must have shape ({n_samples},), one weight per row "
            f"of X; got shape {omega.shape}."
        )
    if not (np.all(np.isfinite(omega)) and omega.min() >= 0 and omega.max() > 0):
        raise ValueError(
            "sample_weight must be finite and non-negative, with a positive entry."
        )
    return omega / omega.max()


def _logistic_neighbours(estimator, problem, X, y, exempt, free, u, sample_weight):
    """Rows ``(x, label)`` and ``(x', label')`` of the canary of a logistic
    GLM: :func:`_logistic_canary` (two classes) or
    :func:`_multinomial_canary` on the rows as fitted."""
    data_norm = float(fitted_params(estimator)["data_norm"])
    omega = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    classes = np.asarray(estimator.classes_)
    multinomial = isinstance(problem, MultinomialProblem)
    if multinomial:
        codes = np.searchsorted(classes, y).astype(np.intp)
    else:
        codes = (y == classes[1]).astype(np.float64)
    fitted = replace(
        problem, X=clip_rows(X, data_norm, exempt)[0], y=codes, omega=omega
    )
    # the budget clip_rows leaves the free columns beside the one-hot ones
    radius = np.sqrt(max(data_norm**2 - float(X[0, exempt] @ X[0, exempt]), 0.0))
    canary = _multinomial_canary if multinomial else _logistic_canary
    with small_work(*X.shape):  # many small refits: one thread each
        pair = canary(fitted, X[0], free, radius, u)
    return [(row, classes[int(code)]) for row, code in pair]


def canary_neighbours(estimator, X, y, *, sample_weight=None):
    """Two neighbouring data sets, built from X and y with a worst-case canary.

    The relation is the one the fitted estimator's ``guarantee_`` states.
    The canary's features are ``R u``: ``u`` the unit direction along which
    the rows of ``X`` vary least (where the model's curvature is smallest)
    and ``R`` the largest norm the mechanism lets through: ``data_norm``
    (one-hot columns keep row 0's values); for DP-SGD the larger of ``4 *
    max_grad_norm`` and the largest row norm, so that a misclassified
    canary's gradient is clipped, except for GELU clipping of a binary
    logistic regression (no hidden layer): there ``R = sqrt((2 u* C)^2 -
    1)``, ``C = max_grad_norm``, so that the canary's gradient at the zero
    initialisation (norm ``sqrt(R^2 + 1) / 2`` for either label) has the
    raw norm ``u* C`` (``u*`` about 1.549) that GELU clipping lets through
    largest, ``gelu_clip_max_norm(C)``; otherwise the largest row norm of
    ``X``.

    * ``"replace_one"``: row 0 of ``X`` replaced by the canary in both.
      An output-perturbed binary logistic regression
      (:class:`~sklearn_fil.OutputPerturbedLogisticRegression` with
      ``data_norm``) gets the two-point canary: ``x = R (a v + b u)`` in the
      first and ``x' = R (a v - b u)`` in the second, ``b = sqrt(1 - a^2)``,
      ``v`` the direction of the exact minimiser's weights on the free
      columns, ``u`` the least-varied direction made orthogonal to ``v``,
      ``R`` the norm ``data_norm`` leaves beside the one-hot columns, both
      labelled as the minimiser misclassifies ``x``; ``a`` in ``[-1, 1]``
      maximises the distance between the two data sets' exact minimisers
      (refits by Newton's method on the rows as fitted, with
      ``sample_weight``: a grid of 11 values, then Brent's method). When the
      other rows do not span ``u`` and misclassify the canary strongly (large
      ``R ||w||``: many rows, a small ``lam``), the minimisers differ by
      nearly the certified ``2 L / (n lam)``; on few rows by about half of
      it, near what any pair reaches. The flipped label at ``R u`` (below)
      is kept where its minimisers lie farther apart. A multinomial one
      (three classes or more) gets the same pair along each class's
      direction ``v_k`` (of ``W_k - mean(W)`` on the free columns, the
      fitted weights' ``k``-th row less their mean) with ``u`` outside the
      span of ``W``'s rows there (else orthogonal to ``v_k``), both labelled
      with the class ``W`` finds least probable at ``x``; of these and the
      flipped label (the predicted and the least probable class at ``R
      u``) the pair whose minimisers lie farthest apart. Any other classifier's
      canary has its predicted label in the first and the least
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
    sample_weight : array-like of shape (n_samples,), default=None
        The fit's (public) example weights, for the refits that choose the
        two-point canary; None: uniform. The canary replaces row 0: give it
        the largest weight for the largest sensitivity.

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
    >>> X = np.column_stack([X, np.zeros(20)])  # a column no row uses
    >>> clf = OutputPerturbedLogisticRegression(
    ...     sigma=1.0, lam=0.1, fit_intercept=False, data_norm=1.0, delta=0.01,
    ...     random_state=0).fit(X, y)
    >>> X0, y0, X1, y1 = canary_neighbours(clf, X, y)
    >>> bool((X0[1:] == X[1:]).all() and (X1[1:] == X[1:]).all())
    True

    The two canaries: at ``data_norm``, one label, opposite along the free
    column.

    >>> [round(float(np.linalg.norm(x)), 6) for x in (X0[0], X1[0])]
    [1.0, 1.0]
    >>> bool(y0[0] == y1[0] and X0[0, 2] == -X1[0, 2] != 0)
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
    sample_weight = _check_weights(sample_weight, X_arr.shape[0])
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

    def frame(A):
        return A if columns is None else pd.DataFrame(A, columns=columns)

    relation = guarantee.neighboring_relation
    problem = _logistic_problem(estimator, params)
    if problem is not None and free.size and relation == "replace_one":
        pair = _logistic_neighbours(
            estimator, problem, X_arr, y_arr, exempt, free, u, sample_weight
        )
        (X_arr[0], label), (x1, other) = pair
        X1, y0, y1 = X_arr.copy(), y_arr.copy(), y_arr.copy()
        X1[0], y0[0], y1[0] = x1, label, other
        return frame(X_arr), y0, frame(X1), y1
    radius = _canary_norm(params, X_arr[:, free], estimator)
    canary = X_arr[0].copy()
    canary[free] = radius * u

    row = frame(canary[None, :])
    label, other, opposite = _canary_labels(estimator, row, params, y_arr[0])
    if relation == "add_remove":
        X1 = np.vstack([X_arr, canary])
        return frame(X_arr), y_arr, frame(X1), np.append(y_arr, other)
    X_arr[0] = canary
    X1 = X_arr.copy()
    if opposite:
        X1[0, free] = -canary[free]
    y0, y1 = y_arr.copy(), y_arr.copy()
    y0[0], y1[0] = label, other
    return frame(X_arr), y0, frame(X1), y1
