"""Attribute inversion: white box (Hannun et al. eq. 30) and black box (eq. 31)."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, gen_batches
from sklearn.utils.validation import check_is_fitted

from sklearn_fil._glm import SPDFactor, fit_glm
from sklearn_fil._report import target_label
from sklearn_fil.attacks._base import (
    adversary_weights,
    check_known_labels,
    check_model_features,
    resolve_attribute,
    target_glm,
)
from sklearn_fil.attacks._contract import keyword_fit_params, require
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._pipeline import (
    original_columns,
    split_pipeline,
    transform_dense,
)
from sklearn_fil.utils._sklearn_compat import Interval, StrOptions

# Above this many distinct values an attribute needs an explicit candidate grid.
_MAX_DEFAULT_CANDIDATES = 256
# Rows x candidate problems per batch of the logistic iterations: the
# n x batch margin matrix stays near 32 MiB.
_BATCH_ENTRIES = 4 * 2**20


def _no_candidates(candidates, what, which):
    """Raise unless ``candidates`` is None: ``what`` has fixed ones, ``which``."""
    if candidates is not None:
        raise ValueError(f"The candidates of {what} are {which}; pass candidates=None.")


def _few_values(values, name, kind):
    """The distinct ``values`` of an attribute, at most ``_MAX_DEFAULT_CANDIDATES``."""
    if values.size > _MAX_DEFAULT_CANDIDATES:
        raise ValueError(
            f"Attribute {name!r} takes {values.size} distinct values; pass "
            f"candidates=<a grid of {kind}> to attack a numeric attribute."
        )
    return values


def _check_targets(y, n):
    """``y`` as an array, checked to hold one entry per row of X (at least 2)."""
    y = np.asarray(y)
    if y.shape != (n,) or n < 2:
        raise ValueError(
            f"y must have one entry per row of X (at least 2): X has {n} rows, "
            f"y has shape {y.shape}."
        )
    return y


def _candidate_values(candidates, X, cols, name):
    """The candidate values as rows of shape (n_candidates, len(cols))."""
    if cols.size > 1:
        block = X[:, cols]
        if not (np.all((block == 0) | (block == 1)) and np.all(block.sum(1) == 1)):
            raise ValueError(
                f"The one-hot attribute {name!r} (columns {cols.tolist()}) is not a "
                "one-hot encoding: every value must be 0 or 1 with exactly one 1 "
                "per row."
            )
        _no_candidates(candidates, f"the one-hot attribute {name!r}", "its levels")
        return np.eye(cols.size)
    if candidates is None:
        return _few_values(np.unique(X[:, cols[0]]), name, "values")[:, None]
    values = np.asarray(candidates)
    if values.dtype.kind not in "biuf" or values.dtype.kind == "b":
        raise TypeError(
            f"candidates must be numbers, like the values of attribute {name!r}; "
            f"got an array of dtype {values.dtype}."
        )
    values = values.astype(np.float64).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("candidates must be a non-empty list of finite numbers.")
    return np.unique(values)[:, None]


def _query(model, X, columns, method):
    """Ask the model, as a DataFrame when it was fitted on one."""
    if columns is not None:
        X = pd.DataFrame(X, columns=columns)
    return getattr(model, method)(X)


def _baseline(truth, exact):
    """Score of the prior's best guess: majority accuracy, or minus the variance."""
    if exact:
        counts = pd.Series([tuple(row) for row in truth]).value_counts()
        return float(counts.iloc[0] / len(truth))
    return -float(np.mean(np.var(np.asarray(truth, dtype=np.float64), axis=0)))


def _knowledge(model, X, rows, columns, name, candidates, truth, **extra):
    """The fitted attributes of the adversary's knowledge.

    ``X``: the data given to fit; ``rows``: the numeric rows the attack runs
    on; ``truth``: the true values and the candidates, for ``baseline_``.
    """
    values, among = truth
    fitted = {
        "model_": model,
        "n_features_in_": np.shape(X)[1],
        "columns_": columns,
        "attribute_name_": name,
        "candidates_": candidates,
        "baseline_": _baseline(values, bool(np.isin(values, among).all())),
        "_n_targets": np.shape(rows)[0],
        "_n_columns": np.shape(rows)[1],
        "_prefix": extra.pop("prefix", False),
        "_label": extra.pop("label", False),
        **extra,
    }
    if isinstance(X, pd.DataFrame):
        fitted["feature_names_in_"] = np.asarray(X.columns, dtype=object)
    return fitted


