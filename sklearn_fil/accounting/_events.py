"""dp-accounting events and accountants, built in one place.

Every epsilon reported through dp-accounting, every ``dp_event_``, every
calibration and every :class:`PrivacyBudget` goes through the functions here,
so the event that is composed is the event whose epsilon was reported. An
event is composed under an *accounting relation*, the dp-accounting
``NeighboringRelation`` given to the accountant:

* ``"add_remove"`` (``ADD_OR_REMOVE_ONE``): a ``GaussianDpEvent(m)`` is the
  Gaussian mechanism at unit distance with noise ``m``. A Gaussian release of
  sensitivity ``Δ`` (under the guarantee's relation) and noise ``sigma`` is
  ``GaussianDpEvent(sigma / Δ)``, read alike by both accountants.
* ``"replace_one"`` (``REPLACE_ONE``): only for Poisson-sampled DP-SGD under
  replace-one, which only the PLD accountant composes; there
  ``PoissonSampledDpEvent(q, GaussianDpEvent(m))`` compares ``(1 - q) N(0) + q
  N(-1)`` with ``(1 - q) N(0) + q N(+1)`` at noise ``m`` (two examples of norm at
  most 1). dp-accounting's PLD accountant reads a plain ``GaussianDpEvent(m)``
  under this relation as distance 2 (its RDP accountant as distance 1), so a
  unit-distance event composed here is rewritten as ``GaussianDpEvent(2 m)``
  (:func:`as_replace_one`).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import logging
import math
from contextlib import contextmanager

ACCOUNTING_RELATIONS = ("add_remove", "replace_one")
# The accountants of make_accountant: dp-accounting's privacy loss
# distributions (tight) and Renyi DP (looser, no replace-one analysis of
# Poisson sampling). The one default, also the DP-SGD functions' from 0.2.
ACCOUNTANTS = ("pld", "rdp")
DEFAULT_ACCOUNTANT = "pld"
# dp-accounting's default PLD grid.
_PLD_GRID = 1e-4
# Largest number of grid points over the span of one privacy loss.
_PLD_POINTS = 1e6


def dp_relation(relation):
    """dp-accounting's ``NeighboringRelation`` for an accounting relation."""
    import dp_accounting

    if relation == "add_remove":
        return dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    if relation == "replace_one":
        return dp_accounting.NeighboringRelation.REPLACE_ONE
    raise ValueError(
        f"relation must be one of {ACCOUNTING_RELATIONS}, got relation={relation!r}."
    )


def pld_grid(noise_multiplier):
    """The PLD discretisation interval for noise ``noise_multiplier`` (unit distance).

    The privacy loss of one step spans about ``4 / s^2 + 40 / s`` (``s`` the
    noise over the per-example bound); dp-accounting's default grid of 1e-4
    would need ``(4 / s^2) / 1e-4`` points, terabytes at ``s = 1e-3``. A
    coarser grid is still pessimistic (an upper bound on epsilon).
    """
    span = 4.0 / noise_multiplier**2 + 40.0 / noise_multiplier
    return max(_PLD_GRID, span / _PLD_POINTS)


def make_accountant(accountant, relation, noise_multiplier=None, coarsen=1.0):
    """A fresh dp-accounting accountant.

    Parameters
    ----------
    accountant : {"pld", "rdp"}
        One of :data:`ACCOUNTANTS`: privacy loss distributions or Renyi DP.
    relation : {"add_remove", "replace_one"}
        The accounting relation.
    noise_multiplier : float, default=None
        The smallest noise multiplier the accountant will compose (sets the PLD
        grid, :func:`pld_grid`); None gives dp-accounting's default grid.
    coarsen : float, default=1.0
        Factor on the PLD grid (a search can use a coarser, faster one).
    """
    import dp_accounting

    rel = dp_relation(relation)
    if accountant == "rdp":
        return dp_accounting.rdp.RdpAccountant(neighboring_relation=rel)
    if accountant != "pld":
        raise ValueError(
            f"accountant must be one of {ACCOUNTANTS}, got accountant={accountant!r}."
        )
    grid = _PLD_GRID if noise_multiplier is None else pld_grid(noise_multiplier)
    grid *= coarsen
    return dp_accounting.pld.PLDAccountant(
        neighboring_relation=rel, value_discretization_interval=grid
    )


@contextmanager
def quiet_absl():
    """Hide dp-accounting's per-order convergence notes (absl WARNINGs).

    At small noise the RDP of low fractional orders does not converge; the
    accountant then leaves those orders out of the minimum, which only costs
    tightness, and logs one line per order and call. Errors still show.
    """
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))
    try:
        yield
    finally:
        logger.setLevel(level)


