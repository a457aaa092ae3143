"""The base of every released GLM: fit, noise, report; and the loss mixins.

:class:`BaseReleasedGLM` validates the data, calls the one extension point
``_solve`` (the minimiser, the example weights it was fitted with and their
FIL) and then releases ``w* + N(0, sigma^2 I)`` with its privacy report. Its
two siblings differ only there: output perturbation fits once, IRFIL reweights
until the FIL is level. The loss is a mixin, :class:`SquaredLossMixin` or
:class:`LogisticLossMixin`, which owns the targets and the predictions.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import operator
from functools import partial
from numbers import Real
from typing import ClassVar, NamedTuple

import numpy as np
import pandas as pd
from scipy.special import expit, softmax
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils import assert_all_finite
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from sklearn_fil._glm import check_squares_finite, fit_glm
from sklearn_fil._losses import get_family
from sklearn_fil._report import (
    attribute_fil_sd,
    attribute_sizes,
    attribute_variances,
    make_privacy_report,
    privacy_report_metadata,
    relative_mse_bound,
    target_label,
    with_report_attrs,
)
from sklearn_fil._threads import cache_rows, row_blocks, row_parallel, small_work
from sklearn_fil.accounting import Guarantee, gaussian_rdp, mse_bound_rdp
from sklearn_fil.fisher import fisher_information_loss
from sklearn_fil.utils._baseline import fit_quality, warn_if_useless
from sklearn_fil.utils._dask import (
    check_dense_dask_array,
    check_row_chunked,
    is_dask,
    rows_like,
    tree_reduce,
)
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._guarantee import GuaranteeMixin
from sklearn_fil.utils._labels import check_target, label_set
from sklearn_fil.utils._onehot import (
    check_onehot_groups,
    detect_onehot_groups,
    onehot_columns,
)
from sklearn_fil.utils._random import noise_rng
from sklearn_fil.utils._release import (
    FITTED_PARAMS,
    record_fitted_params,
    released_copy,
)
from sklearn_fil.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _check_sample_weight,
    _fit_context,
)
from sklearn_fil.utils._sparse import as_csr, issparse

# Private fitted state, cleared with the public attributes at each fit
# (``_weighted``: the training recipe's non-uniform weights, which attacks re-run).
_PRIVATE_STATE = (
    "_privacy_report",
    "_report_pending",
    "_weighted",
    "_onehot_groups",
    "_dask_weights",
    "_n_classes",
    FITTED_PARAMS,
)
_PUBLIC = (
    "coef_",
    "intercept_",
    "sigma_",
    "lam_",
    "penalize_intercept_",
    "classes_",
    "n_features_in_",
    "feature_names_in_",
)
MECHANISM = "Gaussian output perturbation of the minimiser"
# The DP path certifies that the released centre is within this fraction of
# the sensitivity of the exact minimiser (by strong convexity); the sensitivity
# grows by twice as much. Far above the rounding of the gradient (about n *
# 1e-16 of the sensitivity), far below anything that moves epsilon.
CERTIFIED_FRACTION = 1e-6
# Newton's tolerance where it is not a parameter.
NEWTON_TOL = 1e-10


class Doc:
    """numpydoc entries that the four estimators' docstrings share."""

    fit_intercept = """\
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant, non-private feature. The data
        are not centred (centring would couple every example to the mean)."""
    private_label = """\
    private_label : bool, default=True
        Whether the label is a private coordinate of each example."""
    classes = """\
    classes : array-like of shape (2,), default=None
        The two labels the task has, fixed before seeing the data (as
        scikit-learn's ``partial_fit`` takes them); a training label outside
        them is an error. None reads ``classes_``, which :meth:`release`
        publishes, from the training labels."""
    onehot_groups = """\
    onehot_groups : dict or "auto", default=None
        ``{name: [columns]}`` of constrained one-hot attributes (columns by
        name or index, exactly one 1 per row); each is one attribute of the
        report, measured on the sum-to-one tangent space. ``"auto"`` finds the
        runs of adjacent 0/1 columns with one 1 per row that a
        :class:`~sklearn.preprocessing.OneHotEncoder` writes, named by their
        columns' common prefix up to its last ``_`` (``race`` for
        ``race_Asian, race_Other``)."""
    random_state = """\
    random_state : int, RandomState instance or None, default=None
        Seed of the output noise. ``None`` draws fresh OS entropy; a fixed
        seed makes the noise reproducible, so the release is not private."""
    coef = """\
    coef_ : ndarray of shape (n_features,)
        Released (noised) coefficients.
    intercept_ : float
        Released (noised) intercept; 0.0 when ``fit_intercept=False``."""
    classes_ = """\
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class."""
    fil = """\
    attribute_fil_ : pandas.Series
        FIL of each attribute over all training examples.
    attribute_fil_sd_ : pandas.Series
        ``attribute_fil_`` in units of each attribute's (weighted) training
        std: ``1 / attribute_fil_sd_**2`` bounds an unbiased attacker's MSE
        over the attribute's variance; guessing the mean scores 1.
    dataset_fil_ : float
        FIL of the whole training set.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names."""
    sensitive = """\
    The privacy report is itself sensitive: it is computed from each
    example's data and must not be published; publish :meth:`release` only.
    A fixed ``random_state`` makes the noise reproducible and therefore not
    private; the noise sampler is not hardened against floating-point
    attacks (this is a measurement and research library)."""
    hannun = """\
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI."""


