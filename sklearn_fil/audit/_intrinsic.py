"""Intrinsic privacy of SGD: seed variability against data sensitivity."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math
import sys
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy import stats
from scipy.spatial.distance import pdist
from sklearn.base import (
    BaseEstimator,
    MetaEstimatorMixin,
    clone,
    is_classifier,
    is_regressor,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.validation import (
    check_X_y,
    has_fit_parameter,
    validate_data,
)

from sklearn_fil.audit import _diagnostics
from sklearn_fil.audit._pipeline import (
    audited_parts,
    check_extra_rows,
    checked_weight_names,
    progress,
    through_prefix,
)
from sklearn_fil.audit._sensitivity import sgd_sensitivity_bound
from sklearn_fil.exceptions import CalibrationRangeWarning
from sklearn_fil.utils._baseline import utility_warnings_ignored
from sklearn_fil.utils._fitted import fit_or_clear, unread_report_params
from sklearn_fil.utils._per_example_loss import loss_kind, per_example_loss
from sklearn_fil.utils._sklearn_compat import Interval, _fit_context
from sklearn_fil.utils._weights import flatten_weights

# Fitted weights and the fit parameters that set their initial values.
# (the keys are the pairs of sklearn_fil.utils._weights.WEIGHT_ATTRIBUTES)
_WEIGHTS = {
    ("coefs_", "intercepts_"): ("coefs_init", "intercepts_init"),
    ("coef_", "intercept_"): ("coef_init", "intercept_init"),
}
_DISTANCE_KINDS = ["data", "seed, fixed init", "seed, varying init"]
_SIGNIFICANCE = 0.05
_STABILITY_POINTS = 30
# Rows of each side of the membership attack (calibration, members, hold-out):
# every model returns its losses on them.
_ATTACK_ROWS = 2000


def _glorot(model, names, seed):
    """Glorot-uniform weights and zero biases shaped like ``model``'s.

    Hyland & Tople's initialisation (Keras defaults), a function of ``seed``.
    """
    rng = np.random.default_rng(seed)
    weights, biases = (getattr(model, name) for name in names)

    def draw(W):
        W = np.asarray(W, dtype=np.float64)
        bound = math.sqrt(6.0 / (W.shape[0] + (W.shape[1] if W.ndim == 2 else 1)))
        return rng.uniform(-bound, bound, size=W.shape)

    def zeros(b):
        return np.zeros_like(np.asarray(b, dtype=np.float64))

    if isinstance(weights, list):
        return [draw(W) for W in weights], [zeros(b) for b in biases]
    return draw(weights), zeros(biases)


def _fit_one(estimator, X, y, replaced, seed, init, hook, names, attack):
    """Fit one model of the grid (one joblib task).

    The data set is X without its reference row 0, which takes the place of
    row ``replaced`` when given.
    """
    rows = np.arange(1, X.shape[0])
    if replaced is not None:
        rows[replaced - 1] = 0
    model = clone(estimator).set_params(random_state=int(seed))
    # A copy: scikit-learn's SGD trains in the coef_init it is given, and the
    # tasks of one seed share their initialisation.
    init = {} if init is None else dict(zip(hook, copy.deepcopy(init), strict=True))
    with utility_warnings_ignored():  # the probe showed it, once
        model.fit(X[rows], y[rows], **init)
    losses = None
    if attack is not None:
        kind, calibration, members, X_out, y_out = attack
        losses = (
            per_example_loss(model, kind, X[calibration], y[calibration]).mean(),
            per_example_loss(model, kind, X[members], y[members]),
            per_example_loss(model, kind, X_out, y_out),
        )
    return flatten_weights(model, names), losses


def _check_final(final):
    """Raise unless a Pipeline's final step is a model trained with a seed."""
    if not (is_classifier(final) or is_regressor(final)) or (
        "random_state" not in final.get_params(deep=False)
    ):
        raise TypeError(
            "IntrinsicPrivacyAudit audits a Pipeline whose final step is a "
            "classifier or regressor trained by SGD with a random_state (e.g. "
            "sklearn_fil.neural.DPSGDClassifier, SGDClassifier); the final step "
            f"is {type(final).__name__}."
        )


