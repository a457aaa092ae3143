"""Lower bounds on ε from the scores of a distinguishing test.

A test that tells releases on a data set D from releases on a neighbour D' by
a score (high scores accuse D') has false-positive rate FPR (releases on D
accused) and false-negative rate FNR (releases on D' not accused) at each
threshold. Differential privacy limits every such pair; these functions turn
counted errors into lower bounds on the privacy parameters, and test a
claimed trade-off curve.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import dataclasses
import math
from numbers import Integral, Real

import numpy as np
from scipy import optimize, stats
from sklearn.metrics import roc_curve

from sklearn_fil.accounting import (
    Guarantee,
    dp_event_epsilon,
    gaussian_epsilon,
    rero_bound,
    scale_dp_event,
)

# Fewest scores per data set that a bound is computed from.
MIN_SCORES = 10
# The power's thresholds: false-positive rates from _POWER_FPR_LOW / m up.
_POWER_FPR_LOW = 1e-3
_THRESHOLDS = 64
# Beyond this μ the power is called infinite (ε(μ) of order μ² / 2).
_MU_LARGEST = 64.0
# fdp_epsilon's search over the sensitivity multiple t: doubling or halving
# from 1 up to these, then Brent's method to this relative tolerance (the
# root is then rounded down by it).
_SCALE_LARGEST, _SCALE_SMALLEST, _SCALE_RTOL = 1024.0, 1e-6, 1e-3
# Newton-like steps on the local μ before the bracketing (see _scale_lower).
_NEWTON_STEPS = 8


# --------------------------------------------------------------------------
# the exact building blocks


def _clopper_pearson_upper(k, n, alpha):
    """One-sided Clopper-Pearson upper confidence bound of a binomial rate.

    With ``k`` successes in ``n`` trials the rate is at most the returned
    bound (one per ``k``) with probability at least ``1 - alpha``, exactly:
    the ``1 - alpha`` quantile of ``Beta(k + 1, n - k)``, and 1 when ``k = n``.

    >>> from sklearn_fil.audit._scores import _clopper_pearson_upper
    >>> round(_clopper_pearson_upper(0, 100, 0.05), 4)  # 1 - 0.05**(1/100)
    0.0295
    """
    k = np.asarray(k, dtype=np.float64)
    upper = stats.beta.ppf(1.0 - alpha, k + 1.0, np.maximum(n - k, 1.0))
    upper = np.where(k >= n, 1.0, upper)
    return float(upper) if upper.ndim == 0 else upper


def _epsilon_bound(fnr, fpr, delta):
    """``log((1 - delta - fnr) / fpr)``: -inf where the numerator is <= 0."""
    fnr, fpr = np.asarray(fnr, dtype=np.float64), np.asarray(fpr, dtype=np.float64)
    top = 1.0 - delta - fnr
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log(np.where(top > 0, top, 1.0)) - np.log(fpr)
    return np.where(top > 0, eps, -np.inf)


def _mu_bound(fnr, fpr):
    """``Φ⁻¹(1 - fpr) - Φ⁻¹(fnr)``: the μ of the Gaussian trade-off curve
    through (fpr, fnr); every μ-GDP mechanism has at least this μ."""
    return stats.norm.isf(fpr) - stats.norm.ppf(fnr)


def _gaussian_trade_off(fpr, mu):
    """The least FNR of a μ-GDP mechanism at false-positive rate ``fpr``:
    ``G_μ(fpr) = Φ(Φ⁻¹(1 - fpr) - μ)`` (Dong, Roth & Su 2022)."""
    return stats.norm.cdf(stats.norm.isf(np.asarray(fpr, dtype=np.float64)) - mu)


def _gdp_epsilon(mu, delta):
    """ε at ``delta`` of a mechanism whose trade-off curve is exactly G_μ:
    the Gaussian mechanism with sensitivity / sigma = μ (0 for μ <= 0)."""
    if not mu > 0:
        return 0.0
    return gaussian_epsilon(sigma=1.0, sensitivity=float(mu), delta=delta)


def _roc_counts(scores, scores_neighbour):
    """Thresholds (finite) and the error counts each would make.

    A threshold accuses the neighbour when its score is at least it:
    ``fn`` counts neighbour scores below, ``fp`` original scores at or above.
    """
    truth = np.r_[
        np.zeros(scores.size, dtype=bool), np.ones(scores_neighbour.size, dtype=bool)
    ]
    fpr, tpr, thresholds = roc_curve(
        truth, np.r_[scores, scores_neighbour], drop_intermediate=False
    )
    return thresholds, tpr, fpr


def _best_threshold(scores, scores_neighbour, criterion):
    """The threshold whose counts, each one error more, score best by
    ``criterion(fn, fp, n_neighbour, n_original)``; and that score.

    The extra error keeps a threshold beyond the last score of one data set,
    with no error here but some on fresh scores, from looking perfect.
    """
    thresholds, tpr, fpr = _roc_counts(scores, scores_neighbour)
    m_pos, m_neg = scores_neighbour.size, scores.size
    fn = np.minimum(np.rint((1.0 - tpr) * m_pos) + 1.0, m_pos)
    fp = np.minimum(np.rint(fpr * m_neg) + 1.0, m_neg)
    value = np.asarray(criterion(fn, fp, m_pos, m_neg), dtype=np.float64)
    value[~np.isfinite(thresholds)] = -np.inf
    i = int(np.argmax(value))
    return float(thresholds[i]), float(value[i])


def _choose_test(s0, s1, delta, alpha):
    """Orientation and threshold with the best lower bound on these scores.

    Either data set may be the one accused by ``sign * score >= threshold``;
    every threshold of both ROC curves is scored by the lower bound its
    counts would give, so the choice favours tests whose rates are not
    merely small but certifiably small (each count one error more, see
    :func:`_best_threshold`).
    """

    criterion = _epsilon_criterion(alpha, delta)
    best = (-np.inf, 1.0, np.inf)
    for sign, (other, accused) in ((1.0, (s0, s1)), (-1.0, (-s1, -s0))):
        # accusing s0 when -score >= t: s1 plays the original
        threshold, value = _best_threshold(other, accused, criterion)
        if value > best[0]:
            best = (value, sign, threshold)
    return best[1], best[2]


def _epsilon_criterion(alpha, delta):
    def criterion(fn, fp, m_pos, m_neg):
        return _epsilon_bound(
            _clopper_pearson_upper(fn, m_pos, alpha),
            _clopper_pearson_upper(fp, m_neg, alpha),
            delta,
        )

    return criterion


def _equal_error_threshold(scores, scores_neighbour):
    """The finite threshold whose error rates are closest to equal.

    For a Gaussian trade-off curve the μ bound of a threshold varies least
    near there; for the near-Gaussian curves of subsampled mechanisms it is
    the central part, which the Gaussian fits best (their tails, where the
    largest μ would be, can bend above what their ε allows).
    """
    thresholds, tpr, fpr = _roc_counts(scores, scores_neighbour)
    gap = np.abs((1.0 - tpr) - fpr)
    gap[~np.isfinite(thresholds)] = np.inf
    return float(thresholds[int(np.argmin(gap))])


# --------------------------------------------------------------------------
# validation


def _check_scores(scores, scores_neighbour, threshold):
    """Both score arrays as 1-d finite float64, large enough; the threshold."""
    fewest = MIN_SCORES if threshold is not None else 2 * MIN_SCORES
    checked = []
    for name, s in (("scores", scores), ("scores_neighbour", scores_neighbour)):
        s = np.asarray(s, dtype=np.float64)
        if s.ndim != 1:
            raise ValueError(f"{name} must be 1-d; got shape {s.shape}.")
        if not np.all(np.isfinite(s)):
            raise ValueError(f"{name} contains NaN or infinity.")
        if s.size < fewest:
            raise ValueError(
                f"{name} has {s.size} scores; at least {fewest} are needed"
                + (
                    " (half choose the threshold, half bound its errors)."
                    if threshold is None
                    else "."
                )
            )
        checked.append(s)
    if threshold is not None and (
        not isinstance(threshold, Real) or math.isnan(threshold)
    ):
        raise ValueError(f"threshold must be a real number or None; got {threshold!r}.")
    return checked


def _check_confidence(confidence):
    if not isinstance(confidence, Real) or not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}.")
    return float(confidence)


def _check_delta(delta, *, open_at_zero):
    low_ok = delta > 0.0 if open_at_zero else delta >= 0.0
    if not isinstance(delta, Real) or not (low_ok and delta < 1.0):
        interval = "(0, 1)" if open_at_zero else "[0, 1)"
        raise ValueError(f"delta must be in {interval}; got {delta!r}.")
    return float(delta)


def _held_out(scores, scores_neighbour, threshold, choose):
    """The scores to count errors on and the threshold: all and ``threshold``
    when given, else the second halves and ``choose(first halves)``."""
    if threshold is not None:
        return scores, scores_neighbour, float(threshold)
    h0, h1 = scores.size // 2, scores_neighbour.size // 2
    threshold = choose(scores[:h0], scores_neighbour[:h1])
    return scores[h0:], scores_neighbour[h1:], threshold


def _best_by(criterion):
    """The chooser of :func:`_held_out` that maximises ``criterion``."""
    return lambda s0, s1: _best_threshold(s0, s1, criterion)[0]


def _errors(scores, scores_neighbour, threshold):
    """False negatives and false positives of the test at ``threshold``."""
    fn = int(np.sum(scores_neighbour < threshold))
    fp = int(np.sum(scores >= threshold))
    return fn, fp


# --------------------------------------------------------------------------
# the results


@dataclasses.dataclass(frozen=True)
class ThresholdErrors:
    """The errors of a threshold test on held-out scores, with their bounds.

    Parameters
    ----------
    threshold : float
        The test accuses the neighbouring data set when a score is at least
        this.
    fpr, fnr : float
        Held-out false-positive rate (scores of D accused) and
        false-negative rate (scores of D' not accused).
    fpr_upper, fnr_upper : float
        One-sided Clopper-Pearson upper bounds on the true rates, each at
        ``1 - (1 - confidence) / 2``: both hold together with probability at
        least ``confidence``.
    n_scores, n_scores_neighbour : int
        The held-out scores counted.
    confidence : float
        The joint confidence of the two bounds.
    """

    threshold: float
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    n_scores: int
    n_scores_neighbour: int
    confidence: float


@dataclasses.dataclass(frozen=True)
class EpsilonBound:
    """A Clopper-Pearson lower bound on ε: see :func:`clopper_pearson_epsilon`.

    Parameters
    ----------
    epsilon_lower : float
        Lower bound on ε at ``delta``, at least 0, valid with probability
        ``errors.confidence`` for any mechanism.
    epsilon_estimate : float
        Point estimate (not a bound) of the same test's ε, at the error
        rates estimated as ``(k + 1/2) / (m + 1)``; at least 0.
    delta : float
        The δ the bound is at.
    errors : ThresholdErrors
        The test's held-out errors and their bounds.
    """

    epsilon_lower: float
    epsilon_estimate: float
    delta: float
    errors: ThresholdErrors


@dataclasses.dataclass(frozen=True)
class GDPBound:
    """A Gaussian-DP lower bound on μ and ε: see :func:`gdp_epsilon`.

    Parameters
    ----------
    mu_lower : float
        Lower bound on the μ of every μ-GDP description of the mechanism,
        valid with probability ``errors.confidence``; at least 0.
    mu_estimate : float
        Point estimate (not a bound): the μ of the Gaussian trade-off curve
        with the held-out scores' area under the ROC curve,
        ``sqrt(2) Φ⁻¹(AUC)``; at least 0.
    epsilon_lower : float
        ``ε(mu_lower, delta)`` of the exact GDP conversion: a lower bound on
        ε only if the mechanism's trade-off curve is Gaussian (see
        :func:`gdp_epsilon`).
    epsilon_estimate : float
        ``ε(mu_estimate, delta)``: a point estimate under the same assumption.
    delta : float
        The δ of the conversion.
    errors : ThresholdErrors
        The test's held-out errors and their bounds.
    """

    mu_lower: float
    mu_estimate: float
    epsilon_lower: float
    epsilon_estimate: float
    delta: float
    errors: ThresholdErrors


@dataclasses.dataclass(frozen=True)
class FDPBound:
    """An f-DP lower bound on a mechanism's scale and ε: see :func:`fdp_epsilon`.

    Parameters
    ----------
    scale_lower : float
        Lower bound on ``t``, the multiple of the claimed sensitivity at
        which the claimed mechanism's trade-off curve ``f_t`` passes through
        the errors, valid with probability ``errors.confidence`` if the
        mechanism's curve is one of the family (``t = 1`` is the claim); at
        least 0, ``inf`` when no curve of the family allows the errors.
    epsilon_lower : float
        ``ε(scale_lower)`` at ``delta``: the ε of the claimed mechanism at
        ``scale_lower`` times its sensitivity; a lower bound on ε only if the
        mechanism's trade-off curve is in the family (see
        :func:`fdp_epsilon`).
    delta : float
        The δ of ``epsilon_lower``.
    errors : ThresholdErrors
        The test's held-out errors and their bounds.
    """

    scale_lower: float
    epsilon_lower: float
    delta: float
    errors: ThresholdErrors


@dataclasses.dataclass(frozen=True)
class TradeOffTest:
    """An f-DP test of a claimed trade-off curve: see :func:`fdp_test`.

    Parameters
    ----------
    rejected : bool
        Whether the claim is refuted at ``errors.confidence``: the bounded
        error point lies below the claimed curve,
        ``fnr_upper < fnr_claimed``.
    p_value : float
        The smallest ``1 - confidence`` at which the claim would be refuted
        (1 when never, floored at 1e-15).
    fnr_claimed : float
        The claimed curve at ``errors.fpr_upper``: the least FNR the claim
        allows there.
    errors : ThresholdErrors
        The test's held-out errors and their bounds.
    """

    rejected: bool
    p_value: float
    fnr_claimed: float
    errors: ThresholdErrors


# --------------------------------------------------------------------------
# the public functions


def _measured(scores, scores_neighbour, threshold, confidence):
    """:class:`ThresholdErrors` of the test at ``threshold`` on these scores."""
    alpha = (1.0 - confidence) / 2.0
    fn, fp = _errors(scores, scores_neighbour, threshold)
    m_pos, m_neg = scores_neighbour.size, scores.size
    return ThresholdErrors(
        threshold=float(threshold),
        fpr=fp / m_neg,
        fnr=fn / m_pos,
        fpr_upper=_clopper_pearson_upper(fp, m_neg, alpha),
        fnr_upper=_clopper_pearson_upper(fn, m_pos, alpha),
        n_scores=m_neg,
        n_scores_neighbour=m_pos,
        confidence=confidence,
    ), (fn, fp)


def clopper_pearson_epsilon(
    scores, scores_neighbour, *, delta=0.0, threshold=None, confidence=0.95
):
    """Lower bound on ε from the errors of one threshold test (any mechanism).

    Any (ε, δ)-DP mechanism limits the test that accuses the neighbouring
    data set when a score is at least ``threshold``: ``FPR + e^ε FNR >= 1 -
    δ``. The held-out rates are bounded by one-sided Clopper-Pearson
    intervals at ``1 - (1 - confidence) / 2`` each, and the bound is
    ``log((1 - δ - FNR_upper) / FPR_upper)`` (0 when that is negative).

    Assumptions: the scores are independent releases (or functions of
    independent releases) of the mechanism on D and on D', and the
    threshold does not depend on them. Then the bound is below the
    mechanism's ε with probability at least ``confidence``, whatever the
    mechanism: it refutes a claimed ε below it.

    Parameters
    ----------
    scores : array-like of shape (n_scores,)
        Scores of releases on the data set D: false positives when at or
        above the threshold.
    scores_neighbour : array-like of shape (n_scores_neighbour,)
        Scores of releases on the neighbouring data set D': false negatives
        when below the threshold. Negate both arrays to accuse D instead.
    delta : float, default=0.0
        The δ of the bound, in [0, 1).
    threshold : float, default=None
        A threshold chosen without these scores. None chooses it on the
        first half of each array (the threshold with the best bound there,
        each count one error more) and bounds its errors on the second half;
        the scores must then come in an order independent of their values.
    confidence : float, default=0.95
        Probability, in (0, 1), that the bound holds.

    Returns
    -------
    bound : EpsilonBound
        ``epsilon_lower``, ``epsilon_estimate``, ``delta`` and the test's
        ``errors``.

    See Also
    --------
    gdp_epsilon : A tighter bound for Gaussian mechanisms.
    fdp_test : Test a claimed trade-off curve.

    References
    ----------
    Jagielski, Ullman & Oprea (2020), *Auditing differentially private
    machine learning: how private is private SGD?*, NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.audit import clopper_pearson_epsilon
    >>> rng = np.random.default_rng(0)
    >>> original = rng.normal(size=2000)
    >>> neighbour = rng.normal(loc=1.0, size=2000)  # ε = 2.32 at δ = 1e-2
    >>> bound = clopper_pearson_epsilon(original, neighbour, delta=1e-2)
    >>> 1.0 < bound.epsilon_lower < 2.32
    True
    >>> bound.errors.n_scores  # the held-out half
    1000
    """
    delta = _check_delta(delta, open_at_zero=False)
    confidence = _check_confidence(confidence)
    scores, scores_neighbour = _check_scores(scores, scores_neighbour, threshold)
    scores, scores_neighbour, threshold = _held_out(
        scores,
        scores_neighbour,
        threshold,
        _best_by(_epsilon_criterion((1.0 - confidence) / 2.0, delta)),
    )
    errors, (fn, fp) = _measured(scores, scores_neighbour, threshold, confidence)
    m_pos, m_neg = errors.n_scores_neighbour, errors.n_scores
    lower = float(_epsilon_bound(errors.fnr_upper, errors.fpr_upper, delta))
    estimate = float(
        _epsilon_bound((fn + 0.5) / (m_pos + 1.0), (fp + 0.5) / (m_neg + 1.0), delta)
    )
    return EpsilonBound(
        epsilon_lower=max(0.0, lower),
        epsilon_estimate=max(0.0, estimate),
        delta=delta,
        errors=errors,
    )


def _equal_error_test(scores, scores_neighbour, threshold, confidence):
    """The checked held-out scores and their :class:`ThresholdErrors` at
    ``threshold``, or (None) at the equal-error threshold of the first halves."""
    scores, scores_neighbour = _check_scores(scores, scores_neighbour, threshold)
    scores, scores_neighbour, threshold = _held_out(
        scores, scores_neighbour, threshold, _equal_error_threshold
    )
    errors, _ = _measured(scores, scores_neighbour, threshold, confidence)
    return scores, scores_neighbour, errors


def _auc(scores, scores_neighbour):
    """Area under the ROC curve: P(neighbour's score > original's), ties 1/2."""
    ranks = stats.rankdata(np.r_[scores, scores_neighbour])
    m1 = scores_neighbour.size
    u = ranks[scores.size :].sum() - m1 * (m1 + 1) / 2.0
    return u / (scores.size * m1)


def gdp_epsilon(scores, scores_neighbour, *, delta, threshold=None, confidence=0.95):
    """Lower bound on μ of Gaussian DP, and ε at δ if the mechanism is Gaussian.

    A μ-GDP mechanism (Dong, Roth & Su 2022) keeps every test's errors above
    the Gaussian trade-off curve, ``FNR >= Φ(Φ⁻¹(1 - FPR) - μ)``, so ``μ >=
    Φ⁻¹(1 - FPR) - Φ⁻¹(FNR)``. With the held-out rates bounded by one-sided
    Clopper-Pearson intervals at ``1 - (1 - confidence) / 2`` each,
    ``mu_lower = Φ⁻¹(1 - FPR_upper) - Φ⁻¹(FNR_upper)`` (at least 0); ε
    follows by the exact conversion of μ-GDP to (ε, δ)-DP, ``δ =
    Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)``, as for the Gaussian mechanism with
    sensitivity / sigma = μ (:func:`~sklearn_fil.accounting.gaussian_epsilon`).
    This is the estimator of Nasr et al. (2023), at one threshold.

    What each number assumes (the scores independent, the threshold chosen
    without them, as for :func:`clopper_pearson_epsilon`):

    - ``mu_lower`` is below the μ of every μ-GDP description of the
      mechanism with probability at least ``confidence``.
    - ``epsilon_lower`` is a lower bound on the mechanism's ε at ``delta``
      only if its trade-off curve is Gaussian (G_μ for some μ). That is
      exact for Gaussian output perturbation of a statistic linear in the
      noise (the released weights of the output-perturbed GLMs, tested
      along a direction); for DP-SGD it is an assumption (subsampling and
      composition give curves only near Gaussian, by the central limit
      theorem), and where the true curve bends away from G_μ the
      conversion can exceed the true ε. Only
      :func:`clopper_pearson_epsilon` is valid for any mechanism.

    From one threshold in the middle of the ROC curve, where the errors
    are frequent and so well measured, the Gaussian curve extrapolates to
    the small rates that decide ε: usually tighter than Clopper-Pearson
    for the same scores when the assumption holds, by most at small δ.
    Where it fails, the error can go either way: for two steps of DP-SGD
    with Poisson sampling at rate 1/2 (noise multiplier 1.2, the sum of the
    steps as statistic), the Gaussian through the equal-error point gives
    ε = 1.91 at δ = 0.04 against the accountant's 1.93, but through the
    tail point of largest μ 2.07.

    Parameters
    ----------
    scores : array-like of shape (n_scores,)
        Scores of releases on the data set D: false positives when at or
        above the threshold.
    scores_neighbour : array-like of shape (n_scores_neighbour,)
        Scores of releases on the neighbouring data set D'. Negate both
        arrays to accuse D instead.
    delta : float
        The δ of the conversion, in (0, 1) (a μ-GDP mechanism with μ > 0
        has no finite ε at δ = 0).
    threshold : float, default=None
        A threshold chosen without these scores. None chooses it on the
        first half of each array, where its false-positive and
        false-negative rates are equal, and bounds its errors on the second
        half: for a Gaussian curve the μ bound varies least near there, and
        for the near-Gaussian curves of subsampled mechanisms it stays in
        the central part, which the Gaussian fits best (their tails can bend
        above what their ε allows).
    confidence : float, default=0.95
        Probability, in (0, 1), that ``mu_lower`` holds.

    Returns
    -------
    bound : GDPBound
        ``mu_lower``, ``mu_estimate``, ``epsilon_lower``,
        ``epsilon_estimate``, ``delta`` and the test's ``errors``.

    See Also
    --------
    clopper_pearson_epsilon : The bound valid for any mechanism.
    sklearn_fil.accounting.gaussian_epsilon : The conversion used.

    References
    ----------
    Dong, Roth & Su (2022), *Gaussian differential privacy*, JRSS B.
    Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis (2023),
    *Tight auditing of differentially private machine learning*, USENIX
    Security.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.audit import clopper_pearson_epsilon, gdp_epsilon
    >>> rng = np.random.default_rng(0)
    >>> original = rng.normal(size=2000)
    >>> neighbour = rng.normal(loc=1.0, size=2000)  # exactly 1-GDP
    >>> bound = gdp_epsilon(original, neighbour, delta=1e-2)
    >>> 0.7 < bound.mu_lower < 1.0
    True
    >>> 1.5 < bound.epsilon_lower < 2.32  # the true ε at δ = 1e-2: 2.32
    True
    >>> clopper_pearson_epsilon(original, neighbour, delta=1e-2).epsilon_lower < 1.5
    True
    """
    delta = _check_delta(delta, open_at_zero=True)
    confidence = _check_confidence(confidence)
    scores, scores_neighbour, errors = _equal_error_test(
        scores, scores_neighbour, threshold, confidence
    )
    mu_lower = max(0.0, float(_mu_bound(errors.fnr_upper, errors.fpr_upper)))
    # AUC clipped half a pair from 0 and 1: a finite estimate
    half = 0.5 / (scores.size * scores_neighbour.size)
    auc = min(max(_auc(scores, scores_neighbour), half), 1.0 - half)
    mu_estimate = max(0.0, math.sqrt(2.0) * float(stats.norm.ppf(auc)))
    return GDPBound(
        mu_lower=mu_lower,
        mu_estimate=mu_estimate,
        epsilon_lower=_gdp_epsilon(mu_lower, delta),
        epsilon_estimate=_gdp_epsilon(mu_estimate, delta),
        delta=delta,
        errors=errors,
    )


def _event_and_relation(mechanism):
    """The dp-accounting event and its accounting relation of ``mechanism``."""
    import dp_accounting

    if isinstance(mechanism, Guarantee):
        if not mechanism.holds or mechanism.dp_event is None:
            raise ValueError(
                "mechanism is a Guarantee without a dp_event (no guarantee, or no "
                "event describes it, e.g. a group guarantee): there is no family "
                "of trade-off curves to fit."
            )
        event, relation = mechanism.dp_event, mechanism.event_relation
    elif isinstance(mechanism, dp_accounting.DpEvent):
        event, relation = mechanism, "add_remove"
    else:
        raise ValueError(
            "mechanism must be a Guarantee with a dp_event or a dp_accounting "
            f"DpEvent; got {type(mechanism).__name__}."
        )
    scale_dp_event(event, 1.0)  # raises for an event with no sensitivity to scale
    return event, relation


def _family_curve(event, relation, t, fpr):
    """``f_t(fpr)``: the trade-off curve of ``event`` at ``t`` times its
    sensitivity (:func:`~sklearn_fil.accounting.rero_bound`'s ``1 - f``:
    the closed form for Gaussian mechanisms, else from dp-accounting's
    privacy profile, ``sup`` over real ε of ``1 - δ(ε) - e^ε fpr``); a float
    for a scalar ``fpr``, else an array (one privacy loss distribution)."""
    scalar = np.ndim(fpr) == 0
    fpr = np.atleast_1d(np.asarray(fpr, dtype=np.float64))
    curve = 1.0 - fpr  # f(0) = 1 and f(1) = 0 for every curve
    inside = (fpr > 0.0) & (fpr < 1.0)
    if np.any(inside):
        scaled = Guarantee(
            epsilon=math.inf,  # only the event is read
            delta=0.0,
            neighboring_relation="add_remove",
            mechanism=f"the claimed mechanism at {t:g} times its sensitivity",
            dp_event=scale_dp_event(event, t),
            event_relation=relation,
        )
        curve[inside] = 1.0 - rero_bound(scaled, fpr[inside], method="trade_off")
    return float(curve[0]) if scalar else curve


def _scale_lower(curve, fpr_upper, fnr_upper):
    """``inf {t > 0 : curve(t) <= fnr_upper}`` for a curve non-increasing in
    ``t`` (``curve(t) = f_t(fpr_upper)``), rounded down: 0 when ``f_0+`` is
    already there, ``inf`` when no ``t`` is.

    Steps on the local μ, ``Φ⁻¹(1 - fpr) - Φ⁻¹(f_t(fpr))`` (proportional to
    ``t`` for a Gaussian family, nearly so for others), towards the μ through
    the errors: from ``t = 1`` as if proportional, then by secants; once a
    step moves
    ``t`` by less than ``_SCALE_RTOL`` the point ``_SCALE_RTOL`` below is
    returned if the curve is still above ``fnr_upper`` there (then every
    smaller ``t`` is: a valid lower bound), else bracketing and Brent's
    method decide.
    """
    if fnr_upper >= 1.0 - fpr_upper:  # what a coin toss allows
        return 0.0
    top = stats.norm.isf(fpr_upper)
    target = top - stats.norm.ppf(fnr_upper)

    def gap(t):
        return curve(t) - fnr_upper

    t, previous = 1.0, None
    for _ in range(_NEWTON_STEPS):
        local = top - stats.norm.ppf(curve(t))
        if not (local > 0.0 and target > 0.0):
            break
        if previous is None or previous[1] == local:  # proportional to t
            step = t * target / local
        else:  # the secant through the last two
            slope = (local - previous[1]) / (t - previous[0])
            step = t + (target - local) / slope
        previous, t = (t, local), step
        if not _SCALE_SMALLEST < t < _SCALE_LARGEST:
            break
        if abs(t - previous[0]) <= _SCALE_RTOL * previous[0]:
            low = t * (1.0 - _SCALE_RTOL)
            if gap(low) > 0.0:
                return low
            break
    return _scale_lower_bracketed(gap)


def _scale_lower_bracketed(gap):
    """The root of the non-increasing ``gap`` by doubling or halving from 1,
    then Brent's method, rounded down (0 or ``inf`` beyond the range)."""
    low, high = 1.0, 1.0
    if gap(1.0) > 0.0:
        high = 2.0
        while gap(high) > 0.0:
            low, high = high, 2.0 * high
            if high > _SCALE_LARGEST:
                return math.inf
    else:
        low = 0.5
        while gap(low) <= 0.0:
            low, high = low / 2.0, low
            if low < _SCALE_SMALLEST:
                return 0.0
    root = optimize.brentq(gap, low, high, rtol=_SCALE_RTOL, xtol=1e-12)
    return max(low, root * (1.0 - 2.0 * _SCALE_RTOL))