class WeightStats(NamedTuple):
    """What the guarantee reads of the example weights (scaled to max 1)."""

    n: int
    total: float
    uniform: bool


class BaseReleasedGLM(GuaranteeMixin, BaseEstimator):
    """Fit a weighted GLM, release ``w* + N(0, sigma^2 I)`` and report its FIL.

    Subclasses implement ``_solve``. The other hooks default to no clipping,
    no DP guarantee (for ``_no_guarantee_reason``) and no per-instance
    columns in the report.
    """

    _loss: ClassVar[str]
    _no_guarantee_reason: ClassVar[str]
    # Whether fit takes a row-chunked dask.array (see _prepare_dask).
    _dask_fit: ClassVar[bool] = False

    _parameter_constraints: ClassVar[dict] = {
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "penalize_intercept": ["boolean"],
        "private_label": ["boolean"],
        "onehot_groups": [None, dict, StrOptions({"auto"})],
        "random_state": ["random_state"],
    }

    def _solve(self, X, y, omega, groups):
        """``(w, omega, result)``: the minimiser, its weights, its FIL result."""
        raise NotImplementedError

    def _delta(self, n_samples):
        """δ of the guarantee (checked before any work), or None."""
        return None

    def _preprocess(self, X, groups, n_clipped=None):
        """The rows as fitted; lazily on Dask (``n_clipped`` from its 1st pass)."""
        return X

    def _clipper(self, groups):
        """``rows -> (rows as fitted, number rescaled)``, or None (no clipping)."""
        return None

    def _check_dask_params(self):
        """Refuse settings that have no Dask path (before any pass)."""

    def _sensitivity(self, omega):
        """L2 sensitivity of the exact minimiser under the guarantee, or None."""
        return None

    def _guarantee(self, omega, delta):
        """The DP guarantee of the release, or why there is none."""
        return Guarantee.none(self._no_guarantee_reason, mechanism=MECHANISM)

    def _noise_std(self, omega, delta):
        """Noise std of the release (before the fit); ``sigma`` by default."""
        return float(self.sigma)

    def _resolve_params(self, omega, delta):
        """``(lam_, penalize_intercept_)`` of the fit: the parameters by default.

        Subclasses resolve ``"auto"`` values here, from public numbers only.
        """
        return float(self.lam), bool(self.penalize_intercept)

    def _set_resolved_params(self, omega, delta):
        """Set ``lam_`` and ``penalize_intercept_``, before the noise and the fit.

        Both are public (:meth:`release` keeps them): what the fit, the
        attacks and the audits read, never the parameters, which may be
        ``"auto"``.
        """
        self.lam_, self.penalize_intercept_ = self._resolve_params(omega, delta)

    def _per_instance_columns(self, X, y, w, omega, delta, result):
        """Report columns of each example's own leakage (none by default)."""
        return {}

    def _attribute_scales(self, X, y, result, weight):
        """``(variance, sizes)`` of the report's attributes (see _report)."""
        variance = attribute_variances(X, y, result.attributes, weight)
        return variance, attribute_sizes(result.attributes)

    def _fit_clean(self, X, y, sample_weight):
        return fit_or_clear(
            self, self._fit, X, y, sample_weight, private=_PRIVATE_STATE
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def _fit(self, X, y, sample_weight):
        record_fitted_params(self)
        index = X.index.copy() if isinstance(X, pd.DataFrame) else None
        target_name = y.name if isinstance(y, pd.Series) and y.name is not None else "y"
        prepare = self._prepare_dask if is_dask(X) else self._prepare
        X, y, omega, classes, groups, delta = prepare(X, y, sample_weight)
        fit_weight = omega  # the caller's weights (IRFIL's may change)
        # small data: one thread for every pass (see small_work)
        with small_work(X.shape[0], X.shape[1] + self.fit_intercept):
            w, omega, result = self._solve(X, y, omega, groups)
            # in units of each attribute's std (weighted, of the rows as fitted)
            variance, sizes = self._attribute_scales(X, y, result, fit_weight)
        attribute_names = self._attribute_names(result, groups, target_name)
        self.attribute_fil_ = pd.Series(
            result.total_attribute_fil, index=attribute_names, name="fil"
        )
        self.attribute_fil_sd_ = pd.Series(
            attribute_fil_sd(result.total_attribute_fil, variance, sizes),
            index=attribute_names,
            name="fil_sd",
        )
        self.dataset_fil_ = result.dataset_fil
        self.guarantee_ = self._guarantee(omega, delta)
        released = w + noise_rng(self.random_state).normal(0.0, self.sigma_, w.shape)
        d = X.shape[1]
        if released.ndim == 2:  # multinomial: one row (K, d + 1) per class
            self.coef_ = released[:, :d]
            self.intercept_ = (
                released[:, d] if self.fit_intercept else np.zeros(len(released))
            )
        else:
            self.coef_ = released[:d]
            self.intercept_ = float(released[d]) if self.fit_intercept else 0.0
        if classes is not None:
            self.classes_ = classes
        # Constant weights give the unweighted minimiser (the penalty scales
        # with their sum); only non-uniform ones change the recipe.
        self._weighted = not self._weight_stats(omega).uniform
        # the report's context, which write_privacy_report keeps beside its CSV
        # (a Dask report carries it on the collection and in every partition)
        metadata = privacy_report_metadata(self, n_samples=X.shape[0])
        data = (X, y, w, omega, delta, result)
        names = (attribute_names, index, variance, sizes, metadata)
        if self._defer_per_instance(X):
            # The exact leave-one-out refits cost O(n^2 d): done when the report
            # is read, on copies of the rows and of the fit's settings.
            data = (X.copy(), y.copy(), w, omega.copy(), delta, result)
            fitted = copy.copy(self)
            self._report_pending = partial(_privacy_report, fitted, data, names)
        else:
            self._privacy_report = _privacy_report(self, data, names)
        self._check_utility(X, y)
        return self

    @property
    def privacy_report_(self):
        # documented by each estimator; computed here on first read when deferred
        pending = vars(self).get("_report_pending")
        if pending is not None:
            self._privacy_report = pending()
            del self._report_pending
        try:
            return vars(self)["_privacy_report"]
        except KeyError:
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute 'privacy_report_'"
            ) from None

    def __getstate__(self):
        # a pickle holds the report, never the rows it is computed from
        if "_report_pending" in vars(self):
            self.privacy_report_  # noqa: B018
        return super().__getstate__()

    def _defer_per_instance(self, X):
        """Whether the per-instance columns wait until the report is read."""
        return False

    def _utility_remedy(self):
        """What to try when the release is no better than a constant."""
        return "lower sigma, use more data or change lam"

    def _check_utility(self, X, y):
        """Warn when the release is no better than a constant (:func:`fit_quality`).

        The released model scored, unweighted, on the rows as fitted (clipped
        to ``data_norm``); not on a Dask array, where it would cost a pass.
        """
        if is_dask(X):
            return
        decision = self._margins(X)
        family = get_family(self._loss)
        if family.is_classifier:
            codes = np.asarray(y, dtype=np.intp)
            predicted = (
                np.argmax(decision, axis=1) if decision.ndim == 2 else decision > 0
            )
            score = float(np.mean(predicted == codes))
            y = self.classes_[codes]
        else:
            score = float(r2_score(y, decision))
        quality = fit_quality(score, y, X.shape[1], family.is_classifier)
        # the caller of fit: _check_utility, _fit, its wrappers, fit
        warn_if_useless(quality, type(self).__name__, self._utility_remedy(), 7)

    def _prepare(self, X, y, sample_weight):
        """``(X, y, omega, classes, groups, delta)`` of in-memory data, checked.

        ``X`` as fitted, ``y`` encoded, ``omega`` scaled to a largest weight 1.
        """
        check_target(y, type(self).__name__)
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=np.float64,
            ensure_min_samples=2,
            y_numeric=not get_family(self._loss).is_classifier,
            ensure_all_finite=False,  # the extremes' pass below checks X
        )
        if issparse(X):
            X = as_csr(X)  # never densified: see sklearn_fil.utils._sparse
        # NaN or inf among them: scikit-learn's own error for non-finite X
        extremes = _extremes(X)
        if not np.all(np.isfinite(extremes)):
            assert_all_finite(X, input_name="X", estimator_name=type(self).__name__)
        y, classes = self._encode_y(y)
        omega = _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )
        if not omega.max() > 0:
            raise ValueError("sample_weight must have a positive entry.")
        # The minimiser and the FIL are invariant to scaling every weight by
        # one constant (the penalty scales with their sum); a largest weight
        # of 1 keeps tiny or huge weights from under- or overflowing.
        omega = omega / omega.max()
        delta = self._delta(X.shape[0])
        self._set_resolved_params(omega, delta)
        # the noise of the release, before the fit (the report scales by it)
        self.sigma_ = self._noise_std(omega, delta)
        if isinstance(self.onehot_groups, str):  # "auto"
            self._onehot_groups = detect_onehot_groups(
                X, getattr(self, "feature_names_in_", None)
            )
            # what attacks and audits read as the fit's groups
            getattr(self, FITTED_PARAMS)["onehot_groups"] = self._onehot_groups
        else:
            self._onehot_groups = self.onehot_groups
        groups = self._onehot_indices()
        # one-hot groups are checked before the (possibly long) fit
        check_onehot_groups(list(groups.values()), X, names=list(groups))
        fitted = self._preprocess(X, groups)
        extremes = extremes if fitted is X else None  # those before clipping
        _check_gram_finite(fitted, hasattr(self, "data_norm"), extremes)
        return fitted, y, omega, classes, groups, delta

    def _check_dask_input(self, X):
        """Refuse, before any pass, what has no Dask path."""
        name = type(self).__name__
        if not self._dask_fit:
            raise TypeError(
                f"{name} does not take Dask arrays: its fits reweight the examples "
                "by their FIL, a refit per iteration. Fit it on data in memory."
            )
        check_dense_dask_array(X)
        if isinstance(self.onehot_groups, str):  # "auto"
            raise ValueError(
                'onehot_groups="auto" reads the one-hot layout from the data, a '
                "pass before the fit; on a Dask array give the groups as a dict "
                "{name: [column indices]}."
            )
        self._check_dask_params()

    def _prepare_dask(self, X, y, sample_weight):
        """:meth:`_prepare` of a row-chunked Dask array: one pass checks it all.

        The pass raises the in-memory fit's errors and computes ``_Checked``.
        """
        import dask.array as da

        self._check_dask_input(X)
        X = check_row_chunked(X)
        self.n_features_in_ = X.shape[1]
        self._onehot_groups = self.onehot_groups
        groups = self._onehot_indices()
        # the layout now, the values of every block in the pass
        check_onehot_groups(
            list(groups.values()), np.zeros((0, X.shape[1])), names=list(groups)
        )
        classifier = get_family(self._loss).is_classifier
        y = rows_like(y, X, "y", dtype=None if classifier else np.float64)
        weights = _dask_weights(sample_weight, X)
        clipper = self._clipper(groups)
        checked = tree_reduce(
            _check_block,
            _merge_checked,
            X,
            # each block's row numbers, which the errors name
            (y, weights, da.arange(X.shape[0], chunks=X.chunks[0])),
            type(self).__name__,
            classifier,
            groups,
            clipper,
        )
        classes = None
        if classifier:
            classes = self._classes(checked.classes)
            y = (y == classes[1]).astype(np.float64)
        else:  # the regression targets as fitted (clipped, where a model clips)
            y = self._encode_y(y)[0]
        if not checked.w_max > 0:  # scikit-learn's words, as in memory
            raise ValueError(
                "Sample weights must contain at least one non-zero number."
            )
        # scaled to a largest weight of 1, as in memory (see _prepare)
        omega = weights / checked.w_max
        self._dask_weights = {
            omega.name: WeightStats(
                X.shape[0],
                checked.w_sum / checked.w_max,
                # the smallest scaled weight is the scaled smallest weight
                checked.w_min / checked.w_max == 1.0,
            )
        }
        delta = self._delta(X.shape[0])
        self._set_resolved_params(omega, delta)
        self.sigma_ = self._noise_std(omega, delta)
        X = self._preprocess(X, groups, n_clipped=checked.n_clipped)
        extremes = (checked.x_max, checked.x_min)
        _check_gram_finite(X, hasattr(self, "data_norm"), extremes)
        return X, y, omega, classes, groups, delta

    def _weight_stats(self, omega):
        """:class:`WeightStats` of the scaled weights, NumPy or Dask."""
        if not is_dask(omega):
            return WeightStats(omega.size, float(omega.sum()), not np.ptp(omega) > 0)
        known = getattr(self, "_dask_weights", {})
        if omega.name not in known:
            import dask

            total, low, high = dask.compute(omega.sum(), omega.min(), omega.max())
            known[omega.name] = WeightStats(omega.shape[0], float(total), low == high)
            self._dask_weights = known
        return known[omega.name]

    def _onehot_indices(self):
        """Column indices of each constrained one-hot group, by group name."""
        return onehot_columns(
            self._onehot_groups,
            getattr(self, "feature_names_in_", None),
            self.n_features_in_,
        )

    def _attribute_names(self, result, groups, target_name):
        """Report name of each attribute of ``result``, in its order."""
        feature_names = (
            list(self.feature_names_in_)
            if hasattr(self, "feature_names_in_")
            else [f"x{j}" for j in range(self.n_features_in_)]
        )
        group_names = {tuple(cols): name for name, cols in groups.items()}
        target_name = target_label(target_name, feature_names)
        names = []
        for att in result.attributes:
            if att == "label":
                names.append(str(target_name))
            elif len(att) == 1:
                names.append(str(feature_names[att[0]]))
            else:
                names.append(str(group_names[att]))
        return names

    def _newton_options(self):
        """Newton's ``(tol, max_iter)``; the squared loss solves exactly."""
        return None, 1

    def _minimise(self, X, y, omega, w0=None):
        """``(w, n_iter, loss_hessian)`` of ``fit_glm``, certified if guaranteed."""
        sensitivity = self._sensitivity(omega)
        gtol = None
        if sensitivity is not None:
            # strong convexity sum(omega) lam turns the gradient into a distance
            total = self._weight_stats(omega).total
            gtol = CERTIFIED_FRACTION * sensitivity * total * self.lam_
        tol, max_iter = self._newton_options()
        return fit_glm(
            X,
            y,
            omega,
            self._loss,
            self.lam_,
            self.fit_intercept,
            self.penalize_intercept_,
            tol,
            max_iter,
            w0=w0,
            gtol=gtol,
            return_loss_hessian=True,
        )

    def _fil(self, X, y, w, omega, groups, loss_hessian=None):
        """The engine's FIL of the release centred at ``w`` (data checked)."""
        d = X.shape[1]
        if is_dask(X):
            # the engine computes the Gram in its one pass on Dask; unit
            # weights (as None) let it share the Hessian's, as in memory
            loss_hessian = None
            if self._weight_stats(omega).uniform:
                omega = None
        with config_context(assume_finite=True):
            return fisher_information_loss(
                X,
                y,
                w[:d],
                float(w[d]) if self.fit_intercept else None,
                loss=self._loss,
                lam=self.lam_,
                sigma=self.sigma_,
                sample_weight=omega,
                penalize_intercept=self.penalize_intercept_,
                private_label=self.private_label,
                onehot_groups=list(groups.values()) or None,
                loss_hessian=loss_hessian,
            )

    @property
    def rdp_epsilon_(self):
        """ε of the (2, ε)-Rényi-DP guarantee, or None (with a warning)."""
        eps = self._guaranteed("epsilon")  # warns when there is no guarantee
        if eps is None:
            return None
        g = self.guarantee_
        return gaussian_rdp(2, sigma=g.noise_std, sensitivity=g.sensitivity)

    def mse_bound_rdp(self, diameter):
        """Guo et al. Theorem 1 MSE bound from the (2, ε)-RDP guarantee.

        Parameters
        ----------
        diameter : float or array-like of shape (n_private,)
            Diameter of the data domain in each private coordinate.

        Returns
        -------
        bound : float or None
            Lower bound on the per-coordinate MSE of any unbiased
            reconstruction of a training example; None (with a warning)
            without an RDP guarantee.
        """
        eps = self.rdp_epsilon_
        return None if eps is None else mse_bound_rdp(eps, diameter)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scipy sparse X (any format, taken as CSR) is fitted without a dense copy
        tags.input_tags.sparse = True
        return tags

    def release(self):
        """A copy holding only what may be published.

        The noised ``coef_`` and ``intercept_``, ``classes_``, the features
        seen, ``guarantee_`` and the fit's parameters but ``random_state``
        (which would reveal the noise): no report, minimiser or data.

        Returns
        -------
        released : estimator
            The publishable copy.
        """
        # _weighted: metadata about the training recipe, not data (attacks need it)
        return released_copy(self, _PUBLIC, metadata=("_weighted",))

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return self._margins(X)

    def _margins(self, X):
        """``X coef_^T + intercept_``: one column per class when multinomial."""
        return np.asarray(X @ np.transpose(self.coef_)) + self.intercept_


