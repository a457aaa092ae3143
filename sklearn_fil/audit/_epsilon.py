"""An empirical lower bound on epsilon: is a reported guarantee a guarantee?"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from functools import partial
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.covariance import ledoit_wolf
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.validation import check_array, check_consistent_length

from sklearn_fil.audit._canaries import canary_neighbours
from sklearn_fil.audit._pipeline import (
    audited_parts,
    check_extra_rows,
    check_guaranteed_final,
    checked_weight_names,
    progress,
    through_prefix,
)
from sklearn_fil.audit._scores import (  # noqa: F401 (the tests import them here)
    _choose_test,
    _clopper_pearson_upper,
    _epsilon_bound,
    _equal_error_threshold,
    clopper_pearson_epsilon,
    detectable_multiple,
    fdp_epsilon,
    gdp_epsilon,
)
from sklearn_fil.utils._baseline import utility_warnings_ignored
from sklearn_fil.utils._fitted import fit_or_clear, unread_report_params
from sklearn_fil.utils._sklearn_compat import Interval, _fit_context
from sklearn_fil.utils._weights import flatten_weights

# Fewest releases per data set: two halves of at least ten.
_MIN_RELEASES = 20
# Tasks per joblib worker: few enough that each task fits many releases (cheap
# to schedule, also on Dask), enough to balance the load.
_TASKS_PER_JOB = 4
# The statistic whitens with a full (shrunk) covariance up to this many
# released numbers, and with the per-coordinate variances beyond.
_MAX_WHITENED = 1000
_DATA_SETS = ("original", "neighbour")


def _seed_sequence(random_state):
    """A SeedSequence: fresh OS entropy for None, else derived from the seed."""
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, Integral):
        return np.random.SeedSequence(int(random_state))
    rng = check_random_state(random_state)
    return np.random.SeedSequence(int(rng.randint(np.iinfo(np.int32).max)))


def _check_neighbours(X0, y0, X1, y1, relation):
    """Raise unless the two data sets are neighbours under ``relation``."""
    n0, n1 = X0.shape[0], X1.shape[0]
    if relation == "replace_one":
        if n0 != n1:
            raise ValueError(
                "Under replace-one the neighbouring data set has as many rows as "
                f"X; got {n1} and {n0}."
            )
        differ = np.any(X0 != X1, axis=1) | (y0 != y1)
        if differ.sum() > 1:
            raise ValueError(
                f"X_neighbour, y_neighbour differ from X, y in {int(differ.sum())} "
                "rows; replace-one neighbours differ in at most one (more would "
                "audit group privacy, whose epsilon is larger)."
            )
        return
    if abs(n0 - n1) != 1:
        raise ValueError(
            "Under add/remove the neighbouring data set has one row more or one "
            f"fewer than X; got {n1} rows against {n0}."
        )
    (Xs, ys), (Xl, yl) = ((X0, y0), (X1, y1)) if n0 < n1 else ((X1, y1), (X0, y0))
    same = np.all(Xs == Xl[:-1], axis=1) & (ys == yl[:-1])
    first = int(np.argmin(same)) if not same.all() else Xs.shape[0]
    if not (
        np.array_equal(Xs[first:], Xl[first + 1 :])
        and np.array_equal(ys[first:], yl[first + 1 :])
    ):
        raise ValueError(
            "Under add/remove the larger data set must be the smaller one with "
            "one row inserted (in order); X_neighbour, y_neighbour are not."
        )


def _check_guarantee(model, name, which):
    """The holding ``guarantee_`` of a model fitted on ``which``, else an error."""
    guarantee = getattr(model, "guarantee_", None)
    if guarantee is None:
        raise ValueError(
            f"{name} reports no guarantee_ (fitted on {which}): there is no "
            "epsilon to audit."
        )
    if not guarantee.holds:
        raise ValueError(
            f"{name} reports no epsilon to audit (fitted on {which}): "
            f"{guarantee.reason}"
        )
    return guarantee


def _fit_releases(estimator, data_sets, jobs, names, fit_params):
    """Fit one release per ``(data set, seed)`` job; one row of weights each.

    Warnings are silenced: the probes in the calling process showed them.
    """
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for which, seed in jobs:
            X, y = data_sets[which]
            model = clone(estimator).set_params(random_state=int(seed))
            model.fit(X, y, **fit_params)
            rows.append(flatten_weights(model, names))
    return np.stack(rows)


def _statistic(W0, W1):
    """Weights of the linear statistic, from the selection releases.

    Fisher's discriminant ``S^-1 (mean1 - mean0)`` with the pooled covariance
    shrunk by Ledoit-Wolf (the likelihood-ratio test for Gaussian noise of
    any common covariance; the plain difference of means for isotropic
    noise), with per-coordinate variances beyond ``_MAX_WHITENED`` numbers.
    A coordinate that never varies but differs between the data sets is a
    perfect test and is used alone.
    """
    diff = W1.mean(axis=0) - W0.mean(axis=0)
    pooled = np.vstack([W0 - W0.mean(axis=0), W1 - W1.mean(axis=0)])
    var = pooled.var(axis=0)
    constant = var <= 1e-300
    if np.any(constant & (diff != 0)):
        return np.where(constant, diff, 0.0)
    direction = np.zeros_like(diff)
    keep = ~constant
    if not keep.any():
        return direction
    if keep.sum() <= _MAX_WHITENED:
        cov, _ = ledoit_wolf(pooled[:, keep], assume_centered=True)
        direction[keep] = np.linalg.lstsq(cov, diff[keep], rcond=None)[0]
    else:
        direction[keep] = diff[keep] / var[keep]
    if not np.any(direction):
        direction = diff
    return direction


class EpsilonAudit(MetaEstimatorMixin, BaseEstimator):
    """Audit a reported ε: a lower bound on the ε a mechanism really has.

    Fits ``estimator`` ``n_releases`` times on each of two neighbouring data
    sets and tries to tell its released weights apart. Any (ε, δ)-DP
    mechanism limits every such test: accusing the second data set with
    false-positive rate FPR and false-negative rate FNR, ``FPR + e^ε FNR >= 1
    - δ``. The audit chooses the test on the first half of the releases
    (Fisher's discriminant of the released weights, the most powerful test
    for Gaussian output noise, and the threshold of its ROC curve with the
    best bound), counts its errors on the other half, bounds FPR and FNR by
    one-sided Clopper-Pearson intervals at ``1 - (1 - confidence) / 2`` each
    and reports ``epsilon_lower_ = log((1 - δ - FNR_upper) / FPR_upper)`` at
    the claimed δ.

    Whatever the mechanism, ``epsilon_lower_`` is below its true ε with
    probability at least ``confidence``: a claimed ε below it is refuted. A
    bound below the claim only says that this test found no violation; with
    no error among ``m = n_releases / 2`` held-out releases it is ``log((1 -
    δ - u) / u)``, ``u = 1 - ((1 - confidence) / 2)^(1/m)``, about 4.9 for
    ``n_releases=1000``. ``power_multiple_`` says what the audit could have
    seen: the smallest multiple of the claim it refutes more often than not
    (:func:`detectable_multiple`), so that a bound of 0 never stands alone.
    The data sets are ``X, y`` and ``X_neighbour, y_neighbour`` when given,
    else the pair :func:`canary_neighbours` builds.

    Beside it, ``epsilon_lower_gdp_`` is the Gaussian-DP bound of Nasr et
    al. (2023) (:func:`gdp_epsilon`): ``mu_lower_``, a lower bound on μ of
    Gaussian DP at ``confidence`` from the threshold of equal error rates on
    the first half, converted to ε at ``delta_``. It is a lower bound on ε
    only if the mechanism's trade-off curve is Gaussian: exact for Gaussian
    output perturbation (the output-perturbed GLMs; the statistic is linear
    in the released weights), an assumption for DP-SGD (Poisson subsampling
    and composition make it only near Gaussian). Where that holds it is
    usually the tighter, by most at small δ; ``consistent_`` rests on
    ``epsilon_lower_`` alone. ``epsilon_lower_fdp_`` (:func:`fdp_epsilon`)
    fits, at the same threshold and errors, the claimed mechanism's own
    trade-off curve at ``scale_lower_fdp_`` times its sensitivity (its
    ``dp_event``): for DP-SGD with Poisson sampling a mixture, not a
    Gaussian, and so nearer the claim (most under add/remove); the same as
    the GDP bound for Gaussian mechanisms. It is a lower bound on ε where
    the mechanism's curve is in that family (exact for output perturbation
    and a full-batch DP-SGD step; for several sampled steps released at the
    end an assumption, as for the GDP bound); whatever the mechanism, a
    value above the claim refutes the claimed trade-off curve.

    Probe fits on each data set run first, in this process, so that their
    errors and warnings surface before the releases; ``guarantee_`` comes
    from the probe on ``X, y``. The releases are clones seeded from a
    :class:`numpy.random.SeedSequence` of ``random_state``, fitted by joblib
    (warnings silenced): ``n_jobs`` and the backend change the run time only.

    Parameters
    ----------
    estimator : estimator object
        An unfitted estimator with a ``random_state`` that reports a
        ``guarantee_`` and releases ``coef_`` and ``intercept_`` (e.g.
        :class:`~sklearn_fil.OutputPerturbedLogisticRegression`) or
        ``coefs_`` and ``intercepts_`` (:class:`~sklearn_fil.DPSGDClassifier`),
        cloned for every release; or a :class:`~sklearn.pipeline.Pipeline`
        with a fitted prefix and such a final step (see Notes).
    n_releases : int, default=2000
        Releases per data set, at least 20: half choose the test, half
        measure it.
    confidence : float, default=0.95
        Probability with which ``epsilon_lower_`` is below the true ε.
    n_jobs : int, default=None
        Joblib workers for the releases; None means 1 unless in a
        :func:`joblib.parallel_config` context.
    random_state : int, RandomState instance or None, default=None
        Seeds the releases and the probes.
    verbose : int, default=0
        Draw a progress bar of the releases on stderr.

    Attributes
    ----------
    guarantee_ : Guarantee
        The guarantee the probe fitted on ``X, y`` reports.
    epsilon_claimed_ : float
        The claimed ε: the largest of the probes' on the two data sets.
    delta_ : float
        The δ of the claim (the largest of the probes').
    epsilon_lower_ : float
        Lower bound on the mechanism's ε at ``delta_``, valid with
        probability ``confidence``; at least 0.
    epsilon_estimate_ : float
        Point estimate (not a bound) of the same test's ε, at the held-out
        error rates estimated as ``(k + 1/2) / (m + 1)``; at least 0.
    consistent_ : bool
        Whether ``epsilon_lower_ <= epsilon_claimed_``.
    mu_lower_ : float
        Lower bound on μ of Gaussian DP, valid with probability
        ``confidence`` for any μ-GDP mechanism; at least 0. NaN when
        ``delta_`` is 0 (here and in the next three).
    mu_estimate_ : float
        Point estimate (not a bound) of μ: ``sqrt(2) Φ⁻¹(AUC)`` of the
        held-out scores.
    epsilon_lower_gdp_ : float
        ε at ``delta_`` of ``mu_lower_``: a lower bound on ε only if the
        mechanism's trade-off curve is Gaussian (see above).
    threshold_gdp_ : float
        The threshold of the statistic that ``mu_lower_`` counts errors at
        (the test accuses ``positive_``, as for ``threshold_``).
    scale_lower_fdp_ : float
        Lower bound on the multiple of the claimed sensitivity at which the
        claimed mechanism's trade-off curve allows the errors at
        ``threshold_gdp_`` (:func:`fdp_epsilon`); valid with probability
        ``confidence`` if the mechanism's curve is in that family. NaN when
        ``delta_`` is 0 or the claim has no ``dp_event`` (here and next).
    epsilon_lower_fdp_ : float
        ε at ``delta_`` of the claimed mechanism at ``scale_lower_fdp_``
        times its sensitivity: a lower bound on ε under the same assumption.
    power_multiple_ : float
        The smallest ``k`` such that a Gaussian mechanism whose ε at
        ``delta_`` is ``k * epsilon_claimed_``, audited with a canary at its
        sensitivity and the likelihood-ratio test, would have
        ``epsilon_lower_ > epsilon_claimed_`` with probability at least 1/2
        at these releases (:func:`detectable_multiple`); ``inf`` when no
        multiple would be; NaN when ``delta_`` or ``epsilon_claimed_`` is 0.
    direction_ : ndarray of shape (n_weights,)
        Weights of the linear statistic over the flattened release (all
        weights, then all biases); high values accuse ``positive_``.
    threshold_ : float
        The test accuses ``positive_`` when the statistic is at least this.
    positive_ : {"original", "neighbour"}
        The data set the test accuses.
    scores_ : pandas.DataFrame
        The held-out statistics, columns ``"original"`` and ``"neighbour"``.
    audit_report_ : pandas.DataFrame
        One row, indexed by the estimator's class name: ``epsilon_claimed``,
        ``delta``, ``neighboring_relation``, ``epsilon_lower``,
        ``epsilon_estimate``, the held-out rates ``fpr``, ``fnr`` and their
        bounds ``fpr_upper``, ``fnr_upper``, ``n_releases``, ``confidence``,
        ``consistent``, ``epsilon_lower_gdp``, ``epsilon_lower_fdp``,
        ``mu_lower``, ``mu_estimate`` and ``power_multiple``.

    See Also
    --------
    canary_neighbours : The worst-case pair of data sets audited by default.
    clopper_pearson_epsilon, gdp_epsilon, fdp_epsilon : The bounds, on any
        scores.
    IntrinsicPrivacyAudit : Privacy from the randomness of SGD alone.

    Notes
    -----
    A :class:`~sklearn.pipeline.Pipeline` is audited with its prefix
    *frozen*, as ``EpsilonAudit(pipe[-1])`` on ``pipe[:-1].transform(X)``
    (``fit_params`` go to the final step): the audited ε is the final step's
    given a public prefix. A cloned audit needs its prefix steps wrapped in
    :class:`~sklearn.frozen.FrozenEstimator` (:func:`~sklearn.base.clone`
    unfits them). The audit holds ``2 n_releases`` released weight vectors in
    memory; its results are sensitive.

    References
    ----------
    Jagielski, Ullman & Oprea (2020), *Auditing differentially private
    machine learning: how private is private SGD?*, NeurIPS.
    Nasr, Song, Thakurta, Papernot & Carlini (2021), *Adversary
    instantiation: lower bounds for differentially private machine
    learning*, IEEE S&P.
    Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis (2023),
    *Tight auditing of differentially private machine learning*, USENIX
    Security.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.audit import EpsilonAudit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(scale=0.3, size=(20, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = OutputPerturbedLogisticRegression(
    ...     sigma=0.7, lam=0.1, fit_intercept=False, data_norm=1.0, delta=0.04)
    >>> audit = EpsilonAudit(clf, n_releases=200, random_state=0).fit(X, y)
    >>> audit.epsilon_lower_ <= audit.epsilon_claimed_
    True
    >>> bool(audit.power_multiple_ > 1)  # what 100 held-out releases can see
    True
    >>> list(audit.audit_report_.columns[:5])
    ['epsilon_claimed', 'delta', 'neighboring_relation', 'epsilon_lower', \
'epsilon_estimate']

    A Pipeline's prefix, fitted once, is frozen; its final step is audited:

    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> scaler = StandardScaler(with_std=False).fit(X)  # public, say
    >>> pipe = make_pipeline(scaler, clf)
    >>> audit = EpsilonAudit(pipe, n_releases=20, random_state=0).fit(X, y)
    >>> audit.audit_report_.index.tolist()
    ['OutputPerturbedLogisticRegression']
    """

    _parameter_constraints: ClassVar[dict] = {
        "estimator": [HasMethods(["fit"])],
        "n_releases": [Interval(Integral, _MIN_RELEASES, None, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator,
        *,
        n_releases=2000,
        confidence=0.95,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.n_releases = n_releases
        self.confidence = confidence
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_neighbour=None, y_neighbour=None, **fit_params):
        """Fit the releases on both data sets and bound ε from below.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Training data; for a Pipeline the raw rows its prefix transforms.
        y : array-like of shape (n_samples,)
            Targets.
        X_neighbour : {array-like, DataFrame} of shape (n_neighbour, \
n_features), default=None
            A neighbouring data set under the estimator's relation: as many
            rows, at most one different (replace-one), or one row more or
            fewer (add/remove). None builds a worst-case pair with
            :func:`canary_neighbours`.
        y_neighbour : array-like of shape (n_neighbour,), default=None
            Its targets; given with ``X_neighbour`` and only with it.
        **fit_params : dict
            Passed to every fit, on both data sets (e.g. a public
            ``sample_weight`` under replace-one); to the final step of a
            Pipeline, by their plain names.

        Returns
        -------
        self : object
            Fitted audit.
        """
        return fit_or_clear(self, self._fit, X, y, X_neighbour, y_neighbour, fit_params)

    def _fit(self, X, y, X_neighbour, y_neighbour, fit_params):
        prefix, estimator = audited_parts(
            self.estimator,
            "EpsilonAudit",
            partial(check_guaranteed_final, caller="EpsilonAudit"),
            "the audit draws the randomness of every release through it",
        )
        # only the releases' weights are read: skip the report's extra columns
        estimator = clone(estimator).set_params(**unread_report_params(estimator))
        name = type(estimator).__name__
        # a Pipeline: the final step is audited on rows through the frozen prefix
        X, X_neighbour = through_prefix(prefix, X), through_prefix(prefix, X_neighbour)
        X_arr = check_array(X, dtype=np.float64)
        y_arr = np.asarray(y)
        check_consistent_length(X_arr, y_arr)
        neighbour = check_extra_rows(
            X_neighbour, y_neighbour, X_arr.shape[1], "neighbour"
        )
        n = self.n_releases
        seeds = [
            int(s) for s in _seed_sequence(self.random_state).generate_state(3 + 2 * n)
        ]

        # Probes, in this process: the estimator's own errors and warnings,
        # the claim and the released attributes, before the releases.
        probe = clone(estimator).set_params(random_state=seeds[0])
        probe.fit(X, y, **fit_params)
        guarantee = _check_guarantee(probe, name, "X, y")
        names = checked_weight_names(probe, "released weights")
        relation = guarantee.neighboring_relation
        if neighbour is None:
            X0, y0, X1, y1 = canary_neighbours(
                probe, X, y, sample_weight=fit_params.get("sample_weight")
            )
        else:
            _check_neighbours(X_arr, y_arr, *neighbour, relation)
            X0, y0, X1, y1 = X, y, X_neighbour, y_neighbour
        claims = []
        for seed, (Xd, yd), which in (
            (seeds[1], (X0, y0), "the first data set"),
            (seeds[2], (X1, y1), "the neighbouring data set"),
        ):
            model = clone(estimator).set_params(random_state=seed)
            with utility_warnings_ignored():  # the audit's canary data sets
                model.fit(Xd, yd, **fit_params)
            claims.append(_check_guarantee(model, name, which))
        if any(c.neighboring_relation != relation for c in claims):
            raise ValueError(
                "The estimator states different neighbouring relations on the "
                "two data sets; there is no single claim to audit."
            )

        jobs = [(0, s) for s in seeds[3 : 3 + n]] + [(1, s) for s in seeds[3 + n :]]
        n_tasks = min(len(jobs), _TASKS_PER_JOB * max(1, effective_n_jobs(self.n_jobs)))
        chunks = [c for c in np.array_split(np.arange(len(jobs)), n_tasks) if c.size]
        results = Parallel(n_jobs=self.n_jobs, return_as="generator")(
            delayed(_fit_releases)(
                estimator,
                ((X0, y0), (X1, y1)),
                [jobs[i] for i in chunk],
                names,
                fit_params,
            )
            for chunk in chunks
        )
        bar = progress(
            results, len(jobs), self.verbose, "EpsilonAudit", "releases", len
        )
        W = np.vstack(list(bar))

        self.guarantee_ = guarantee
        # the larger claim; its mechanism is the f-DP bound's family
        claim = max(claims, key=lambda c: c.epsilon)
        self.epsilon_claimed_ = float(claim.epsilon)
        self.delta_ = float(max(c.delta for c in claims))
        self._estimate(W[:n], W[n:], relation, name, claim)
        return self

    def _estimate(self, W0, W1, relation, name, claim):
        """The test on the first halves, its bounds on the second."""
        n = self.n_releases
        half = n // 2
        alpha = (1.0 - self.confidence) / 2.0
        delta = self.delta_
        direction = _statistic(W0[:half], W1[:half])
        sign, threshold = _choose_test(
            W0[:half] @ direction, W1[:half] @ direction, delta, alpha
        )
        direction = sign * direction
        s0, s1 = W0[half:] @ direction, W1[half:] @ direction
        # sign +1 accuses the neighbour, -1 the original data set
        other, accused = (s0, s1) if sign > 0 else (s1, s0)
        cp = clopper_pearson_epsilon(
            other,
            accused,
            delta=delta,
            threshold=threshold,
            confidence=self.confidence,
        )
        self.epsilon_lower_ = cp.epsilon_lower
        self.epsilon_estimate_ = cp.epsilon_estimate
        self.consistent_ = bool(self.epsilon_lower_ <= self.epsilon_claimed_)
        self.direction_ = direction
        self.threshold_ = threshold
        self.positive_ = _DATA_SETS[1] if sign > 0 else _DATA_SETS[0]
        self.scores_ = pd.DataFrame(
            {_DATA_SETS[0]: s0, _DATA_SETS[1]: s1},
            index=pd.RangeIndex(n - half, name="release"),
        )
        self._gdp_and_power(W0[:half] @ direction, W1[:half] @ direction, sign, claim)
        errors = cp.errors
        self.audit_report_ = pd.DataFrame(
            {
                "epsilon_claimed": [self.epsilon_claimed_],
                "delta": [delta],
                "neighboring_relation": [relation],
                "epsilon_lower": [self.epsilon_lower_],
                "epsilon_estimate": [self.epsilon_estimate_],
                "fpr": [errors.fpr],
                "fnr": [errors.fnr],
                "fpr_upper": [errors.fpr_upper],
                "fnr_upper": [errors.fnr_upper],
                "n_releases": [n],
                "confidence": [float(self.confidence)],
                "consistent": [self.consistent_],
                "epsilon_lower_gdp": [self.epsilon_lower_gdp_],
                "epsilon_lower_fdp": [self.epsilon_lower_fdp_],
                "mu_lower": [self.mu_lower_],
                "mu_estimate": [self.mu_estimate_],
                "power_multiple": [self.power_multiple_],
            },
            index=pd.Index([name], name="estimator"),
        )

    def _gdp_and_power(self, c0, c1, sign, guarantee):
        """The GDP bound (threshold from the selection scores ``c0, c1``), the
        f-DP bound in the family of ``guarantee``'s event at the same threshold,
        and the power; NaN where the claim's δ is 0 (no Gaussian reference)
        and the f-DP bound NaN where the claim has no event."""
        delta, claim = self.delta_, self.epsilon_claimed_
        self.mu_lower_ = self.mu_estimate_ = self.epsilon_lower_gdp_ = np.nan
        self.threshold_gdp_ = self.power_multiple_ = np.nan
        self.epsilon_lower_fdp_ = self.scale_lower_fdp_ = np.nan
        if not 0.0 < delta < 1.0:
            return
        s0, s1 = self.scores_[_DATA_SETS[0]], self.scores_[_DATA_SETS[1]]
        (c_other, c_accused), (other, accused) = (
            ((c0, c1), (s0, s1)) if sign > 0 else ((c1, c0), (s1, s0))
        )
        threshold = _equal_error_threshold(c_other, c_accused)
        gdp = gdp_epsilon(
            other.to_numpy(),
            accused.to_numpy(),
            delta=delta,
            threshold=threshold,
            confidence=self.confidence,
        )
        self.mu_lower_, self.mu_estimate_ = gdp.mu_lower, gdp.mu_estimate
        self.epsilon_lower_gdp_ = gdp.epsilon_lower
        self.threshold_gdp_ = threshold
        if guarantee.dp_event is not None:  # the same threshold and errors
            fdp = fdp_epsilon(
                other.to_numpy(),
                accused.to_numpy(),
                guarantee,
                delta=delta,
                threshold=threshold,
                confidence=self.confidence,
            )
            self.epsilon_lower_fdp_ = fdp.epsilon_lower
            self.scale_lower_fdp_ = fdp.scale_lower
        if 0.0 < claim < np.inf:
            self.power_multiple_ = detectable_multiple(
                claim,
                delta=delta,
                n_scores=len(s0),
                confidence=self.confidence,
            )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