def fdp_epsilon(
    scores, scores_neighbour, mechanism, *, delta, threshold=None, confidence=0.95
):
    """Lower bound on ε if the mechanism's trade-off curve is the claimed one's
    at some sensitivity.

    The family is the claimed mechanism with its sensitivity scaled by
    ``t > 0`` (``t = 1`` the claim): ``f_t``, its trade-off curve (Dong, Roth
    & Su 2022), is non-increasing in ``t``. If the mechanism's curve is
    ``f_{t*}``, every test's errors satisfy ``FNR >= f_{t*}(FPR)``; with the
    held-out rates bounded by one-sided Clopper-Pearson intervals at ``1 -
    (1 - confidence) / 2`` each, ``f_{t*}(FPR_upper) <= FNR_upper`` with
    probability at least ``confidence``, so ``scale_lower = inf {t :
    f_t(FPR_upper) <= FNR_upper} <= t*`` (the smallest ``t`` that
    :func:`fdp_test` does not refute at this threshold), and ``epsilon_lower
    = ε(scale_lower)`` at ``delta``, the ε of that mechanism, is below its
    ε. For a Gaussian mechanism (a ``GaussianDpEvent``, also composed)
    ``f_t`` is Gaussian and the bound is :func:`gdp_epsilon`'s.

    What it assumes (besides the scores independent and the threshold
    chosen without them, as for :func:`clopper_pearson_epsilon`): that the
    mechanism's trade-off curve is ``f_{t*}`` for some ``t*``, exactly: so
    for output perturbation (Gaussian noise, a statistic linear in it) and
    one full-batch DP-SGD step of a canary at the clipping bound. Where the
    curve lies above every ``f_t`` that has its ε (several DP-SGD steps
    released only at the end, the other examples' random batches, nonlinear
    training), the bound can exceed the true ε;
    only :func:`clopper_pearson_epsilon` is valid for any mechanism. Whatever
    the mechanism, though, ``scale_lower > 1`` (``epsilon_lower`` above the
    claimed ε) refutes the claimed curve ``f_1``, with probability at most
    ``1 - confidence`` if the mechanism has it: it is :func:`fdp_test`'s
    rejection of ``f_1`` at this threshold (post-processing, such as
    releasing only the last step, keeps every curve at or above ``f_1``).
    ``f_t`` comes from dp-accounting's privacy loss distributions on a grid
    of 1e-3 (:func:`~sklearn_fil.accounting.rero_bound`; pessimistic for
    privacy: it can raise ``scale_lower`` by about a thousandth), ε from
    :func:`~sklearn_fil.accounting.dp_event_epsilon` (the estimators' own
    accounting); ``scale_lower`` is found to 0.1 % and rounded down by that.

    Parameters
    ----------
    scores : array-like of shape (n_scores,)
        Scores of releases on the data set D: false positives when at or
        above the threshold.
    scores_neighbour : array-like of shape (n_scores_neighbour,)
        Scores of releases on the neighbouring data set D'. Negate both
        arrays to accuse D instead.
    mechanism : Guarantee or dp_accounting.DpEvent
        The claimed mechanism: a :class:`~sklearn_fil.accounting.Guarantee`
        with a ``dp_event`` (e.g. a fitted estimator's ``guarantee_``), or a
        dp-accounting event at unit distance under add/remove, made of
        Gaussian mechanisms, Poisson sampling and composition.
    delta : float
        The δ of ``epsilon_lower``, in (0, 1).
    threshold : float, default=None
        A threshold chosen without these scores. None chooses it as
        :func:`gdp_epsilon` does: on the first half of each array, where its
        false-positive and false-negative rates are equal; the errors are
        bounded on the second half.
    confidence : float, default=0.95
        Probability, in (0, 1), that ``scale_lower`` holds.

    Returns
    -------
    bound : FDPBound
        ``scale_lower``, ``epsilon_lower``, ``delta`` and the test's
        ``errors``.

    See Also
    --------
    gdp_epsilon : The same bound with the Gaussian family.
    fdp_test : The test of one trade-off curve.
    sklearn_fil.accounting.rero_bound : ``1 - f_t`` of the family.

    References
    ----------
    Dong, Roth & Su (2022), *Gaussian differential privacy*, JRSS B.
    Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis (2023),
    *Tight auditing of differentially private machine learning*, USENIX
    Security.

    Examples
    --------
    Two steps of Poisson-sampled DP-SGD (rate 1/2, noise multiplier 1),
    released as the sum of the steps, on the canary's coordinate:

    >>> import numpy as np
    >>> from sklearn_fil.accounting import dpsgd_dp_event, dpsgd_epsilon
    >>> from sklearn_fil.audit import fdp_epsilon
    >>> event, _ = dpsgd_dp_event(noise_multiplier=1.0, sample_rate=0.5, steps=2)
    >>> claim = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.5, steps=2,
    ...                       delta=0.01, accountant="pld")
    >>> rng = np.random.default_rng(0)
    >>> def release(canary):  # without (0) or with (1) the canary
    ...     sampled = rng.random((4000, 2)) < 0.5
    ...     return (canary * sampled + rng.normal(size=(4000, 2))).sum(axis=1)
    >>> bound = fdp_epsilon(release(0), release(1), event, delta=0.01)
    >>> 0.7 < bound.scale_lower <= 1.0
    True
    >>> bool(0.5 * claim < bound.epsilon_lower <= claim)
    True
    """
    delta = _check_delta(delta, open_at_zero=True)
    confidence = _check_confidence(confidence)
    event, relation = _event_and_relation(mechanism)
    _, _, errors = _equal_error_test(scores, scores_neighbour, threshold, confidence)
    scale = float(
        _scale_lower(
            lambda t: _family_curve(event, relation, t, errors.fpr_upper),
            errors.fpr_upper,
            errors.fnr_upper,
        )
    )
    if scale == 0.0:
        epsilon = 0.0
    elif math.isinf(scale):
        epsilon = math.inf
    else:
        epsilon = dp_event_epsilon(
            scale_dp_event(event, scale), delta, event_relation=relation
        )
    return FDPBound(
        scale_lower=scale, epsilon_lower=epsilon, delta=delta, errors=errors
    )


