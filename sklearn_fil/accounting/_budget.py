"""A privacy budget across releases on the same data, and a model-selection guard."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sklearn_fil.accounting._events import (
    ACCOUNTANTS,
    ACCOUNTING_RELATIONS,
    DEFAULT_ACCOUNTANT,
    as_replace_one,
    gaussian_noise_multiplier,
    make_accountant,
    quiet_absl,
    smallest_noise,
)
from sklearn_fil.accounting._gaussian import gaussian_epsilon
from sklearn_fil.accounting._guarantee import _RELATIONS, Guarantee
from sklearn_fil.accounting._validation import (
    OPEN_UNIT,
    POSITIVE,
    StrOptions,
    validate_params,
)
from sklearn_fil.exceptions import BudgetExceededError

# cv_results_ metric names of within_budget's scorers.
SCORE, EPSILON, SPENT_AFTER = "score", "epsilon", "spent_after"


@dataclass(frozen=True)
class _Entry:
    """One release in a budget: its event and how to compose it."""

    label: str
    event: object
    event_relation: str
    group_size: int
    epsilon: float  # the release's own ε (at its own δ), NaN for a bare event
    delta: float
    mechanism: str


class PrivacyBudget:
    """A privacy budget for several releases on the same data.

    Each :meth:`spend` records a release (a fitted estimator, its
    :class:`Guarantee`, or a ``dp-accounting`` event) in a ledger, unless the
    composition of all releases with ``dp-accounting`` would exceed the budget.

    Parameters
    ----------
    epsilon : float
        The budget's ε, > 0.
    delta : float
        The budget's δ, in (0, 1): the composition's ε is computed at it.
    accountant : {"pld", "rdp"}, default="pld"
        ``"pld"``: dp-accounting's privacy loss distributions (tight; Gaussian
        mechanisms alone are composed exactly). ``"rdp"``: Rényi DP (looser).
    neighboring_relation : {"replace_one", "add_remove"}, default="replace_one"
        The relation of every guarantee composed.

    Attributes
    ----------
    spent : float
        ε of all releases so far, composed, at ``delta``; 0.0 before any.
    remaining : float
        ``epsilon - spent``: a headroom, not a budget for the next release
        (composition is not additive; ask :meth:`fits`).
    ledger : pandas.DataFrame
        One row per release: ``label``, the release's own ``epsilon`` and
        ``delta`` (NaN for a bare event), ``mechanism`` and ``spent``, the
        composed ε after it.

    See Also
    --------
    within_budget : Choose the best model in a grid search within the budget
        (the choice itself not charged).
    sklearn_fil.model_selection.PrivateSearchCV : A search whose choice is
        charged; spend it with ``accountant="rdp"``.
    Guarantee : What an estimator's ``guarantee_`` states.

    Notes
    -----
    Events are composed as ``dp-accounting`` reads them (see
    :class:`Guarantee`'s ``event_relation``); next to Poisson-sampled DP-SGD
    under replace-one, a Gaussian release's ``GaussianDpEvent(m)`` is
    composed as ``GaussianDpEvent(2 m)``, the same mechanism under
    dp-accounting's ``REPLACE_ONE``. A budget does not cover computations
    outside its releases (tuning on the same data, data-dependent
    preprocessing, the privacy reports).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.accounting import PrivacyBudget
    >>> from sklearn_fil.exceptions import BudgetExceededError
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> X = X / np.linalg.norm(X, axis=1).max()
    >>> budget = PrivacyBudget(epsilon=1.5, delta=1e-5)
    >>> model = OutputPerturbedLogisticRegression(
    ...     target_epsilon=1.0, lam=0.1, fit_intercept=False, data_norm=1.0,
    ...     delta=1e-5).fit(X, y)
    >>> round(budget.spend(model, label="first"), 3)
    1.0
    >>> round(budget.spend(model, label="second"), 3)
    1.465
    >>> try:
    ...     budget.spend(model, label="third")
    ... except BudgetExceededError as exc:
    ...     print("refused")
    refused
    >>> budget.ledger["label"].tolist()
    ['first', 'second']
    """

    @validate_params(
        {
            "epsilon": [POSITIVE],
            "delta": [OPEN_UNIT],
            "accountant": [StrOptions(set(ACCOUNTANTS))],
            "neighboring_relation": [StrOptions(set(_RELATIONS))],
        },
        prefer_skip_nested_validation=True,
    )
    def __init__(
        self,
        epsilon,
        delta,
        *,
        accountant=DEFAULT_ACCOUNTANT,
        neighboring_relation="replace_one",
    ):
        self._epsilon, self._delta = float(epsilon), float(delta)
        self._accountant = accountant
        self._relation = neighboring_relation
        self._entries = []
        self._spent = [0.0]  # composed ε after each prefix of the ledger
        self._cache = {}

    @property
    def epsilon(self):
        """The budget's ε."""
        return self._epsilon

    @property
    def delta(self):
        """The budget's δ."""
        return self._delta

    @property
    def accountant(self):
        """The accountant."""
        return self._accountant

    @property
    def neighboring_relation(self):
        """The relation of every guarantee composed."""
        return self._relation

    @property
    def spent(self):
        """ε of the releases so far, composed, at :attr:`delta`."""
        return self._spent[-1]

    @property
    def remaining(self):
        """``epsilon - spent`` (a headroom; composition is not additive)."""
        return self._epsilon - self.spent

    @property
    def ledger(self):
        """The releases so far, one row each, with the composed ε after it."""
        columns = ["label", "epsilon", "delta", "mechanism"]
        table = {c: [getattr(e, c) for e in self._entries] for c in columns}
        return pd.DataFrame(
            {**table, "spent": self._spent[1:]}, columns=[*columns, "spent"]
        )

    def __len__(self):
        return len(self._entries)

    def __repr__(self):
        return (
            f"PrivacyBudget(epsilon={self._epsilon:g}, delta={self._delta:g}, "
            f"accountant={self._accountant!r}, "
            f"neighboring_relation={self._relation!r}; {len(self)} release(s), "
            f"spent={self.spent:.4g})"
        )

    def epsilon_after(self, release, *, event_relation="add_remove"):
        """ε of the ledger composed with one more release, without recording it.

        Parameters
        ----------
        release : estimator, Guarantee or dp_accounting.DpEvent
            A fitted estimator with ``guarantee_``, a guarantee, or an event.
        event_relation : {"add_remove", "replace_one"}, default="add_remove"
            For a bare event only: the dp-accounting relation to compose it
            under (see :class:`Guarantee`'s ``event_relation``).

        Returns
        -------
        epsilon : float
            The composed ε at :attr:`delta`; ``inf`` for a release without a
            guarantee.
        """
        entry = self._entry(release, None, event_relation)
        if entry is None:
            return math.inf
        return self._compose(entry)

    def fits(self, release, *, event_relation="add_remove"):
        """Whether one more release stays within the budget.

        Parameters
        ----------
        release : estimator, Guarantee or dp_accounting.DpEvent
            As in :meth:`epsilon_after`.
        event_relation : {"add_remove", "replace_one"}, default="add_remove"
            As in :meth:`epsilon_after`.

        Returns
        -------
        fits : bool
            ``epsilon_after(release) <= epsilon``.
        """
        return self.epsilon_after(release, event_relation=event_relation) <= (
            self._epsilon
        )

    def spend(self, release, *, label=None, event_relation="add_remove"):
        """Record a release, unless it would exceed the budget.

        Parameters
        ----------
        release : estimator, Guarantee or dp_accounting.DpEvent
            As in :meth:`epsilon_after` (an estimator may be its ``release()``
            or a pipeline that ends in one).
        label : str, default=None
            Name of the release in :attr:`ledger`; by default the estimator's
            class name, or ``"release <i>"``.
        event_relation : {"add_remove", "replace_one"}, default="add_remove"
            As in :meth:`epsilon_after`.

        Returns
        -------
        spent : float
            The composed ε after this release, at :attr:`delta`.

        Raises
        ------
        BudgetExceededError
            When the composed ε would exceed :attr:`epsilon`, or the release
            has no guarantee. Nothing is recorded.
        ValueError
            When the guarantee is under another neighbouring relation or group
            size, or has no event to compose.
        """
        entry = self._entry(release, label, event_relation)
        if entry is None:
            reason = release_reason(release)
            raise BudgetExceededError(
                f"The release has no differential-privacy guarantee (infinite "
                f"epsilon), so it does not fit any budget: {reason}"
            )
        total = self._compose(entry)
        if not total <= self._epsilon:
            raise BudgetExceededError(
                f"Spending {entry.label!r} would bring the composed epsilon to "
                f"{total:.6g} at delta={self._delta:g}, above the budget's "
                f"epsilon={self._epsilon:g} (spent so far: {self.spent:.6g}). "
                "Nothing was recorded."
            )
        self._entries.append(entry)
        self._spent.append(total)
        return total

    def _entry(self, release, label, event_relation):
        """The ledger entry of a release (None: no guarantee), after checks."""
        guarantee = _as_guarantee(release)
        if label is None and guarantee is not None and guarantee is not release:
            label = type(_final_estimator(release)).__name__
        label = f"release {len(self._entries) + 1}" if label is None else str(label)
        if guarantee is None:  # a bare event
            if event_relation not in ACCOUNTING_RELATIONS:
                raise ValueError(
                    f"event_relation must be one of {ACCOUNTING_RELATIONS}, got "
                    f"event_relation={event_relation!r}."
                )
            entry = _Entry(
                label,
                release,
                event_relation,
                self._group_size(1),
                math.nan,
                math.nan,
                type(release).__name__,
            )
        elif not guarantee.holds:
            return None
        elif guarantee.neighboring_relation != self._relation:
            raise ValueError(
                "Cannot compose a guarantee under "
                f"{guarantee.neighboring_relation!r} with a budget under "
                f"{self._relation!r}: the two epsilons are about different pairs "
                "of neighbouring data sets. Use a budget of the same relation."
            )
        elif guarantee.dp_event is None:
            raise ValueError(
                "The guarantee has no dp_event, so it cannot be composed with "
                f"other releases: {guarantee}."
            )
        else:
            entry = _Entry(
                label,
                guarantee.dp_event,
                guarantee.event_relation,
                self._group_size(guarantee.group_size),
                float(guarantee.epsilon),
                float(guarantee.delta),
                guarantee.mechanism,
            )
        self._check_accountant(entry)
        return entry

    def _group_size(self, group_size):
        if self._entries and group_size != self._entries[0].group_size:
            raise ValueError(
                f"Cannot compose a guarantee for groups of {group_size} with "
                f"releases for groups of {self._entries[0].group_size}."
            )
        return group_size

    def _check_accountant(self, entry):
        if self._accountant == "rdp" and entry.event_relation == "replace_one":
            raise ValueError(
                "accountant='rdp' cannot compose Poisson-sampled DP-SGD under "
                "replace-one (dp-accounting's RDP accountant has no replace-one "
                "analysis of Poisson sampling). Use PrivacyBudget(..., "
                "accountant='pld')."
            )
        if self._accountant == "pld" and not make_accountant(
            "pld", entry.event_relation
        ).supports(entry.event):
            raise ValueError(
                f"accountant='pld' cannot compose {entry.label!r}: dp-accounting's "
                "PLD accountant has no analysis of its event (e.g. the private "
                "selection of PrivateSearchCV, a RepeatAndSelectDpEvent). Use "
                "PrivacyBudget(..., accountant='rdp')."
            )

    def _compose(self, extra):
        """ε of the ledger's events and ``extra``'s, composed, at δ."""
        entries = [*self._entries, extra]
        events = [e.event for e in entries]
        if self._accountant == "pld" and all(
            e.event_relation == "add_remove" for e in entries
        ):
            effective = [gaussian_noise_multiplier(ev) for ev in events]
            if all(m is not None for m in effective):
                # Gaussian mechanisms at unit distance: one with the summed
                # precision, exactly.
                if any(m == 0.0 for m in effective):
                    return math.inf
                precision = sum(1.0 / (m * m) for m in effective if math.isfinite(m))
                if precision == 0.0:
                    return 0.0
                return gaussian_epsilon(
                    sigma=1.0 / math.sqrt(precision), sensitivity=1.0, delta=self._delta
                )
        acc = self._ledger_accountant(entries)
        acc = copy.deepcopy(acc)
        with quiet_absl():
            acc.compose(self._converted(extra, entries))
            return float(acc.get_epsilon(self._delta))

    def _setting(self, entries):
        """The accounting relation and PLD grid noise of a set of entries."""
        relation = (
            "replace_one"
            if any(e.event_relation == "replace_one" for e in entries)
            else "add_remove"
        )
        noises = [smallest_noise(e.event) for e in entries]
        noises = [m for m in noises if m is not None and m > 0]
        grid = min(noises) if noises and self._accountant == "pld" else None
        return relation, grid

    def _converted(self, entry, entries):
        relation, _ = self._setting(entries)
        if relation == "replace_one" and entry.event_relation == "add_remove":
            return as_replace_one(entry.event)
        return entry.event

    def _ledger_accountant(self, entries):
        """An accountant with the recorded releases composed (cached)."""
        relation, grid = self._setting(entries)
        key = (relation, grid, len(self._entries))
        if key not in self._cache:
            self._cache.clear()
            acc = make_accountant(self._accountant, relation, grid)
            with quiet_absl():
                for entry in self._entries:
                    acc.compose(self._converted(entry, entries))
            self._cache[key] = acc
        return self._cache[key]

    def __getstate__(self):
        # a pickled budget (e.g. sent to grid-search workers) rebuilds its
        # accountant rather than carrying it
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state


def _final_estimator(estimator):
    """The last step of a (nested) pipeline, or the estimator itself."""
    from sklearn.pipeline import Pipeline

    while isinstance(estimator, Pipeline):
        estimator = estimator[-1]
    return estimator


def _as_guarantee(release):
    """The guarantee of a release; None for a bare dp-accounting event."""
    import dp_accounting

    if isinstance(release, Guarantee):
        return release
    if isinstance(release, dp_accounting.DpEvent):
        return None
    guarantee = getattr(_final_estimator(release), "guarantee_", None)
    if isinstance(guarantee, Guarantee):
        return guarantee
    raise TypeError(
        "A release must be a fitted estimator with guarantee_, a Guarantee or a "
        f"dp_accounting DpEvent; got {type(release).__name__}."
    )


def release_reason(release):
    """Why a release has no guarantee (for messages)."""
    guarantee = _as_guarantee(release)
    return guarantee.reason if guarantee is not None else ""


def _own_epsilon(estimator, X, y=None):
    """Scorer: the fitted candidate's ε (``inf`` without a guarantee)."""
    guarantee = getattr(_final_estimator(estimator), "guarantee_", None)
    if guarantee is None or not guarantee.holds:
        return math.inf
    return float(guarantee.epsilon)


class _SpentAfter:
    """Scorer: the budget's composed ε if the fitted candidate were released."""

    def __init__(self, budget):
        self.budget = budget

    def __call__(self, estimator, X, y=None):
        try:
            return float(self.budget.epsilon_after(estimator))
        except ValueError:  # another relation, no event: it cannot be spent
            return math.inf


class _Score:
    """Scorer: the estimator's own ``score``, or a scikit-learn scorer."""

    def __init__(self, scoring):
        self.scoring = scoring

    def __call__(self, estimator, X, y=None):
        if self.scoring is None:
            return estimator.score(X, y)
        from sklearn.metrics import check_scoring

        return check_scoring(estimator, scoring=self.scoring)(estimator, X, y)


class BudgetRefit:
    """The ``refit`` of a grid search that stays within a privacy budget.

    Made by :func:`within_budget`. It is the callable that picks a candidate,
    and compares equal to and hashes as ``"score"``, the key of the ranking
    scorer, because the search's own ``score`` looks its scorer up as
    ``scorer_[refit]`` (`scikit-learn#17058
    <https://github.com/scikit-learn/scikit-learn/issues/17058>`_).

    Parameters
    ----------
    budget : PrivacyBudget
        The budget the chosen model must fit in.
    scoring : str, callable or None
        How candidates are ranked (None: the estimator's ``score``).

    Attributes
    ----------
    budget : PrivacyBudget
        The budget.
    scoring : dict
        The scorers to pass as ``GridSearchCV(scoring=...)``: ``"score"``,
        ``"epsilon"`` (each fold model's own ε) and ``"spent_after"`` (the
        budget's composed ε if that fold model were released).
    """

    def __init__(self, budget, scoring=None):
        if not isinstance(budget, PrivacyBudget):
            raise TypeError(
                f"budget must be a PrivacyBudget, got {type(budget).__name__}."
            )
        self.budget = budget
        self._ranking = scoring
        self.scoring = {
            SCORE: _Score(scoring),
            EPSILON: _own_epsilon,
            SPENT_AFTER: _SpentAfter(budget),
        }

    # the key of the ranking scorer, for the search's scorer_[refit]
    def __eq__(self, other):
        return other == SCORE if isinstance(other, str) else NotImplemented

    def __hash__(self):
        return hash(SCORE)

    def __repr__(self):
        return f"within_budget({self.budget!r}, scoring={self._ranking!r})"

    def __call__(self, cv_results):
        """Index of the best candidate whose every fold model fits the budget.

        Parameters
        ----------
        cv_results : dict
            ``cv_results_`` of a search run with :attr:`scoring`.

        Returns
        -------
        best_index : int
            The candidate with the highest mean ``score`` among those whose
            ``spent_after`` is within the budget in every fold.

        Raises
        ------
        BudgetExceededError
            When no candidate fits.
        """
        prefix, suffix = "split", f"_test_{SPENT_AFTER}"
        columns = [
            key for key in cv_results if key.startswith(prefix) and key.endswith(suffix)
        ]
        if not columns:
            raise ValueError(
                "cv_results_ has no per-fold 'spent_after' score: run the search "
                "with scoring=<within_budget(...)>.scoring."
            )
        spent = np.column_stack([np.asarray(cv_results[c], float) for c in columns])
        worst = np.where(np.isnan(spent), np.inf, spent).max(axis=1)
        fits = worst <= self.budget.epsilon
        if not fits.any():
            raise BudgetExceededError(
                f"No candidate fits the budget (epsilon={self.budget.epsilon:g} at "
                f"delta={self.budget.delta:g}, spent {self.budget.spent:.4g}): "
                f"the smallest composed epsilon of a candidate is {worst.min():.4g}."
            )
        score = np.asarray(cv_results[f"mean_test_{SCORE}"], dtype=float)
        score = np.where(fits & ~np.isnan(score), score, -np.inf)
        return int(np.argmax(score))


def within_budget(budget, *, scoring=None):
    """A grid-search ``refit`` that picks the best model within a privacy budget.

    A plain search picks the most accurate candidate, usually the least private;
    this ``refit`` picks the best-scoring one among those that fit the budget.

    **Tuning with it is not private.** The search reads the private data for
    every candidate and fold, and its choice (``best_params_``,
    ``cv_results_``) is a function of that data that no ε counts: only the
    refitted model's own ε is spent. For a search whose selection is charged
    too, use :class:`~sklearn_fil.model_selection.PrivateSearchCV`.

    Parameters
    ----------
    budget : PrivacyBudget
        The budget; its releases so far count (the check composes with them).
    scoring : str, callable or None, default=None
        How to rank candidates (a scikit-learn scoring name or scorer); None
        uses the estimator's ``score``.

    Returns
    -------
    refit : BudgetRefit
        Pass it as ``refit=`` and its ``.scoring`` as ``scoring=``. It raises
        :class:`~sklearn_fil.exceptions.BudgetExceededError` when no candidate
        fits.

    Notes
    -----
    The check uses the fold models; the refit on all the data has its own ε:
    spend it (``budget.spend(search.best_estimator_)``). The search's choice
    itself is not covered by the budget, nor by any ε (see
    :ref:`choosing_parameters`); :class:`~sklearn_fil.model_selection.PrivateSearchCV`
    charges it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.accounting import PrivacyBudget, within_budget
    >>> X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    >>> X = X / np.linalg.norm(X, axis=1).max()
    >>> model = OutputPerturbedLogisticRegression(
    ...     lam=0.1, fit_intercept=False, data_norm=1.0, delta=1e-5, random_state=0)
    >>> budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    >>> refit = within_budget(budget)
    >>> search = GridSearchCV(model, {"sigma": [0.01, 0.1, 1.0]},
    ...                       scoring=refit.scoring, refit=refit).fit(X, y)
    >>> search.cv_results_["mean_test_epsilon"].round(2)
    array([69.46,  3.55,  0.28])
    >>> search.best_params_
    {'sigma': 1.0}
    >>> round(search.score(X, y), 2)  # the refitted model's score()
    0.79
    >>> round(budget.spend(search.best_estimator_), 2)
    0.22
    """
    return BudgetRefit(budget, scoring)
