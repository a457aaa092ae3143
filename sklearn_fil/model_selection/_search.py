"""A hyperparameter search whose selection is differentially private."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import time
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.model_selection import ParameterSampler
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state, get_tags
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_consistent_length, check_is_fitted

from sklearn_fil.accounting import Guarantee, check_delta
from sklearn_fil.exceptions import PrivacyLeakWarning
from sklearn_fil.model_selection._stopping import (
    calibrate,
    candidate_epsilon,
    dominated,
    draw_repetitions,
    search_event,
)
from sklearn_fil.utils._baseline import utility_warnings_ignored
from sklearn_fil.utils._fitted import fit_or_clear, unread_report_params
from sklearn_fil.utils._guarantee import GuaranteeMixin
from sklearn_fil.utils._sklearn_compat import Interval, StrOptions, _fit_context

# The validation part is a fixed public permutation of the positions (this
# seed), so the split depends on n only.
SPLIT_SEED = 0
# Parameters of the private step that the search sets on every candidate.
_SET_BY_SEARCH = ("target_epsilon", "delta")
MECHANISM = "private selection by random stopping (Papernot and Steinke 2022)"


def private_step(estimator):
    """``(final step, its parameter prefix)`` of a (nested) Pipeline."""
    prefix = ""
    while isinstance(estimator, Pipeline):
        name, estimator = estimator.steps[-1]
        prefix += f"{name}__"
    return estimator, prefix


def _generator(random_state):
    """A NumPy Generator: fresh OS entropy for None, else seeded from it."""
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, Integral):
        return np.random.default_rng(int(random_state))
    return np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))


def _draw(dists, rng):
    """One candidate, independently of the others (with replacement).

    A dict drawn uniformly from ``dists``, then each of its parameters: a
    list uniformly (so a grid uniformly), a distribution by its ``rvs``.
    """
    dist = dists[int(rng.integers(len(dists)))]
    params = {}
    for name in sorted(dist):
        values = dist[name]
        if hasattr(values, "rvs"):
            params[name] = values.rvs(random_state=rng)
        else:
            params[name] = values[int(rng.integers(len(values)))]
    return params


def _rows(A, index):
    return A.iloc[index] if hasattr(A, "iloc") else A[index]


def _estimator_has(attr):
    def check(self):
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, attr)
        return hasattr(self.estimator, attr)

    return check


def _published_prefix(estimator):
    """Names of the prefix steps a candidate fits on the private rows."""
    names = []
    while isinstance(estimator, Pipeline):
        *steps, (_, estimator) = estimator.steps
        names += [
            name
            for name, step in steps
            if step is not None
            and not (isinstance(step, str) and step == "passthrough")
            and type(step).__name__ != "FrozenEstimator"
        ]
    return names


class PrivateSearchCV(GuaranteeMixin, MetaEstimatorMixin, BaseEstimator):
    """Hyperparameter search with a differentially private selection.

    Private selection by random stopping (Papernot and Steinke 2022; Liu and
    Talwar 2019). The rows are split once into a training part and a
    validation part (a fixed permutation of the positions, public since it
    depends on ``n`` only). The search draws a number of repetitions ``K``
    from a truncated negative binomial distribution of mean ``n_iter`` and
    shape ``shape`` (``shape=0``: logarithmic, 1: geometric, ``inf``: Poisson),
    independently of the data. Each repetition draws a candidate from
    ``param_distributions`` (uniformly from lists, as
    :class:`~sklearn.model_selection.RandomizedSearchCV`), fits it on the
    training part with its own noise (``target_epsilon`` set by the search),
    and scores it on the validation part: a mean of per-example scores in
    ``[0, 1]`` (replace-one sensitivity ``1 / n_val``) plus Gaussian noise.
    The best noisy score wins; with ``refit=True`` its parameters are refitted
    on all rows, with noise of their own.

    The whole search is (``target_epsilon``, ``delta``)-DP under replace-one,
    ``n`` public: the event
    ``RepeatAndSelectDpEvent(ComposedDpEvent([model, score]), n_iter, shape)``
    composed with the refit's ``GaussianDpEvent``, by dp-accounting's RDP
    accountant. It is the ``guarantee_`` of the search and of
    ``best_estimator_`` (its private step), so that a
    :class:`~sklearn_fil.accounting.PrivacyBudget` spends the total whichever
    is given to it.

    Parameters
    ----------
    estimator : estimator object
        A sklearn-fil estimator with ``target_epsilon`` and ``delta``
        parameters whose guarantee is a Gaussian mechanism under replace-one
        (:class:`~sklearn_fil.OutputPerturbedLogisticRegression` with
        ``data_norm``, :class:`~sklearn_fil.DPSGDClassifier` with
        ``sampling="shuffle"``), or a :class:`~sklearn.pipeline.Pipeline`
        that ends in one.
    param_distributions : dict or list of dicts
        As :class:`~sklearn.model_selection.RandomizedSearchCV`'s: parameter
        names (with ``<step>__`` prefixes for a Pipeline) to lists, drawn
        uniformly, or to distributions with ``rvs``. A grid is the uniform
        distribution over it. Must not set the private step's
        ``target_epsilon`` or ``delta``: the search does.
    target_epsilon : float
        The ε of the whole search (candidates, selection and refit), > 0.
    delta : float, default=None
        Its δ; None means ``min(1e-5, 1 / (10 n))``. Candidates and the refit
        are fitted at this δ too.
    n_iter : float, default=10
        Expected number of repetitions ``K``, > 1.
    shape : float, default=1.0
        Shape ``η >= 0`` of the distribution of ``K``: 0 logarithmic, 1
        geometric, ``inf`` Poisson (``K = 0`` is then possible, and an
        error), in between a truncated negative binomial. Smaller shapes
        cost less ε at the same mean but stop after one repetition more
        often: at ``n_iter=10`` the geometric stops there with probability
        0.1, the logarithmic with 0.27 for about 15 to 20 % less ε.
    privacy_shares : tuple of 3 floats, default=(0.45, 0.1, 0.45)
        How the budget is split between each candidate's model, its noisy
        score and the refit: their Gaussian noise multipliers (noise over
        sensitivity) are ``c / sqrt(share)``, so that their precisions
        ``1 / m²``, which add up under composition, are in the ratio of the
        shares; ``c`` is calibrated so that the total ε is at most
        ``target_epsilon``. The refit's share is unused with ``refit=False``.
        By default the candidates and the refit get the same noise
        multiplier.
    validation_fraction : float, default=0.2
        Fraction of the rows in the validation part, in ``(0, 1)``.
    scoring : "accuracy", callable or None, default=None
        Per-example scores on the validation part: None and ``"accuracy"``
        score ``predict(X) == y`` (classifiers); a callable
        ``scoring(estimator, X, y)`` returns one value per row, clipped to
        ``[0, 1]`` by the search (a scikit-learn scorer, which returns one
        number, is refused: its sensitivity is unknown).
    refit : bool, default=True
        Refit the winning parameters on all rows (charged, composed). With
        False, ``best_estimator_`` is the winning repetition's model, fitted
        on the training part, at no extra ε (unlike
        :class:`~sklearn.model_selection.GridSearchCV`, which always refits
        when asked to pick a best estimator).
    random_state : int, RandomState instance or None, default=None
        Draws ``K``, the candidates, the score noise and the candidates'
        seeds. A fixed value makes all the noise reproducible, and so not
        private; with None the noise comes from fresh OS entropy.

    Attributes
    ----------
    best_estimator_ : estimator
        The refitted winner (``refit=True``) or the winning repetition's
        model; its private step's ``guarantee_`` is the search's.
    best_params_ : dict
        The winner's parameters.
    best_score_ : float
        The winner's noisy validation score.
    best_index_ : int
        Its row in ``cv_results_`` (sensitive, see Notes).
    cv_results_ : dict of ndarray
        One row per repetition run: ``params``, ``param_<name>``,
        ``mean_test_score`` (the noisy validation score), ``rank_test_score``,
        ``mean_fit_time``, ``mean_score_time``. Sensitive, see Notes.
    guarantee_ : Guarantee
        The search's (ε, δ)-DP guarantee, under replace-one. It has no
        ``group(k)`` (dp-accounting has no group analysis of random
        stopping).
    candidate_epsilon_ : float
        The ε (at ``delta``) each candidate was fitted at.
    score_noise_std_ : float
        Standard deviation of the noise on each validation score.
    refit_epsilon_ : float or None
        The refit's own ε at ``delta``; None without a refit.
    validation_indices_ : ndarray of int
        Positions of the validation rows (public: a function of ``n``).
    refit_time_ : float
        Seconds spent refitting (0 without a refit).

    See Also
    --------
    sklearn_fil.accounting.within_budget : A non-private search within a
        budget, whose choice is not charged.

    Notes
    -----
    What the guarantee covers is the search's output: ``best_estimator_``,
    ``best_params_`` and ``best_score_``. ``cv_results_`` and
    ``best_index_`` also reveal the number of repetitions and every
    candidate's noisy score, which ``RepeatAndSelectDpEvent`` does not
    cover (a known ``K`` makes the selection cost up to ``K`` times a
    repetition): they are sensitive, like a privacy report, and must not be
    published. A Pipeline's prefix is fitted on the private rows by every
    candidate and published with ``best_estimator_``, uncovered (a
    :class:`~sklearn.frozen.FrozenEstimator` prefix fitted on public data is
    not).

    Candidates skip the report columns nobody reads
    (``per_instance_accounting=False`` and ``fil_accounting=False`` where the
    estimator has them and ``param_distributions`` does not set them); the
    refit keeps the estimator's own settings.

    Every candidate (and the refit) is accounted as ``GaussianDpEvent(m)``,
    ``m`` its calibrated noise multiplier, whatever parameters it was drawn
    with: each must report a guarantee under replace-one whose event has at
    most that RDP at every order of the accountant (the search checks it
    after each fit; otherwise the fit stops with a ``ValueError`` and nothing
    is released). DP-SGD with Poisson
    sampling under replace-one has no RDP analysis in dp-accounting and is
    refused before any work.

    References
    ----------
    Papernot, N. and Steinke, T. "Hyperparameter tuning with Renyi
    differential privacy." ICLR 2022.

    Liu, J. and Talwar, K. "Private selection from private candidates."
    STOC 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.model_selection import PrivateSearchCV
    >>> X, y = make_classification(n_samples=2000, n_features=4, random_state=0)
    >>> X = X / np.linalg.norm(X, axis=1).max()
    >>> model = OutputPerturbedLogisticRegression(
    ...     data_norm=1.0, fit_intercept=False, lam=0.1)
    >>> search = PrivateSearchCV(
    ...     model, {"lam": [0.01, 0.1, 1.0]}, target_epsilon=2.0, delta=1e-5,
    ...     random_state=0).fit(X, y)
    >>> round(search.epsilon_, 3), search.guarantee_.neighboring_relation
    (2.0, 'replace_one')
    >>> search.best_estimator_.guarantee_ is search.guarantee_
    True
    >>> sorted(search.best_params_)
    ['lam']
    """

    _parameter_constraints: ClassVar[dict] = {
        "estimator": [HasMethods(["fit"])],
        "param_distributions": [dict, list],
        "target_epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
        "n_iter": [Interval(Real, 1, None, closed="neither")],
        "shape": [Interval(Real, 0, np.inf, closed="both")],
        "privacy_shares": [tuple, list],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "scoring": [None, StrOptions({"accuracy"}), callable],
        "refit": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        target_epsilon,
        delta=None,
        n_iter=10,
        shape=1.0,
        privacy_shares=(0.45, 0.1, 0.45),
        validation_fraction=0.2,
        scoring=None,
        refit=True,
        random_state=None,
    ):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.target_epsilon = target_epsilon
        self.delta = delta
        self.n_iter = n_iter
        self.shape = shape
        self.privacy_shares = privacy_shares
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.refit = refit
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Run the private search.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training data (raw rows for a Pipeline).
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : object
            The fitted search.
        """
        return fit_or_clear(self, self._fit, X, y)

    # -- checks, before any work ------------------------------------------------

    def _checked_data(self, X, y):
        if not (hasattr(X, "iloc") or sp.issparse(X)):
            X = np.asarray(X)
        y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
        check_consistent_length(X, y)
        return X, y

    def _check_estimator(self):
        final, prefix = private_step(self.estimator)
        params = final.get_params(deep=False)
        missing = [p for p in _SET_BY_SEARCH if p not in params]
        if missing:
            raise TypeError(
                f"PrivateSearchCV calibrates the noise of every candidate through "
                f"its {_SET_BY_SEARCH} parameters; {type(final).__name__} has no "
                f"{missing}. Use a sklearn-fil estimator such as "
                "OutputPerturbedLogisticRegression or DPSGDClassifier."
            )
        if "data_norm" in params and params["data_norm"] is None:
            raise ValueError(
                f"{type(final).__name__}(data_norm=None) has no differential-"
                "privacy guarantee to calibrate: set data_norm."
            )
        if params.get("sampling") == "poisson":
            raise ValueError(
                "DPSGDClassifier with sampling='poisson' under replace-one has no "
                "RDP analysis in dp-accounting, which the private selection "
                "needs (RepeatAndSelectDpEvent). Use sampling='shuffle'."
            )
        if self.scoring is None and not is_classifier(self.estimator):
            raise ValueError(
                "scoring=None scores accuracy, for classifiers; give a callable "
                "scoring(estimator, X, y) returning per-example scores in [0, 1]."
            )
        return prefix

    def _check_distributions(self, prefix):
        dists = self.param_distributions
        dists = [dists] if isinstance(dists, dict) else list(dists)
        ParameterSampler(self.param_distributions, n_iter=1)  # its own checks
        valid = self.estimator.get_params(deep=True)
        forbidden = {prefix + p for p in _SET_BY_SEARCH}
        for dist in dists:
            for name, values in dist.items():
                if name not in valid:
                    raise ValueError(
                        f"Invalid parameter {name!r} for {self.estimator!r}: "
                        f"valid parameters are {sorted(valid)}."
                    )
                if name in forbidden:
                    raise ValueError(
                        f"param_distributions sets {name!r}, which the search "
                        "calibrates from target_epsilon: remove it."
                    )
                if not hasattr(values, "rvs") and len(values) == 0:
                    raise ValueError(f"param_distributions[{name!r}] is empty.")

    def _checked_shares(self):
        shares = self.privacy_shares
        ok = len(shares) == 3 and all(
            isinstance(s, Real) and not isinstance(s, bool) and 0 < s < np.inf
            for s in shares
        )
        if not ok:
            raise ValueError(
                "privacy_shares must be 3 positive numbers (model, score, refit), "
                f"got {shares!r}."
            )
        return tuple(float(s) for s in shares)

    def _split(self, n):
        n_val = round(self.validation_fraction * n)
        if not 1 <= n_val <= n - 2:
            raise ValueError(
                f"validation_fraction={self.validation_fraction!r} of {n} rows "
                f"leaves {n_val} for validation and {n - n_val} for training; "
                "each part needs rows (validation at least 1, training 2)."
            )
        order = np.random.default_rng(SPLIT_SEED).permutation(n)
        return np.sort(order[n_val:]), np.sort(order[:n_val])

    # -- the search -------------------------------------------------------------

    def _fit(self, X, y):
        X, y = self._checked_data(X, y)
        prefix = self._check_estimator()
        self._check_distributions(prefix)
        shares = self._checked_shares()
        n = X.shape[0]
        train, val = self._split(n)
        delta = check_delta(self.delta, n)
        mean, shape = float(self.n_iter), float(self.shape)
        noise, epsilon = calibrate(
            float(self.target_epsilon), delta, shares, mean, shape, bool(self.refit)
        )
        leaked = _published_prefix(self.estimator)
        if leaked:
            warnings.warn(
                f"The pipeline's prefix {leaked} is fitted on the private rows and "
                "released with best_estimator_, outside the search's guarantee_. "
                "Fit it on public data and freeze it (sklearn.frozen."
                "FrozenEstimator) for the guarantee to cover the pipeline.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
        rng = _generator(self.random_state)
        k = draw_repetitions(rng, mean, shape)
        if k == 0:
            raise ValueError(
                f"The Poisson draw of the number of repetitions (mean {mean:g}) "
                "gave 0: no candidate was run and nothing is released (the draw "
                "does not depend on the data)."
            )
        fixed = {prefix + "target_epsilon": candidate_epsilon(noise[0], delta)}
        fixed[prefix + "delta"] = delta
        # report columns nobody reads in a candidate: skipped (the refit keeps them)
        unread = unread_report_params(private_step(self.estimator)[0], prefix)
        refit_epsilon = candidate_epsilon(noise[2], delta) if self.refit else None
        parts = (_rows(X, train), y[train], _rows(X, val), y[val])
        runs, best = self._repetitions(rng, k, {**unread, **fixed}, parts, noise)
        self._record(runs, best, noise, fixed[prefix + "target_epsilon"], val)
        guarantees = [best[1]]
        self.refit_time_ = 0.0
        if self.refit:
            fixed[prefix + "target_epsilon"] = self.refit_epsilon_ = refit_epsilon
            start = time.perf_counter()
            model = self._candidate(rng, self.best_params_, fixed).fit(X, y)
            self.refit_time_ = time.perf_counter() - start
            guarantees.append(_checked_guarantee(model, noise[2], "The refit"))
            self.best_estimator_ = model
        guarantee = self._guarantee(epsilon, delta, noise, guarantees)
        private_step(self.best_estimator_)[0].guarantee_ = guarantee
        self.guarantee_ = guarantee
        return self

    def _candidate(self, rng, params, fixed):
        """An unfitted candidate; seeded when the search is (reproducible)."""
        final, prefix = private_step(self.estimator)
        if self.random_state is not None and "random_state" in final.get_params():
            fixed = {**fixed, prefix + "random_state": int(rng.integers(2**31 - 1))}
        return clone(self.estimator).set_params(**{**fixed, **params})

    def _repetitions(self, rng, k, fixed, parts, noise):
        """Run ``k`` repetitions; ``(runs, (best model, its guarantee))``."""
        X_train, y_train, X_val, y_val = parts
        std = noise[1] / y_val.shape[0]
        dists = self.param_distributions
        dists = [dists] if isinstance(dists, dict) else list(dists)
        runs, best, best_score = [], None, -np.inf
        for _ in range(k):
            params = _draw(dists, rng)
            start = time.perf_counter()
            with utility_warnings_ignored():  # only the winner's utility is read
                model = self._candidate(rng, params, fixed).fit(X_train, y_train)
            fit_time = time.perf_counter() - start
            guarantee = _checked_guarantee(model, noise[0], "A candidate")
            score = self._validation_score(model, X_val, y_val) + rng.normal(0, std)
            score_time = time.perf_counter() - start - fit_time
            runs.append((params, score, fit_time, score_time))
            if score > best_score:
                best, best_score = (model, guarantee), score
        return runs, best

    def _validation_score(self, model, X, y):
        """Mean per-example score in [0, 1] (replace-one sensitivity 1 / n_val)."""
        if self.scoring is None or isinstance(self.scoring, str):
            values = np.asarray(model.predict(X)) == y
        else:
            values = np.asarray(self.scoring(model, X, y), dtype=np.float64)
            if values.shape != (y.shape[0],) or not np.all(np.isfinite(values)):
                raise ValueError(
                    "scoring must return one finite score per validation row, "
                    f"shape ({y.shape[0]},); got shape {values.shape}."
                )
        return float(np.clip(values.astype(np.float64), 0.0, 1.0).mean())

    def _record(self, runs, best, noise, candidate_eps, val):
        params = [run[0] for run in runs]
        scores = np.array([run[1] for run in runs])
        results = {
            "mean_fit_time": np.array([run[2] for run in runs]),
            "mean_score_time": np.array([run[3] for run in runs]),
        }
        for name in sorted({key for p in params for key in p}):
            column = np.ma.MaskedArray(np.empty(len(runs), dtype=object), mask=True)
            for i, p in enumerate(params):
                if name in p:
                    column[i] = p[name]
            results[f"param_{name}"] = column
        results["params"] = params
        results["mean_test_score"] = scores
        results["rank_test_score"] = rankdata(-scores, method="min").astype(np.int32)
        self.cv_results_ = results
        self.best_index_ = int(np.argmax(scores))
        self.best_params_ = copy.deepcopy(params[self.best_index_])
        self.best_score_ = float(scores[self.best_index_])
        self.best_estimator_ = best[0]
        self.candidate_epsilon_ = float(candidate_eps)
        self.score_noise_std_ = float(noise[1] / val.size)
        self.refit_epsilon_ = None
        self.validation_indices_ = val

    def _guarantee(self, epsilon, delta, noise, guarantees):
        public = ["n_samples"]
        for g in guarantees:
            public += [p for p in g.public if p not in public]
        refit = "; the winner refitted on all rows" if self.refit else ""
        return Guarantee(
            epsilon=float(epsilon),
            delta=float(delta),
            neighboring_relation="replace_one",
            public=tuple(public),
            mechanism=(
                f"{MECHANISM}: K ~ TNB(mean={float(self.n_iter):g}, "
                f"shape={float(self.shape):g}) candidates fitted on a training part, "
                f"scored on a validation part with Gaussian noise, the best kept"
                f"{refit}"
            ),
            accountant="RDP (dp-accounting RepeatAndSelectDpEvent)",
            dp_event=search_event(noise, float(self.n_iter), float(self.shape)),
            event_relation="add_remove",
        )

    # -- the winner's methods ---------------------------------------------------

    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with the winner, ``best_estimator_.predict(X)``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The winner's predictions.
        """
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the winner, ``best_estimator_.predict_proba(X)``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            The winner's probabilities, columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """The winner's ``best_estimator_.decision_function(X)``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray
            The winner's decision function.
        """
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    @available_if(_estimator_has("score"))
    def score(self, X, y):
        """The winner's ``best_estimator_.score(X, y)``.

        Not private: it reads ``X, y`` (no noise, no guarantee).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Rows to score.
        y : array-like of shape (n_samples,)
            Their targets.

        Returns
        -------
        score : float
            The winner's own score (accuracy for a classifier).
        """
        check_is_fitted(self)
        return self.best_estimator_.score(X, y)

    @property
    def classes_(self):
        """The winner's classes."""
        check_is_fitted(self)
        return self.best_estimator_.classes_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = copy.deepcopy(sub.classifier_tags)
        tags.regressor_tags = copy.deepcopy(sub.regressor_tags)
        tags.input_tags.sparse = sub.input_tags.sparse
        tags.target_tags.required = True
        return tags


def _checked_guarantee(model, noise_multiplier, what):
    """The guarantee of a fitted candidate, if the search's accounting covers it."""
    final = private_step(model)[0]
    g = getattr(final, "guarantee_", None)
    if not isinstance(g, Guarantee) or not g.holds:
        reason = getattr(g, "reason", "it reports no guarantee_")
        raise ValueError(f"{what} has no differential-privacy guarantee: {reason}")
    if (
        g.neighboring_relation != "replace_one"
        or g.event_relation != "add_remove"
        or g.group_size != 1
        or g.dp_event is None
        or not dominated(g.dp_event, noise_multiplier)
    ):
        raise ValueError(
            f"{what} reports {g}, which the search cannot account: it needs a "
            "guarantee under replace-one whose dp_event (read under add/remove) "
            "has at most the RDP of GaussianDpEvent("
            f"{noise_multiplier:.6g}) at every order."
        )
    return g
