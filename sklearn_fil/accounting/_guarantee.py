"""The typed differential-privacy guarantee that estimators report."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings
from dataclasses import dataclass, field
from numbers import Integral

from sklearn_fil.exceptions import PrivacyLeakWarning

_RELATIONS = ("replace_one", "add_remove")


def default_delta(n_samples):
    """The default δ of every guarantee: ``min(1e-5, 1 / (10 n))``.

    Always below ``1 / n``: a δ of ``1 / n`` or more allows a mechanism that
    publishes one whole example at random to count as (0, δ)-DP.

    Parameters
    ----------
    n_samples : int
        Number of training examples (public under the neighbouring relation).

    Returns
    -------
    delta : float
        The default δ for ``n_samples`` examples.

    Examples
    --------
    >>> from sklearn_fil.accounting import default_delta
    >>> default_delta(4), default_delta(10**6)
    (1e-05, 1e-07)
    """
    return min(1e-5, 1.0 / (10.0 * n_samples))


def check_delta(delta, n_samples):
    """``delta``, or :func:`default_delta` when None; warns when δ ≥ 1/n.

    The warning is a :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`: such
    a pair no longer protects individuals.

    Parameters
    ----------
    delta : float or None
        The δ a user asked for.
    n_samples : int
        Number of training examples.

    Returns
    -------
    delta : float
        ``delta``, or the default for ``n_samples`` when it is None.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_fil.accounting import check_delta
    >>> check_delta(None, 1000)
    1e-05
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_delta(0.01, 1000)
    0.01
    >>> caught[0].category.__name__
    'PrivacyLeakWarning'
    """
    if delta is None:
        return default_delta(n_samples)
    if delta >= 1.0 / n_samples:
        warnings.warn(
            f"delta={delta:g} is at least 1/n = {1.0 / n_samples:g}: an "
            "(epsilon, delta) pair with delta >= 1/n allows publishing a whole "
            "example at random. Choose delta well below 1/n (the default is "
            f"{default_delta(n_samples):g}).",
            PrivacyLeakWarning,
            stacklevel=3,
        )
    return float(delta)


@dataclass(frozen=True)
class Guarantee:
    """A differential-privacy guarantee, or the reason there is none.

    Estimators expose one as ``guarantee_`` after ``fit`` (``epsilon_`` and
    ``delta_`` read from it). It states what it protects: the neighbouring
    relation and what is assumed public.

    Parameters
    ----------
    epsilon : float or None
        ε of the (ε, δ)-DP guarantee; None when there is no guarantee.
    delta : float or None
        Its δ.
    neighboring_relation : {"replace_one", "add_remove"} or None
        The relation under which ε holds: neighbouring data sets differ by
        replacing one example, or by adding or removing one.
    public : tuple of str
        What the guarantee assumes public beyond the parameters (e.g.
        ``"n_samples"``, at least, under ``"replace_one"``; ``"sample_weight"``,
        ``"sample_rate"``).
    mechanism : str
        The randomised mechanism, in words.
    accountant : str or None
        How ε was computed from the mechanism.
    sensitivity : float or None
        The largest change of the noised quantity between neighbouring data
        sets (L2 norm), in the units of ``noise_std``.
    noise_std : float or None
        Standard deviation of the Gaussian noise, in the same units.
    weights_public : bool
        Whether the sample weights are assumed public and fixed per row.
    reason : str or None
        Why there is no guarantee; None when it holds.
    dp_event : dp_accounting.DpEvent or None
        The mechanism as a ``dp-accounting`` event, to compose with other
        releases (:class:`PrivacyBudget`); None when there is no guarantee or
        no event describes it.
    event_relation : {"add_remove", "replace_one"} or None
        The dp-accounting ``NeighboringRelation`` to compose ``dp_event``
        under. ``"add_remove"``: the mechanism at unit distance, its
        sensitivity folded into the noise multiplier
        (``GaussianDpEvent(noise_std / sensitivity)``), whatever the
        guarantee's ``neighboring_relation``. ``"replace_one"``:
        Poisson-sampled DP-SGD under replace-one (PLD accountant only).
    group_size : int
        The number of examples protected together (:meth:`group`).

    Examples
    --------
    >>> from sklearn_fil.accounting import Guarantee
    >>> Guarantee.none("the rows were not clipped").holds
    False
    >>> g = Guarantee(epsilon=1.0, delta=1e-5, neighboring_relation="replace_one",
    ...               mechanism="Gaussian noise", accountant="exact")
    >>> print(g)
    (1, 1e-05)-DP under replace-one (Gaussian noise; exact)
    """

    epsilon: float | None = None
    delta: float | None = None
    neighboring_relation: str | None = None
    public: tuple[str, ...] = field(default_factory=tuple)
    mechanism: str = ""
    accountant: str | None = None
    sensitivity: float | None = None
    noise_std: float | None = None
    weights_public: bool = False
    reason: str | None = None
    dp_event: object = None
    event_relation: str | None = None
    group_size: int = 1

    def __post_init__(self):
        if self.reason is None:
            if self.neighboring_relation not in _RELATIONS:
                raise ValueError(
                    f"neighboring_relation must be one of {_RELATIONS}, got "
                    f"{self.neighboring_relation!r}."
                )
            if self.epsilon is None or not self.epsilon >= 0:
                raise ValueError(f"A guarantee needs epsilon >= 0, got {self.epsilon}.")
            if self.delta is None or not 0 <= self.delta < 1:
                raise ValueError(f"A guarantee needs 0 <= delta < 1, got {self.delta}.")
        if self.dp_event is not None and self.event_relation not in _RELATIONS:
            raise ValueError(
                f"A dp_event needs event_relation in {_RELATIONS}, got "
                f"{self.event_relation!r}."
            )
        if not (isinstance(self.group_size, int) and self.group_size >= 1):
            raise ValueError(
                f"group_size must be an integer >= 1, got {self.group_size!r}."
            )

    @classmethod
    def none(cls, reason, **metadata):
        """No guarantee, with the reason (and optional metadata)."""
        if not reason:
            raise ValueError("A missing guarantee needs a reason.")
        return cls(reason=reason, **metadata)

    @property
    def holds(self):
        """Whether ε is a guarantee (finite or not)."""
        return self.reason is None

    def group(self, k):
        """The guarantee for groups of ``k`` examples (a user with ``k`` rows).

        Two data sets that differ in ``k`` examples (by the guarantee's
        relation) are joined by a chain of ``k`` neighbours; the δ stays the
        guarantee's.

        * A Gaussian mechanism (output perturbation, DP-SGD without sampling)
          moves by at most ``k`` times its sensitivity along the chain: its ε
          is exactly the analytic Gaussian mechanism's at sensitivity ``k Δ``,
          its event the same one with its noise multipliers divided by ``k``.
        * Poisson-sampled DP-SGD: if it is (ε₁, δ₁)-DP, the chain gives (k ε₁,
          δ₁ (e^{k ε₁} - 1) / (e^{ε₁} - 1))-DP, at the largest δ₁ on the
          event's PLD curve that keeps that δ at most the guarantee's. No
          event describes the result (``dp_event`` is None).

        Parameters
        ----------
        k : int
            Group size, >= 1.

        Returns
        -------
        guarantee : Guarantee
            The group guarantee (``group_size`` multiplied by ``k``); this
            guarantee itself for ``k = 1``, and the same missing guarantee
            when there is none.

        References
        ----------
        Dwork, C. and Roth, A. "The algorithmic foundations of differential
        privacy." 2014, Theorem 2.2.

        Vadhan, S. "The complexity of differential privacy." 2017, Lemma 2.2.

        Examples
        --------
        >>> from sklearn_fil.accounting import Guarantee, gaussian_epsilon
        >>> from sklearn_fil.accounting._events import gaussian_event
        >>> g = Guarantee(
        ...     epsilon=gaussian_epsilon(sigma=1.0, sensitivity=0.5, delta=1e-5),
        ...     delta=1e-5, neighboring_relation="replace_one", sensitivity=0.5,
        ...     noise_std=1.0, dp_event=gaussian_event(1.0, 0.5),
        ...     event_relation="add_remove")
        >>> g3 = g.group(3)
        >>> g3.group_size, g3.sensitivity
        (3, 1.5)
        >>> g3.epsilon == gaussian_epsilon(sigma=1.0, sensitivity=1.5, delta=1e-5)
        True
        """
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got k={k!r}.")
        k = int(k)
        if k == 1 or not self.holds:
            return self
        if self.dp_event is None:
            raise ValueError(
                "This guarantee has no dp_event, the mechanism the group "
                "guarantee is derived from."
            )
        from sklearn_fil.accounting._group import group_guarantee

        return group_guarantee(self, k)

    def __str__(self):
        if not self.holds:
            return f"no differential-privacy guarantee: {self.reason}"
        relation = self.neighboring_relation.replace("_", "-")
        if self.group_size > 1:
            relation += f" of groups of {self.group_size}"
        public = f"; public: {', '.join(self.public)}" if self.public else ""
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        return (
            f"({eps}, {self.delta:.3g})-DP under {relation}{public} "
            f"({self.mechanism}; {self.accountant})"
        )
