"""Loss-threshold membership inference (Yeom et al., 2018) with epsilon lower bounds."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.stats import beta
from sklearn.base import BaseEstimator
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_consistent_length, check_is_fitted

from sklearn_fil.attacks._contract import keyword_fit_params, require
from sklearn_fil.attacks._report import check_groups
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._membership import membership_array
from sklearn_fil.utils._per_example_loss import loss_kind, per_example_loss
from sklearn_fil.utils._sklearn_compat import Interval, StrOptions, _fit_context

# Joint confidence of ``epsilon_lower_bound_ci_`` (Bonferroni over its two bounds).
_CONFIDENCE = 0.95
_REPORT_COLUMNS = [
    "n_members",
    "n_nonmembers",
    "tpr",
    "fpr",
    "advantage",
    "epsilon_lower_bound",
    "auc",
]


def _log_ratio(numerator, denominator):
    """``log(numerator / denominator)``; -inf when nothing positive is implied."""
    if numerator <= 0.0:
        return -math.inf
    if denominator <= 0.0:
        return math.inf
    return math.log(numerator / denominator)


def _implied_epsilon(tpr, fpr, delta):
    """Smallest epsilon for which (epsilon, delta)-DP allows the rates ``tpr, fpr``.

    ``max(log((tpr - delta) / fpr), log((1 - fpr - delta) / (1 - tpr)), 0)``,
    with ``log(x / 0) = inf`` for ``x > 0``.
    """
    return max(
        _log_ratio(tpr - delta, fpr),
        _log_ratio(1.0 - fpr - delta, 1.0 - tpr),
        0.0,
    )


def _clopper_pearson(k, n, alpha):
    """One-sided ``1 - alpha`` Clopper-Pearson lower and upper bounds of ``k / n``."""
    lower = 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k == n else float(beta.ppf(1.0 - alpha, k + 1, n - k))
    return lower, upper


def _epsilon_ci(tp, n_members, fp, n_nonmembers, delta, confidence=_CONFIDENCE):
    """``epsilon_lower_bound_ci_`` of the counts ``tp``, ``fp``.

    The implied epsilon increases with the TPR and decreases with the FPR.
    """
    alpha = (1.0 - confidence) / 2.0
    tpr_low, _ = _clopper_pearson(tp, n_members, alpha)
    _, fpr_high = _clopper_pearson(fp, n_nonmembers, alpha)
    return _implied_epsilon(tpr_low, fpr_high, delta)


def _best_threshold(loss, member):
    """Loss value ``t`` maximising ``TPR - FPR`` of the rule ``loss <= t``.

    Every distinct loss is a candidate; ties go to the smallest threshold. One
    sort and two cumulative sums: O(n log n). The advantage is compared as the
    integer ``TP n_nonmembers - FP n_members`` so that ties are exact.
    """
    order = np.argsort(loss, kind="stable")
    sorted_loss = loss[order]
    sorted_member = member[order]
    tp = np.cumsum(sorted_member, dtype=np.int64)
    fp = np.cumsum(~sorted_member, dtype=np.int64)
    # the rule "loss <= t" keeps a whole run of equal losses: its last index
    last = np.flatnonzero(np.append(sorted_loss[1:] != sorted_loss[:-1], True))
    n_members = int(tp[-1])
    n_nonmembers = int(fp[-1])
    score = tp[last] * n_nonmembers - fp[last] * n_members
    return float(sorted_loss[last[np.argmax(score)]])


def _check_fpr_levels(fpr_levels):
    """``fpr_levels`` as a float64 1d array of distinct values in (0, 1)."""
    try:
        levels = np.asarray(fpr_levels, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"fpr_levels must be real numbers in (0, 1), got {fpr_levels!r}."
        ) from exc
    if levels.ndim != 1 or levels.size == 0:
        raise ValueError(
            f"fpr_levels must be a non-empty 1d sequence, got {fpr_levels!r}."
        )
    if not ((levels > 0.0) & (levels < 1.0)).all():
        raise ValueError(
            f"fpr_levels must lie in the open interval (0, 1), got {fpr_levels!r}."
        )
    if np.unique(levels).size != levels.size:
        raise ValueError(f"fpr_levels must be distinct, got {fpr_levels!r}.")
    return levels


def _tpr_at_fpr(fpr, tpr, levels, n_nonmembers):
    """``tpr_at_fpr_``: the largest TPR among the ROC points with FPR <= each level.

    A level below ``1 / n_nonmembers`` gives NaN, not the TPR of no false positive.
    """
    out = np.full(levels.size, np.nan)
    for k, level in enumerate(levels):
        if level >= 1.0 / n_nonmembers:
            # (0, 0) is always an ROC point, so the set is never empty
            out[k] = tpr[fpr <= level].max()
    return out


def _rates(predicted, member, delta, score):
    """Counts, rates, advantage, implied epsilon and AUC of one set of rows."""
    n_members = int(member.sum())
    n_nonmembers = int(member.size - n_members)
    tpr = predicted[member].mean() if n_members else math.nan
    fpr = predicted[~member].mean() if n_nonmembers else math.nan
    both = n_members and n_nonmembers
    return {
        "n_members": n_members,
        "n_nonmembers": n_nonmembers,
        "tpr": float(tpr),
        "fpr": float(fpr),
        "advantage": float(tpr - fpr),
        "epsilon_lower_bound": _implied_epsilon(tpr, fpr, delta) if both else math.nan,
        "auc": float(roc_auc_score(member, score)) if both else math.nan,
    }


def _check_groups(member, groups):
    """``groups`` as a 1d array (or None), after checking both halves can exist."""
    counts = np.bincount(member, minlength=2)
    if counts.min() < 2:
        raise ValueError(
            "membership needs at least 2 members and 2 non-members (one of each "
            f"in each half of the split); got {counts[1]} members and "
            f"{counts[0]} non-members."
        )
    return None if groups is None else check_groups(groups, member.size, "row")


def _split_halves(member, test_size, random_state):
    """Stratified ``(first, held_out)`` row indices, each with both classes."""
    first, held_out = train_test_split(
        np.arange(member.size),
        test_size=test_size,
        random_state=random_state,
        stratify=member,
    )
    for name, half in (("first", first), ("held-out", held_out)):
        if member[half].all() or not member[half].any():
            raise ValueError(
                f"The {name} half of the split has only "
                f"{'members' if member[half].all() else 'non-members'}: "
                f"test_size={test_size!r} leaves too few rows of one class."
            )
    return first, held_out


def _group_report(predicted, member, loss, groups, delta):
    """``report_`` and, as a dict, its ``"all"`` row (every held-out row).

    ``groups``: None, or the held-out rows' groups and every group value.
    """
    table = {"all": _rates(predicted, member, delta, -loss)}
    if groups is not None:
        held_groups, values = groups
        for value in values:
            mask = held_groups == value
            key = value.item() if isinstance(value, np.generic) else value
            table[key] = _rates(predicted[mask], member[mask], delta, -loss[mask])
    report = pd.DataFrame.from_dict(table, orient="index", columns=_REPORT_COLUMNS)
    report.index.name = "group"
    return report, table["all"]


def _threshold_rule(attack, loss, member, halves, groups, threshold):
    """The rule ``loss <= threshold`` and its held-out results, set on ``attack``.

    ``halves`` are the ``(first, held_out)`` rows; ``threshold`` None chooses
    it on the first. Sets ``threshold_``, ``tpr_``, ``fpr_``, ``advantage_``,
    ``epsilon_lower_bound_``, ``epsilon_lower_bound_ci_``, ``report_`` and
    ``baseline_``; returns the held-out membership, losses and ``"all"`` row.
    """
    first, held_out = halves
    if threshold is None:
        threshold = _best_threshold(loss[first], member[first])
    held_loss = loss[held_out]
    predicted = held_loss <= threshold
    held_member = member[held_out]
    report, overall = _group_report(
        predicted,
        held_member,
        held_loss,
        None if groups is None else (groups[held_out], np.unique(groups)),
        attack.delta,
    )
    attack.threshold_ = threshold
    attack.tpr_ = overall["tpr"]
    attack.fpr_ = overall["fpr"]
    attack.advantage_ = overall["advantage"]
    attack.epsilon_lower_bound_ = overall["epsilon_lower_bound"]
    attack.epsilon_lower_bound_ci_ = _epsilon_ci(
        int(predicted[held_member].sum()),
        overall["n_members"],
        int(predicted[~held_member].sum()),
        overall["n_nonmembers"],
        attack.delta,
    )
    attack.report_ = report
    attack.baseline_ = pd.Series(
        {
            "accuracy": max(held_member.mean(), 1.0 - held_member.mean()),
            "auc": 0.5,
            "advantage": 0.0,
        },
        name="baseline",
    )
    return held_member, held_loss, overall


def _score_roc(member, score, levels, n_nonmembers):
    """``(fpr, tpr, thresholds)`` of a membership score and its ``tpr_at_fpr_``.

    Higher scores mean more likely a member; every distinct score is a point.
    """
    fpr, tpr, thresholds = roc_curve(member, score, drop_intermediate=False)
    tpr_at_fpr = pd.Series(
        _tpr_at_fpr(fpr, tpr, levels, n_nonmembers),
        index=pd.Index(levels, name="fpr"),
        name="tpr",
    )
    return fpr, tpr, thresholds, tpr_at_fpr


def _roc(member, loss, levels, n_nonmembers):
    """``roc_`` and ``tpr_at_fpr_`` of the loss as a membership score."""
    # score -loss >= s  <=>  loss <= -s; + 0.0 turns -0.0 into 0.0
    fpr, tpr, score, tpr_at_fpr = _score_roc(member, -loss, levels, n_nonmembers)
    roc = pd.DataFrame({"fpr": fpr, "tpr": tpr, "loss_threshold": -score + 0.0})
    return roc, tpr_at_fpr


class LossThresholdMembershipInference(BaseEstimator):
    """Loss-threshold membership inference attack (Yeom et al., 2018).

    Predicts that a row ``(x, y)`` was in the training set of ``model`` when
    the model's loss on it is at most a threshold: the log loss ``-log p(y |
    x)`` from ``predict_proba`` for a classifier (probabilities clipped to
    ``[1e-300, 1]``), the squared error ``(predict(x) - y)^2`` for a
    regressor. :meth:`fit` splits rows of known membership into two halves,
    stratified by membership; on the first it chooses the threshold that
    maximises the membership advantage ``TPR - FPR`` (every distinct loss is a
    candidate, ties go to the smallest), on the held-out half it measures the
    attack.

    If the training procedure is (epsilon, delta)-DP, then for a balanced
    membership prior ``TPR <= e^epsilon FPR + delta`` and ``1 - FPR <=
    e^epsilon (1 - TPR) + delta``, so the advantage is at most ``(e^epsilon -
    1 + 2 delta) / (e^epsilon + 1)``. Conversely the held-out rates imply
    ``epsilon >= max(log((TPR - delta) / FPR), log((1 - FPR - delta) / (1 -
    TPR)))``, reported as ``epsilon_lower_bound_`` (0 when nothing positive is
    implied, ``inf`` when a denominator is 0).

    The threshold is one point of a trade-off. Read as a score (lower loss:
    more likely a member), the loss gives the whole ROC curve of the attack
    on the held-out half (``roc_``), its area ``auc_`` and the TPR at low
    FPRs (``tpr_at_fpr_``), the metrics of Carlini et al. (2022): an attack
    that identifies a few members with near certainty is a privacy failure
    even when its average accuracy, or its AUC, is close to chance.

    Parameters
    ----------
    model : estimator
        The fitted target model: a classifier with ``classes_`` and
        ``predict_proba``, or a regressor with ``predict``. It is used as
        given, never refitted. :func:`~sklearn.base.clone` returns an unfitted
        copy of it; wrap it in :class:`~sklearn.frozen.FrozenEstimator` when
        the attack is to be cloned (e.g. by a model-selection tool).
    threshold : "auto" or float, default="auto"
        Loss threshold. ``"auto"`` chooses it on the first half of the rows
        passed to :meth:`fit`; a float is used as is (the split then only
        decides which rows are held out for evaluation).
    test_size : float or int, default=0.5
        Size of the held-out half, as in
        :func:`~sklearn.model_selection.train_test_split`.
    delta : float, default=0.0
        The delta of the (epsilon, delta) guarantee against which the epsilon
        lower bounds are computed, in [0, 1).
    fpr_levels : array-like of shape (n_levels,), default=(0.001, 0.01)
        False-positive rates at which ``tpr_at_fpr_`` reports the true-positive
        rate: distinct values in (0, 1).
    random_state : int, RandomState instance or None, default=None
        Seed of the split.

    Attributes
    ----------
    model_ : estimator
        The target model.
    threshold_ : float
        Loss threshold of the attack: a row is a predicted member when its
        loss is ``<= threshold_``.
    tpr_ : float
        True-positive rate of the rule ``loss <= threshold_`` on the held-out
        half (members predicted members); not to be confused with
        ``tpr_at_fpr_``, the TPR of the whole score at fixed FPRs.
    fpr_ : float
        False-positive rate of the rule ``loss <= threshold_`` on the held-out
        half (non-members predicted members).
    advantage_ : float
        Membership advantage ``tpr_ - fpr_`` on the held-out half.
    epsilon_lower_bound_ : float
        Epsilon implied by ``tpr_`` and ``fpr_`` at ``delta``: a point
        estimate from a finite sample, not a certified bound (it carries
        sampling error, upwards as well as downwards).
    epsilon_lower_bound_ci_ : float
        One-sided 95% lower confidence bound on the implied epsilon: the
        implied epsilon at the Clopper-Pearson lower bound of the TPR and
        upper bound of the FPR, each at level 97.5% (so both hold jointly
        with probability at least 95%).
    roc_ : pandas.DataFrame
        ROC curve of the loss as a membership score on the held-out half,
        from :func:`sklearn.metrics.roc_curve` with every distinct loss a
        point: columns ``fpr``, ``tpr`` and ``loss_threshold`` (the rule
        ``loss <= loss_threshold``; the first row, ``-inf``, predicts no
        member), in order of increasing FPR, from (0, 0) to (1, 1). It does
        not depend on ``threshold_``.
    auc_ : float
        Area under ``roc_``, :func:`sklearn.metrics.roc_auc_score`: the
        probability that a held-out member has a lower loss than a held-out
        non-member, ties counting one half. A random guess scores 0.5; a
        sample of ``m`` members and ``n`` non-members gives it a standard
        error of about ``sqrt((m + n + 1) / (12 m n))`` even then.
    tpr_at_fpr_ : pandas.Series
        Largest TPR among the points of ``roc_`` with FPR at most each
        level of ``fpr_levels`` (the index, named ``fpr``): the conservative
        reading of Carlini et al. (2022), with no interpolation between
        points. NaN for a level below ``1 / n_nonmembers`` (the held-out
        non-members, ``report_.loc["all", "n_nonmembers"]``): such an FPR is
        not resolvable, so 0.1% needs at least 1000 held-out non-members. A
        random guess has TPR equal to the level.
    report_ : pandas.DataFrame
        Held-out results, indexed by ``group``: a row ``"all"`` and, when
        ``groups`` was given, one row per group value. Columns
        ``n_members``, ``n_nonmembers``, ``tpr``, ``fpr``, ``advantage``,
        ``epsilon_lower_bound`` and ``auc`` (the last three NaN where a group
        has no held-out members or no held-out non-members).
    baseline_ : pandas.Series
        What a guess without the model scores on the held-out half, to read
        ``report_`` against: ``accuracy`` (always guessing the majority
        class), ``auc`` (0.5) and ``advantage`` (0).
    n_features_in_ : int
        Number of features of ``model``, when it has ``n_features_in_``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names of ``model``, when it has ``feature_names_in_``.

    See Also
    --------
    attack_report : Attack success by FIL quantile bin and by group.
    sklearn_fil.plotting.MembershipROCDisplay : Draws ``roc_`` with the
        chance diagonal.

    Notes
    -----
    The confidence bound treats the held-out rows as independent draws of
    the membership experiment: members and non-members drawn from the same
    distribution, the model trained on the members. It is valid for the rates
    of the attack as chosen on the first half, since the held-out half plays
    no part in that choice.

    References
    ----------
    Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. "Privacy risk in
    machine learning: analyzing the connection to overfitting." IEEE CSF 2018.

    Kairouz, P., Oh, S. and Viswanath, P. "The composition theorem for
    differential privacy." ICML 2015.

    Jagielski, M., Ullman, J. and Oprea, A. "Auditing differentially private
    machine learning: how private is private SGD?" NeurIPS 2020.

    Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramer, F.
    "Membership inference attacks from first principles." IEEE S&P 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from sklearn_fil.attacks import LossThresholdMembershipInference
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = rng.integers(0, 2, size=200)  # labels independent of X
    >>> member = np.arange(200) < 100
    >>> model = KNeighborsClassifier(n_neighbors=1).fit(X[member], y[member])
    >>> attack = LossThresholdMembershipInference(model, random_state=0)
    >>> attack = attack.fit(X, y, membership=member)
    >>> attack.threshold_, attack.tpr_
    (0.0, 1.0)
    >>> round(attack.advantage_, 2)
    0.46
    >>> attack.epsilon_lower_bound_, round(attack.epsilon_lower_bound_ci_, 2)
    (inf, 1.5)
    >>> round(attack.auc_, 2)
    0.73
    >>> # 50 held-out non-members: an FPR below 1/50 is not resolvable
    >>> attack.tpr_at_fpr_.tolist()
    [nan, nan]
    >>> attack.report_.columns.tolist()
    ['n_members', 'n_nonmembers', 'tpr', 'fpr', 'advantage', 'epsilon_lower_bound',
     'auc']
    """

    _parameter_constraints: ClassVar[dict] = {
        "model": "no_validation",
        "threshold": [
            StrOptions({"auto"}),
            Interval(Real, None, None, closed="neither"),
        ],
        "test_size": [
            Interval(Real, 0, 1, closed="neither"),
            Interval(Integral, 1, None, closed="left"),
        ],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "fpr_levels": ["array-like"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        model,
        *,
        threshold="auto",
        test_size=0.5,
        delta=0.0,
        fpr_levels=(0.001, 0.01),
        random_state=None,
    ):
        self.model = model
        self.threshold = threshold
        self.test_size = test_size
        self.delta = delta
        self.fpr_levels = fpr_levels
        self.random_state = random_state

    @keyword_fit_params
    def fit(self, X, y=None, *, membership=None, groups=None):
        """Choose the threshold on one half of the rows and evaluate on the other.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows, as ``model`` takes them.
        y : array-like of shape (n_samples,)
            Their labels (classifier) or targets (regressor); required.
        membership : array-like of shape (n_samples,)
            1 (True) for rows in the model's training set, 0 (False) for the
            others; required. Each half of the split needs both.
        groups : array-like of shape (n_samples,), default=None
            Group of each row, for a per-group breakdown in ``report_``. The
            value ``"all"`` is reserved.

        Returns
        -------
        self : object
            Fitted attack.

        Raises
        ------
        ValueError
            When ``y`` or ``membership`` is None, the lengths differ,
            ``membership`` is not 0/1 or lacks one class in a half of the
            split, ``groups`` contains ``"all"``, ``y`` has labels the model
            does not know, a loss is not finite or ``fpr_levels`` are not
            distinct values in (0, 1).
        TypeError
            When ``model`` has neither ``predict_proba`` nor ``predict``.
        sklearn.exceptions.NotFittedError
            When ``model`` is not fitted.
        """
        return fit_or_clear(self, self._fit, X, y, membership, groups)

    @_fit_context(prefer_skip_nested_validation=False)
    def _fit(self, X, y, membership, groups):
        require(y, "y", self)
        require(membership, "membership", self)
        check_consistent_length(X, y, membership, groups)
        levels = _check_fpr_levels(self.fpr_levels)
        member = membership_array(membership)
        groups = _check_groups(member, groups)
        kind = loss_kind(self.model)
        check_is_fitted(self.model)
        first, held_out = _split_halves(member, self.test_size, self.random_state)
        loss = per_example_loss(self.model, kind, X, y)

        threshold = None if isinstance(self.threshold, str) else float(self.threshold)
        held_member, held_loss, overall = _threshold_rule(
            self, loss, member, (first, held_out), groups, threshold
        )
        roc, tpr_at_fpr = _roc(held_member, held_loss, levels, overall["n_nonmembers"])
        self.model_ = self.model
        self.roc_ = roc
        self.auc_ = overall["auc"]
        self.tpr_at_fpr_ = tpr_at_fpr
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.model, name):
                setattr(self, name, getattr(self.model, name))
        return self

    def _loss(self, X, y):
        check_is_fitted(self)
        check_consistent_length(X, y)
        kind = loss_kind(self.model_)
        check_is_fitted(self.model_)
        return per_example_loss(self.model_, kind, X, y)

    def decision_function(self, X, y):
        """Membership score: minus the model's loss on each row.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows, as ``model`` takes them.
        y : array-like of shape (n_samples,)
            Their labels (classifier) or targets (regressor).

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            ``-loss``; higher means more likely a member.
        """
        return -self._loss(X, y)

    def predict(self, X, y):
        """Predict membership: 1 where the loss is at most ``threshold_``.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows, as ``model`` takes them.
        y : array-like of shape (n_samples,)
            Their labels (classifier) or targets (regressor).

        Returns
        -------
        membership : ndarray of shape (n_samples,)
            1 for predicted members, 0 for predicted non-members.
        """
        return (self._loss(X, y) <= self.threshold_).astype(np.int64)

    def score(self, X, y, membership):
        """Membership advantage ``TPR - FPR`` of the attack on the given rows.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows, as ``model`` takes them.
        y : array-like of shape (n_samples,)
            Their labels (classifier) or targets (regressor).
        membership : array-like of shape (n_samples,)
            True membership, 1 (True) for members; both values must occur.

        Returns
        -------
        advantage : float
            True-positive rate minus false-positive rate, in [-1, 1].

        Raises
        ------
        ValueError
            When the lengths differ or ``membership`` is not 0/1 with both
            values present.
        """
        return _advantage(self, X, y, membership)


def _advantage(attack, X, y, membership):
    """``score`` of a membership attack: ``TPR - FPR`` of ``attack.predict``."""
    check_consistent_length(X, y, membership)
    member = membership_array(membership)
    if member.all() or not member.any():
        raise ValueError("membership must contain both members and non-members.")
    predicted = attack.predict(X, y).astype(bool)
    return float(predicted[member].mean() - predicted[~member].mean())
