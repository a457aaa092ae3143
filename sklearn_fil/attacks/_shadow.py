"""Membership inference with shadow models: LiRA and RMIA, for any classifier.

Both attacks train shadow (reference) models, clones of the target's recipe, on
random halves of the attacker's rows, so that every row is in the training set
of half of them, as in Carlini et al. (2022); they differ in the test.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real
from typing import ClassVar

import joblib
import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import expit, log_expit, logsumexp
from scipy.stats import norm
from sklearn.base import BaseEstimator, clone
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.validation import check_consistent_length, check_is_fitted

from sklearn_fil.attacks._contract import keyword_fit_params, require
from sklearn_fil.attacks._membership import (
    _advantage,
    _check_fpr_levels,
    _check_groups,
    _score_roc,
    _split_halves,
    _threshold_rule,
)
from sklearn_fil.utils._fitted import fit_or_clear, unread_report_params
from sklearn_fil.utils._membership import membership_array
from sklearn_fil.utils._release import fitted_params
from sklearn_fil.utils._sklearn_compat import Interval, StrOptions, _fit_context

# Probabilities are floored here before the log, at the resolution of a
# probability near 1 (2**-53): a model that rounds 1 - p to 0 (as binary
# classifiers computing [1 - p, p] do) gets |phi| <= 36.7, not a far tail.
_MIN_PROBA = 2.0**-53
# Standard deviations are floored here: a shadow statistic that never varies
# (a saturated or data-independent model) still gives a finite score.
_MIN_STD = 1e-30
# LiRA's Gaussians get per-example variances from this many shadow models
# on (Carlini et al. 2022, Figure 7: a global variance is better below it).
_PER_EXAMPLE_FROM = 64
# Private fitted state (not ending in "_"), cleared at each fit.
_PRIVATE = ("_pool_hash",)


def _signal_method(model):
    """``"predict_proba"`` or ``"decision_function"``: what the attacks read."""
    for method in ("predict_proba", "decision_function"):
        if hasattr(model, method):
            return method
    raise TypeError(
        "The shadow-model attacks read a classifier's predict_proba or "
        f"decision_function; {type(model).__name__} has neither."
    )


def _label_columns(classes, y):
    """Column of each label in ``classes``; -1 for a label it lacks."""
    classes = np.asarray(classes)
    if classes.ndim != 1:
        raise ValueError("Multi-output classifiers are not supported.")
    sorter = np.argsort(classes)
    position = np.searchsorted(classes, y, sorter=sorter).clip(0, classes.size - 1)
    columns = sorter[position]
    return np.where(classes[columns] == y, columns, -1)


def logit_confidence(model, X, y):
    """LiRA's logit-scaled confidence of the true label, ``phi``, for each row.

    ``phi = log p_y - log sum_{y' != y} p_y'`` from ``predict_proba``
    (both floored at 2**-53), else from ``decision_function`` read as logits:
    ``+-margin`` for a binary margin, ``d_y - logsumexp(d_y')`` over the
    other classes. A label the model never saw has ``p_y = 0``.
    """
    columns = _label_columns(model.classes_, y)
    rows = np.arange(columns.size)
    known = columns >= 0
    if hasattr(model, "predict_proba"):
        proba = np.asarray(model.predict_proba(X), dtype=np.float64)
        p_true = np.where(known, proba[rows, columns], 0.0)
        rest = proba.copy()
        rest[rows[known], columns[known]] = 0.0
        others = rest.sum(axis=1)  # not 1 - p_true, which cancels
        return np.log(np.maximum(p_true, _MIN_PROBA)) - np.log(
            np.maximum(others, _MIN_PROBA)
        )
    scores = np.asarray(model.decision_function(X), dtype=np.float64)
    if scores.ndim == 1:  # binary: the margin of classes_[1]
        phi = np.where(columns == 1, scores, -scores)
        return np.where(known, phi, np.log(_MIN_PROBA))
    true = scores[rows, columns]
    rest = scores.copy()
    rest[rows[known], columns[known]] = -np.inf
    phi = true - logsumexp(rest, axis=1)
    return np.where(known, phi, np.log(_MIN_PROBA))


def _shadow_design(n_shadow_models, n_samples, rng):
    """``(n_shadow_models, n_samples)`` mask: each row IN for half the models.

    Every column is a random permutation cut at ``n_shadow_models // 2``, as in
    Carlini et al.'s code: row ``i`` is in exactly that many training sets.
    """
    order = np.argsort(rng.random_sample((n_shadow_models, n_samples)), axis=0)
    return order < n_shadow_models // 2


def _seeded(estimator, seed):
    """An unfitted clone with every ``random_state`` parameter set to ``seed``."""
    names = [
        name
        for name in estimator.get_params(deep=True)
        if name == "random_state" or name.endswith("__random_state")
    ]
    return clone(estimator).set_params(**dict.fromkeys(names, seed))


def _fit_shadow(estimator, X, y, rows, seed):
    """``phi`` on every row of the pool of a shadow model fitted on ``rows``."""
    model = _seeded(estimator, seed).fit(_safe_indexing(X, rows), y[rows])
    return logit_confidence(model, X, y)


def _shadow_recipe(model, estimator):
    """The unfitted shadow model: ``estimator``, else ``model``'s recipe.

    ``model``'s recipe is a clone with the parameters of its fit (sklearn-fil
    estimators record them: a later ``set_params`` does not reach it). Either
    is told to skip the report columns that no shadow model reads.
    """
    final, prefix = model if estimator is None else estimator, ""
    while isinstance(final, Pipeline):
        name, final = final.steps[-1]
        prefix += f"{name}__"
    if not hasattr(final, "get_params"):
        return clone(model) if estimator is None else estimator
    params = unread_report_params(final, prefix)
    if estimator is None:
        fitted = {prefix + k: v for k, v in fitted_params(final).items()}
        return clone(model).set_params(**{**fitted, **params})
    return clone(estimator).set_params(**params)


def _gaussians(phi, masks, per_example):
    """Per-row means of ``phi`` over each mask, and their standard deviations.

    ``per_example``: one unbiased variance per row and mask; else one variance
    pooled over every row and every mask (the within-row residuals), shared by
    all the Gaussians, as in Carlini et al.'s fixed-variance LiRA: the online
    log-likelihood ratio is then linear in ``phi``.
    """
    counts = [mask.sum(axis=0) for mask in masks]
    means = [
        np.where(mask, phi, 0.0).sum(axis=0) / count
        for mask, count in zip(masks, counts, strict=True)
    ]
    squares = [
        np.where(mask, (phi - mean) ** 2, 0.0).sum(axis=0)
        for mask, mean in zip(masks, means, strict=True)
    ]
    if per_example:
        stds = [np.sqrt(s / (c - 1)) for s, c in zip(squares, counts, strict=True)]
    else:
        dof = sum(int((c - 1).sum()) for c in counts)
        pooled = np.sqrt(sum(float(s.sum()) for s in squares) / dof)
        stds = [np.full(phi.shape[1], pooled)] * len(masks)
    return [(m, np.maximum(s, _MIN_STD)) for m, s in zip(means, stds, strict=True)]


class _ShadowMembershipInference(BaseEstimator):
    """Shared fit, scoring and evaluation of the shadow-model attacks."""

    _parameter_constraints: ClassVar[dict] = {
        "model": "no_validation",
        "estimator": [None, HasMethods(["fit"])],
        "n_shadow_models": [Interval(Integral, 1, None, closed="left")],
        "online": ["boolean"],
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
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
    }

    def _min_shadow_models(self):
        """Fewest shadow models the test needs, and why."""
        raise NotImplementedError

    @keyword_fit_params
    def fit(self, X, y=None, *, membership=None, groups=None):
        """Train the shadow models on halves of the rows, then score the target.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The attacker's rows, as ``model`` takes them: the rows attacked
            and the pool the shadow models are trained on (each on a random
            half, every row in half of them).
        y : array-like of shape (n_samples,)
            Their labels; required.
        membership : array-like of shape (n_samples,)
            1 (True) for rows in the target model's training set, 0 (False)
            for the others; required. Only the evaluation reads it (the ROC,
            the threshold and ``report_``), never the scores.
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
            does not know, there are too few shadow models for the test,
            ``n_population`` exceeds the rows, or ``fpr_levels`` are not
            distinct values in (0, 1).
        TypeError
            When ``model`` has neither ``predict_proba`` nor
            ``decision_function``.
        sklearn.exceptions.NotFittedError
            When ``model`` is not fitted.
        """
        return fit_or_clear(self, self._fit, X, y, membership, groups, private=_PRIVATE)

    @_fit_context(prefer_skip_nested_validation=False)
    def _fit(self, X, y, membership, groups):
        require(y, "y", self)
        require(membership, "membership", self)
        check_consistent_length(X, y, membership, groups)
        levels = _check_fpr_levels(self.fpr_levels)
        member = membership_array(membership)
        groups = _check_groups(member, groups)
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be a 1d array, got an array of shape {y.shape}.")
        _signal_method(self.model)
        check_is_fitted(self.model)
        unknown = _label_columns(self.model.classes_, y) < 0
        if unknown.any():
            raise ValueError(
                f"y has labels {np.unique(y[unknown])[:5].tolist()} that are not "
                f"classes of the model {np.asarray(self.model.classes_).tolist()}."
            )
        fewest, why = self._min_shadow_models()
        if self.n_shadow_models < fewest:
            raise ValueError(
                f"{type(self).__name__}(online={self.online}) needs at least "
                f"{fewest} shadow models ({why}); got "
                f"n_shadow_models={self.n_shadow_models}."
            )
        self._check_params(y.size)
        halves = _split_halves(member, self.test_size, self.random_state)
        estimator = _shadow_recipe(self.model, self.estimator)

        rng = check_random_state(self.random_state)
        design = _shadow_design(self.n_shadow_models, y.size, rng)
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.n_shadow_models)
        phi = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_shadow)(estimator, X, y, np.flatnonzero(rows), int(seed))
            for rows, seed in zip(design, seeds, strict=True)
        )
        self.model_ = self.model
        self.shadow_membership_ = design
        self.shadow_logits_ = np.stack(phi)
        self._fit_test(self.shadow_logits_, design, rng)
        score = self._score(logit_confidence(self.model, X, y))
        self._evaluate(score, member, halves, groups, levels)
        self._pool_hash = joblib.hash((X, y))
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.model, name):
                setattr(self, name, getattr(self.model, name))
        return self

    def _check_params(self, n_samples):
        """Checks of the attack's own parameters against the rows."""

    def _evaluate(self, score, member, halves, groups, levels):
        """Threshold on the first half, rates on the other, ROC on every row."""
        # the rule "score >= t" is the rule "-score <= -t"
        threshold = None if isinstance(self.threshold, str) else -float(self.threshold)
        _threshold_rule(self, -score, member, halves, groups, threshold)
        self.threshold_ = -self.threshold_ + 0.0
        fpr, tpr, thresholds, tpr_at_fpr = _score_roc(
            member, score, levels, int((~member).sum())
        )
        self.scores_ = score
        self.roc_ = pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": thresholds})
        self.auc_ = float(roc_auc_score(member, score))
        self.tpr_at_fpr_ = tpr_at_fpr

    def decision_function(self, X, y):
        """Membership score of each row of the pool against the target model.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The rows passed to :meth:`fit`, in the same order: a row's test
            needs the shadow models trained with and without it.
        y : array-like of shape (n_samples,)
            Their labels, as passed to :meth:`fit`.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Higher means more likely a member (``scores_``).

        Raises
        ------
        ValueError
            When ``X`` and ``y`` are not the rows the attack was fitted on.
        """
        check_is_fitted(self)
        y = np.asarray(y)
        if joblib.hash((X, y)) != self._pool_hash:
            raise ValueError(
                f"{type(self).__name__} scores the rows passed to fit, in the "
                "same order (their shadow models were trained on halves of "
                "them); got other rows. Fit the attack with the rows to score."
            )
        return self._score(logit_confidence(self.model_, X, y))

    def predict(self, X, y):
        """Predict membership: 1 where the score is at least ``threshold_``.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The rows passed to :meth:`fit`, in the same order.
        y : array-like of shape (n_samples,)
            Their labels.

        Returns
        -------
        membership : ndarray of shape (n_samples,)
            1 for predicted members, 0 for predicted non-members.
        """
        return (self.decision_function(X, y) >= self.threshold_).astype(np.int64)

    def score(self, X, y, membership):
        """Membership advantage ``TPR - FPR`` of :meth:`predict` on the rows.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The rows passed to :meth:`fit`, in the same order.
        y : array-like of shape (n_samples,)
            Their labels.
        membership : array-like of shape (n_samples,)
            True membership, 1 (True) for members; both values must occur.

        Returns
        -------
        advantage : float
            True-positive rate minus false-positive rate, in [-1, 1].
        """
        return _advantage(self, X, y, membership)


class LiRAMembershipInference(_ShadowMembershipInference):
    """Likelihood-ratio attack with shadow models (LiRA, Carlini et al., 2022).

    Trains ``n_shadow_models`` clones of ``estimator`` on random halves of
    the rows passed to :meth:`fit`, every row in exactly half of the
    training sets, and reads on each row the logit-scaled confidence of its
    true label,

    ``phi = log(p_y / (1 - p_y))``,

    computed as ``log p_y - log sum_{y' != y} p_y'`` from ``predict_proba``
    (else from ``decision_function``, read as logits). ``phi`` is close to
    Gaussian over the randomness of training. The online test fits, per row,
    one Gaussian to the shadow models trained with it (IN) and one to those
    trained without it (OUT), and scores the target model's ``phi`` by the
    log-likelihood ratio

    ``log N(phi; mu_in, sigma_in^2) - log N(phi; mu_out, sigma_out^2)``,

    the Neyman-Pearson statistic of the two hypotheses. The offline test
    uses the OUT Gaussian alone, one-sided: ``(phi - mu_out) / sigma_out``
    (the paper's ``Phi`` of it ranks rows the same way). Below 64 shadow
    models one variance is pooled over every row and both Gaussians, as the
    paper advises.

    Rows with known membership to the target are split as in
    :class:`LossThresholdMembershipInference`: a threshold is chosen on one
    half and its rates measured on the other; the score itself reads no
    membership, so the ROC curve, its area and the TPR at low FPR use every
    row.

    Read more in :ref:`the user guide <shadow_attacks>`.

    Parameters
    ----------
    model : estimator
        The fitted target classifier, with ``classes_`` and
        ``predict_proba`` or ``decision_function``: one of ours, a
        :class:`~sklearn.pipeline.Pipeline`, any scikit-learn classifier.
        It is used as given, never refitted.
    estimator : estimator, default=None
        The unfitted recipe of the shadow models, cloned for each; None
        means ``clone(model)`` with the parameters of its fit. Every
        ``random_state`` parameter in it (nested ones included) is set to a
        seed drawn from ``random_state``, one per shadow model; sklearn-fil's
        estimators skip the report columns (``per_instance_accounting``,
        ``fil_accounting``), which no shadow model reads.
    n_shadow_models : int, default=16
        Shadow models trained; each row is in the training set of
        ``n_shadow_models // 2`` of them. At least 4 online (two IN and two
        OUT per row), 3 offline.
    online : bool, default=True
        The online test (IN and OUT Gaussians) or the offline one (OUT only).
    variance : {"auto", "global", "per_example"}, default="auto"
        One variance per row and hypothesis, or one pooled over the rows and
        (online) both hypotheses, which makes the online score linear in
        ``phi``; ``"auto"`` is per example from 64 shadow models on.
    threshold : "auto" or float, default="auto"
        Score threshold of :meth:`predict`; ``"auto"`` chooses the one that
        maximises ``TPR - FPR`` on the first half of the rows.
    test_size : float or int, default=0.5
        Size of the held-out half, as in
        :func:`~sklearn.model_selection.train_test_split`.
    delta : float, default=0.0
        The delta of the (epsilon, delta) guarantee against which the
        epsilon lower bounds are computed, in [0, 1).
    fpr_levels : array-like of shape (n_levels,), default=(0.001, 0.0001)
        False-positive rates at which ``tpr_at_fpr_`` reports the
        true-positive rate: distinct values in (0, 1).
    n_jobs : int, default=None
        Shadow models fitted in parallel, as in :class:`joblib.Parallel`;
        ``joblib.parallel_config(backend="dask")`` spreads them over a Dask
        cluster. The scores do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seed of the halves, of the shadow models and of the split.

    Attributes
    ----------
    model_ : estimator
        The target model.
    shadow_membership_ : ndarray of shape (n_shadow_models, n_samples)
        True where a row was in a shadow model's training set.
    shadow_logits_ : ndarray of shape (n_shadow_models, n_samples)
        ``phi`` of every shadow model on every row.
    variance_ : {"global", "per_example"}
        The variance used.
    mean_in_, std_in_ : ndarray of shape (n_samples,)
        The IN Gaussian of each row (online only).
    mean_out_, std_out_ : ndarray of shape (n_samples,)
        The OUT Gaussian of each row. Standard deviations are floored at
        1e-30 (a statistic that never varies).
    scores_ : ndarray of shape (n_samples,)
        The target's score on every row, :meth:`decision_function`.
    threshold_ : float
        Score threshold: a row is a predicted member when its score is
        ``>= threshold_``.
    tpr_, fpr_, advantage_ : float
        Rates of the rule ``score >= threshold_`` on the held-out half.
    epsilon_lower_bound_ : float
        Epsilon implied by ``tpr_`` and ``fpr_`` at ``delta`` (a point
        estimate).
    epsilon_lower_bound_ci_ : float
        One-sided 95% Clopper-Pearson lower confidence bound on it, as in
        :class:`LossThresholdMembershipInference`.
    roc_ : pandas.DataFrame
        ROC curve of the score over every row, every distinct score a
        point: columns ``fpr``, ``tpr`` and ``threshold`` (the rule
        ``score >= threshold``), from (0, 0) to (1, 1).
    auc_ : float
        Area under ``roc_``.
    tpr_at_fpr_ : pandas.Series
        Largest TPR of ``roc_`` at FPR at most each level of
        ``fpr_levels`` (the index); NaN below ``1 / n_nonmembers``.
    report_ : pandas.DataFrame
        Held-out results of the threshold, by ``group``, with the columns of
        :class:`LossThresholdMembershipInference`'s.
    baseline_ : pandas.Series
        What a guess without the model scores on the held-out half:
        ``accuracy``, ``auc`` (0.5) and ``advantage`` (0).
    n_features_in_ : int
        Number of features of ``model``, when it has ``n_features_in_``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names of ``model``, when it has ``feature_names_in_``.

    See Also
    --------
    RMIAMembershipInference : The relative test, strong with 1 or 2
        reference models.
    LossThresholdMembershipInference : The attack without shadow models.
    sklearn_fil.plotting.MembershipROCDisplay : Draws ``roc_``.

    Notes
    -----
    The attack is transductive: a row's test needs shadow models trained with
    and without it, so :meth:`decision_function` scores the rows passed to
    :meth:`fit` only. If the target's training procedure is
    (epsilon, delta)-DP, no threshold of any score reaches
    ``TPR > e^epsilon FPR + delta``.

    References
    ----------
    Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramer, F.
    "Membership inference attacks from first principles." IEEE S&P 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from sklearn_fil.attacks import LiRAMembershipInference
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    >>> member = rng.random(400) < 0.5
    >>> model = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    >>> attack = LiRAMembershipInference(model, n_shadow_models=8, random_state=0)
    >>> attack = attack.fit(X, y, membership=member)
    >>> attack.shadow_membership_.sum(axis=0)[:5]  # each row IN for 4 of 8
    array([4, 4, 4, 4, 4])
    >>> bool(attack.auc_ > 0.6)
    True
    >>> attack.decision_function(X, y).shape
    (400,)
    """

    _parameter_constraints: ClassVar[dict] = {
        **_ShadowMembershipInference._parameter_constraints,
        "variance": [StrOptions({"auto", "global", "per_example"})],
    }

    def __init__(
        self,
        model,
        *,
        estimator=None,
        n_shadow_models=16,
        online=True,
        variance="auto",
        threshold="auto",
        test_size=0.5,
        delta=0.0,
        fpr_levels=(0.001, 0.0001),
        n_jobs=None,
        random_state=None,
    ):
        self.model = model
        self.estimator = estimator
        self.n_shadow_models = n_shadow_models
        self.online = online
        self.variance = variance
        self.threshold = threshold
        self.test_size = test_size
        self.delta = delta
        self.fpr_levels = fpr_levels
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _min_shadow_models(self):
        if self.online:
            return 4, "two IN and two OUT per row, for the variances"
        return 3, "two OUT per row, for the variance"

    def _fit_test(self, phi, design, rng):
        per_example = self.variance == "per_example" or (
            self.variance == "auto" and self.n_shadow_models >= _PER_EXAMPLE_FROM
        )
        self.variance_ = "per_example" if per_example else "global"
        masks = [~design, design] if self.online else [~design]
        gaussians = _gaussians(phi, masks, per_example)
        self.mean_out_, self.std_out_ = gaussians[0]
        if self.online:
            self.mean_in_, self.std_in_ = gaussians[1]

    def _score(self, phi):
        if self.online:
            return norm.logpdf(phi, self.mean_in_, self.std_in_) - norm.logpdf(
                phi, self.mean_out_, self.std_out_
            )
        return (phi - self.mean_out_) / self.std_out_


class RMIAMembershipInference(_ShadowMembershipInference):
    """Relative membership inference (RMIA, Zarifzadeh et al., 2024).

    Compares how much more likely the target model makes a row ``x`` than
    the reference models do with how much more likely it makes population
    rows ``z``. With ``Pr(x | theta) = p_y(x)``, the target's probability
    of the true label (``expit(phi)``, ``phi`` as in
    :class:`LiRAMembershipInference`), and ``Pr(x)`` its mean over the
    reference models, the likelihood ratio of ``x`` against ``z`` is

    ``LR(x, z) = (Pr(x | theta) / Pr(x)) / (Pr(z | theta) / Pr(z))``

    and the score of ``x`` the fraction of population rows ``z`` with
    ``LR(x, z) > gamma``. The reference models are trained like LiRA's
    shadow models, on random halves of the rows passed to :meth:`fit`; the
    population rows are those rows (or ``n_population`` of them at random).
    Online, ``Pr(x)`` is the mean of the IN and OUT reference models' means;
    offline, only the OUT models are read and ``Pr(x)`` is the paper's
    linear approximation ``((1 + a) Pr_out(x) + 1 - a) / 2``, ``a =
    offline_a``, for ``x`` and ``z`` alike. Offline, two reference models
    already give every row one OUT model: the paper's point is that RMIA is
    strong with one or two.

    Evaluation (threshold, ``report_``, ROC) is as in
    :class:`LiRAMembershipInference`.

    Read more in :ref:`the user guide <shadow_attacks>`.

    Parameters
    ----------
    model : estimator
        The fitted target classifier, with ``classes_`` and
        ``predict_proba`` or ``decision_function``. It is used as given,
        never refitted.
    estimator : estimator, default=None
        The unfitted recipe of the reference models, cloned for each; None
        means ``clone(model)`` with the parameters of its fit. Every
        ``random_state`` parameter in it is set to a seed drawn from
        ``random_state``, one per model.
    n_shadow_models : int, default=2
        Reference models trained; each row is in the training set of
        ``n_shadow_models // 2`` of them. At least 2.
    online : bool, default=False
        Average IN and OUT reference models (online) or approximate
        ``Pr(x)`` from the OUT models (offline).
    offline_a : float, default=0.3
        The ``a`` of the offline approximation, in [0, 1]: 1 trusts the OUT
        models alone, 0 ignores them.
    gamma : float, default=1.0
        ``LR(x, z)`` must exceed it for ``z`` to count, > 0.
    n_population : int, default=None
        Population rows ``z``, drawn without replacement from the rows;
        None uses every row.
    threshold : "auto" or float, default="auto"
        Score threshold of :meth:`predict`; ``"auto"`` chooses the one that
        maximises ``TPR - FPR`` on the first half of the rows.
    test_size : float or int, default=0.5
        Size of the held-out half, as in
        :func:`~sklearn.model_selection.train_test_split`.
    delta : float, default=0.0
        The delta of the (epsilon, delta) guarantee against which the
        epsilon lower bounds are computed, in [0, 1).
    fpr_levels : array-like of shape (n_levels,), default=(0.001, 0.0001)
        False-positive rates at which ``tpr_at_fpr_`` reports the
        true-positive rate: distinct values in (0, 1).
    n_jobs : int, default=None
        Reference models fitted in parallel, as in :class:`joblib.Parallel`.
    random_state : int, RandomState instance or None, default=None
        Seed of the halves, of the models, of the population and of the
        split.

    Attributes
    ----------
    model_ : estimator
        The target model.
    shadow_membership_ : ndarray of shape (n_shadow_models, n_samples)
        True where a row was in a reference model's training set.
    shadow_logits_ : ndarray of shape (n_shadow_models, n_samples)
        ``phi`` of every reference model on every row.
    reference_probability_ : ndarray of shape (n_samples,)
        ``Pr(x)`` of every row.
    population_ : ndarray of shape (n_population,)
        The rows used as ``z``.
    scores_ : ndarray of shape (n_samples,)
        The target's score on every row, in [0, 1].
    threshold_ : float
        Score threshold: a row is a predicted member when its score is
        ``>= threshold_``.
    tpr_, fpr_, advantage_ : float
        Rates of the rule ``score >= threshold_`` on the held-out half.
    epsilon_lower_bound_ : float
        Epsilon implied by ``tpr_`` and ``fpr_`` at ``delta``.
    epsilon_lower_bound_ci_ : float
        One-sided 95% Clopper-Pearson lower confidence bound on it.
    roc_ : pandas.DataFrame
        ROC curve of the score over every row: columns ``fpr``, ``tpr`` and
        ``threshold``.
    auc_ : float
        Area under ``roc_``.
    tpr_at_fpr_ : pandas.Series
        Largest TPR of ``roc_`` at FPR at most each level of
        ``fpr_levels``; NaN below ``1 / n_nonmembers``.
    report_ : pandas.DataFrame
        Held-out results of the threshold, by ``group``.
    baseline_ : pandas.Series
        ``accuracy``, ``auc`` (0.5) and ``advantage`` (0) of a guess.
    n_features_in_ : int
        Number of features of ``model``, when it has ``n_features_in_``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names of ``model``, when it has ``feature_names_in_``.

    See Also
    --------
    LiRAMembershipInference : The Gaussian likelihood-ratio test.
    sklearn_fil.plotting.MembershipROCDisplay : Draws ``roc_``.

    References
    ----------
    Zarifzadeh, S., Liu, P., Chang, Y. and Shokri, R. "Low-cost high-power
    membership inference attacks." ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from sklearn_fil.attacks import RMIAMembershipInference
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3))
    >>> y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    >>> member = rng.random(400) < 0.5
    >>> model = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    >>> attack = RMIAMembershipInference(model, random_state=0)
    >>> attack = attack.fit(X, y, membership=member)
    >>> attack.shadow_membership_.shape
    (2, 400)
    >>> bool(attack.auc_ > 0.6)
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **_ShadowMembershipInference._parameter_constraints,
        "offline_a": [Interval(Real, 0, 1, closed="both")],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "n_population": [None, Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        model,
        *,
        estimator=None,
        n_shadow_models=2,
        online=False,
        offline_a=0.3,
        gamma=1.0,
        n_population=None,
        threshold="auto",
        test_size=0.5,
        delta=0.0,
        fpr_levels=(0.001, 0.0001),
        n_jobs=None,
        random_state=None,
    ):
        self.model = model
        self.estimator = estimator
        self.n_shadow_models = n_shadow_models
        self.online = online
        self.offline_a = offline_a
        self.gamma = gamma
        self.n_population = n_population
        self.threshold = threshold
        self.test_size = test_size
        self.delta = delta
        self.fpr_levels = fpr_levels
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _min_shadow_models(self):
        if self.online:
            return 2, "one IN and one OUT reference model per row"
        return 2, "one OUT reference model per row: each row is IN for half"

    def _check_params(self, n_samples):
        if self.n_population is not None and self.n_population > n_samples:
            raise ValueError(
                f"n_population={self.n_population} exceeds the {n_samples} rows "
                "the population is drawn from."
            )

    def _fit_test(self, phi, design, rng):
        p = expit(phi)
        out = np.where(~design, p, 0.0).sum(axis=0) / (~design).sum(axis=0)
        if self.online:
            inside = np.where(design, p, 0.0).sum(axis=0) / design.sum(axis=0)
            self.reference_probability_ = (inside + out) / 2.0
        else:
            a = self.offline_a
            self.reference_probability_ = ((1.0 + a) * out + 1.0 - a) / 2.0
        n = phi.shape[1]
        if self.n_population is None:
            self.population_ = np.arange(n)
        else:
            self.population_ = np.sort(rng.choice(n, self.n_population, replace=False))

    def _score(self, phi):
        log_ratio = log_expit(phi) - np.log(self.reference_probability_)
        z = np.sort(log_ratio[self.population_])
        # LR(x, z) > gamma  <=>  log ratio(z) < log ratio(x) - log gamma
        count = np.searchsorted(z, log_ratio - np.log(self.gamma), side="left")
        return count / z.size
