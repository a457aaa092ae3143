"""Auditing ε with one training run (Steinke, Nasr & Jagielski, 2023)."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from functools import partial
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy import optimize, special, stats
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.utils._param_validation import HasMethods, validate_params
from sklearn.utils.validation import check_array, check_consistent_length

from sklearn_fil.accounting import PrivacyBudget
from sklearn_fil.audit._canaries import _canary_norm
from sklearn_fil.audit._epsilon import _check_guarantee, _seed_sequence
from sklearn_fil.audit._pipeline import (
    audited_parts,
    check_guaranteed_final,
    checked_weight_names,
    through_prefix,
)
from sklearn_fil.utils._baseline import utility_warnings_ignored
from sklearn_fil.utils._fitted import fit_or_clear, unread_report_params
from sklearn_fil.utils._onehot import onehot_columns
from sklearn_fil.utils._sklearn_compat import Interval, _fit_context

_RELATIONS = ("replace_one", "add_remove")
# Points of the grid on which the p-value is scanned below the δ = 0 bound.
_GRID = 64


def _p_value(m, r, v, eps, delta):
    """The theorem's bound on ``P[at least v of r guesses correct]``.

    ``f(t) = P[W >= t]`` for ``W ~ Binomial(r, e^ε / (1 + e^ε))``; the bound
    is ``f(v) + 2 m δ max_{1 <= i <= v} (f(v - i) - f(v)) / i``, vectorised
    over ``eps`` (an array).
    """
    q = special.expit(np.asarray(eps, dtype=np.float64))
    tail = stats.binom.sf(v - 1, r, q)
    if delta == 0.0 or v == 0:
        return np.minimum(tail, 1.0)
    i = np.arange(1, v + 1)
    # f(v - i) - f(v) = P[v - i <= W <= v - 1]: partial sums of the pmf
    below = np.cumsum(stats.binom.pmf(v - i, r, q[..., None]), axis=-1)
    return np.minimum(tail + 2.0 * m * delta * np.max(below / i, axis=-1), 1.0)


def _pure_bound(r, v, beta):
    """The largest ε with ``P[Binomial(r, e^ε / (1 + e^ε)) >= v] <= beta``."""

    def gap(eps):
        return float(stats.binom.sf(v - 1, r, special.expit(eps))) - beta

    if v == 0 or gap(0.0) > 0:
        return 0.0
    hi = 1.0
    while gap(hi) <= 0:  # the tail tends to 1 as ε grows (v <= r)
        hi *= 2.0
    return float(optimize.brentq(gap, hi / 2.0 if hi > 1 else 0.0, hi, xtol=1e-12))


@validate_params(
    {
        "n_canaries": [Interval(Integral, 1, None, closed="left")],
        "n_guesses": [Interval(Integral, 0, None, closed="left")],
        "n_correct": [Interval(Integral, 0, None, closed="left")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def one_run_epsilon_lower_bound(
    n_canaries, n_guesses, n_correct, *, delta=0.0, confidence=0.95
):
    """Lower bound on ε from the guessing game of one training run.

    ``m = n_canaries`` canaries are each included (or, under replace-one,
    given one of two values) by an independent fair coin ``S_i``; after one
    run the auditor guesses ``r = n_guesses`` of the coins, fixed in advance,
    and abstains on the rest. If the mechanism is (ε, δ)-DP in each coin,
    the number ``V`` of correct guesses satisfies, for every ``v``
    (Steinke, Nasr & Jagielski 2023, their main theorem in its (ε, δ) form),

    ``P[V >= v] <= f(v) + 2 m δ max_{1 <= i <= v} (f(v - i) - f(v)) / i``,

    ``f(t) = P[W >= t]``, ``W ~ Binomial(r, e^ε / (1 + e^ε))``: with δ = 0,
    no better than ``r`` flips of randomized response. The bound returned is
    the largest ε at which the right-hand side at ``v = n_correct`` is at most
    ``1 - confidence``: a mechanism whose ε (at ``delta``) is below it gives
    such a count with probability at most ``1 - confidence``.

    Parameters
    ----------
    n_canaries : int
        Number of canaries ``m``, each decided by its own fair coin.
    n_guesses : int
        Number of guesses ``r <= m``, fixed before the run.
    n_correct : int
        Number of correct guesses ``v <= r``.
    delta : float, default=0.0
        δ of the (ε, δ)-DP hypothesis, in [0, 1).
    confidence : float, default=0.95
        Probability with which the bound is below the true ε.

    Returns
    -------
    epsilon : float
        The lower bound, at least 0 (0 when ``n_correct`` refutes no ε).

    Notes
    -----
    The tail ``f`` grows with ε, so the largest ε whose bound is at most
    ``1 - confidence`` lies below the δ = 0 bound, found by root finding; the
    δ term need not grow with ε, so that interval is scanned on a grid of 64
    points from the top and the last crossing refined by root finding. An ε
    between grid points could only raise the bound: the result errs low.
    Any ε whose p-value is at most ``1 - confidence`` is a valid lower bound:
    if the mechanism is (ε*, δ)-DP it is (ε, δ)-DP for every ε >= ε*, so the
    theorem bounds the count at each such ε.

    References
    ----------
    Steinke, Nasr & Jagielski (2023), *Privacy auditing with one (1)
    training run*, NeurIPS.

    Examples
    --------
    All of ``r`` guesses right, δ = 0: the bound solves ``q^r = 0.05``, ``q =
    e^ε / (1 + e^ε)``.

    >>> import math
    >>> from sklearn_fil.audit import one_run_epsilon_lower_bound
    >>> eps = one_run_epsilon_lower_bound(1000, 100, 100)
    >>> round(eps, 3), round(math.log(0.05 ** 0.01 / (1 - 0.05 ** 0.01)), 3)
    (3.493, 3.493)
    >>> round(one_run_epsilon_lower_bound(1000, 100, 100, delta=1e-5), 2)
    3.47
    >>> one_run_epsilon_lower_bound(1000, 100, 50)  # chance: nothing refuted
    0.0
    """
    m, r, v = int(n_canaries), int(n_guesses), int(n_correct)
    if not v <= r <= m:
        raise ValueError(
            "The counts need n_correct <= n_guesses <= n_canaries; got "
            f"n_correct={v}, n_guesses={r}, n_canaries={m}."
        )
    beta = 1.0 - float(confidence)
    top = _pure_bound(r, v, beta)
    if delta == 0.0 or top == 0.0:
        return top
    grid = np.linspace(0.0, top, _GRID)
    p_values = np.array([_p_value(m, r, v, np.array([e]), delta)[0] for e in grid])
    below = np.flatnonzero(p_values <= beta)
    if below.size == 0:
        return 0.0
    k = int(below[-1])
    if k == _GRID - 1:
        return top

    def gap(eps):
        return float(_p_value(m, r, v, np.array([eps]), delta)[0]) - beta

    return float(optimize.brentq(gap, grid[k], grid[k + 1], xtol=1e-12))


def _canary_weights(model, names, n_features, m):
    """``(n_canaries,)`` released weights on the canaries' own coordinates,
    oriented so that a canary with its positive value raises them."""
    weights = getattr(model, names[0])
    if isinstance(weights, list):  # a network: its first layer
        first = np.asarray(weights[0], dtype=np.float64)
        if len(weights) != 1:
            first = None
    else:
        first = np.asarray(weights, dtype=np.float64)
        first = first.T if first.ndim == 2 else first[:, None]
    if first is None or first.shape[1] != 1:
        raise ValueError(
            "OneRunAudit scores each canary by the released weight on its own "
            "input coordinate: it needs a model with one output and no hidden "
            f"layer (binary logistic regression or a regression); "
            f"{type(model).__name__} released a first layer of shape "
            f"{None if first is None else first.shape}"
            f"{' and hidden layers' if first is None else ''}."
        )
    return first[n_features : n_features + m, 0]


def _checked_params(estimator):
    """The estimator's parameters, checked for a model the audit can score."""
    params = estimator.get_params(deep=False)
    if params.get("hidden_layer_sizes"):
        raise ValueError(
            "OneRunAudit scores each canary by the released weight on its own "
            "input coordinate, which hidden layers mix; audit a model without "
            f"them (hidden_layer_sizes={params['hidden_layer_sizes']!r})."
        )
    if isinstance(params.get("onehot_groups"), str):
        raise ValueError(
            "OneRunAudit builds its canaries before the run: give onehot_groups "
            f"as a dict of columns, not {params['onehot_groups']!r}."
        )
    return params