def _privacy_report(fitted, data, names):
    """``privacy_report_`` of ``fitted``, with its per-instance columns.

    ``data``: ``(X, y, w, omega, delta, result)`` as fitted; ``names``:
    ``(attribute_names, index, variance, sizes, metadata)``.
    """
    X, y, w, omega, delta, result = data
    attribute_names, index, variance, sizes, metadata = names
    with small_work(X.shape[0], X.shape[1] + fitted.fit_intercept):
        per_instance = fitted._per_instance_columns(X, y, w, omega, delta, result)
    report = make_privacy_report(
        result,
        attribute_names,
        index,
        rel_mse_bound=relative_mse_bound(result.attribute_fil, variance, sizes),
        **per_instance,
    )
    return with_report_attrs(report, metadata)


def _extremes(X):
    """``(X.max(), X.min())``, NaN if ``X`` has one; dense rows in parallel.

    Max and min, not ``abs(X).max()``: no ``n x d`` temporary. Both of each
    cache-sized block of rows while it is in cache (a segment's max, then its
    min, read it twice from memory). The pass also serves as the finiteness
    check of ``X``.
    """
    if issparse(X):
        return np.array([X.max(), X.min()], dtype=np.float64)
    block = cache_rows(X.shape[1])

    def segment(rows):
        return [(X[sl].max(), X[sl].min()) for sl in row_blocks(rows, block)]

    pairs = np.vstack(row_parallel(segment, X.shape[0]))
    return np.array([pairs[:, 0].max(), pairs[:, 1].min()])