def _trade_off_curve(trade_off):
    """The claimed curve as a function of FPR."""
    if isinstance(trade_off, Real) and not isinstance(trade_off, bool):
        mu = float(trade_off)
        if not (mu >= 0.0 and math.isfinite(mu)):
            raise ValueError(
                f"trade_off as a number is the μ of Gaussian DP, finite and >= 0; "
                f"got {trade_off!r}."
            )
        return lambda fpr: _gaussian_trade_off(fpr, mu)
    if callable(trade_off):
        return np.vectorize(trade_off, otypes=[np.float64])
    raise ValueError(
        "trade_off must be the μ of Gaussian DP (a number) or a function of "
        f"the false-positive rate; got {type(trade_off).__name__}."
    )


def fdp_test(scores, scores_neighbour, trade_off, *, threshold=None, confidence=0.95):
    """Test whether the scores' errors are consistent with a claimed f-DP curve.

    An f-DP mechanism (Dong, Roth & Su 2022) keeps every test's false-
    negative rate at least ``f(FPR)``. With the held-out rates bounded by
    one-sided Clopper-Pearson intervals at ``1 - (1 - confidence) / 2``
    each, the claim is refuted when ``FNR_upper < f(FPR_upper)``: if the
    claim holds, with probability at least ``confidence`` the true rates are
    below their bounds and ``FNR_upper >= FNR >= f(FPR) >= f(FPR_upper)``
    (``f`` is non-increasing), so a true claim is refuted with probability
    at most ``1 - confidence``, for any mechanism (the scores independent,
    the threshold chosen without them).

    Parameters
    ----------
    scores : array-like of shape (n_scores,)
        Scores of releases on the data set D: false positives when at or
        above the threshold.
    scores_neighbour : array-like of shape (n_scores_neighbour,)
        Scores of releases on the neighbouring data set D'. Negate both
        arrays to accuse D instead.
    trade_off : float or callable
        The claim: a number is the μ of Gaussian DP, the curve
        ``Φ(Φ⁻¹(1 - FPR) - μ)``; a callable maps a false-positive rate in
        [0, 1] to the least false-negative rate the claim allows (a
        non-increasing trade-off function, called on scalars; e.g. for
        (ε, δ)-DP, ``max(0, 1 - δ - e^ε FPR, e^-ε (1 - δ - FPR))``).
    threshold : float, default=None
        A threshold chosen without these scores. None chooses it on the
        first half of each array (the largest margin ``f(FPR_upper) -
        FNR_upper`` there, each count one error more) and tests on the
        second half.
    confidence : float, default=0.95
        1 minus the test's level, in (0, 1).

    Returns
    -------
    result : TradeOffTest
        ``rejected``, ``p_value``, ``fnr_claimed`` and the test's ``errors``.

    See Also
    --------
    gdp_epsilon : The μ the scores support.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.audit import fdp_test
    >>> rng = np.random.default_rng(0)
    >>> original = rng.normal(size=1000)
    >>> neighbour = rng.normal(loc=2.0, size=1000)  # exactly 2-GDP
    >>> fdp_test(original, neighbour, 2.0).rejected
    False
    >>> fdp_test(original, neighbour, 1.0).rejected  # claims 1-GDP
    True
    """
    curve = _trade_off_curve(trade_off)
    confidence = _check_confidence(confidence)
    scores, scores_neighbour = _check_scores(scores, scores_neighbour, threshold)
    alpha = (1.0 - confidence) / 2.0

    def margin(fn, fp, m_pos, m_neg):
        claimed = curve(_clopper_pearson_upper(fp, m_neg, alpha))
        return claimed - _clopper_pearson_upper(fn, m_pos, alpha)

    scores, scores_neighbour, threshold = _held_out(
        scores, scores_neighbour, threshold, _best_by(margin)
    )
    errors, (fn, fp) = _measured(scores, scores_neighbour, threshold, confidence)
    fnr_claimed = float(curve(errors.fpr_upper))
    if not 0.0 <= fnr_claimed <= 1.0:
        raise ValueError(
            f"trade_off returned {fnr_claimed!r} at FPR {errors.fpr_upper!r}; a "
            "trade-off function's values are rates in [0, 1]."
        )
    m_pos, m_neg = errors.n_scores_neighbour, errors.n_scores

    def gap(log_level):  # > 0: refuted at significance exp(log_level)
        a = math.exp(log_level) / 2.0
        claimed = float(curve(_clopper_pearson_upper(fp, m_neg, a)))
        return claimed - _clopper_pearson_upper(fn, m_pos, a)

    lowest = math.log(1e-15)
    if gap(0.0) <= 0.0:
        p_value = 1.0
    elif gap(lowest) > 0.0:
        p_value = 1e-15
    else:
        p_value = math.exp(optimize.brentq(gap, lowest, 0.0, xtol=1e-10))
    return TradeOffTest(
        rejected=bool(errors.fnr_upper < fnr_claimed),
        p_value=p_value,
        fnr_claimed=fnr_claimed,
        errors=errors,
    )