def _label_names(y, model):
    """The names the label goes by as an attribute: the report's, then ``"y"``.

    The report's ``fil[<name>]`` names it after a named Series ``y``, else
    ``"y"`` (renamed by :func:`~sklearn_fil._report.target_label` when a
    feature has that name); a released model does not record it. ``"y"``
    names it too, unless a feature is so called.
    """
    features = getattr(model, "feature_names_in_", None)
    if features is None:
        features = [f"x{j}" for j in range(getattr(model, "n_features_in_", 0))]
    features = [str(f) for f in features]
    name = y.name if isinstance(y, pd.Series) and y.name is not None else "y"
    label = str(target_label(str(name), features))
    return [label] + (["y"] if label != "y" and "y" not in features else [])


def _check_raw_frame(X):
    """Raise unless ``X`` is a DataFrame, as a Pipeline is fitted on raw rows."""
    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            "An attack on a Pipeline takes the raw training rows as a pandas "
            f"DataFrame, as the pipeline was fitted; got {type(X).__name__}."
        )


def _pipeline_attribute(attribute, prefix, raw_columns, label):
    """Original column name, transformed columns and levels of ``attribute``."""
    mapping = original_columns(prefix)
    key = attribute
    if isinstance(key, Integral | np.integer) and not isinstance(key, bool):
        if raw_columns is None or not 0 <= key < len(raw_columns):
            raise ValueError(f"attribute index {key} is not an original column.")
        key = raw_columns[key]
    if not isinstance(key, str) or key not in mapping:
        raise ValueError(
            f"attribute {attribute!r} is neither the label {label!r} nor an "
            "original column that the pipeline's ColumnTransformer one-hot "
            "encodes or maps to one column, or that a prefix keeping its column "
            f"names passes through (such columns: {sorted(mapping)[:10]})."
        )
    cols, levels = mapping[key]
    return key, cols, levels


# Fitted state that does not end in "_", cleared with the rest at each fit.
_PRIVATE = (
    "_recipe",
    "_X",
    "_Xt",
    "_y",
    "_omega",
    "_n_targets",
    "_columns",
    "_prefix",
    "_raw",
    "_n_columns",
    "_label",
    "_labels",
    "_known",
    "_scores",
)


