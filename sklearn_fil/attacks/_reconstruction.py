"""Reconstruction of a whole training example from a released GLM (Guo et al.)."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils import Bunch
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_fil._report import attribute_label
from sklearn_fil.attacks._base import adversary_weights, target_glm, training_rows
from sklearn_fil.attacks._contract import keyword_fit_params, require
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._pipeline import split_pipeline, transform_dense
from sklearn_fil.utils._sklearn_compat import _fit_context


def _leave_one_out_gradients(Xt, y, omega, recipe):
    """``-(sum_{j != i} omega_j l'(w'^T x~_j, y_j) x~_j + R w')`` for every ``i``.

    The full sum minus the example's own term (see the class Notes).
    """
    w = recipe.weights
    r, _ = recipe.family.derivatives(Xt @ w, y)
    r = omega * r
    total = Xt.T @ r + recipe.penalty(omega.sum()) * w
    return r[:, None] * Xt - total


def _reconstruct(G, y, recipe, prior_sq_norm):
    """Rows ``x_i`` with ``l'(w'^T x~_i, y_i) x~_i = g_i``, and their root counts.

    As in the class docstring; the prior row norm is ``sqrt(prior_sq_norm)``.
    """
    n = G.shape[0]
    if recipe.fit_intercept:
        t = G[:, -1]
        with np.errstate(divide="ignore", invalid="ignore"):
            X_hat = G[:, :-1] / t[:, None]
        X_hat[t == 0] = np.nan
        return X_hat, np.where(t == 0, 0, 1)
    a = G @ recipe.weights
    T, n_roots = recipe.family.residual_roots(a, y)
    g_norm = np.linalg.norm(G, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        norms = g_norm[:, None] / np.abs(T)
        miss = np.abs(np.log(norms) - 0.5 * np.log(prior_sq_norm)[:, None])
    miss[~np.isfinite(miss) | (T == 0)] = np.inf
    # ties (a single or a double root, or no usable prior): the smaller norm
    pick = np.where(miss[:, 1] < miss[:, 0], 1, 0)
    pick[(miss[:, 0] == miss[:, 1]) & (np.abs(T[:, 1]) > np.abs(T[:, 0]))] = 1
    t = T[np.arange(n), pick]
    with np.errstate(divide="ignore", invalid="ignore"):
        X_hat = G / t[:, None]
    X_hat[t == 0] = np.nan
    return X_hat, np.where(t == 0, 0, n_roots)


class GLMReconstructionAttack(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Informed-adversary reconstruction of training examples of a released GLM.

    The adversary of Balle, Cherubin & Hayes (2022), as strengthened by Guo
    et al. (2022, section 5), knows every training example but the target's
    features ``x_i``, the target's label ``y_i``, the released weights ``w'``
    and the training recipe. At the minimiser the gradient of the objective
    ``sum_j omega_j l(w^T x~_j, y_j) + (n lam / 2) ||w||^2`` (``x~ = [x, 1]``
    with an intercept, ``omega_j`` the example weights, ``n = sum_j
    omega_j``) vanishes; taking ``w'`` for the minimiser gives

    ``omega_i l'(w'^T x~_i, y_i) x~_i = -(sum_{j != i} omega_j l'(w'^T x~_j,
    y_j) x~_j + R w')``

    with ``R`` the penalty's diagonal; dividing by ``omega_i``, ``l'(w'^T
    x~_i, y_i) x~_i = g_i`` with ``g_i`` known to the adversary. With
    an intercept the last coordinate of ``x~_i`` is 1, so ``x_i = g_i[:d] /
    g_i[d]`` in closed form. Without one, ``x_i = g_i / t`` where the scalar
    ``t`` solves ``t = l'(w'^T g_i / t, y_i)``: ``t^2 + y_i t - w'^T g_i = 0``
    for the squared loss, and, for the logistic loss, ``-w'^T g_i = u
    expit(-u)`` in the signed margin ``u`` of the row, solved by bisection.

    Without an intercept the equation can have two roots, and then both rows
    give exactly the same minimiser: the release cannot tell them apart.
    The attack keeps the row whose norm is closest, by ratio, to the
    root-mean-square norm of the other training rows (the adversary's prior
    on the size of a row). When there is no real root (noise moved ``w'``
    too far), the closest point is used: the vertex ``t = -y_i / 2`` for the
    squared loss, the peak margin ``u = 1 + W(1/e)`` for the logistic loss.

    Read more in :ref:`the user guide <attacks>`.

    Parameters
    ----------
    model : OutputPerturbedLinearRegression or OutputPerturbedLogisticRegression
        The fitted or released target model. The attack uses only its
        released weights and its constructor parameters (the training
        recipe); :meth:`check_bound` also needs the fitted model's privacy
        report. An :class:`~sklearn_fil.IRFILRegressor` or
        :class:`~sklearn_fil.IRFILClassifier` is accepted when :meth:`fit` is
        given its example weights (``sample_weight``). A fitted
        :class:`~sklearn.pipeline.Pipeline` whose last step is such a model
        is attacked through its public prefix, on raw rows (see :ref:`the
        user guide <attacks>`): the reconstruction is the transformed row.

    Attributes
    ----------
    model_ : estimator
        The target model.
    baseline_ : float
        The score of the prior's guess, to read :meth:`score` against:
        minus the mean variance of the features (as training saw them), the
        error of guessing every feature's mean.
    n_solutions_ : ndarray of shape (n_samples,)
        Number of solutions of each example's first-order condition: 1 with
        an intercept; 0 (the closest point is used), 1 or 2 without one.
        0 also marks a row whose scale ``t`` is exactly zero: its features
        do not enter the gradient, and its reconstruction is NaN.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X was a DataFrame with string column names.

    See Also
    --------
    sklearn_fil.attacks.WhiteBoxAttributeInversion : The adversary that
        knows all but one attribute of the target.

    Notes
    -----
    The threat model assumes the adversary knows the training set exactly,
    in particular its size and its example weights (the penalty is ``n lam /
    2`` with ``n`` the sum of the weights). An example of weight zero does
    not enter the objective and cannot be reconstructed (NaN, with
    ``n_solutions_ == 0``). For a logistic model with ``data_norm``, the known
    rows are clipped as in training and the reconstruction is the clipped row.

    The reconstruction of example ``i`` never depends on ``x_i``: ``g_i`` is
    computed as the full sum minus the example's own term, equal to the sum
    over the other examples up to rounding.

    The attack is unbiased only to first order in the noise: the
    reconstruction is a ratio whose denominator is noisy, so its error has
    heavy tails when the noise is comparable to ``l'(w'^T x~_i, y_i)``.

    References
    ----------
    Balle, Cherubin & Hayes (2022), *Reconstructing training data with
    informed adversaries*, IEEE S&P.
    Guo, Karrer, Chaudhuri & van der Maaten (2022), *Bounding training data
    reconstruction in private (deep) learning*, ICML, section 5.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> from sklearn_fil.attacks import GLMReconstructionAttack
    >>> X, y = make_regression(n_samples=50, n_features=3, noise=1.0, random_state=0)
    >>> model = OutputPerturbedLinearRegression(sigma=1e-8, lam=1e-2, random_state=0)
    >>> attack = GLMReconstructionAttack(model.fit(X, y).release()).fit(X, y)
    >>> attack.transform(X).shape
    (50, 3)
    >>> bool(attack.score(X) > -1e-8)
    True
    """

    _parameter_constraints: ClassVar[dict] = {"model": [object]}

    def __init__(self, model):
        self.model = model

    @keyword_fit_params
    def fit(self, X, y=None, *, sample_weight=None):
        """Learn the adversary's knowledge and reconstruct every example.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The training set, in training order. Example ``i``'s own features
            enter the attack on ``i`` only through its own term, which cancels
            exactly (see Notes).
        y : array-like of shape (n_samples,)
            Training targets (known to the adversary, the target's included);
            classes of the model for a classifier. Required.
        sample_weight : array-like of shape (n_samples,), default=None
            The adversary's knowledge of the example weights ``omega_i`` (the
            target's included), as in
            :meth:`~sklearn_fil.attacks.WhiteBoxAttributeInversion.fit`.

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
            When y is None, X does not have the model's features, y has
            labels that are not classes of the model, the target was trained
            with sample weights and ``sample_weight`` is None, or the weights
            are not one number per row with a positive sum.
        """
        return fit_or_clear(
            self,
            self._fit,
            X,
            y,
            sample_weight,
            private=("_recipe", "_reconstruction", "_piped"),
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def _fit(self, X, y, sample_weight):
        require(y, "y", self)
        prefix, final = split_pipeline(self.model)
        recipe = target_glm(
            final, type(self).__name__, informed=sample_weight is not None
        )
        X, y = training_rows(self, prefix, final, recipe, X, y)
        model_names = getattr(final, "feature_names_in_", None)
        names = getattr(self, "feature_names_in_", None)
        if (
            model_names is not None
            and names is not None
            and not np.array_equal(model_names, names)
        ):
            raise ValueError(
                "The feature names of X differ from those the target model was "
                f"trained on: {list(names)[:5]} vs {list(model_names)[:5]}."
            )
        y = recipe.encode(y)
        omega = adversary_weights(sample_weight, X)
        self.model_ = self.model
        self._recipe, self._piped = recipe, prefix is not None
        Xc = recipe.clip(X)
        self.baseline_ = -float(np.mean(np.var(Xc, axis=0)))
        G = _leave_one_out_gradients(recipe.augment(Xc), y, omega, recipe)
        # omega_i l'(w'^T x~_i, y_i) x~_i = G_i; a weightless row is not in it
        absent = omega == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            G = G / omega[:, None]
        G[absent] = 0.0
        sq_norms = np.einsum("ij,ij->i", Xc, Xc)
        prior = (sq_norms.sum() - sq_norms) / (X.shape[0] - 1)
        X_hat, n_solutions = _reconstruct(G, y, recipe, prior)
        X_hat[absent] = np.nan
        n_solutions[absent] = 0
        self._reconstruction, self.n_solutions_ = X_hat, n_solutions
        return self

    def _check_rows(self, X, allow_nan):
        check_is_fitted(self)
        if self._piped:
            if allow_nan:  # only the number of rows is read
                X = np.zeros((len(X), self.n_features_in_))
            else:
                X = transform_dense(split_pipeline(self.model_)[0], X)
        X = validate_data(
            self,
            X,
            dtype=np.float64,
            reset=False,
            ensure_all_finite="allow-nan" if allow_nan else True,
        )
        n = self._reconstruction.shape[0]
        if X.shape[0] != n:
            raise ValueError(
                "X must hold the training examples in the order given to fit: "
                f"{n} rows; got {X.shape[0]}."
            )
        return X

    def transform(self, X):
        """Reconstruct every training example from the others and the release.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The training examples, in the order given to :meth:`fit`. Only
            its shape is checked: each example's features are the unknown,
            so its values are never read (they may be NaN).

        Returns
        -------
        X_hat : ndarray of shape (n_samples, n_features)
            The reconstructed rows, as training saw them (clipped to the
            model's ``data_norm``); NaN where the row does not enter the
            gradient at ``w'``.
        """
        self._check_rows(X, allow_nan=True)
        return self._reconstruction.copy()

    def reconstruction_mse(self, X):
        """Per-example, per-coordinate squared error of the reconstructions.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The true training examples, in the order given to :meth:`fit`.

        Returns
        -------
        mse : ndarray of shape (n_samples,)
            ``||x_hat_i - x_i||^2 / n_features``, against the rows as training
            saw them (clipped to the model's ``data_norm``).
        """
        X = self._check_rows(X, allow_nan=False)
        truth = self._recipe.clip(X)
        return np.mean((self._reconstruction - truth) ** 2, axis=1)

    def score(self, X, y=None):
        """Minus the mean reconstruction error (higher is better).

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The true training examples, in the order given to :meth:`fit`.
        y : None
            Ignored.

        Returns
        -------
        score : float
            Minus the mean over examples of :meth:`reconstruction_mse`.
        """
        return -float(np.mean(self.reconstruction_mse(X)))

    def check_bound(self, X):
        """Compare the realised errors with the FIL bound of Guo et al. (Thm 2).

        The bound on the expected per-coordinate MSE of any unbiased
        reconstruction of the features of example ``i`` when its label is
        known is ``d / sum_j eta_ij^2`` (``eta_ij``: the ``fil[<feature>]``
        columns of the model's privacy report; the sum is the trace of the
        features' block of the Fisher information matrix). It bounds the
        expectation over the noise of the release: one release can fall
        below it by chance, so compare averages over many releases. It may
        fail where the noise is large (the attack is unbiased only to first
        order, see Notes).

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The true training examples, in the order given to :meth:`fit`.

        Returns
        -------
        result : :class:`~sklearn.utils.Bunch`
            ``report``, a DataFrame indexed like the privacy report, with
            columns ``mse`` (:meth:`reconstruction_mse`), ``mse_bound`` and
            ``respects_bound`` (``mse >= mse_bound``) and ``prior_mse`` (the
            per-coordinate error of guessing every feature's mean, the
            baseline: a bound above it says the release reveals less than
            the prior); ``fraction_respected``, the fraction of rows
            respecting the bound; and ``prior_variance``, the variance of
            each feature (as training saw it), a Series by feature name.

        Raises
        ------
        ValueError
            When the model has no privacy report (a released copy: the
            report is sensitive and the bound needs the fitted model), has
            ``onehot_groups`` (no per-feature FIL), or was trained on another
            number of examples.
        """
        check_is_fitted(self)
        final = split_pipeline(self.model_)[1]
        report = getattr(final, "privacy_report_", None)
        if report is None:
            raise ValueError(
                "check_bound needs the privacy_report_ of the fitted target model, "
                "which a released copy does not carry (the report is sensitive): "
                "build the attack on the fitted model, not model.release()."
            )
        if getattr(final, "onehot_groups", None):
            raise ValueError(
                "check_bound needs the FIL of every feature, which the privacy "
                "report of a model with onehot_groups does not give (a one-hot "
                "group is one attribute)."
            )
        d = self.n_features_in_
        names = getattr(final, "feature_names_in_", None)
        if names is None:
            names = [f"x{j}" for j in range(d)]
        columns = [attribute_label(name) for name in names]
        missing = [c for c in columns if c not in report.columns]
        if missing or len(report) != self._reconstruction.shape[0]:
            raise ValueError(
                "The privacy report does not match the data given to fit: it has "
                f"{len(report)} rows (fit: {self._reconstruction.shape[0]})"
                + (f" and lacks the columns {missing[:5]}." if missing else ".")
            )
        mse = self.reconstruction_mse(X)
        truth = self._recipe.clip(self._check_rows(X, allow_nan=False))
        prior_variance = pd.Series(
            np.var(truth, axis=0), index=list(names), name="prior_variance"
        )
        trace = np.sum(report[columns].to_numpy(dtype=np.float64) ** 2, axis=1)
        with np.errstate(divide="ignore"):
            bound = d / trace
        respects = mse >= bound
        table = pd.DataFrame(
            {
                "mse": mse,
                "mse_bound": bound,
                "respects_bound": respects,
                "prior_mse": prior_variance.mean(),
            },
            index=report.index,
        )
        return Bunch(
            report=table,
            fraction_respected=float(respects.mean()),
            prior_variance=prior_variance,
        )