def _check_gram_finite(X, hint_data_norm, extremes=None):
    """Refuse entries whose squares overflow the Hessian's sums."""
    largest = float(np.abs(_extremes(X) if extremes is None else extremes).max())
    remedy = " or set data_norm." if hint_data_norm else "."
    check_squares_finite(largest, X.shape, "the Hessian", remedy)


def _dask_weights(sample_weight, X):
    """The example weights as a Dask array in the row chunks of ``X``."""
    import dask.array as da

    if sample_weight is None or np.ndim(sample_weight) == 0:
        value = 1.0 if sample_weight is None else float(sample_weight)
        return da.full(X.shape[0], value, chunks=(X.chunks[0],), dtype=np.float64)
    return rows_like(sample_weight, X, "sample_weight")


class _Checked(NamedTuple):
    """What the first pass of a Dask fit learns (see ``_check_block``)."""

    x_max: float
    x_min: float
    w_min: float
    w_max: float
    w_sum: float
    n_clipped: int
    classes: np.ndarray | None


def _check_block(X, y, omega, rows, estimator_name, classifier, groups, clipper):
    """The in-memory fit's checks of values, on one block of rows."""
    assert_all_finite(X, input_name="X", estimator_name=estimator_name)
    check_target(y, estimator_name, rows)
    assert_all_finite(omega, input_name="sample_weight")
    check_non_negative(omega, "`sample_weight`")
    classes = None
    if classifier:
        check_classification_targets(y)
        classes = np.unique(y)
    check_onehot_groups(list(groups.values()), X, names=list(groups))
    n_clipped = 0
    if clipper is not None:
        X, n_clipped = clipper(X)
    return _Checked(
        float(X.max(initial=-np.inf)),
        float(X.min(initial=np.inf)),
        float(omega.min(initial=np.inf)),
        float(omega.max(initial=-np.inf)),
        float(omega.sum()),
        int(n_clipped),
        classes,
    )