class _AttributeInversion(TransformerMixin, BaseEstimator):
    """Shared validation, reconstruction and scoring of attribute inversion."""

    _parameter_constraints: ClassVar[dict] = {
        "model": [object],
        "attribute": [Integral, str, list, tuple, np.ndarray],
        "candidates": ["array-like", None],
    }

    def _validate_knowledge(self, X, y, model):
        """Checked ``X``, ``y`` and the fitted attributes they determine.

        Nothing is set on ``self``: each ``fit`` sets every attribute once all
        its checks have passed (and a failed fit clears the previous ones).
        """
        self._validate_params()
        prefix, _ = split_pipeline(model)
        labels = _label_names(y, model)
        if isinstance(self.attribute, str) and self.attribute in labels:
            return self._validate_label_knowledge(X, y, model, prefix, labels[0])
        if prefix is not None and self._through_prefix(X, prefix):
            return self._validate_pipeline_knowledge(X, y, model, prefix, labels[0])
        frame = X
        # the attribute before the rows: its error lists the names, and raw
        # rows (of strings) would fail as numbers first
        shape = np.shape(X)
        n_features = getattr(model, "n_features_in_", shape[-1] if shape else 0)
        columns, name = resolve_attribute(self.attribute, model, n_features, labels[0])
        X = check_array(X, dtype=np.float64, ensure_min_samples=2, input_name="X")
        y = _check_targets(y, X.shape[0])
        check_model_features(X, model)
        candidates = _candidate_values(self.candidates, X, columns, name)
        truth = (X[:, columns], candidates)
        return X, y, _knowledge(model, frame, X, columns, name, candidates, truth)

    def _through_prefix(self, X, prefix):
        """Whether to attack a Pipeline's final step through its prefix."""
        return True

    def _label_rows(self, X, prefix):
        """The rows of an attack on the label, as numbers (through ``prefix``)."""
        if prefix is not None:
            _check_raw_frame(X)
            return check_array(transform_dense(prefix, X), input_name="X")
        X = check_array(X, dtype=np.float64, ensure_min_samples=2, input_name="X")
        check_model_features(X, self.model)
        return X

    def _validate_label_knowledge(self, X, y, model, prefix, name):
        """The knowledge of an attack on the label ``name``: rows and labels."""
        if np.ndim(X) != 2:
            raise ValueError(f"X must be 2-D; got shape {np.shape(X)}.")
        through = prefix is not None and self._through_prefix(X, prefix)
        rows = self._label_rows(X, prefix if through else None)
        n = np.shape(rows)[0]
        y = _check_targets(y, n)
        _, final = split_pipeline(model)
        if is_classifier(final):
            _no_candidates(
                self.candidates, f"the label {name!r} of a classifier", "its classes_"
            )
            values = check_known_labels(y, final.classes_)
        else:
            y = y.astype(np.float64)
            column = np.zeros(1, dtype=np.int64)
            values = _candidate_values(self.candidates, y[:, None], column, name)[:, 0]
        fitted = _knowledge(
            model,
            X,
            rows,
            np.empty(0, dtype=np.int64),
            name,
            values[:, None],
            (y[:, None], values),
            prefix=through,
            label=True,
            _labels=y,
        )
        if through:
            fitted["levels_"] = values
        return rows, y, fitted

    def _validate_pipeline_knowledge(self, X, y, model, prefix, label):
        """The knowledge of an attack on a Pipeline, in its prefix's output space.

        The candidates are the levels of a one-hot encoded column or the
        distinct raw values of a numeric one, transformed by the prefix.
        """
        _check_raw_frame(X)
        name, columns, levels = _pipeline_attribute(
            self.attribute, prefix, list(X.columns), label
        )
        Xt = check_array(transform_dense(prefix, X), input_name="X")
        y = _check_targets(y, X.shape[0])
        raw = X[name].to_numpy()
        if levels is not None:
            _no_candidates(
                self.candidates, f"the one-hot encoded column {name!r}", "its levels"
            )
            values = levels
        elif self.candidates is None:
            values = pd.unique(pd.Series(raw).dropna())
            values = np.sort(_few_values(values, name, "raw values"))
        else:
            values = np.unique(np.asarray(self.candidates).ravel())
        # each candidate's transformed columns: the prefix of a row holding it
        # (a ColumnTransformer maps each column on its own)
        probe = X.iloc[np.zeros(len(values), dtype=np.int64)].copy()
        probe[name] = values
        candidates = transform_dense(prefix, probe)[:, columns]
        fitted = _knowledge(
            model,
            X,
            Xt,
            columns,
            name,
            candidates,
            (raw[:, None], values),
            prefix=True,
            levels_=np.asarray(values),
            _raw=X.iloc[:1].copy(),
        )
        return Xt, y, fitted

    def _raw_rows(self, X):
        """The targets' raw rows, the attribute's own column filled (never read).

        The label has no column: the rows are those given.
        """
        check_is_fitted(self)
        expected = (self._n_targets, self.n_features_in_)
        if not isinstance(X, pd.DataFrame) or X.shape != expected:
            raise ValueError(
                "X must be the DataFrame of training examples given to fit, shape "
                f"{expected}; got {type(X).__name__} {getattr(X, 'shape', '')}."
            )
        X = X.copy()
        if not self._label:
            X[self.attribute_name_] = self.levels_[0]
        return X

    def _targets(self, X):
        """Known part of each target row; the attribute's own columns may be NaN."""
        check_is_fitted(self)
        if self._prefix:
            X = transform_dense(split_pipeline(self.model_)[0], self._raw_rows(X))
        X = np.array(X, dtype=np.float64, copy=True)
        if X.shape != (self._n_targets, self._n_columns):
            raise ValueError(
                "X must hold the training examples in the order given to fit, "
                f"shape {(self._n_targets, self._n_columns)}; got {X.shape}."
            )
        X[:, self.columns_] = 0.0
        if not np.all(np.isfinite(X)):
            raise ValueError("X has NaN or infinite values outside the attribute.")
        return X

    def transform(self, X):
        """Reconstruct the attribute of every training example.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training examples, in the order given to :meth:`fit`. The
            attacked attribute's columns are never read (they may be NaN).

        Returns
        -------
        X_attr : ndarray of shape (n_samples, n_columns)
            The reconstructed attribute: one column, or the one-hot levels of
            a group. Against a Pipeline, one column of raw values (the level
            names of a categorical column). For the label, one column of
            labels (a classifier's ``classes_``).
        """
        scores = self.decision_function(X)
        best = np.argmax(scores, axis=1)
        if self._prefix:
            return self.levels_[best][:, None]
        return self.candidates_[best]

    def score(self, X, y=None):
        """Success of the attack against the true attribute values.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training examples with their true attribute values.
        y : array-like of shape (n_samples,), default=None
            The true labels, for an attack on the label; None uses those
            given to :meth:`fit`. Ignored for any other attribute.

        Returns
        -------
        score : float
            The fraction of examples whose value is recovered exactly when
            every true value is a candidate (a categorical attribute);
            otherwise minus the mean squared error of the reconstructions.
            Against a Pipeline, in raw terms. Compare with ``baseline_``.
        """
        guess = self.transform(X)
        if self._label:
            truth = np.asarray(self._labels if y is None else y)[:, None]
            if truth.shape != guess.shape:
                raise ValueError(
                    f"y must hold the {len(guess)} true labels; got shape "
                    f"{truth.shape[:1]}."
                )
        elif self._prefix:
            truth = np.asarray(X[self.attribute_name_])[:, None]
        else:
            truth = check_array(X, dtype=np.float64)[:, self.columns_]
        if np.isin(truth, self.levels_ if self._prefix else self.candidates_).all():
            return float(np.mean(np.all(guess == truth, axis=1)))
        return -float(np.mean((guess.astype(float) - truth.astype(float)) ** 2))

    def get_feature_names_out(self, input_features=None):
        """Names of the reconstructed columns.

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        names : ndarray of str
            The attribute's column names.
        """
        check_is_fitted(self)
        if self._prefix or self._label:
            return np.asarray([self.attribute_name_], dtype=object)
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            return np.asarray([f"x{j}" for j in self.columns_], dtype=object)
        return np.asarray(names[self.columns_], dtype=object)


