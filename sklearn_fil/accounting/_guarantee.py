"""The typed differential-privacy guarantee that estimators report."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings
from dataclasses import dataclass, field

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

    The warning is a :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`: the
    ε reported at such a δ is still what the accountant computes, but the
    pair no longer protects individuals (a mechanism that publishes one
    random example outright is (0, 1/n)-DP).

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

    Estimators that can report a guarantee expose one as ``guarantee_`` after
    ``fit``; their ``epsilon_`` and ``delta_`` read from it, and ``release()``
    carries it. Every guarantee states what it protects: the neighbouring
    relation (two data sets are neighbours when they differ by replacing one
    example, ``"replace_one"``, or by adding or removing one,
    ``"add_remove"``) and what is assumed public (at least the number of
    examples under ``"replace_one"``).

    Parameters
    ----------
    epsilon : float or None
        ε of the (ε, δ)-DP guarantee; None when there is no guarantee.
    delta : float or None
        Its δ.
    neighboring_relation : {"replace_one", "add_remove"} or None
        The relation under which ε holds.
    public : tuple of str
        What the guarantee assumes public (e.g. ``"n_samples"``,
        ``"sample_weight"``, ``"sample_rate"``), beyond the parameters.
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

    Examples
    --------
    >>> from sklearn_fil.accounting import Guarantee
    >>> Guarantee.none("the rows were not clipped").holds
    False
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

    def __str__(self):
        if not self.holds:
            return f"no differential-privacy guarantee: {self.reason}"
        relation = self.neighboring_relation.replace("_", "-")
        public = f"; public: {', '.join(self.public)}" if self.public else ""
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        return (
            f"({eps}, {self.delta:.3g})-DP under {relation}{public} "
            f"({self.mechanism}; {self.accountant})"
        )