_ABOVE_ONE = "above 1: classical Gaussian calibration invalid"


def _intrinsic_epsilon(sensitivity, variability, c):
    """``c * sensitivity / variability`` (Hyland & Tople, eq. 5), elementwise.

    Infinite where the weights do not vary but the data move them; zero where
    neither happens.
    """
    sensitivity = np.asarray(sensitivity, dtype=np.float64)
    variability = np.asarray(variability, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = c * sensitivity / variability
    return np.where(sensitivity == 0, 0.0, eps)


def _accuracy_epsilon(accuracy):
    """Epsilon of a pure-DP mechanism whose best attack has this accuracy.

    Balanced accuracy is at most ``e^eps / (1 + e^eps)``, so ``eps >=
    log(acc / (1 - acc))``, the conversion of Hyland & Tople's section 8.
    """
    with np.errstate(divide="ignore"):
        return np.log(accuracy) - np.log1p(-accuracy)


class IntrinsicPrivacyAudit(MetaEstimatorMixin, BaseEstimator):
    """Audit the intrinsic privacy of SGD: seed variability vs data sensitivity.

    Trains ``estimator`` on a grid of seeds times neighbouring data sets, as
    Hyland & Tople do, and compares how far the weights move when the seed
    (initialisation and data order) changes (variability) with how far they
    move when one example changes (sensitivity): treating the seed as the
    noise of a Gaussian mechanism gives a data-dependent epsilon, an
    estimate (not a guarantee) that assumes Gaussian weights and a secret
    seed. The results are computed from the training data and are sensitive.

    Row 0 of ``X`` is the reference row. The base data set is ``X`` without
    it; each of the ``n_neighbours`` neighbouring data sets puts it in the
    place of one random other row, so it differs from the base one in one
    example and, for a given seed, in one position of the visiting order.
    Every model is one joblib task: ``n_jobs`` and the backend change the
    run time only.

    Parameters
    ----------
    estimator : estimator object
        An unfitted estimator with a ``random_state`` whose fitted weights are
        ``coef_`` and ``intercept_`` (``SGDClassifier``, ``SGDRegressor``) or
        ``coefs_`` and ``intercepts_`` (:class:`~sklearn_fil.neural.DPSGDClassifier`,
        usually with ``noise_multiplier=0``), cloned for every model; or a
        :class:`~sklearn.pipeline.Pipeline` with a fitted prefix and such a
        final step (see Notes).
    n_seeds : int, default=100
        Random seeds per data set.
    n_neighbours : int, default=20
        Neighbouring data sets besides the base one.
    vary_init : bool, default=True
        Whether the seed draws the initial weights (Glorot uniform, zero
        biases) as well as the order of the data, or every run starts from
        one fixed draw. When ``fit`` takes an initialisation (``coef_init``
        and ``intercept_init``, or ``coefs_init`` and ``intercepts_init``),
        the audit also fits ``n_seeds`` models of the other setting on the
        base data set (the paper's Figure 3); otherwise ``vary_init=True``
        leaves the initialisation to the estimator and ``False`` is an error.
    delta : float, default=None
        The delta of the intrinsic epsilons; None means ``1 / n_samples**2``.
    n_jobs : int, default=None
        Models fitted in parallel, as in :class:`joblib.Parallel`.
    random_state : int, RandomState instance or None, default=None
        Draws the seeds, the neighbouring rows, the fixed initialisation and
        the random choices of the statistical tests.
    verbose : int, default=0
        Draw a progress bar of the fitted models on stderr.

    Attributes
    ----------
    audit_report_ : pandas.DataFrame
        The paper's Table 4, one row per quantity: ``delta``,
        ``sensitivity_bound``, ``sensitivity``, ``variability``,
        ``intrinsic_epsilon``, ``empirical_intrinsic_epsilon``; columns
        ``value``, the range over weights ``per_weight_min``,
        ``per_weight_max`` and ``caveat``, which flags epsilons above 1 (a
        :class:`~sklearn_fil.exceptions.CalibrationRangeWarning` too).
    sensitivity_ : float
        Empirical sensitivity: the largest distance between the weights of
        two models of one seed on the base and a neighbouring data set.
    sensitivity_bound_ : float or None
        The bound ``2 k L eta / B`` of Wu et al. (2017) where its assumptions
        hold (convex, Lipschitz and smooth loss, constant small steps).
    sensitivity_bound_reason_ : str or None
        Why there is no bound.
    variability_ : float
        The smallest standard deviation over seeds of any weight on any data
        set (each data set's mean removed).
    intrinsic_delta_ : float
        The delta of the intrinsic epsilons.
    intrinsic_epsilon_ : float or None
        ``sqrt(2 log(1.25 / delta)) * sensitivity_bound_ / variability_``;
        None without a bound.
    empirical_intrinsic_epsilon_ : float
        The same with ``sensitivity_``.
    distances_ : pandas.DataFrame
        Columns ``kind`` and ``distance``: between models of one seed on two
        neighbouring data sets (``"data"``) and of two seeds on the base data
        set (``"seed, fixed init"``, ``"seed, varying init"``).
    diagnostics_ : pandas.DataFrame
        Tests of the weights' distribution over seeds on the base data set
        (the paper's section 6): ``henze_zirkler`` (multivariate normality,
        on subsets of at most 55 weights), ``shapiro_wilk``,
        ``anderson_darling_laplace`` (per weight) and ``tail_index`` (alpha
        of an alpha-stable fit, 2 for Gaussian tails); columns
        ``statistic``, ``p_value`` (the smallest), ``n_tests`` and
        ``rejected`` (fraction rejected at 0.05, Bonferroni-corrected).
    weight_tests_ : pandas.DataFrame
        One row per weight: ``std`` (its smallest standard deviation over
        data sets), ``shapiro_wilk_p`` and ``anderson_darling_laplace_p``.
    stability_ : pandas.DataFrame
        Columns ``quantity``, ``n`` and ``value``: ``sensitivity`` from the
        first ``n`` (seed, data set) pairs in random order and
        ``variability`` from the first ``n`` seeds (the paper's Figure 6).
    membership_ : pandas.DataFrame
        Only with a hold-out set: for every model on a neighbouring data set,
        the balanced accuracy and implied epsilon of the loss-threshold
        membership attack with the threshold from a model of the same seed
        (``_same``) or of another (``_different``) on another data set.
    membership_test_ : pandas.Series
        Only with a hold-out set: the mean accuracies and epsilons, their
        difference and the p-value of the one-sided paired t-test that
        knowing the seed helps.
    weights_ : ndarray of shape (n_neighbours + 1, n_seeds, n_weights)
        The flattened weights of the grid, base data set first.
    seeds_ : ndarray of shape (n_seeds,)
        The seeds given to ``estimator``.
    neighbour_rows_ : ndarray of shape (n_neighbours,)
        The rows of ``X`` replaced in the neighbouring data sets.
    n_models_ : int
        Models fitted, the grid and the other initialisation.
    n_features_in_ : int
        Number of features of ``X`` (the raw columns, for a Pipeline).
    feature_names_in_ : ndarray of shape (n_features,)
        Names of the columns of ``X``, when they are strings.

    See Also
    --------
    sklearn_fil.neural.DPSGDClassifier : DP-SGD, with ``noise_multiplier=0``
        plain SGD that takes an initialisation.

    Notes
    -----
    Hyland & Tople compare two neighbouring data sets with each other, which
    a fixed seed visits in two differing positions; comparing each one with
    the base data set keeps one, the setting of the sensitivity bound.

    A :class:`~sklearn.pipeline.Pipeline` is audited with its prefix
    *frozen*, as ``IntrinsicPrivacyAudit(pipe[-1])`` on
    ``pipe[:-1].transform(X)``; a cloned audit needs its prefix steps wrapped
    in :class:`~sklearn.frozen.FrozenEstimator`.

    References
    ----------
    S. L. Hyland and S. Tople, *An empirical study on the intrinsic privacy
    of SGD*.
    X. Wu et al. (2017), *Bolt-on differential privacy for scalable
    stochastic gradient descent-based analytics*, SIGMOD.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn.preprocessing import normalize
    >>> from sklearn_fil.audit import IntrinsicPrivacyAudit
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> X = normalize(X)
    >>> sgd = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.1,
    ...                     penalty=None, max_iter=3, tol=None)
    >>> audit = IntrinsicPrivacyAudit(sgd, n_seeds=10, n_neighbours=3,
    ...                               random_state=0).fit(X, y)
    >>> bool(audit.sensitivity_ <= audit.sensitivity_bound_)
    True
    >>> audit.audit_report_.index.tolist()
    ['delta', 'sensitivity_bound', 'sensitivity', 'variability', \
'intrinsic_epsilon', 'empirical_intrinsic_epsilon']
    """

    _parameter_constraints: ClassVar[dict] = {
        "estimator": [HasMethods(["fit", "get_params", "set_params"])],
        "n_seeds": [Interval(Integral, 2, None, closed="left")],
        "n_neighbours": [Interval(Integral, 2, None, closed="left")],
        "vary_init": ["boolean"],
        "delta": [Interval(Real, 0, 1, closed="neither"), None],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator,
        *,
        n_seeds=100,
        n_neighbours=20,
        vary_init=True,
        delta=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.n_seeds = n_seeds
        self.n_neighbours = n_neighbours
        self.vary_init = vary_init
        self.delta = delta
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_holdout=None, y_holdout=None):
        """Fit the grid of models and estimate sensitivity and variability.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Training data; row 0 is the reference row. For a Pipeline the
            raw rows its prefix transforms.
        y : array-like of shape (n_samples,)
            Targets.
        X_holdout : {array-like, DataFrame} of shape (n_holdout, n_features), \
default=None
            Examples outside every training set (raw rows for a Pipeline);
            with them the audit also runs the membership attack with and
            without the seed.
        y_holdout : array-like of shape (n_holdout,), default=None
            Their targets.

        Returns
        -------
        self : object
            Fitted audit.
        """
        return fit_or_clear(self, self._fit, X, y, X_holdout, y_holdout)

    def _fit(self, X, y, X_holdout, y_holdout):
        estimator, X, y, holdout = self._validate(X, y, X_holdout, y_holdout)
        n = X.shape[0]
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max - self.n_seeds) + np.arange(
            self.n_seeds
        )
        neighbours = np.sort(rng.choice(np.arange(1, n), self.n_neighbours, False))
        fixed_seed = int(rng.randint(np.iinfo(np.int32).max))

        # One model first, in this process: the estimator's own errors, and a
        # missing coef_, surface before the grid starts.
        probe = clone(estimator).set_params(random_state=int(seeds[0]))
        probe.fit(X[1:], y[1:])
        names, hook = self._weight_hook(estimator, probe)
        attack = None
        if holdout is not None:
            attack = self._attack_rows(probe, X, neighbours, holdout, rng)

        def inits(varying):
            """One initialisation per seed, drawn once and shared by its tasks."""
            if hook is None:
                return [None] * self.n_seeds
            if not varying:
                return [_glorot(probe, names, fixed_seed)] * self.n_seeds
            return [_glorot(probe, names, int(s)) for s in seeds]

        grid_inits = inits(self.vary_init)
        tasks = [
            (None if a == 0 else neighbours[a - 1], s, w0)
            for a in range(self.n_neighbours + 1)
            for s, w0 in zip(seeds, grid_inits, strict=True)
        ]
        if hook is not None:  # the other initialisation, on the base data set
            other_inits = inits(not self.vary_init)
            tasks += [(None, s, w0) for s, w0 in zip(seeds, other_inits, strict=True)]
        results = Parallel(n_jobs=self.n_jobs, return_as="generator")(
            delayed(_fit_one)(estimator, X, y, rep, s, w0, hook, names, attack)
            for rep, s, w0 in tasks
        )
        bar = progress(
            results, len(tasks), self.verbose, "IntrinsicPrivacyAudit", "models"
        )
        weights, losses = zip(*bar, strict=True)
        grid = self.n_seeds * (self.n_neighbours + 1)
        W = np.stack(weights[:grid]).reshape(self.n_neighbours + 1, self.n_seeds, -1)
        other = np.stack(weights[grid:]) if hook is not None else None

        self.seeds_ = seeds
        self.neighbour_rows_ = neighbours
        self.weights_ = W
        self.n_models_ = len(tasks)
        bound, reason = sgd_sensitivity_bound(
            estimator, X, n - 1, np.unique(y).size if is_classifier(probe) else 0
        )
        self.sensitivity_bound_, self.sensitivity_bound_reason_ = bound, reason
        self._estimate(W, other, n, rng)
        if attack is not None:
            self._membership(losses[:grid])
        return self

    def _validate(self, X, y, X_holdout, y_holdout):
        """``(model, X, y, holdout)``: every check before any model is fitted."""
        prefix, estimator = audited_parts(
            self.estimator,
            "IntrinsicPrivacyAudit",
            _check_final,
            "the audit varies the seed of SGD through it",
        )
        # only the models' weights and losses are read: skip the report's extras
        estimator = clone(estimator).set_params(**unread_report_params(estimator))
        if prefix is None:
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        else:
            validate_data(self, X, skip_check_array=True)  # the raw columns
            X, y = check_X_y(through_prefix(prefix, X), y, dtype=np.float64)
        n = X.shape[0]
        if n < self.n_neighbours + 2:
            raise ValueError(
                f"n_neighbours={self.n_neighbours} needs at least "
                f"{self.n_neighbours + 2} rows (a reference row, the replaced rows "
                f"and one more); X has {n}."
            )
        X_holdout = through_prefix(prefix, X_holdout)
        holdout = check_extra_rows(X_holdout, y_holdout, X.shape[1], "holdout")
        return estimator, X, y, holdout

    def _weight_hook(self, estimator, probe):
        """The weights' names and the fit parameters that initialise them, or None."""
        names = checked_weight_names(probe, "weights")
        hook = _WEIGHTS[names]
        if not all(has_fit_parameter(estimator, h) for h in hook):
            hook = None
            if not self.vary_init:
                raise ValueError(
                    f"vary_init=False needs an estimator whose fit takes {names[0]} "
                    f"initial values ({_WEIGHTS[names][0]}); "
                    f"{type(estimator).__name__}.fit does not."
                )
        return names, hook

    def _attack_rows(self, probe, X, neighbours, holdout, rng):
        """Calibration, target and as many hold-out rows of the membership attack.

        The first two are drawn from the rows in every training set.
        """
        kind = loss_kind(probe)
        always = np.setdiff1d(np.arange(1, X.shape[0]), neighbours)
        if always.size < 2:
            raise ValueError("The membership attack needs two rows in every data set.")
        rows = rng.permutation(always)[: 2 * _ATTACK_ROWS]
        half = rows.size // 2
        calibration, members = rows[:half], rows[half:]
        X_out, y_out = holdout
        out = rng.permutation(X_out.shape[0])[: members.size]
        return kind, calibration, members, X_out[out], y_out[out]

    def _estimate(self, W, other, n, rng):
        """Sensitivity, variability, epsilons, distances, tests and stability."""
        data = np.linalg.norm(W[1:] - W[0], axis=2)  # (n_neighbours, n_seeds)
        self.sensitivity_ = float(data.max())
        per_weight = W.std(axis=1, ddof=1).min(axis=0)
        self.variability_ = float(per_weight.min())
        self.intrinsic_delta_ = 1.0 / n**2 if self.delta is None else self.delta
        c = math.sqrt(2 * math.log(1.25 / self.intrinsic_delta_))
        spread = (per_weight.max(), per_weight.min())  # epsilon grows as std falls

        def epsilon_row(sensitivity):
            if sensitivity is None:
                return [np.nan] * 3
            value, low, high = _intrinsic_epsilon(
                sensitivity, [self.variability_, *spread], c
            )
            return [float(value), float(low), float(high)]

        bound = self.sensitivity_bound_
        eps, eps_star = epsilon_row(bound), epsilon_row(self.sensitivity_)
        self.intrinsic_epsilon_ = None if bound is None else eps[0]
        self.empirical_intrinsic_epsilon_ = eps_star[0]
        rows = {
            "delta": [self.intrinsic_delta_, np.nan, np.nan],
            "sensitivity_bound": [np.nan if bound is None else bound, np.nan, np.nan],
            "sensitivity": [self.sensitivity_, np.nan, np.nan],
            "variability": [self.variability_, per_weight.min(), per_weight.max()],
            "intrinsic_epsilon": eps,
            "empirical_intrinsic_epsilon": eps_star,
        }
        self.audit_report_ = pd.DataFrame(
            list(rows.values()),
            index=pd.Index(list(rows), name="quantity"),
            columns=["value", "per_weight_min", "per_weight_max"],
        )
        self.audit_report_["caveat"] = ""
        above = [
            name
            for name in ("intrinsic_epsilon", "empirical_intrinsic_epsilon")
            if (self.audit_report_.loc[name, "value":"per_weight_max"] > 1).any()
        ]
        if above:
            self.audit_report_.loc[above, "caveat"] = _ABOVE_ONE
            message = (
                f"{' and '.join(above)} {'exceeds' if len(above) == 1 else 'exceed'}"
                f" 1 ({_ABOVE_ONE}): "
                "sqrt(2 log(1.25/delta)) * sensitivity / variability calibrates "
                "a Gaussian mechanism only for epsilon < 1, so above 1 these "
                "are ratios of sensitivity to variability, not (epsilon, delta) "
                "pairs."
            )
            if self.verbose:
                sys.stderr.write(f"IntrinsicPrivacyAudit: {message}\n")
            # _estimate < _fit < fit_or_clear < fit < _fit_context < the caller.
            warnings.warn(message, CalibrationRangeWarning, stacklevel=6)

        seed_kinds = {self.vary_init: pdist(W[0])}
        if other is not None:
            seed_kinds[not self.vary_init] = pdist(other)
        parts = [("data", data.ravel())] + [
            (_DISTANCE_KINDS[1 + varying], d) for varying, d in seed_kinds.items()
        ]
        self.distances_ = pd.DataFrame(
            {
                "kind": pd.Categorical(
                    np.repeat([k for k, _ in parts], [d.size for _, d in parts]),
                    categories=_DISTANCE_KINDS,
                ),
                "distance": np.concatenate([d for _, d in parts]),
            }
        )
        self._diagnose(W[0] - W[0].mean(axis=0), per_weight, rng)
        self._stability(W, data, rng)

    def _diagnose(self, R, per_weight, rng):
        n_seeds, n_weights = R.shape
        shapiro = (
            _diagnostics.shapiro_wilk(R) if n_seeds >= 3 else np.full(n_weights, np.nan)
        )
        _, laplace = _diagnostics.laplace_anderson_darling(R, rng)
        hz, hz_p, n_subsets = _diagnostics.henze_zirkler_subsets(R, rng)

        def row(statistic, p_values):
            p_values = np.asarray(p_values)[~np.isnan(p_values)]
            if p_values.size == 0:
                return [statistic, np.nan, 0, np.nan]
            rejected = p_values < _SIGNIFICANCE / p_values.size
            return [statistic, p_values.min(), p_values.size, rejected.mean()]

        hz_row = [hz, hz_p, n_subsets, np.nan]
        if not math.isnan(hz_p):
            hz_row[3] = float(hz_p < _SIGNIFICANCE / n_subsets)
        rows = {
            "henze_zirkler": hz_row,
            "shapiro_wilk": row(np.nan, shapiro),
            "anderson_darling_laplace": row(np.nan, laplace),
            "tail_index": [_diagnostics.tail_index(R), np.nan, 1, np.nan],
        }
        self.diagnostics_ = pd.DataFrame(
            list(rows.values()),
            index=pd.Index(list(rows), name="test"),
            columns=["statistic", "p_value", "n_tests", "rejected"],
        )
        self.weight_tests_ = pd.DataFrame(
            {
                "std": per_weight,
                "shapiro_wilk_p": shapiro,
                "anderson_darling_laplace_p": laplace,
            },
            index=pd.RangeIndex(n_weights, name="weight"),
        )

    def _stability(self, W, data, rng):
        pairs = data.ravel()[rng.permutation(data.size)]
        n_pairs = np.unique(np.geomspace(1, pairs.size, _STABILITY_POINTS).astype(int))
        n_seeds = np.unique(np.linspace(2, self.n_seeds, _STABILITY_POINTS).astype(int))
        variability = [W[:, :s].std(axis=1, ddof=1).min() for s in n_seeds]
        self.stability_ = pd.DataFrame(
            {
                "quantity": ["sensitivity"] * n_pairs.size
                + ["variability"] * n_seeds.size,
                "n": np.r_[n_pairs, n_seeds],
                "value": np.r_[np.maximum.accumulate(pairs)[n_pairs - 1], variability],
            }
        )

    def _membership(self, losses):
        """Membership attack on every model of a neighbouring data set."""
        S, m = self.n_seeds, self.n_neighbours
        threshold = np.array([loss[0] for loss in losses]).reshape(m + 1, S)
        rows = []
        for a in range(1, m + 1):
            other = a % m + 1  # another neighbouring data set
            for r in range(S):
                _, members, out = losses[a * S + r]
                result = [self.seeds_[r], self.neighbour_rows_[a - 1]]
                # Same seed, other data; then the other data with another seed.
                for t in (threshold[other, r], threshold[other, (r + 1) % S]):
                    tpr, fpr = (members <= t).mean(), (out <= t).mean()
                    result.append((tpr + 1 - fpr) / 2)
                rows.append(result)
        table = pd.DataFrame(
            rows,
            columns=["seed", "replaced_row", "accuracy_same", "accuracy_different"],
        )
        table["epsilon_same"] = _accuracy_epsilon(table["accuracy_same"].to_numpy())
        table["epsilon_different"] = _accuracy_epsilon(
            table["accuracy_different"].to_numpy()
        )
        self.membership_ = table
        difference = table["epsilon_same"] - table["epsilon_different"]
        finite = np.isfinite(difference)
        p_value = np.nan
        if finite.sum() >= 2 and difference[finite].std() > 0:
            p_value = stats.ttest_rel(
                table["epsilon_same"][finite],
                table["epsilon_different"][finite],
                alternative="greater",
            ).pvalue
        self.membership_test_ = pd.Series(
            {
                "accuracy_same": table["accuracy_same"].mean(),
                "accuracy_different": table["accuracy_different"].mean(),
                "epsilon_same": table["epsilon_same"].mean(),
                "epsilon_different": table["epsilon_different"].mean(),
                "epsilon_difference": difference.mean(),
                "p_value": p_value,
                "n_models": len(table),
            },
            name="membership",
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
