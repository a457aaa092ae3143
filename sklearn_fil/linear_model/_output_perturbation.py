"""Output-perturbed linear and logistic regression with FIL privacy reports."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from functools import partial
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from sklearn_fil._multinomial import LIPSCHITZ as MULTINOMIAL_LIPSCHITZ
from sklearn_fil._multinomial import SMOOTHNESS
from sklearn_fil.accounting import (
    Guarantee,
    check_delta,
    gaussian_epsilon,
    gaussian_sigma,
    output_perturbation_lam,
    output_perturbation_ridge_lam,
    output_perturbation_sensitivity,
)
from sklearn_fil.exceptions import ClippingWarning
from sklearn_fil.linear_model import _multinomial
from sklearn_fil.linear_model._base import (
    CERTIFIED_FRACTION,
    MECHANISM,
    BaseReleasedGLM,
    Doc,
    LogisticLossMixin,
    SquaredLossMixin,
)
from sklearn_fil.linear_model._per_instance import per_instance_columns
from sklearn_fil.utils._clipping import clip_rows, row_norms
from sklearn_fil.utils._dask import is_dask
from sklearn_fil.utils._labels import LABEL_SET
from sklearn_fil.utils._sklearn_compat import Interval, StrOptions

# per_instance_accounting="auto" computes the exact leave-one-out sensitivity
# (O(n^2 d) per Newton step) up to this many examples, a certified interval
# of it (O(n d^2)) above.
AUTO_EXACT_MAX_SAMPLES = 2000
# lam="auto" without target_epsilon (or data_norm): the L2 strength of old.
AUTO_LAM_WITHOUT_TARGET = 1e-2

_NO_DATA_NORM_MSG = (
    "No differential-privacy guarantee: data_norm was not set, so the rows were "
    "not clipped and the sensitivity of the minimiser is unbounded."
)
_NOT_STRONGLY_CONVEX_MSG = (
    "No differential-privacy guarantee: the intercept is not penalised "
    "(penalize_intercept=False), so the objective is not strongly convex in it "
    "and the sensitivity bound 2 L / (n lam) does not hold."
)
_NO_STRONG_CONVEXITY_MSG = (
    "No differential-privacy guarantee: lam=0 gives no strong convexity."
)
_PRIVATE_WEIGHTS_MSG = (
    "No differential-privacy guarantee: the sample weights are not uniform and "
    "were not declared public (public_sample_weight=True). The sensitivity "
    "2 L max(omega) / (sum(omega) lam) depends on them, so it bounds the change "
    "of the minimiser only when every row's weight is a public constant that "
    "stays with its position when the example is replaced."
)
_NO_LABEL_BOUND_MSG = (
    "No differential-privacy guarantee: label_bound was not set, so the labels "
    "were not clipped and the squared loss's gradient, hence the sensitivity of "
    "the minimiser, is unbounded. Set label_bound (with data_norm), or use the "
    "privacy report (FIL) instead."
)


class _GuaranteeDoc:
    """numpydoc entries that the two output-perturbed models share."""

    sigma = """\
    sigma : float, default=1.0
        Standard deviation of the Gaussian noise added to every weight;
        ignored when ``target_epsilon`` is set (``sigma_`` is the noise used)."""
    penalize_intercept = """\
    penalize_intercept : bool or "auto", default="auto"
        Whether the penalty includes the intercept. The DP guarantee with an
        intercept needs ``True``; ``"auto"`` is ``True`` exactly when
        ``data_norm`` is set (``penalize_intercept_`` is the value used)."""
    data_norm = """\
    data_norm : float, default=None
        Clip every row to this L2 norm before fitting (the report concerns
        the clipped rows); enables the DP guarantee. Clipping more than half
        of the rows warns with :class:`~sklearn_fil.exceptions.ClippingWarning`.
        One-hot columns are never rescaled: a row of ``k`` groups has its
        other columns clipped to ``sqrt(data_norm^2 - k)``."""
    delta = """\
    delta : float, default=None
        δ of the guarantee; None means
        :func:`~sklearn_fil.accounting.default_delta`. A δ of ``1 / n`` or
        more warns with :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`."""
    target_epsilon = """\
    target_epsilon : float, default=None
        Calibrate ``sigma_`` at fit time, ignoring ``sigma``, to the smallest
        noise for which the analytic Gaussian mechanism (Balle & Wang, 2018)
        at the certified ``Δ`` is (``target_epsilon``, δ)-DP. Without the
        guarantee ``fit`` raises a ``ValueError`` before any work."""
    public_sample_weight = """\
    public_sample_weight : bool, default=False
        Whether ``sample_weight`` is public: a constant fixed to each row's
        position, chosen without looking at the data. Only then do
        non-uniform weights give a DP guarantee."""
    attributes = """\
    sigma_ : float
        Noise std of the release: ``sigma`` or calibrated to ``target_epsilon``.
    lam_ : float
        The L2 strength of the fit: ``lam``, or its ``"auto"`` value.
    penalize_intercept_ : bool
        Whether the fit penalised the intercept (``"auto"`` resolved).
    n_clipped_ : int
        Number of training rows that ``data_norm`` rescaled (0 without it).
    guarantee_ : Guarantee
        The (ε, δ)-DP guarantee (relation, what is public, mechanism,
        sensitivity, noise, dp-accounting event) or the reason there is none.
    epsilon_ : float or None
        ε of the guarantee; None (with a
        :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`) without one.
    delta_ : float or None
        δ of the guarantee; None (with a warning) without one.
    dp_event_ : dp_accounting.DpEvent or None
        ``GaussianDpEvent(sigma_ / Δ)``, the release at unit distance (compose
        it under ``ADD_OR_REMOVE_ONE``); None (with a warning) without one."""


class _OutputPerturbed(BaseReleasedGLM):
    """One exact fit of the weighted minimiser, released with Gaussian noise."""

    _dask_fit = True

    _parameter_constraints: ClassVar[dict] = {
        **BaseReleasedGLM._parameter_constraints,
        "data_norm": [None, Interval(Real, 0, None, closed="neither")],
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
        "target_epsilon": [None, Interval(Real, 0, None, closed="neither")],
        "lam": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "penalize_intercept": [StrOptions({"auto"}), "boolean"],
        "public_sample_weight": ["boolean"],
    }

    def fit(self, X, y, sample_weight=None):
        """Fit the model, add Gaussian noise and compute the privacy report.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask.array} of shape \
                (n_samples, n_features)
            Training data, the private features. Sparse input is never
            densified. A dense ``dask.array`` chunked by rows only is fitted
            block by block, to the in-memory fit's numbers up to the order of
            the sums, with a lazy ``privacy_report_``; not with
            ``onehot_groups="auto"``, scipy sparse blocks, or the logistic
            model's exact per-instance sensitivities (the report holds their
            bound).
        y : array-like of shape (n_samples,)
            Targets; a NumPy or Dask array when X is a Dask array.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ``omega_i`` of the examples in the objective; a NumPy or
            Dask array when X is a Dask array.

        Returns
        -------
        self : object
            Fitted estimator.

        Warns
        -----
        UtilityWarning
            When the released model's training accuracy (R^2) does not beat
            the majority rate (what uninformative inputs reach) by its margin
            (:class:`~sklearn_fil.exceptions.UtilityWarning`). Computed from
            the private training rows as fitted, in memory only; not part of
            :meth:`release`.
        """
        return self._fit_clean(X, y, sample_weight)

    def _solve(self, X, y, omega, groups):
        w, self.n_iter_, loss_hessian = self._minimise(X, y, omega)
        return w, omega, self._fil(X, y, w, omega, groups, loss_hessian)

    def _per_instance_exact(self, n_samples, dask=False):
        return True  # the exact Delta_i, not its bound

    def _per_instance_interval(self, n_samples, dask=False):
        return False  # when not exact: b_i, not a certified interval

    def _per_instance_columns(self, X, y, w, omega, delta, result):
        return per_instance_columns(
            self,
            X,
            y,
            w,
            omega,
            delta,
            exact=self._per_instance_exact(X.shape[0], dask=is_dask(X)),
            interval=self._per_instance_interval(X.shape[0], dask=is_dask(X)),
            hessian=result.hessian,
            gradient=result.gradient,
        )

    def _clipper(self, groups):
        if self.data_norm is None:
            return None
        if np.sqrt(len(groups)) >= self.data_norm:
            raise ValueError(
                f"data_norm={self.data_norm:g} leaves no norm for the numeric "
                f"columns: each of the {len(groups)} one-hot group(s) puts a 1 in "
                f"every row, so data_norm must exceed sqrt({len(groups)})."
            )
        exempt = [j for cols in groups.values() for j in cols]
        return partial(clip_rows, max_norm=self.data_norm, exempt=exempt)

    def _preprocess(self, X, groups, n_clipped=None):
        self.n_clipped_ = 0
        clipper = self._clipper(groups)
        if clipper is None:
            return X
        if is_dask(X):  # lazily; the fit's first pass counted the clipped rows
            clipped = X.map_blocks(
                _rows_as_fitted, clipper, dtype=np.float64, meta=np.empty((0, 0))
            )
            self.n_clipped_ = n_clipped
        else:
            clipped, self.n_clipped_ = clipper(X)
        if self.n_clipped_ > X.shape[0] / 2:
            self._warn_clipping(X, clipper.keywords["exempt"])
        return clipped

    def _warn_clipping(self, X, exempt):
        """Warn that most of the rows ``X`` (before clipping) were clipped."""
        free = np.setdiff1d(np.arange(X.shape[1]), exempt)
        if is_dask(X):
            import dask.array as da

            norms = X[:, free].map_blocks(row_norms, drop_axis=1, dtype=np.float64)
            # Dask's percentile merges the blocks' own: close to the median
            median = f"about {float(da.percentile(norms, [50]).compute()[0]):.3g}"
        else:
            median = f"{float(np.median(row_norms(X[:, free]))):.3g}"
        warnings.warn(
            f"data_norm={self.data_norm:g} clipped {self.n_clipped_} of {X.shape[0]} "
            f"rows (median norm {median}"
            + (" of the numeric columns" if exempt else "")
            + "): the model learns from rescaled data and may be little "
            "better than a constant. Scale the features so that most rows "
            "fit, or raise data_norm (with sigma, to keep epsilon).",
            ClippingWarning,
            stacklevel=9,  # the caller of fit
        )

    def _delta(self, n_samples):
        return check_delta(self.delta, n_samples) if self.data_norm else None

    def _dp_bound(self, omega):
        if self.data_norm is None:
            return None, _NO_DATA_NORM_MSG
        if self.fit_intercept and not self.penalize_intercept_:
            return None, _NOT_STRONGLY_CONVEX_MSG
        if self.lam_ == 0:
            return None, _NO_STRONG_CONVEXITY_MSG
        stats = self._weight_stats(omega)
        if not stats.uniform and not self.public_sample_weight:
            return None, _PRIVATE_WEIGHTS_MSG
        reason = self._no_bound_reason()
        if reason is not None:
            return None, reason
        # Strong convexity sum(omega) lam, and replacing one example moves the
        # gradient by at most 2 max(omega) G L (omega is scaled to max 1).
        return self._unit_sensitivity(stats.n) * (stats.n / stats.total), None

    def _sensitivity(self, omega):
        return self._dp_bound(omega)[0]

    def _row_norm(self):
        """``L``: the bound on the norm of a clipped row, intercept included."""
        return float(np.hypot(self.data_norm, float(self.fit_intercept)))

    def _resolve_params(self, omega, delta):
        """``(lam_, penalize_intercept_)``: the ``"auto"`` values resolved.

        ``penalize_intercept="auto"`` penalises the intercept exactly when
        ``data_norm`` is set (the guarantee needs it). ``lam="auto"`` is the
        loss's rule of public numbers (``_lam_rule``) with ``target_epsilon``
        and ``data_norm``, else ``_lam_without_target()``.
        """
        penalize = self.penalize_intercept
        if isinstance(penalize, str):  # "auto"
            penalize = self.data_norm is not None
        lam = self.lam
        if isinstance(lam, str):  # "auto"
            lam = self._lam_without_target()
            if self.target_epsilon is not None and self.data_norm is not None:
                # n under uniform weights; the sum of public ones
                lam = self._lam_rule(self._weight_stats(omega).total, delta)
        return float(lam), bool(penalize)

    def _utility_remedy(self):
        if self.target_epsilon is None:
            return "lower sigma, use more data or change lam"
        return f"raise target_epsilon, use more data or set lam (lam_={self.lam_:.3g})"

    def _certified_sensitivity(self, omega):
        """``(Δ, reason)``: the sensitivity of the released centre, or why none.

        The centre is within ``CERTIFIED_FRACTION Δ₀`` of the exact minimiser
        on either data set, so it moves by at most ``(1 + 2 CERTIFIED_FRACTION)
        Δ₀``.
        """
        sensitivity, reason = self._dp_bound(omega)
        if sensitivity is None:
            return None, reason
        return sensitivity * (1.0 + 2.0 * CERTIFIED_FRACTION), None

    def _noise_std(self, omega, delta):
        if self.target_epsilon is None:
            return float(self.sigma)
        sensitivity, reason = self._certified_sensitivity(omega)
        if sensitivity is None:
            raise ValueError(
                f"target_epsilon={self.target_epsilon!r} needs a differential-"
                f"privacy guarantee to calibrate the noise to, and there is none. "
                f"{reason}"
            )
        # the analytic Gaussian mechanism at the sensitivity the guarantee uses
        return gaussian_sigma(
            epsilon=self.target_epsilon, delta=delta, sensitivity=sensitivity
        )

    def _guarantee(self, omega, delta):
        # imported on first use, as in sklearn_fil.accounting (slow to import)
        import dp_accounting

        sensitivity, reason = self._certified_sensitivity(omega)
        if sensitivity is None:
            return Guarantee.none(reason, mechanism=MECHANISM)
        weights_public = bool(self.public_sample_weight)
        public = ["n_samples"] + ["sample_weight"] * weights_public
        if isinstance(self.onehot_groups, str):  # "auto": the layout is public
            public.append("onehot_groups")
        if getattr(self, "classes", False) is None:  # classes_ read from labels
            public.append(LABEL_SET)
        accountant = "analytic Gaussian mechanism (dp-accounting)"
        if self.target_epsilon is not None:
            accountant += f", sigma calibrated to epsilon={self.target_epsilon:g}"
        return Guarantee(
            epsilon=gaussian_epsilon(
                sigma=self.sigma_, sensitivity=sensitivity, delta=delta
            ),
            delta=delta,
            neighboring_relation="replace_one",
            public=tuple(public),
            mechanism=MECHANISM,
            accountant=accountant,
            sensitivity=float(sensitivity),
            noise_std=float(self.sigma_),
            weights_public=weights_public,
            # the mechanism at unit distance: composes under add/remove in
            # dp-accounting whatever relation Δ was computed under
            dp_event=dp_accounting.GaussianDpEvent(self.sigma_ / sensitivity),
            event_relation="add_remove",
        )

    def _no_bound_reason(self):
        """Why the loss has no bounded gradient on the clipped rows, or None."""
        return None

    def _unit_sensitivity(self, n_samples):
        """``2 G L / (n lam)`` of ``n_samples`` unit-weight rows (see _dp_bound)."""
        raise NotImplementedError

    def _lam_without_target(self):
        """``lam="auto"`` without ``target_epsilon`` and ``data_norm``."""
        return AUTO_LAM_WITHOUT_TARGET

    def _lam_rule(self, n_samples, delta):
        """``lam="auto"`` with ``target_epsilon`` and ``data_norm``."""
        raise NotImplementedError


class OutputPerturbedLinearRegression(SquaredLossMixin, _OutputPerturbed):
    __doc__ = f"""Ridge regression with Gaussian output noise and a FIL privacy report.

    Fits ``w* = argmin_w sum_i omega_i (w^T x_i - y_i)^2 / 2 + (n lam / 2)
    ||w||^2`` exactly (``n`` the sum of the sample weights), releases ``w' =
    w* + N(0, sigma^2 I)`` and reports the Fisher information loss of the
    release about every training example and attribute (Hannun et al., 2021).

    With rows clipped to ``data_norm``, labels clipped to ``label_bound``,
    ``lam > 0``, the intercept penalised (the default with ``data_norm``, or
    absent) and uniform or public weights, the release is (ε, δ)-DP
    (``guarantee_``) for **replace-one** neighbours (same public size, one
    example differs): the minimiser lies in the ball ``||w|| <= B_y / (2
    sqrt(lam))`` (``B_y`` the ``label_bound``; from the first-order
    condition), where the squared loss's derivative is at most ``G = B_y (L
    / (2 sqrt(lam)) + 1)``, so ``Δ = (1 + 2e-6) 2 G L max(omega) / (sum(omega)
    lam)`` with ``L = sqrt(data_norm^2 + fit_intercept)``
    (:func:`~sklearn_fil.accounting.output_perturbation_sensitivity`; the
    factor: the solve is refined until its gradient certifies that it is
    within ``1e-6 Δ`` of the exact minimiser). Otherwise asking for ε warns
    with :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`. See
    :ref:`choosing_parameters` for ``target_epsilon`` and ``lam="auto"``.

{Doc.sensitive}

    Parameters
    ----------
{_GuaranteeDoc.sigma}
    lam : float or "auto", default="auto"
        L2 strength; the penalty is ``(n lam / 2) ||w||^2``. ``"auto"`` with
        ``target_epsilon`` and ``data_norm``: the λ that minimises the bound
        on the excess risk of the release,
        :func:`~sklearn_fil.accounting.output_perturbation_ridge_lam` of
        ``n``, the number of weights, ``data_norm``, ``target_epsilon`` and
        δ, public numbers only; otherwise ``1e-2`` when ``data_norm`` and
        ``label_bound`` ask for a guarantee, else ``0.0`` (least squares,
        the default of old: it needs a non-singular ``X^T X``). ``lam_`` is
        the value used.
{Doc.fit_intercept}
{_GuaranteeDoc.penalize_intercept}
{Doc.private_label}
{_GuaranteeDoc.data_norm}
    label_bound : float, default=None
        Clip every label to ``[-label_bound, label_bound]`` before fitting
        (the report concerns the clipped labels); with ``data_norm``,
        enables the DP guarantee. A public number, chosen without looking at
        the labels. The penalty pulls the intercept to 0, so centre labels
        known to lie in ``[low, high]`` on ``c = (low + high) / 2`` first
        and set ``label_bound = (high - low) / 2``: e.g.
        :class:`~sklearn.compose.TransformedTargetRegressor` with ``func=lambda
        y: y - c`` and ``inverse_func=lambda y: y + c``. Clipping more than
        half of the labels warns with
        :class:`~sklearn_fil.exceptions.ClippingWarning`.
{_GuaranteeDoc.delta}
{_GuaranteeDoc.target_epsilon}
{_GuaranteeDoc.public_sample_weight}
{Doc.onehot_groups}
{Doc.random_state}

    Attributes
    ----------
{Doc.coef}
    privacy_report_ : pandas.DataFrame or dask.dataframe.DataFrame
        One row per training example (the index of a DataFrame X, else
        ``sample``; lazy on Dask): ``fil`` (spectral FIL), ``dfil``
        (diagonal FIL), ``mse_bound`` (``1/dfil^2``), ``fil[<attribute>]``
        per private attribute (the label's when private), ``rel_mse_bound``
        (``mse_bound`` in units of each coordinate's training std: guessing
        the mean scores 1; see :ref:`interpretation`), then the example's own
        leakage (:ref:`per_instance_epsilon`): ``loo_sensitivity``, ``Delta_i
        = ||w*(D) - w*(D_-i)||`` (loss term removed, penalty and ``n`` kept,
        by Sherman-Morrison), ``epsilon``, the Gaussian mechanism's ε of
        telling ``D`` from ``D_-i`` at ``Delta_i`` and δ, and
        ``epsilon_replace_one``: with a guarantee an upper bound on the ε of
        replacing the example by any row and label it allows (sensitivity
        ``Delta_i + omega_i G L / (sum(omega) lam)``), between ``epsilon``
        and ``epsilon_``; ``inf`` without one. Sensitive: do not publish.
{Doc.fil}
    n_iter_ : int
        Solves of the normal equations (1, or more where the certificate
        of the guarantee asked for a refinement).
{_GuaranteeDoc.attributes}
    n_labels_clipped_ : int
        Number of training labels that ``label_bound`` clipped (0 without it).

    See Also
    --------
    OutputPerturbedLogisticRegression : The logistic counterpart.
    sklearn_fil.accounting.output_perturbation_sensitivity : Its ``Δ``.
    sklearn_fil.fisher.fisher_information_loss : The FIL engine.

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate (2011), *Differentially private empirical
    risk minimization*, JMLR.
{Doc.hannun}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> X, y = make_regression(n_samples=50, n_features=3, random_state=0)
    >>> reg = OutputPerturbedLinearRegression(sigma=0.1, random_state=0).fit(X, y)
    >>> reg.privacy_report_.columns.tolist()  # doctest: +NORMALIZE_WHITESPACE
    ['fil', 'dfil', 'mse_bound', 'fil[x0]', 'fil[x1]', 'fil[x2]', 'fil[y]',
     'rel_mse_bound', 'loo_sensitivity', 'epsilon', 'epsilon_replace_one']
    >>> bool((reg.privacy_report_["fil"] >= reg.privacy_report_["dfil"]).all())
    True

    With rows and labels bounded, an ε: the noise is calibrated to it, and
    λ chosen from public numbers:

    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20_000, 3))
    >>> y = X @ [0.5, -0.3, 0.2] + 0.5 * rng.normal(size=20_000)
    >>> reg = OutputPerturbedLinearRegression(
    ...     target_epsilon=1.0, data_norm=3.0, label_bound=2.0, random_state=0
    ... ).fit(X, y)
    >>> round(reg.epsilon_, 6), reg.guarantee_.neighboring_relation
    (1.0, 'replace_one')
    >>> from sklearn.linear_model import Ridge
    >>> round(reg.score(X, y), 2), round(Ridge().fit(X, y).score(X, y), 2)
    (0.56, 0.61)

    The same fit on a Dask array chunked by rows, its report lazy:

    >>> import dask.array as da
    >>> reg_dask = OutputPerturbedLinearRegression(sigma=0.1, random_state=0).fit(
    ...     da.from_array(X[:50], chunks=(20, 3)), y[:50]
    ... )
    >>> reg_dask.privacy_report_.npartitions
    3
    >>> reg = OutputPerturbedLinearRegression(sigma=0.1, random_state=0)
    >>> reg = reg.fit(X[:50], y[:50])
    >>> bool(np.allclose(reg_dask.coef_, reg.coef_, rtol=1e-12, atol=0))
    True
    >>> report = reg_dask.privacy_report_.compute()
    >>> bool(np.allclose(report["fil"], reg.privacy_report_["fil"], rtol=1e-12, atol=0))
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **_OutputPerturbed._parameter_constraints,
        "label_bound": [None, Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        sigma=1.0,
        lam="auto",
        fit_intercept=True,
        penalize_intercept="auto",
        private_label=True,
        data_norm=None,
        label_bound=None,
        delta=None,
        target_epsilon=None,
        public_sample_weight=False,
        onehot_groups=None,
        random_state=None,
    ):
        self.sigma = sigma
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.private_label = private_label
        self.data_norm = data_norm
        self.label_bound = label_bound
        self.delta = delta
        self.target_epsilon = target_epsilon
        self.public_sample_weight = public_sample_weight
        self.onehot_groups = onehot_groups
        self.random_state = random_state

    def _encode_y(self, y):
        """The labels clipped to ``label_bound`` (counted), no ``classes_``."""
        self.n_labels_clipped_ = 0
        if self.label_bound is None:
            return y, None
        # NumPy or Dask (lazily: the count is one pass over the labels)
        outside = np.abs(y) > self.label_bound
        self.n_labels_clipped_ = int(outside.sum())
        if self.n_labels_clipped_ > y.shape[0] / 2:
            warnings.warn(
                f"label_bound={self.label_bound:g} clipped {self.n_labels_clipped_} "
                f"of {y.shape[0]} labels: the model learns from clipped labels "
                "and may be little better than a constant. Centre and scale the "
                "labels (with public numbers) or raise label_bound (with "
                "sigma, to keep epsilon).",
                ClippingWarning,
                stacklevel=8,  # the caller of fit
            )
        return np.clip(y, -self.label_bound, self.label_bound), None

    def _no_bound_reason(self):
        return None if self.label_bound is not None else _NO_LABEL_BOUND_MSG

    def _unit_sensitivity(self, n_samples):
        return output_perturbation_sensitivity(
            n_samples=n_samples,
            lam=self.lam_,
            row_norm=self._row_norm(),
            label_bound=self.label_bound,
        )

    def _lam_without_target(self):
        guarantee_asked = self.data_norm is not None and self.label_bound is not None
        return AUTO_LAM_WITHOUT_TARGET if guarantee_asked else 0.0

    def _lam_rule(self, n_samples, delta):
        n_params = self.n_features_in_ + int(self.fit_intercept)
        return output_perturbation_ridge_lam(
            n_samples, n_params, self._row_norm(), self.target_epsilon, delta
        )


class OutputPerturbedLogisticRegression(LogisticLossMixin, _OutputPerturbed):
    __doc__ = f"""Logistic regression released with Gaussian output noise.

    Fits ``w* = argmin_w sum_i omega_i l(w^T x_i, y_i) + (n lam / 2)
    ||w||^2`` with the logistic loss by Newton's method, releases ``w' = w* +
    N(0, sigma^2 I)`` and reports the Fisher information loss of the release
    about every training example and attribute (Hannun et al., 2021).

    Three classes or more (``K``) are fitted as multinomial (softmax)
    regression, ``W`` of shape ``(K, n_features + fit_intercept)`` with the
    penalty ``(n lam / 2) ||W||_F^2``, released as ``W + N(0, sigma^2 I)``:
    ``coef_`` of shape ``(K, n_features)``, ``intercept_`` of shape ``(K,)``
    and the predictions of scikit-learn's multinomial ``LogisticRegression``.
    Its sensitivity is ``sqrt(2)`` times the binary one (``||softmax(z) -
    e_y|| <= sqrt(2)``); the report measures the label as a one-hot group of
    ``K - 1`` private coordinates; ``loo_sensitivity`` comes from refits (the
    bound above ``per_instance_accounting``'s threshold); see
    ``sklearn_fil._multinomial`` for the numerics and their cost
    (``O(n (K p)^2 (d + K))`` for the report). In memory only (not on Dask).

    With rows clipped to ``data_norm``, ``lam > 0``, the intercept penalised
    (the default with ``data_norm``, or absent) and uniform or public
    weights, the release is (ε, δ)-DP
    (``guarantee_``) and (2, ε)-RDP with ``ε = Δ^2 / sigma^2`` (Guo et al.,
    2022) for **replace-one** neighbours (same public size, one example
    differs). ``Δ = (1 + 2e-6) 2 L max(omega) / (sum(omega) lam)``, ``L =
    sqrt(data_norm^2 + fit_intercept)`` (Chaudhuri et al., 2011): Newton's
    method runs until the gradient certifies, by strong convexity, that the
    released centre is within ``1e-6 Δ`` of the exact minimiser. Otherwise
    asking for ε warns with :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`.