def detectable_multiple(epsilon, *, delta, n_scores, confidence=0.95):
    """The smallest multiple of a claimed ε that a threshold audit refutes.

    The power of :func:`clopper_pearson_epsilon` with ``n_scores`` held-out
    scores per data set: the smallest ``k >= 1`` such that, if the two
    data sets' releases were those of a Gaussian mechanism whose exact ε at
    ``delta`` is ``k * epsilon`` (scores N(0, 1) and N(μ_k, 1), the
    likelihood-ratio test), the bound at the best fixed threshold would
    exceed ``epsilon`` with probability at least 1/2. The probability is
    exact under that model (the two error counts are independent binomials;
    a sum over one, the other's distribution function), maximised over a
    grid of 64 thresholds, and ``k`` found by bisection on μ_k to 1e-4
    relative.

    A mechanism whose ε at the audited pair is ``k * epsilon`` or more is
    refuted more often than not; one below it may pass. An audit whose
    canary moves the releases by less than the sensitivity, or whose test
    is weaker than the likelihood ratio, sees a smaller ε than the
    mechanism's and so detects less than this says: read it as what the
    counting can detect. ``inf`` when even a perfect test could not refute
    ``epsilon``: the bound with no error is ``log((1 - δ - u) / u)``, ``u =
    1 - ((1 - confidence) / 2)^(1 / n_scores)``.

    Parameters
    ----------
    epsilon : float
        The claimed ε, > 0.
    delta : float
        The claimed δ, in (0, 1).
    n_scores : int
        Held-out scores per data set, at least 10.
    confidence : float, default=0.95
        The confidence of the audited bound, in (0, 1).

    Returns
    -------
    multiple : float
        ``k`` (at least 1), or ``inf``.

    Examples
    --------
    >>> from sklearn_fil.audit import detectable_multiple
    >>> k = detectable_multiple(2.0, delta=1e-2, n_scores=1000)
    >>> 1.0 < k < 2.0
    True
    >>> detectable_multiple(6.0, delta=1e-2, n_scores=100)
    inf
    """
    if not isinstance(epsilon, Real) or not (0.0 < epsilon < math.inf):
        raise ValueError(f"epsilon must be finite and > 0; got {epsilon!r}.")
    delta = _check_delta(delta, open_at_zero=True)
    confidence = _check_confidence(confidence)
    if not isinstance(n_scores, Integral) or n_scores < MIN_SCORES:
        raise ValueError(
            f"n_scores must be an integer >= {MIN_SCORES}; got {n_scores!r}."
        )
    m, alpha = int(n_scores), (1.0 - confidence) / 2.0
    upper = _clopper_pearson_upper(np.arange(m + 1), m, alpha)
    # refuted iff fnr_upper[fn] < 1 - delta - e^eps fpr_upper[fp]: fn < cut[fp]
    cut = np.searchsorted(upper, 1.0 - delta - math.exp(epsilon) * upper)
    if cut[0] == 0:
        return math.inf
    cut = cut[cut > 0]  # no refutation with more false positives
    # thresholds whose false-positive rate could refute: below (1 - δ) e^-ε
    highest = (1.0 - delta) * math.exp(-epsilon)
    fpr = np.geomspace(min(_POWER_FPR_LOW / m, highest / 2), highest, _THRESHOLDS)
    t = stats.norm.isf(fpr)
    pmf = stats.binom.pmf(np.arange(cut.size)[None, :], m, fpr[:, None])
    # only the false-positive counts that carry probability (1e-300 at most
    # of the sum left out): the sum over them is exact to rounding
    row, fp = np.nonzero(pmf > 1e-300 / cut.size)
    weight = pmf[row, fp]

    def refuted(mu):
        fnr = stats.norm.cdf(t - mu)
        cdf = stats.binom.cdf(cut[fp] - 1, m, fnr[row])
        return float(np.max(np.bincount(row, weight * cdf, minlength=t.size)))

    # bisection on μ (the ε of the Gaussian mechanism grows with μ)
    low, high = 0.0, 1.0
    while refuted(high) < 0.5:
        low, high = high, 2.0 * high
        if high > _MU_LARGEST:
            return math.inf
    while high - low > 1e-4 * high:
        mid = 0.5 * (low + high)
        low, high = (low, mid) if refuted(mid) >= 0.5 else (mid, high)
    return max(1.0, _gdp_epsilon(high, delta) / epsilon)