_MERGE = (max, min, min, max, operator.add, operator.add)


def _merge_checked(a, b):
    merged = (op(p, q) for op, p, q in zip(_MERGE, a[:-1], b[:-1], strict=True))
    classes = None if a.classes is None else np.union1d(a.classes, b.classes)
    return _Checked(*merged, classes)


class SquaredLossMixin(RegressorMixin):
    """Ridge regression: real targets, predictions ``X @ coef_ + intercept_``."""

    _loss = "squared"

    def _encode_y(self, y):
        """Targets as the loss needs them, and ``classes_`` (None: regression)."""
        return y, None

    def predict(self, X):
        """Predict with the released weights.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_``.
        """
        return self._decision(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the default noise (sigma=1) can push R^2 below sklearn's threshold
        tags.regressor_tags.poor_score = True
        return tags


class LogisticLossMixin(ClassifierMixin):
    """Binary logistic regression: two classes, margins and probabilities."""

    _loss = "logistic"
    # appended to the error for more than two classes
    _multiclass_hint = ""

    def _encode_y(self, y):
        """0/1 targets (1 for ``classes_[1]``) and ``classes_``."""
        check_classification_targets(y)
        classes = self._classes(np.unique(y))
        return (y == classes[1]).astype(np.float64), classes

    def _classes(self, labels, multiclass=False):
        """``classes_``: ``classes`` or the distinct ``labels``, checked (two,
        or at least two with ``multiclass``); records their number."""
        name = type(self).__name__
        if self.classes is not None:
            classes = label_set(
                labels, self.classes, name, n_classes=None if multiclass else 2
            )
            self._n_classes = classes.size
            return classes
        classes = labels
        # the type of the distinct labels is that of y (1-D)
        y_type = type_of_target(classes, input_name="y")
        if multiclass and y_type in ("binary", "multiclass") and classes.size >= 2:
            self._n_classes = classes.size
            return classes
        if y_type != "binary" or classes.size != 2:
            raise ValueError(
                f"Only binary classification is supported by {type(self).__name__}: "
                f"y must have exactly 2 classes; got {classes.size} class(es) "
                f"(target type {y_type!r})." + self._multiclass_hint
            )
        self._n_classes = 2
        return classes

    def _newton_options(self):
        return NEWTON_TOL, self.max_iter

    def decision_function(self, X):
        """Margin of the released model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``X @ coef_ + intercept_``; positive favours ``classes_[1]``.
            With more than two classes, ``X @ coef_.T + intercept_``: one
            logit per class.
        """
        return self._decision(X)

    def predict_proba(self, X):
        """Class probabilities of the released model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities of the classes, in the order of ``classes_``.
        """
        if np.ndim(getattr(self, "coef_", None)) == 2:  # multinomial
            return softmax(self.decision_function(X), axis=1)
        s = expit(self.decision_function(X))
        return np.column_stack([1.0 - s, s])

    def predict(self, X):
        """Predict class labels with the released model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels from ``classes_``.
        """
        if np.ndim(getattr(self, "coef_", None)) == 2:  # multinomial: the top logit
            return self.classes_[np.argmax(self.decision_function(X), axis=1)]
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        # the default noise (sigma=1) can push accuracy below sklearn's threshold
        tags.classifier_tags.poor_score = True
        return tags