def gaussian_event(sigma, sensitivity):
    """``GaussianDpEvent(sigma / sensitivity)``: one Gaussian release (add/remove)."""
    import dp_accounting

    return dp_accounting.GaussianDpEvent(float(sigma) / float(sensitivity))


def dpsgd_event(noise_multiplier, sample_rate, steps, relation):
    """The event of DP-SGD and the accounting relation to compose it under.

    ``noise_multiplier`` is the noise over the per-example norm bound.
    Poisson sampling (``sample_rate < 1``) is ``steps`` Poisson-subsampled
    Gaussian steps under ``relation``. Without sampling (``sample_rate = 1``:
    every example in every step, or one mechanism per epoch of shuffled
    batches) it is ``steps`` Gaussian mechanisms at unit distance under
    add/remove, the noise halved under replace-one (the step's sum moves by
    twice the bound).
    """
    import dp_accounting

    if sample_rate == 1.0:
        if relation == "replace_one":
            noise_multiplier = noise_multiplier / 2.0
        step = dp_accounting.GaussianDpEvent(noise_multiplier)
        relation = "add_remove"
    else:
        step = dp_accounting.PoissonSampledDpEvent(
            sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
        )
    return dp_accounting.SelfComposedDpEvent(step, int(steps)), relation


def _gaussian_terms(event, count=1):
    """``[(noise_multiplier, count), ...]`` of an event made of Gaussians only.

    None when the event holds anything else (sampling, another mechanism).
    """
    import dp_accounting

    if isinstance(event, dp_accounting.NoOpDpEvent):
        return []
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return [(float(event.noise_multiplier), count)]
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _gaussian_terms(event.event, count * int(event.count))
    if isinstance(event, dp_accounting.ComposedDpEvent):
        terms = []
        for sub in event.events:
            more = _gaussian_terms(sub, count)
            if more is None:
                return None
            terms.extend(more)
        return terms
    return None


def gaussian_noise_multiplier(event):
    """The one Gaussian mechanism (unit distance) equal to a composition of them.

    ``T`` Gaussian mechanisms of noise ``m_t`` at unit distance are one at
    noise ``(sum_t m_t^-2)^(-1/2)``: the privacy loss is Gaussian with mean
    and variance adding up. None when the event holds anything but Gaussian
    mechanisms; ``inf`` for an empty composition; 0 when one has no noise.
    """
    terms = _gaussian_terms(event)
    if terms is None:
        return None
    if any(m == 0.0 for m, _ in terms):
        return 0.0
    if len(terms) == 1:
        m, count = terms[0]
        return math.inf if count == 0 else m / math.sqrt(count)
    precision = sum(count / (m * m) for m, count in terms)
    return math.inf if precision == 0.0 else 1.0 / math.sqrt(precision)


def smallest_noise(event):
    """The smallest noise multiplier in an event (for the PLD grid), or None."""
    import dp_accounting

    if isinstance(event, dp_accounting.GaussianDpEvent):
        return float(event.noise_multiplier)
    inner = []
    if isinstance(
        event,
        dp_accounting.SelfComposedDpEvent | dp_accounting.PoissonSampledDpEvent,
    ):
        inner = [event.event]
    elif isinstance(event, dp_accounting.ComposedDpEvent):
        inner = list(event.events)
    values = [v for v in map(smallest_noise, inner) if v is not None]
    return min(values) if values else None