def _canary_labels(estimator, params, y, m):
    """Labels of the canaries and the sign their positive value moves their
    weight: alternating classes (or ``+-label_bound``), so that together
    they pull the intercept neither way."""
    if is_classifier(estimator):
        given = params.get("classes")
        classes = np.unique(y) if given is None else np.asarray(given)
        if classes.size != 2:
            raise ValueError(
                "OneRunAudit audits binary classifiers and regressions (one "
                f"output); the classifier has {classes.size} classes."
            )
        labels = classes[np.arange(m) % 2]
        return labels, np.where(labels == classes[1], 1.0, -1.0)
    bound = params.get("label_bound")
    size = float(bound) if bound is not None else float(np.max(np.abs(y)))
    if not size > 0:
        raise ValueError("OneRunAudit needs a label of nonzero size for its canaries.")
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    return size * signs, signs


class OneRunAudit(MetaEstimatorMixin, BaseEstimator):
    """Audit a reported ε with one training run and many canaries.

    Appends ``m = n_canaries`` canaries to the training data, each decided by
    an independent fair coin ``S_i``, trains ``estimator`` once, guesses the
    coins of the ``n_guesses`` canaries whose scores are most extreme (half
    the largest, half the smallest; abstaining on the rest) and bounds ε from
    below by :func:`one_run_epsilon_lower_bound` at the claimed δ (Steinke,
    Nasr & Jagielski 2023): the bound is below the mechanism's true ε with
    probability at least ``confidence``, whatever the mechanism.

    Each canary ``i`` lives in a fresh input coordinate: an extra column
    ``d + i``, zero for every other row, where the canary has ``+R`` or
    ``-R`` and zeros elsewhere (one-hot groups keep row 0's values). ``R`` is
    the largest norm the mechanism lets through (``data_norm``; for DP-SGD
    ``4 max_grad_norm`` or the largest row norm, so that the canary's
    gradient is clipped to its bound). Its score is the released weight on
    its coordinate, signed by its label: the weight is pure noise where no
    canary is, and is pushed one way by ``+R`` and the other by ``-R``.
    Labels alternate between the two classes (``+-label_bound`` for a
    regression) so that the canaries pull the intercept neither way.

    The game follows the neighbouring relation of the estimator's guarantee,
    read from a probe fitted on ``X, y``:

    * ``"replace_one"``: every canary is in the data (``n`` rows, public, do
      not depend on the coins), with value ``S_i R``; flipping one coin
      replaces one row.
    * ``"add_remove"``: canary ``i``, with value ``+R``, is in the data when
      ``S_i = +1`` and absent otherwise; flipping one coin adds or removes
      one row.

    Either way two data sets differing in one coin are neighbours under the
    relation the claim is made for, and the coins are independent of
    everything else the auditor sees before the run: the conditions of the
    theorem. The extra columns are public (they do not depend on the coins).

    Parameters
    ----------
    estimator : estimator object
        An unfitted estimator with a ``random_state`` that reports a
        ``guarantee_`` and releases ``coef_`` and ``intercept_`` (e.g.
        :class:`~sklearn_fil.OutputPerturbedLogisticRegression`) or
        ``coefs_`` and ``intercepts_`` without hidden layers
        (:class:`~sklearn_fil.DPSGDClassifier`), with one output (a binary
        classifier or a regression); or a :class:`~sklearn.pipeline.Pipeline`
        with a fitted prefix and such a final step (frozen and public, as in
        :class:`EpsilonAudit`).
    n_canaries : int, default=1000
        Number of canaries ``m``.
    n_guesses : int, default=100
        Number of guesses ``r <= n_canaries``, fixed before the run (the
        theorem needs it so): ``ceil(r / 2)`` on the largest scores, the rest
        on the smallest.
    confidence : float, default=0.95
        Probability with which ``epsilon_lower_`` is below the true ε.
    delta : float, default=None
        δ at which to audit; None audits the claim's own δ. Another δ audits
        the claim's ε at that δ, computed from ``guarantee_.dp_event`` with
        dp-accounting's PLD accountant: a smaller δ shrinks the theorem's δ
        term ``2 m δ`` but raises the claim.
    random_state : int, RandomState instance or None, default=None
        Seeds the coins, the probe and the run. A fixed seed makes the coins
        reproducible: fine for an audit, whose canaries are not private.

    Attributes
    ----------
    guarantee_ : Guarantee
        The guarantee of the audited run (on the data with its canaries).
    epsilon_claimed_ : float
        The claimed ε at ``delta_``.
    delta_ : float
        The δ of the audit.
    epsilon_lower_ : float
        Lower bound on the mechanism's ε at ``delta_``, valid with
        probability ``confidence``; at least 0.
    n_guesses_ : int
        Number of guesses made.
    n_correct_ : int
        Number of them that were correct.
    consistent_ : bool
        Whether ``epsilon_lower_ <= epsilon_claimed_``.
    scores_ : pandas.DataFrame
        One row per canary: ``score``, ``coin`` (+1 or -1) and ``guess`` (+1,
        -1, or 0 for an abstention).
    audit_report_ : pandas.DataFrame
        One row, indexed by the estimator's class name: ``epsilon_claimed``,
        ``delta``, ``neighboring_relation``, ``epsilon_lower``,
        ``n_canaries``, ``n_guesses``, ``n_correct``, ``accuracy`` (of the
        guesses), ``confidence`` and ``consistent``.

    See Also
    --------
    EpsilonAudit : The audit from many releases on two neighbouring data sets.
    one_run_epsilon_lower_bound : The bound from the counts.

    Notes
    -----
    One run costs one fit, on ``n + m`` rows (``n`` plus the included
    canaries under add/remove) and ``d + m`` columns. The price is power: a
    bound from ``r`` guesses cannot exceed the all-correct bound
    (``log(q / (1 - q))``, ``q = (1 - confidence)^(1 / r)``, 3.49 for ``r =
    100``), and the theorem's δ term ``2 m δ`` needs ``δ`` well below ``1 /
    m``. Output-perturbed logistic regression moves a canary's weight by
    ``R (1 - p) / (n λ)``, ``p`` its fitted probability (about 1/2), against
    the certified sensitivity's ``2 R / (n λ)``: even a perfect attack sees
    about half the claimed distance. The results are sensitive: the run
    trains on the data.

    References
    ----------
    Steinke, Nasr & Jagielski (2023), *Privacy auditing with one (1)
    training run*, NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.audit import OneRunAudit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(scale=0.3, size=(200, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = OutputPerturbedLogisticRegression(
    ...     target_epsilon=2.0, lam=0.1, data_norm=1.0, delta=1e-5)
    >>> audit = OneRunAudit(clf, n_canaries=200, n_guesses=20,
    ...                     random_state=0).fit(X, y)
    >>> audit.epsilon_lower_ <= audit.epsilon_claimed_
    True
    >>> list(audit.audit_report_.columns[:4])
    ['epsilon_claimed', 'delta', 'neighboring_relation', 'epsilon_lower']
    """

    _parameter_constraints: ClassVar[dict] = {
        "estimator": [HasMethods(["fit"])],
        "n_canaries": [Interval(Integral, 1, None, closed="left")],
        "n_guesses": [Interval(Integral, 1, None, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither"), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        *,
        n_canaries=1000,
        n_guesses=100,
        confidence=0.95,
        delta=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.n_canaries = n_canaries
        self.n_guesses = n_guesses
        self.confidence = confidence
        self.delta = delta
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, **fit_params):
        """Train once with the canaries and bound ε from below.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Training data, without canaries; for a Pipeline the raw rows its
            prefix transforms.
        y : array-like of shape (n_samples,)
            Targets.
        **fit_params : dict
            Passed to the fits (to the final step of a Pipeline); not
            ``sample_weight``, which the canaries' rows would need too.

        Returns
        -------
        self : object
            Fitted audit.
        """
        return fit_or_clear(self, self._fit, X, y, fit_params)

    def _fit(self, X, y, fit_params):
        if self.n_guesses > self.n_canaries:
            raise ValueError(
                f"n_guesses={self.n_guesses} exceeds n_canaries="
                f"{self.n_canaries}: each guess is about one canary."
            )
        if "sample_weight" in fit_params:
            raise ValueError(
                "OneRunAudit does not take sample_weight: the canaries' rows "
                "would need weights too."
            )
        prefix, estimator = audited_parts(
            self.estimator,
            "OneRunAudit",
            partial(check_guaranteed_final, caller="OneRunAudit"),
            "the audit draws the noise of its one run through it",
        )
        estimator = clone(estimator).set_params(**unread_report_params(estimator))
        params = _checked_params(estimator)
        X = through_prefix(prefix, X)
        columns = X.columns if isinstance(X, pd.DataFrame) else None
        X_arr = check_array(X, dtype=np.float64)
        y_arr = np.asarray(y)
        check_consistent_length(X_arr, y_arr)
        m = self.n_canaries
        labels, signs = _canary_labels(estimator, params, y_arr, m)
        seeds = _seed_sequence(self.random_state).generate_state(3)
        coins = np.where(np.random.default_rng(seeds[0]).random(m) < 0.5, 1.0, -1.0)
        data = (X_arr, y_arr, columns)
        # Replace-one first (every canary present): the relation is read from
        # the guarantee of the run itself. Under add/remove that run is
        # discarded unseen and the canaries with coin -1 leave the data.
        for seed, relation in zip(seeds[1:], _RELATIONS, strict=True):
            Xc, yc = self._with_canaries(params, relation, data, labels, coins)
            model = clone(estimator).set_params(random_state=int(seed))
            with utility_warnings_ignored():  # the canaries are not data to learn
                model.fit(Xc, yc, **fit_params)
            name = type(model).__name__
            guarantee = _check_guarantee(model, name, "the canaries")
            if guarantee.neighboring_relation == relation:
                break
        else:
            raise ValueError(
                f"{name} states the relation 'replace_one' on the data with every "
                "canary and 'add_remove' on the data with some; there is no "
                "single claim to audit."
            )
        names = checked_weight_names(model, "released weights")
        scores = signs * _canary_weights(model, names, X_arr.shape[1], m)
        self.guarantee_ = guarantee
        self._estimate(scores, coins, guarantee, name)
        return self

    def _with_canaries(self, params, relation, data, labels, coins):
        """The training data with the canaries' rows and columns appended."""
        X, y, columns = data
        n, d = X.shape
        m = self.n_canaries
        groups = onehot_columns(params.get("onehot_groups"), columns, d)
        exempt = sorted({j for cols in groups.values() for j in cols})
        free = np.setdiff1d(np.arange(d), exempt)
        radius = _canary_norm(params, X[:, free])
        rows = np.zeros((m, d + m))
        rows[:, exempt] = X[0, exempt]
        rows[np.arange(m), d + np.arange(m)] = radius * coins
        if relation == "add_remove":
            keep = coins > 0  # present with +R, or absent
            rows, labels = rows[keep], labels[keep]
        Xc = np.vstack([np.hstack([X, np.zeros((n, m))]), rows])
        yc = np.concatenate([y, labels])
        if columns is not None and all(isinstance(c, str) for c in columns):
            names = [*columns, *(f"canary{i}" for i in range(m))]
            Xc = pd.DataFrame(Xc, columns=names)
        return Xc, yc

    def _estimate(self, scores, coins, guarantee, name):
        """The guesses, their count and the bound."""
        m, r = self.n_canaries, self.n_guesses
        order = np.argsort(scores, kind="stable")
        guesses = np.zeros(m)
        n_top = (r + 1) // 2
        guesses[order[m - n_top :]] = 1.0
        guesses[order[: r - n_top]] = -1.0
        correct = int(np.sum(guesses == coins))
        delta = guarantee.delta if self.delta is None else float(self.delta)
        claimed = guarantee.epsilon
        if delta != guarantee.delta:
            claimed = PrivacyBudget(
                1.0, delta, neighboring_relation=guarantee.neighboring_relation
            ).epsilon_after(guarantee)
        self.epsilon_claimed_ = float(claimed)
        self.delta_ = delta
        self.epsilon_lower_ = one_run_epsilon_lower_bound(
            m, r, correct, delta=delta, confidence=self.confidence
        )
        self.n_guesses_, self.n_correct_ = r, correct
        self.consistent_ = bool(self.epsilon_lower_ <= self.epsilon_claimed_)
        self.scores_ = pd.DataFrame(
            {"score": scores, "coin": coins.astype(int), "guess": guesses.astype(int)},
            index=pd.RangeIndex(m, name="canary"),
        )
        self.audit_report_ = pd.DataFrame(
            {
                "epsilon_claimed": [self.epsilon_claimed_],
                "delta": [delta],
                "neighboring_relation": [guarantee.neighboring_relation],
                "epsilon_lower": [self.epsilon_lower_],
                "n_canaries": [m],
                "n_guesses": [r],
                "n_correct": [correct],
                "accuracy": [correct / r],
                "confidence": [float(self.confidence)],
                "consistent": [self.consistent_],
            },
            index=pd.Index([name], name="estimator"),
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