class WhiteBoxAttributeInversion(_AttributeInversion):
    """White-box attribute inversion of a released linear or logistic model.

    The adversary of Hannun et al. (2021, eq. 30) knows every training
    example except the attacked attribute of the target, the released
    weights ``w'`` and the training recipe. For each candidate value ``a`` it
    computes the minimiser ``w(a)`` of the training objective with the
    target's attribute set to ``a`` and guesses ``argmin_a ||w' - w(a)||``
    (the maximum-likelihood candidate under Gaussian output noise). The
    label is attacked like any attribute: ``w(a)`` sets the target's label.

    All ``n * k`` candidate problems are solved together. Each differs from
    the training problem by one row, so its Hessian at a shared point is the
    shared Hessian plus a rank-two correction, applied by the Woodbury
    identity from one factorisation. With example weights ``omega`` (training
    minimised ``sum_i omega_i l(w^T x_i, y_i) + (n lam / 2) ||w||^2``, ``n =
    sum_i omega_i``), the attacked row keeps its weight: ``omega_i`` scales
    both its removed and its candidate terms. For the squared loss one Newton step
    from ``w'`` is the exact minimiser. For the logistic loss the steps are
    repeated (each with a fresh shared Hessian at the mean of the current
    iterates, a backtracking line search and exact gradients) until the step
    is below ``tol``; ``method="one_step"`` stops after the first step, the
    influence-function approximation.

    Parameters
    ----------
    model : OutputPerturbedLinearRegression or OutputPerturbedLogisticRegression
        The fitted or released target model. Only its released weights and
        its constructor parameters (the training recipe) are used. An
        :class:`~sklearn_fil.IRFILRegressor` or
        :class:`~sklearn_fil.IRFILClassifier` is accepted when :meth:`fit` is
        given its example weights (``sample_weight``). A fitted
        :class:`~sklearn.pipeline.Pipeline` whose last step is such a model
        is attacked through its public prefix, on raw rows and original
        columns (see :ref:`the user guide <attacks>`).
    attribute : int, str or list
        The attacked attribute: a column index, a feature name, the name of
        one of the model's ``onehot_groups``, a list of the columns of a
        one-hot encoded attribute, or the label by the name of its privacy
        report's ``fil[<name>]`` column (the name of the ``y`` given to
        :meth:`fit` when it is a named Series, else ``"y"``; ``"y"`` also
        names the label unless a feature has that name).
    candidates : array-like of shape (n_candidates,), default=None
        Values tried for a single-column attribute (or a regressor's label);
        None uses the distinct values of the column (of ``y``) in the data
        given to :meth:`fit` (at most 256). Must be None for a one-hot
        attribute, whose candidates are its levels, and for a classifier's
        label, whose candidates are its ``classes_``.
    method : {"newton", "one_step"}, default="newton"
        Solve each candidate problem to convergence, or take one Newton step
        from the released weights. Both are exact for the squared loss.
    tol : float, default=1e-10
        Convergence tolerance of the logistic problems: a step below ``tol *
        (1 + ||w||)`` ends a problem's iteration.
    max_iter : int, default=50
        Maximum number of Newton steps for the logistic loss.

    Attributes
    ----------
    model_ : estimator
        The target model.
    columns_ : ndarray of int
        Columns of the attacked attribute (none for the label).
    attribute_name_ : str
        Its name.
    baseline_ : float
        The score of the prior's best guess, to read :meth:`score` against:
        the frequency of the most common value (a categorical attribute), or
        minus the attribute's variance (the mean squared error of guessing
        its mean).
    levels_ : ndarray of shape (n_candidates,)
        Against a Pipeline only (for the label, only when attacked through
        the prefix): the candidates as raw values (the level names of a
        one-hot encoded column, or the classes).
    candidates_ : ndarray of shape (n_candidates, n_columns)
        The candidate values (rows of the identity for a one-hot attribute;
        a classifier's ``classes_`` for the label).
    n_iter_ : int
        Newton steps taken by :meth:`fit`, which solves the candidate problems
        of the training examples (:meth:`transform` reuses them).
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str
        Feature names, when X was a DataFrame.

    See Also
    --------
    BlackBoxAttributeInversion : The query-only adversary.

    References
    ----------
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI, eq. 30.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> from sklearn_fil.attacks import WhiteBoxAttributeInversion
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.standard_normal((200, 3)), rng.integers(0, 2, 200)])
    >>> y = X @ [1.0, -1.0, 0.5, 2.0] + 0.1 * rng.standard_normal(200)
    >>> model = OutputPerturbedLinearRegression(sigma=1e-6, lam=1e-3, random_state=0)
    >>> model.fit(X, y)
    OutputPerturbedLinearRegression(lam=0.001, random_state=0, sigma=1e-06)
    >>> attack = WhiteBoxAttributeInversion(model.release(), attribute=3)
    >>> attack.fit(X, y).score(X)
    1.0
    """

    _parameter_constraints: ClassVar[dict] = {
        **_AttributeInversion._parameter_constraints,
        "method": [StrOptions({"newton", "one_step"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        model,
        *,
        attribute,
        candidates=None,
        method="newton",
        tol=1e-10,
        max_iter=50,
    ):
        self.model = model
        self.attribute = attribute
        self.candidates = candidates
        self.method = method
        self.tol = tol
        self.max_iter = max_iter

    @keyword_fit_params
    def fit(self, X, y=None, *, sample_weight=None):
        """Learn the adversary's knowledge and solve every candidate problem.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training set. Example ``i``'s own attribute value is used
            only inside the leave-one-out corrections of the attack on ``i``,
            where it cancels exactly.
        y : array-like of shape (n_samples,)
            Training targets (required). Against the label, example ``i``'s
            own label is likewise used only where it cancels exactly.
        sample_weight : array-like of shape (n_samples,), default=None
            The adversary's knowledge of the example weights ``omega_i`` the
            target was trained with; None means unit weights. Required when
            the target was fitted with non-uniform ``sample_weight`` or is an
            IRFIL model (its weights are the ``weight`` column of its privacy
            report). Weights given for an unweighted target are used as given:
            they are what the adversary believes training used.

        Returns
        -------
        self : object
            The fitted attack.

        Raises
        ------
        TypeError
            When the model is not an output-perturbed linear or logistic
            regression, or is an IRFIL model and ``sample_weight`` is None.
        ValueError
            When y is None, the target was trained with sample weights and
            ``sample_weight`` is None, the weights are not one number per
            row with a positive sum, or the Hessian is singular at the
            released weights (``method="one_step"``).
        """
        return fit_or_clear(self, self._fit, X, y, sample_weight, private=_PRIVATE)

    def _fit(self, X, y, sample_weight):
        require(y, "y", self)
        _, final = split_pipeline(self.model)
        recipe = target_glm(
            final, type(self).__name__, informed=sample_weight is not None
        )
        raw = X
        X, y, fitted = self._validate_knowledge(X, y, self.model)
        omega = adversary_weights(sample_weight, X)
        X = recipe.clip(X)
        fitted.update(
            _recipe=recipe,
            _X=X,
            _Xt=recipe.augment(X),
            _y=recipe.encode(y),
            _omega=omega,
        )
        vars(self).update(fitted)
        self._known = self._targets(raw)
        self._scores, self.n_iter_ = self._candidate_scores(self._known)
        return self

    def decision_function(self, X):
        """Minus the distance of each candidate's minimiser to the release.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training examples, in the order given to :meth:`fit`; the
            attacked attribute's columns are never read.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_candidates)
            ``-||w' - w(a)||`` for every example and candidate.
        """
        known = self._targets(X)
        if np.array_equal(known, self._known):
            return self._scores.copy()  # solved by fit
        return self._candidate_scores(known)[0]

    def _candidate_scores(self, known):
        """``-||w' - w(a)||`` of the rows ``known``, and the Newton steps taken."""
        recipe = self._recipe
        rows = np.repeat(known, len(self.candidates_), axis=0)
        owner = np.repeat(np.arange(len(known)), len(self.candidates_))
        if self._label:
            # the row stays; its label is each candidate in turn
            labels = np.tile(recipe.encode(self.candidates_[:, 0]), len(known))
        else:
            rows[:, self.columns_] = np.tile(self.candidates_, (len(known), 1))
            labels = self._y[owner]
        # clipping rescales the whole row, so it sees the candidate value
        Z = recipe.augment(recipe.clip(rows))
        W, n_iter = self._solve(owner, Z, labels)
        dist = np.linalg.norm(W - recipe.weights, axis=1)
        return -dist.reshape(len(known), len(self.candidates_)), n_iter

    def _solve(self, owner, Z, labels):
        """Minimisers of the training objective, example ``owner[b]`` replaced.

        Its row becomes ``Z[b]`` and its label ``labels[b]`` (as the loss
        sees it). Returns them and the number of Newton steps.
        """
        recipe = self._recipe
        w0 = recipe.weights
        if not recipe.family.constant_curvature and self.method == "newton":
            # Start at the minimiser of the training problem, within one
            # example's influence of every candidate's minimiser: from the
            # released weights Newton can stall where a large noise has driven
            # every curvature to zero. It is a starting point only: the
            # converged minimisers do not depend on it, so the hidden values
            # it was computed with do not reach the result (tested).
            w0, _ = fit_glm(
                self._X,
                self._y,
                self._omega,
                recipe.loss,
                recipe.lam,
                recipe.fit_intercept,
                recipe.penalize_intercept,
                self.tol,
                100,
            )
        try:
            H_inv = self._hessian_inverse(w0)
        except ValueError:
            raise ValueError(
                "The Hessian at the released weights is singular: the noise drove "
                "the logistic curvature of every example to zero, so there is no "
                "one-step approximation there. Use method='newton'."
            ) from None
        W = np.tile(w0, (len(owner), 1))
        # At the start the full-data gradient is shared by every problem.
        grad = self._swap_row(self._gradients(W[:1])[0], W, owner, Z, labels)
        done = np.zeros(len(owner), dtype=bool)
        for it in range(1, self.max_iter + 1):
            todo = np.flatnonzero(~done)
            # The minimisers lie within one example's influence of each other:
            # one Hessian at their mean serves them all.
            w_bar = w0 if it == 1 else W[todo].mean(axis=0)
            if it > 1:
                H_inv = self._hessian_inverse(w_bar)
            step = self._woodbury_step(
                H_inv, w_bar, owner[todo], Z[todo], labels[todo], grad[todo]
            )
            if recipe.family.constant_curvature or self.method == "one_step":
                return W - step, it  # exact for a quadratic objective
            # Full steps, halved where they would grow the gradient.
            t = np.ones(len(todo))
            trial = W[todo] - step
            g_trial = self._swap_row(
                self._gradients(trial), trial, owner[todo], Z[todo], labels[todo]
            )
            old_norm = np.linalg.norm(grad[todo], axis=1)
            for _ in range(30):
                grew = np.flatnonzero(np.linalg.norm(g_trial, axis=1) > old_norm)
                if grew.size == 0:
                    break
                t[grew] *= 0.5
                trial[grew] = W[todo[grew]] - t[grew, None] * step[grew]
                g_trial[grew] = self._swap_row(
                    self._gradients(trial[grew]),
                    trial[grew],
                    owner[todo[grew]],
                    Z[todo[grew]],
                    labels[todo[grew]],
                )
            W[todo], grad[todo] = trial, g_trial
            small = t * np.linalg.norm(step, axis=1) <= self.tol * (
                1.0 + np.linalg.norm(trial, axis=1)
            )
            done[todo[small]] = True
            if done.all():
                return W, it
        warnings.warn(
            f"{(~done).sum()} of {done.size} candidate problems did not converge in "
            f"max_iter={self.max_iter} Newton steps; raise max_iter.",
            ConvergenceWarning,
            stacklevel=6,
        )
        return W, self.max_iter

    def _swap_row(self, full, W, owner, Z, labels):
        """Full-data gradients, example ``owner[b]`` replaced by ``Z[b]``.

        Its label becomes ``labels[b]``; its weight scales both terms.
        """
        family, y = self._recipe.family, self._y
        Xo, yo, wo = self._Xt[owner], y[owner], self._omega[owner]
        r_own, _ = family.derivatives(np.einsum("bp,bp->b", Xo, W), yo)
        r_new, _ = family.derivatives(np.einsum("bp,bp->b", Z, W), labels)
        return full - (wo * r_own)[:, None] * Xo + (wo * r_new)[:, None] * Z

    def _gradients(self, W):
        """Full-data gradients of the objective at the rows of ``W``."""
        Xt, y, omega = self._Xt, self._y, self._omega
        n = Xt.shape[0]
        g = W * self._recipe.penalty(omega.sum())
        for sl in gen_batches(len(W), max(1, _BATCH_ENTRIES // n)):
            R, _ = self._recipe.family.derivatives(Xt @ W[sl].T, y[:, None])
            g[sl] += (Xt.T @ (omega[:, None] * R)).T
        return g

    def _hessian_inverse(self, w):
        """``H(w)^-1`` of the full-data Hessian; ValueError when singular."""
        Xt, omega = self._Xt, self._omega
        _, c = self._recipe.family.derivatives(Xt @ w, self._y)
        H = (Xt * (omega * c)[:, None]).T @ Xt
        return SPDFactor(H, self._recipe.penalty(omega.sum())).inverse()

    def _woodbury_step(self, H_inv, w, owner, Z, labels, grad):
        """Newton steps with ``H(w) - omega_i (c_own x x^T - c_new z z^T)``.

        ``H_inv`` inverts the full-data Hessian at the shared point ``w``; each
        problem's row swap is a rank-two update, through the Woodbury identity.
        """
        Xt, y = self._Xt, self._y
        family = self._recipe.family
        Xo, yo, wo = Xt[owner], y[owner], self._omega[owner]
        _, c_own = family.derivatives(Xo @ w, yo)
        _, c_new = family.derivatives(Z @ w, labels)
        b, p = Xo.shape
        U = np.stack([Xo, Z], axis=1)  # b x 2 x p: the rows of U_b^T
        C = np.stack([-wo * c_own, wo * c_new], axis=1)  # b x 2
        # Plain matrix products (BLAS), no einsum over the p x p inverse: H_inv
        # is symmetric, so H^-1 u is u^T H^-1, and all 2b of them are one GEMM.
        Hinv_g = grad @ H_inv  # b x p
        Hinv_U = (U.reshape(2 * b, p) @ H_inv).reshape(b, 2, p)
        # (H + U C U^T)^-1 g = H^-1 g - H^-1 U (I + C U^T H^-1 U)^-1 C U^T H^-1 g
        S = C[:, :, None] * np.matmul(U, Hinv_U.transpose(0, 2, 1))
        S[:, 0, 0] += 1.0
        S[:, 1, 1] += 1.0
        rhs = C * np.matmul(U, Hinv_g[:, :, None])[:, :, 0]
        coef = np.linalg.solve(S, rhs[:, :, None])  # b x 2 x 1
        return Hinv_g - np.matmul(Hinv_U.transpose(0, 2, 1), coef)[:, :, 0]


class BlackBoxAttributeInversion(_AttributeInversion):
    """Query-only attribute inversion (Fredrikson et al. 2014; Hannun eq. 31).

    The adversary knows the target's other attributes and label, the prior of
    the attacked attribute (its marginal in the training data) and how well
    the model fits, and may query the model. It guesses

    ``argmax_a  p(a) * pi(model(x_i with a), y_i)``

    with ``pi`` a Gaussian density of the label around the prediction, of
    variance the model's training mean squared error, for a regressor, and
    the predicted probability of the known label for a classifier. Against
    the label (the other attributes known) it guesses ``argmax_a p(a) *
    pi(model(x_i), a)``, ``p(a)`` the label's frequency in ``y``.

    Parameters
    ----------
    model : estimator
        Any fitted scikit-learn regressor (``predict``) or classifier
        (``predict_proba``), including a released output-perturbed model or
        a :class:`~sklearn.pipeline.Pipeline`. A Pipeline given the raw
        DataFrame and an original column that its ColumnTransformer encodes
        is queried with raw candidate values (the level names of a
        categorical column); otherwise the rows are passed as given.
    attribute : int, str or list
        The attacked attribute, as in :class:`WhiteBoxAttributeInversion`.
    candidates : array-like of shape (n_candidates,), default=None
        Values tried, as in :class:`WhiteBoxAttributeInversion`.

    Attributes
    ----------
    model_, columns_, attribute_name_, baseline_, levels_, candidates_
        As in :class:`WhiteBoxAttributeInversion`.
    prior_ : ndarray of shape (n_candidates,)
        Prior of each candidate: the fraction of training values nearest to
        it (ties to the first), with one pseudo-count per candidate so that
        no candidate is ruled out.
    mse_ : float
        Training mean squared error of a regressor (None for a classifier).
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str
        Feature names, when X was a DataFrame.

    See Also
    --------
    WhiteBoxAttributeInversion : The adversary who also knows the training set.

    References
    ----------
    Fredrikson, Lantz, Jha, Lin, Page & Ristenpart (2014), *Privacy in
    pharmacogenetics: an end-to-end case study of personalized warfarin
    dosing*, USENIX Security. Hannun, Guo & van der Maaten (2021), UAI, eq. 31.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn_fil.attacks import BlackBoxAttributeInversion
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.standard_normal((200, 3)), rng.integers(0, 2, 200)])
    >>> y = X @ [1.0, -1.0, 0.5, 4.0] + 0.1 * rng.standard_normal(200)
    >>> model = LinearRegression().fit(X, y)
    >>> BlackBoxAttributeInversion(model, attribute=3).fit(X, y).score(X)
    1.0
    """

    def __init__(self, model, *, attribute, candidates=None):
        self.model = model
        self.attribute = attribute
        self.candidates = candidates

    def _through_prefix(self, X, prefix):
        # raw rows naming an original column the prefix encodes; otherwise the
        # pipeline is one opaque model queried with the rows as given
        return (
            isinstance(X, pd.DataFrame)
            and isinstance(self.attribute, str)
            and self.attribute in original_columns(prefix)
        )

    def _label_rows(self, X, prefix):
        # the model is queried with the rows as given (the label has no
        # column); numbers or not, they must be complete
        check_array(X, dtype=None, ensure_min_samples=2, input_name="X")
        return X

    def fit(self, X, y=None):
        """Learn the prior, the model's training error and the targets' labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training set (its attribute column gives the prior).
        y : array-like of shape (n_samples,)
            The targets' labels, known to the adversary (required); against
            the label, the labels that give the prior (the scores do not read
            them).

        Returns
        -------
        self : object
            The fitted attack.
        """
        return fit_or_clear(self, self._fit, X, y, private=_PRIVATE)

    def _fit(self, X, y):
        require(y, "y", self)
        model = self.model
        check_is_fitted(model)
        classifier = is_classifier(model)
        if not hasattr(model, "predict_proba" if classifier else "predict"):
            raise TypeError(
                f"{type(self).__name__} queries predict_proba (classifiers) or "
                f"predict (regressors); {type(model).__name__} has neither."
            )
        raw = X
        columns = X.columns if isinstance(X, pd.DataFrame) else None
        X, y, fitted = self._validate_knowledge(X, y, model)
        candidates = fitted["candidates_"]
        if fitted["_label"] and classifier:
            nearest = np.searchsorted(candidates[:, 0], y)  # the classes_
        else:
            values = y[:, None] if fitted["_label"] else X[:, fitted["columns_"]]
            nearest = np.argmin(
                ((values[:, None, :] - candidates[None]) ** 2).sum(axis=2), axis=1
            )
        if fitted["_prefix"] or fitted["_label"]:
            X, columns = raw, None  # the model is queried with the rows as given
        counts = np.bincount(nearest, minlength=len(candidates)) + 1.0
        mse = None
        if classifier:
            check_known_labels(y, model.classes_)
        else:
            y = y.astype(np.float64)
            residual = y - np.asarray(_query(model, X, columns, "predict"), float)
            mse = float(np.mean(residual**2))
        fitted.update(prior_=counts / counts.sum(), mse_=mse, _y=y, _columns=columns)
        vars(self).update(fitted)
        return self

    def decision_function(self, X):
        """Log posterior (up to a constant) of every candidate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The targets, in the order given to :meth:`fit`; the attacked
            attribute's columns are never read.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_candidates)
            ``log p(a) + log pi(model(x_i with a), y_i)``; for the label,
            ``log p(a) + log pi(model(x_i), a)``.
        """
        if self._label:
            check_is_fitted(self)
            expected = (self._n_targets, self.n_features_in_)
            if np.shape(X) != expected:
                raise ValueError(
                    "X must hold the training examples in the order given to "
                    f"fit, shape {expected}; got {np.shape(X)}."
                )
            # the candidates are a classifier's classes_, in order
            labels = self.candidates_[:, 0][None, :]
            return np.log(self.prior_) + self._log_fit(X, None, labels)
        if self._prefix:
            known = self._raw_rows(X)
            values = self.levels_
            where = self.attribute_name_
        else:
            known = self._targets(X)
            values = self.candidates_
            where = (slice(None), self.columns_)
        scores = np.empty((len(known), len(self.candidates_)))
        for k, value in enumerate(values):
            rows = known.copy()
            rows[where] = value
            fit = self._log_fit(rows, self._columns, self._y[:, None])[:, 0]
            scores[:, k] = np.log(self.prior_[k]) + fit
        return scores

    def _log_fit(self, rows, columns, labels):
        """``log pi(model(rows), labels)``, ``labels`` of shape (1 or n, k)."""
        if self.mse_ is None:
            proba = _query(self.model_, rows, columns, "predict_proba")
            col = np.searchsorted(self.model_.classes_, labels)
            col = np.broadcast_to(col, (len(proba), col.shape[1]))
            return np.log(np.maximum(np.take_along_axis(proba, col, axis=1), 1e-300))
        pred = np.asarray(_query(self.model_, rows, columns, "predict"), float)
        return -0.5 * (labels - pred[:, None]) ** 2 / max(self.mse_, 1e-300)