{Doc.sensitive}

    Parameters
    ----------
{_GuaranteeDoc.sigma}
    lam : float or "auto", default="auto"
        L2 strength; the penalty is ``(n lam / 2) ||w||^2``. ``"auto"`` with
        ``target_epsilon`` and ``data_norm``: the λ that minimises the bound
        on the excess risk of the release,
        :func:`~sklearn_fil.accounting.output_perturbation_lam` of ``n``, the
        number of weights, ``data_norm``, ``target_epsilon`` and δ, public
        numbers only (see :ref:`choosing_parameters`); otherwise ``1e-2``,
        the default of old. ``lam_`` is the value used.
{Doc.fit_intercept}
{_GuaranteeDoc.penalize_intercept}
{Doc.private_label}
{Doc.classes}
        The guarantee then assumes the label set public (``"classes"`` in
        ``guarantee_.public``). Here it may have ``K >= 3`` labels (the
        multinomial model, which then has ``K`` rows even when the training
        labels show fewer; their intercepts need ``penalize_intercept``).
{_GuaranteeDoc.data_norm}
{_GuaranteeDoc.delta}
{_GuaranteeDoc.target_epsilon}
{_GuaranteeDoc.public_sample_weight}
    tol : float, default=1e-10
        Newton stops once its full step is below ``tol * (1 + ||w||)``.
    max_iter : int, default=100
        Maximum Newton iterations; not converging is an error.
    per_instance_accounting : "auto" or bool, default="auto"
        How the report gets each example's leave-one-out sensitivity
        ``Delta_i``. ``True``: exact (column ``loo_sensitivity``, ``O(n^2
        d)`` per Newton step, on in-memory data computed when
        ``privacy_report_`` is first read, from copies of the rows kept until
        then: a fit whose report is never read, as in a search, does not pay
        for it). ``"auto"``: exact up to 2000 examples, above a
        certified interval in ``O(n d^2)`` (columns ``loo_sensitivity_bound``,
        its upper end, and ``loo_sensitivity_lower``; relative width about
        ``1e-3`` at ``n = 10^5``). ``False``: the cheapest, the
        strong-convexity bound ``omega_i L / (sum(omega) lam)`` alone
        (``loo_sensitivity_bound``, the same for every uniform-weight row).
        Where not exact, ``epsilon`` is computed from the upper bound: an
        upper bound on the per-instance ε. On a Dask array the bound
        (``True`` is refused).
{Doc.onehot_groups}
        With ``"auto"`` the guarantee assumes the layout found public
        (``"onehot_groups"`` in ``guarantee_.public``): it decides what
        clipping exempts.
{Doc.random_state}

    Attributes
    ----------
{Doc.coef}
{Doc.classes_}
    privacy_report_ : pandas.DataFrame or dask.dataframe.DataFrame
        The columns of :class:`OutputPerturbedLinearRegression`'s, with
        ``loo_sensitivity`` to a relative accuracy ``1e-10`` or, where not
        exact (``per_instance_accounting``), ``loo_sensitivity_bound``, a
        certified upper bound on ``Delta_i`` and on the distance between the
        centres the mechanism releases on ``D`` and ``D_-i``, then (from the
        certified interval) ``loo_sensitivity_lower``, a lower bound on
        ``Delta_i`` (``False``: ``omega_i L / (sum(omega) lam)`` where the
        guarantee holds, ``inf`` elsewhere); ``epsilon`` at ``delta_`` (at
        most ``epsilon_``; from the upper bound where not exact) and
        ``epsilon_replace_one``, with a guarantee an
        upper bound on the ε of replacing the example by any row it allows
        (sensitivity ``Delta_i + omega_i L / (sum(omega) lam)``), between
        ``epsilon`` and ``epsilon_``. Sensitive: do not publish.
{Doc.fil}
    n_iter_ : int
        Newton iterations of the fit on the full data.
{_GuaranteeDoc.attributes}

    See Also
    --------
    OutputPerturbedLinearRegression : The squared-loss counterpart.
    sklearn_fil.audit.EpsilonAudit : Checks ε empirically with many releases.
    sklearn_fil.fisher.fisher_information_loss : The FIL engine.

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate (2011), *Differentially private empirical
    risk minimization*, JMLR.
{Doc.hannun}
    Guo, Karrer, Chaudhuri & van der Maaten (2022), *Bounding training data
    reconstruction in private (deep) learning*, ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> X = X / np.linalg.norm(X, axis=1).max()
    >>> clf = OutputPerturbedLogisticRegression(
    ...     sigma=0.5, lam=0.1, fit_intercept=False, data_norm=1.0, random_state=0
    ... ).fit(X, y)
    >>> round(clf.epsilon_, 2), clf.delta_
    (1.55, 1e-05)
    >>> clf.guarantee_.neighboring_relation
    'replace_one'
    >>> report = clf.privacy_report_
    >>> report.shape
    (100, 12)
    >>> bool((report["epsilon"] <= report["epsilon_replace_one"]).all())
    True
    >>> bool((report["epsilon_replace_one"] <= clf.epsilon_).all())
    True

    Asking for an ε instead of a noise:

    >>> clf = OutputPerturbedLogisticRegression(
    ...     target_epsilon=1.0, lam=0.1, fit_intercept=False, data_norm=1.0,
    ...     random_state=0).fit(X, y)
    >>> round(clf.sigma_, 4), round(clf.epsilon_, 6)
    (0.7461, 1.0)

    Three classes, multinomial, ``lam`` from the target ε (``"auto"``); the
    label is one attribute of the report, the sensitivity ``2 sqrt(2) L / (n
    lam)`` (certified):

    >>> X3, y3 = make_classification(n_samples=300, n_features=4,
    ...     n_informative=3, n_redundant=0, n_classes=3, random_state=0)
    >>> X3 = X3 / np.linalg.norm(X3, axis=1).max()
    >>> clf3 = OutputPerturbedLogisticRegression(
    ...     target_epsilon=1.0, fit_intercept=False, data_norm=1.0,
    ...     random_state=0).fit(X3, y3)
    >>> clf3.coef_.shape, clf3.predict_proba(X3[:2]).shape
    ((3, 4), (2, 3))
    >>> clf3.privacy_report_.columns[3:8].tolist()
    ['fil[x0]', 'fil[x1]', 'fil[x2]', 'fil[x3]', 'fil[y]']
    >>> sensitivity = 2 * np.sqrt(2) / (300 * clf3.lam_)
    >>> round(float(clf3.guarantee_.sensitivity / sensitivity), 6)
    1.000002
    """

    _parameter_constraints: ClassVar[dict] = {
        **_OutputPerturbed._parameter_constraints,
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "per_instance_accounting": [StrOptions({"auto"}), "boolean"],
        "classes": [None, "array-like"],
    }

    def __init__(
        self,
        *,
        sigma=1.0,
        lam="auto",
        fit_intercept=True,
        penalize_intercept="auto",
        private_label=True,
        classes=None,
        data_norm=None,
        delta=None,
        target_epsilon=None,
        public_sample_weight=False,
        tol=1e-10,
        max_iter=100,
        per_instance_accounting="auto",
        onehot_groups=None,
        random_state=None,
    ):
        self.sigma = sigma
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.private_label = private_label
        self.classes = classes
        self.data_norm = data_norm
        self.delta = delta
        self.target_epsilon = target_epsilon
        self.public_sample_weight = public_sample_weight
        self.tol = tol
        self.max_iter = max_iter
        self.per_instance_accounting = per_instance_accounting
        self.onehot_groups = onehot_groups
        self.random_state = random_state

    def _newton_options(self):
        return self.tol, self.max_iter

    _multiclass_hint = (
        " More than two classes are fitted as multinomial regression on data in "
        "memory only (not on a Dask array)."
    )

    def _encode_y(self, y):
        """0/1 targets of two classes; class codes ``0 .. K - 1`` of more."""
        check_classification_targets(y)
        classes = self._classes(np.unique(y), multiclass=True)
        if classes.size == 2:
            return (y == classes[1]).astype(np.float64), classes
        return _multinomial.encode_classes(y, classes), classes

    def _solve(self, X, y, omega, groups):
        if _multinomial.is_multinomial(self):
            return _multinomial.solve(self, X, y, omega, groups)
        return super()._solve(X, y, omega, groups)

    def _attribute_scales(self, X, y, result, weight):
        if _multinomial.is_multinomial(self):
            return _multinomial.attribute_scales(
                X, y, result.attributes, weight, self._n_classes
            )
        return super()._attribute_scales(X, y, result, weight)

    def _per_instance_columns(self, X, y, w, omega, delta, result):
        if _multinomial.is_multinomial(self):
            exact = self._per_instance_exact(X.shape[0])
            return _multinomial.per_instance_columns(self, X, y, w, omega, delta, exact)
        return super()._per_instance_columns(X, y, w, omega, delta, result)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    def _defer_per_instance(self, X):
        # the exact refits cost O(n^2 d); the interval and the bound O(n d^2)
        return not is_dask(X) and bool(self._per_instance_exact(X.shape[0]))

    def _per_instance_exact(self, n_samples, dask=False):
        if dask:  # refits over all rows per example: the bound (see fit)
            return False
        if self.per_instance_accounting == "auto":
            return n_samples <= AUTO_EXACT_MAX_SAMPLES
        return self.per_instance_accounting

    def _per_instance_interval(self, n_samples, dask=False):
        # "auto" above AUTO_EXACT_MAX_SAMPLES: the certified interval, O(n d^2)
        return self.per_instance_accounting == "auto" and not dask

    def _unit_sensitivity(self, n_samples):
        # the logistic loss: |s - y| <= 1; softmax: ||P - e_y|| <= sqrt(2)
        sensitivity = output_perturbation_sensitivity(
            n_samples=n_samples, lam=self.lam_, row_norm=self._row_norm()
        )
        if _multinomial.is_multinomial(self):
            sensitivity *= MULTINOMIAL_LIPSCHITZ
        return sensitivity

    def _lam_rule(self, n_samples, delta):
        n_params, lipschitz, smoothness = self._lam_rule_constants()
        return output_perturbation_lam(
            n_samples,
            n_params,
            self._row_norm(),
            self.target_epsilon,
            delta,
            lipschitz=lipschitz,
            smoothness=smoothness,
        )

    def _lam_rule_constants(self):
        """``(n_params, lipschitz, smoothness)`` of the loss for ``lam="auto"``.

        The binary logistic loss: gradient ``|s - y| ||x|| <= ||x||``,
        Hessian ``s (1 - s) x x^T <= ||x||^2 / 4``. The multinomial loss
        (``K`` classes): ``K (d + fit_intercept)`` weights, gradient ``||P -
        e_y|| ||x|| <= sqrt(2) ||x||``, Hessian ``S (kron) x x^T`` with ``||S||
        <= 1/2`` (``sklearn_fil._multinomial``).
        """
        n_params = self.n_features_in_ + int(self.fit_intercept)
        if _multinomial.is_multinomial(self):
            return self._n_classes * n_params, MULTINOMIAL_LIPSCHITZ, SMOOTHNESS
        return n_params, 1.0, 0.25

    def _check_dask_params(self):
        if self.per_instance_accounting is True:
            raise ValueError(
                "per_instance_accounting=True needs every example's leave-one-out "
                "refit over all rows, O(n^2 d): on a Dask array the report holds "
                "its bound (loo_sensitivity_bound); set per_instance_accounting="
                '"auto" or False.'
            )


def _rows_as_fitted(X, clipper):
    """The clipped rows of one block (``clipper``: see ``_clipper``)."""
    return clipper(X)[0]