def _map_gaussians(event, noise, error, sampled=False):
    """``event`` with every ``GaussianDpEvent(m)`` made ``GaussianDpEvent(noise(m))``.

    Only plain Gaussians (composed or self-composed; with ``sampled``, also
    Poisson-sampled) can be rewritten; anything else raises
    ``ValueError(error.format(that event))``.
    """
    import dp_accounting

    def inner(e):
        return _map_gaussians(e, noise, error, sampled)

    if isinstance(event, dp_accounting.NoOpDpEvent):
        return event
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return dp_accounting.GaussianDpEvent(noise(event.noise_multiplier))
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return dp_accounting.SelfComposedDpEvent(inner(event.event), event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent([inner(e) for e in event.events])
    if sampled and isinstance(event, dp_accounting.PoissonSampledDpEvent):
        return dp_accounting.PoissonSampledDpEvent(
            event.sampling_probability, inner(event.event)
        )
    raise ValueError(error.format(event))


def as_replace_one(event):
    """A unit-distance (add/remove) event rewritten for a REPLACE_ONE PLD accountant.

    Each ``GaussianDpEvent(m)`` becomes ``GaussianDpEvent(2 m)`` (see the module
    docstring); a Poisson-sampled event raises ``ValueError``.
    """
    return _map_gaussians(
        event,
        lambda m: 2.0 * m,
        "The event {!r} is accounted under add/remove and cannot be composed "
        "with replace-one events: only Gaussian mechanisms at unit distance can.",
    )


def scale_gaussian_event(event, factor):
    """The same Gaussian-only mechanism at ``factor`` times the sensitivity."""
    return _map_gaussians(
        event,
        lambda m: m / factor,
        "Not a composition of Gaussian mechanisms: {!r}.",
    )


def scale_dp_event(event, factor):
    """The same mechanism with its sensitivity multiplied by ``factor``.

    Every ``GaussianDpEvent(m)`` becomes ``GaussianDpEvent(m / factor)``,
    through composition and Poisson sampling: the event of the same
    releases, steps and sampling with the per-example contribution (a
    statistic's sensitivity, DP-SGD's clipping bound) ``factor`` times as
    large. It is not the group-privacy event of ``factor`` examples under
    Poisson sampling.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        Made of Gaussian mechanisms, Poisson sampling and composition.
    factor : float
        The multiple of the sensitivity, > 0.

    Returns
    -------
    event : dp_accounting.DpEvent
        The scaled event.

    Raises
    ------
    ValueError
        When ``factor`` is not positive or the event holds another kind of
        mechanism.

    Examples
    --------
    >>> import dp_accounting
    >>> from sklearn_fil.accounting import scale_dp_event
    >>> step = dp_accounting.PoissonSampledDpEvent(
    ...     0.01, dp_accounting.GaussianDpEvent(1.0))
    >>> scale_dp_event(step, 2.0).event.noise_multiplier
    0.5
    """
    factor = float(factor)
    if not factor > 0.0:
        raise ValueError(f"factor must be > 0; got {factor!r}.")
    return _map_gaussians(
        event,
        lambda m: m / factor,
        "The event must be made of Gaussian mechanisms, Poisson sampling and "
        "composition (a sensitivity to scale); it holds {!r}.",
        sampled=True,
    )


def dp_event_epsilon(event, delta, *, event_relation="add_remove"):
    """ε at ``delta`` of a dp-accounting event, as sklearn-fil accounts it.

    A composition of Gaussian mechanisms is one Gaussian mechanism (exact,
    the analytic Gaussian ε; read at distance 2 under ``"replace_one"``, as
    dp-accounting's PLD accountant reads it); any other event goes to that
    accountant under ``event_relation``, on the grid sklearn-fil's DP-SGD
    accounting uses (pessimistic: ε from above).

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism, at unit distance (see the module's relations).
    delta : float
        In (0, 1).
    event_relation : {"add_remove", "replace_one"}, default="add_remove"
        The accounting relation the event is composed under (a
        :class:`~sklearn_fil.accounting.Guarantee`'s ``event_relation``).

    Returns
    -------
    epsilon : float
        ε at ``delta``, ``inf`` when a mechanism has no noise.

    Examples
    --------
    The event of DP-SGD has the ε of :func:`dpsgd_epsilon`:

    >>> from sklearn_fil.accounting import (
    ...     dp_event_epsilon, dpsgd_dp_event, dpsgd_epsilon)
    >>> settings = dict(noise_multiplier=1.0, sample_rate=0.01, steps=100)
    >>> event, relation = dpsgd_dp_event(**settings)
    >>> epsilon = dp_event_epsilon(event, 1e-5, event_relation=relation)
    >>> epsilon == dpsgd_epsilon(**settings, delta=1e-5, accountant="pld")
    True
    >>> round(epsilon, 2)
    0.72
    """
    from sklearn_fil.accounting._gaussian import gaussian_epsilon

    dp_relation(event_relation)  # validates it
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1); got {delta!r}.")
    effective = gaussian_noise_multiplier(event)
    if effective is not None:
        if event_relation == "replace_one":
            effective /= 2.0
        if effective == 0.0:
            return math.inf
        if math.isinf(effective):
            return 0.0
        return gaussian_epsilon(sigma=effective, sensitivity=1.0, delta=delta)
    accountant = make_accountant("pld", event_relation, smallest_noise(event))
    with quiet_absl():
        accountant.compose(event)
        return float(accountant.get_epsilon(delta))
