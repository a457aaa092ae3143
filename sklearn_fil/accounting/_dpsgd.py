"""Privacy accounting for DP-SGD.

Each step of DP-SGD Poisson-samples every example with probability ``sample_rate``,
clips each per-example gradient to norm at most ``max_grad_norm`` (``C``), sums them and
adds ``N(0, (noise_multiplier C)^2 I)``: a Poisson-subsampled Gaussian mechanism.
Norms and sensitivities here are in units of ``C``. The functions below give the
epsilon of the whole run (:func:`dpsgd_epsilon`), the epsilon of each example from its
own gradient norms (:class:`PerInstanceAccountant`, Yu et al. 2022), the largest norm
left by GELU clipping (:func:`gelu_clip_max_norm`) and the subsampling factor of the
Fisher information loss accounting of Guo et al. 2022
(:func:`fil_subsampling_factor`).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings
from functools import lru_cache
from numbers import Real

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaln, logsumexp, ndtr, ndtri

from sklearn_fil.accounting._dpsgd_histogram import (
    MAX_STEPS,
    READ_BLOCK,
    LevelHistograms,
    check_norms,
)
from sklearn_fil.accounting._events import (
    ACCOUNTANTS,
    ACCOUNTING_RELATIONS,
    DEFAULT_ACCOUNTANT,
    dpsgd_event,
    gaussian_noise_multiplier,
    make_accountant,
    quiet_absl,
    smallest_noise,
)
from sklearn_fil.accounting._gaussian import gaussian_epsilon, gaussian_sigma
from sklearn_fil.accounting._validation import (
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    Hidden,
    Number,
    StrOptions,
    count,
    validate_params,
)

# The constraints of the DP-SGD functions' parameters (validate_params).
_SAMPLE_RATE = Number(Real, 0, 1, closed="right")
_RELATION = [StrOptions(set(ACCOUNTING_RELATIONS))]
# "warn": not given, the deprecated default "rdp" with a FutureWarning.
_ACCOUNTANT = [StrOptions(set(ACCOUNTANTS)), Hidden(StrOptions({"warn"}))]
_DPSGD = {
    "noise_multiplier": [NONNEGATIVE],
    "sample_rate": [_SAMPLE_RATE],
    "sensitivity": [POSITIVE],
}
# Bracket of the maximiser of u / (GELU(u - 1) + 1): the derivative's sign changes
# once, from + at u = 0 to - at u = 3 (the map decreases to 1 beyond).
_GELU_BRACKET = (0.0, 3.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


# --------------------------------------------------------------------------------------
# dp-accounting, imported on first use (it pulls in much of SciPy; see
# ``_gaussian._gaussian_privacy_loss``).


def _poisson_gaussian_rdp(sample_rate, noise_multiplier, orders):
    """RDP at ``orders`` of the Poisson-subsampled Gaussian mechanism.

    ``noise_multiplier`` is the noise standard deviation over the sensitivity.
    Cached: a per-instance accountant needs one vector per norm level (about
    25 ms each), and refits with the same settings need the same ones.
    """
    return _poisson_gaussian_rdp_cached(
        float(sample_rate), float(noise_multiplier), tuple(np.asarray(orders).tolist())
    ).copy()


@lru_cache(maxsize=4096)
def _poisson_gaussian_rdp_cached(sample_rate, noise_multiplier, orders):
    # one step composed by dp-accounting's RdpAccountant, read at every order
    import dp_accounting

    step = dp_accounting.PoissonSampledDpEvent(
        sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
    )
    accountant = dp_accounting.rdp.RdpAccountant(orders=orders)
    return np.asarray(accountant.compose(step).rdp, dtype=np.float64)


def _poisson_gaussian_rdp_integer(sample_rate, noise_multipliers, orders):
    """:func:`_poisson_gaussian_rdp` at integer orders, for many noise levels.

    The binomial expansion of Mironov, Talwar & Zhang (2019, section 3.3) that
    ``dp_accounting`` evaluates term by term in Python, as log-sum-exps:
    ``log A_a = logsumexp_k [log C(a, k) + k log q + (a - k) log(1 - q) + (k^2 -
    k) / (2 sigma^2)]`` and ``RDP_a = log A_a / (a - 1)``, for ``0 < q < 1`` and
    ``sigma > 0``. The terms without ``sigma`` are computed once per ``(q,
    orders)``, grouped by order size so that an order ``a`` costs ``a + 1``
    terms. Equal to dp-accounting's value to rounding (1e-10 relative, tested).

    dp-accounting's public path (one ``RdpAccountant`` per noise level,
    :func:`_poisson_gaussian_rdp`) gives the same numbers about 100 times
    more slowly: the 112 levels of GELU clipping at ``precision=0.01``, at
    the 66 integer orders of a DP-SGD fit, took 4.6 s there against 45 ms
    here (``q = 0.01``, 2-core VM): seconds per fit of the per-instance ε.

    Returns
    -------
    rdp : ndarray of shape (n_levels, n_orders)
        One row per noise multiplier (a scalar gives one row).
    """
    orders = np.asarray(orders, dtype=np.float64)
    inv = 1.0 / (2.0 * np.atleast_1d(np.asarray(noise_multipliers, float)) ** 2)
    out = np.empty((inv.size, orders.size))
    for columns, base, k in _binomial_log_terms(
        float(sample_rate), tuple(orders.tolist())
    ):
        terms = base[None] + inv[:, None, None] * (k * k - k)
        out[:, columns] = logsumexp(terms, axis=2) / (orders[columns] - 1.0)
    return out


@lru_cache(maxsize=64)
def _binomial_log_terms(sample_rate, orders):
    """``log C(a, k) + k log q + (a - k) log(1 - q)`` by groups of orders.

    Orders are grouped by ``ceil(log2(a))``; each group's terms run to its
    largest order, ``-inf`` beyond each order's own ``a``.
    """
    orders = np.asarray(orders)
    groups = []
    for key in np.unique(np.ceil(np.log2(orders))):
        columns = np.flatnonzero(np.ceil(np.log2(orders)) == key)
        a = orders[columns][:, None]
        k = np.arange(int(a.max()) + 1, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            base = (
                gammaln(a + 1.0)
                - gammaln(k + 1.0)
                - gammaln(a - k + 1.0)
                + k * math.log(sample_rate)
                + (a - k) * math.log1p(-sample_rate)
            )
        base = np.where(k <= a, base, -np.inf)
        base.setflags(write=False)
        groups.append((columns, base, k))
    return tuple(groups)


def _rdp_to_epsilon_rows(orders, rdp, delta):
    """Epsilon at ``delta`` of every row of RDP values, minimised over ``orders``.

    The conversion of ``dp_accounting.rdp.compute_epsilon`` (Canonne, Kamath &
    Steinke 2020, Proposition 12), which ``RdpAccountant.get_epsilon`` uses,
    vectorised over rows (examples; columns are orders) with its branches kept:
    a negative RDP or one below the KL bound gives 0, orders up to 1.01 give no
    bound. Tested equal to ``compute_epsilon`` row by row, which is about 100
    times slower for the per-instance ε of many examples (a Python loop over
    the orders of each row: 20,000 examples at 66 orders took 1.9 s there
    against 17 ms here, 2-core VM).
    """
    orders = np.asarray(orders, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = rdp + np.log1p(-1.0 / orders) - np.log(delta * orders) / (orders - 1.0)
    eps = np.where(orders > 1.01, eps, np.inf)
    # delta^2 + expm1(-rdp) > 0 (the KL bound) is rdp < -log1p(-delta^2)
    eps = np.where((rdp < 0) | (rdp < -math.log1p(-(delta**2))), 0.0, eps)
    return np.maximum(eps.min(axis=1), 0.0)


def _default_rdp_orders():
    """The orders ``RdpAccountant`` uses when given none."""
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    return np.array(DEFAULT_RDP_ORDERS, dtype=np.float64)


# A pure function of hashable numbers, and slow (a PLD of Poisson sampling
# under replace-one takes most of a second): every fit of an estimator with
# the same settings reports the same epsilon, so an audit's thousands of
# releases compute it once per process.
@lru_cache(maxsize=256)
def _accountant_epsilon(
    accountant, noise_multiplier, sample_rate, steps, delta, relation="add_remove"
):
    """Epsilon of ``steps`` self-composed Poisson-subsampled Gaussian steps.

    ``noise_multiplier`` is the noise over the per-example norm bound. The
    event is :func:`~sklearn_fil.accounting._events.dpsgd_event`'s, composed
    by a fresh accountant of :func:`~sklearn_fil.accounting._events.
    make_accountant`. Under ``relation="replace_one"`` dp-accounting's
    ``REPLACE_ONE`` compares ``(1 - q) N(0) + q N(-1)`` with ``(1 - q) N(0) +
    q N(+1)`` (in units of that bound): two examples of norm at most 1 in
    opposite directions, distance 2 when both are sampled. With
    ``sample_rate=1`` this is the Gaussian mechanism at distance 2, composed
    as ``GaussianDpEvent(noise_multiplier / 2)`` under add-or-remove (unit
    distance): the same mechanism, and a form both accountants support
    (dp-accounting's RDP accountant ignores the relation for a plain
    ``GaussianDpEvent``).
    """
    event, event_relation = dpsgd_event(noise_multiplier, sample_rate, steps, relation)
    if accountant == "pld":
        effective = gaussian_noise_multiplier(event)
        if effective is not None:
            # T Gaussian mechanisms at unit distance are one at noise sigma /
            # sqrt(T): the exact epsilon, which the PLD only approaches from
            # above.
            return gaussian_epsilon(sigma=effective, sensitivity=1.0, delta=delta)
    acc = make_accountant(accountant, event_relation, smallest_noise(event))
    with quiet_absl():
        acc.compose(event)
        return float(acc.get_epsilon(delta))


# --------------------------------------------------------------------------------------
# validation


def _deprecated_default(accountant, caller):
    """``accountant``, or ``"rdp"`` with a FutureWarning when it was not given."""
    if accountant != "warn":
        return accountant
    warnings.warn(
        f"The default accountant of {caller} will change from 'rdp' to "
        f"{DEFAULT_ACCOUNTANT!r}, the default of DPSGDClassifier and "
        "PrivacyBudget, in sklearn-fil 0.2. Pass accountant='rdp' to keep the "
        "result of this version, or accountant='pld', to silence this warning.",
        FutureWarning,
        stacklevel=4,
    )
    return "rdp"


def _check_replace_one(accountant, neighboring_relation, sample_rate):
    """Raise where ``accountant`` cannot account ``neighboring_relation``."""
    if (
        neighboring_relation == "replace_one"
        and accountant == "rdp"
        and (0.0 < sample_rate < 1.0)
    ):
        raise ValueError(
            "accountant='rdp' cannot account Poisson sampling under "
            "neighboring_relation='replace_one': dp-accounting's RDP accountant "
            "has no replace-one analysis of the Poisson-subsampled Gaussian. "
            "Use accountant='pld' (dp-accounting's REPLACE_ONE privacy loss "
            "distribution), or neighboring_relation='add_remove' with a "
            "public number of examples."
        )


_INDICES_MSG = "indices must be a 1-D array of distinct example indices in [0, {})."


def _check_orders(orders):
    """Return ``orders`` as a 1-D float64 array of finite orders > 1."""
    if orders is None:
        return _default_rdp_orders()
    try:
        array = np.asarray(orders, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"orders must be a 1-D array of real numbers > 1, got orders={orders!r}."
        ) from exc
    if array.ndim != 1 or array.size == 0:
        raise ValueError(
            f"orders must be a non-empty 1-D array, got an array of shape "
            f"{array.shape}."
        )
    bad = ~np.isfinite(array) | (array <= 1.0)
    if np.any(bad):
        first = float(array[bad][0])
        raise ValueError(
            f"orders must be finite and > 1, got an order equal to {first!r}."
        )
    return array


def _ceil_multiple(x, step):
    """Smallest integers ``k`` with ``k * step >= x`` in floating point.

    ``np.ceil(x / step)`` alone can overshoot by one (``0.07 / 0.01`` is
    ``7.000000000000001``) or, in principle, undershoot; both are corrected so that
    ``(k - 1) * step < x <= k * step`` holds as computed.
    """
    k = np.ceil(np.asarray(x, dtype=np.float64) / step)
    k = np.where((k >= 1) & ((k - 1) * step >= x), k - 1, k)
    k = np.where(k * step < x, k + 1, k)
    return k


# --------------------------------------------------------------------------------------
# GELU clipping


def _gelu_clip_norm(u):
    """Norm ``u / (GELU(u - 1) + 1)`` of a GELU-clipped vector of norm ``u``."""
    x = u - 1.0
    return u / (x * ndtr(x) + 1.0)


def _gelu_clip_norm_slope_sign(u):
    """A function with the sign of the derivative of :func:`_gelu_clip_norm`.

    With ``D(u) = GELU(u - 1) + 1`` and ``GELU'(x) = Phi(x) + x phi(x)``, the
    derivative of ``u / D(u)`` is ``(D(u) - u GELU'(u - 1)) / D(u)^2``; this returns
    the numerator.
    """
    x = u - 1.0
    cdf = ndtr(x)
    pdf = math.exp(-0.5 * x * x) / _SQRT_2PI
    return x * cdf + 1.0 - u * (cdf + x * pdf)


@lru_cache(maxsize=1)
def _gelu_unit_max():
    """``max_{u >= 0} u / (GELU(u - 1) + 1)``, by a root of the derivative."""
    u_star = brentq(
        _gelu_clip_norm_slope_sign,
        *_GELU_BRACKET,
        xtol=1e-15,
        rtol=4 * np.finfo(np.float64).eps,
        maxiter=200,
    )
    return float(_gelu_clip_norm(u_star))


@validate_params({"max_grad_norm": [POSITIVE]}, prefer_skip_nested_validation=True)
def gelu_clip_max_norm(max_grad_norm=1.0):
    """Largest norm of a gradient smoothed by GELU clipping.

    GELU clipping (Guo et al. 2022, section 6.2) rescales a gradient ``g`` to
    ``g / (GELU(||g|| / C - 1) + 1)`` with ``C = max_grad_norm`` and
    ``GELU(x) = x Phi(x)``, a smooth stand-in for hard clipping
    ``g / max(1, ||g|| / C)``. Unlike hard clipping it can leave a norm slightly above
    ``C``; this returns the exact bound, the L2 sensitivity of a sum of GELU-clipped
    gradients under adding or removing one example.

    Parameters
    ----------
    max_grad_norm : float, default=1.0
        Clipping threshold ``C`` > 0.

    Returns
    -------
    max_norm : float
        ``C * max_{u >= 0} u / (GELU(u - 1) + 1)``, about ``1.1152 C``.

    See Also
    --------
    dpsgd_epsilon : Takes this (in units of ``C``) as its ``sensitivity``.

    Notes
    -----
    The map ``u -> u / (GELU(u - 1) + 1)`` rises from 0, peaks near ``u = 1.549`` and
    decreases to 1 as ``u -> inf``. The peak is found as the root of its derivative
    with :func:`scipy.optimize.brentq` (to a few ulps), then evaluated, so the
    result is accurate to about ``1e-15`` relative. Guo et al. (2022) round it to
    1.115.

    References
    ----------
    Guo, C., Karrer, B., Chaudhuri, K. and van der Maaten, L. "Bounding training data
    reconstruction in private (deep) learning." ICML 2022, section 6.2.

    Hendrycks, D. and Gimpel, K. "Gaussian error linear units (GELUs)."
    arXiv:1606.08415, 2016.

    Examples
    --------
    >>> from sklearn_fil.accounting import gelu_clip_max_norm
    >>> round(gelu_clip_max_norm(), 6)
    1.115219
    >>> round(gelu_clip_max_norm(2.0), 6)
    2.230438
    """
    return float(max_grad_norm) * _gelu_unit_max()


# --------------------------------------------------------------------------------------
# global accounting


@validate_params(
    {
        **_DPSGD,
        "steps": [count(0)],
        "delta": [OPEN_UNIT],
        "accountant": _ACCOUNTANT,
        "neighboring_relation": _RELATION,
    },
    prefer_skip_nested_validation=True,
)
def dpsgd_epsilon(
    *,
    noise_multiplier,
    sample_rate,
    steps,
    delta,
    sensitivity=1.0,
    accountant="warn",
    neighboring_relation="add_remove",
):
    """Epsilon of DP-SGD after a number of Poisson-subsampled Gaussian steps.

    Each step releases the sum of the sampled examples' clipped gradients plus
    ``N(0, (noise_multiplier C)^2 I)``, every example being sampled independently with
    probability ``sample_rate``. With per-example norms at most ``sensitivity C``, the
    step is the Poisson-subsampled Gaussian mechanism with noise multiplier
    ``noise_multiplier / sensitivity``; ``steps`` of them are composed by
    ``dp_accounting``'s ``RdpAccountant`` or ``PLDAccountant`` under the
    neighbouring relation given.

    Under ``"add_remove"`` one step's sum moves by at most ``sensitivity C``
    (the example is in it or not). Under ``"replace_one"`` (``n`` public, one
    example swapped for another) it moves by up to ``2 sensitivity C`` when the
    example is sampled: the two examples' clipped gradients may point in
    opposite directions. The Poisson case is dp-accounting's ``REPLACE_ONE``
    privacy loss distribution, which compares ``(1 - q) N(0, s^2) + q N(-1, s^2)``
    with ``(1 - q) N(0, s^2) + q N(1, s^2)``, ``s = noise_multiplier /
    sensitivity`` (checked in the tests: at ``q = 1`` it is the Gaussian
    mechanism at distance 2). ``sample_rate=1`` is accounted as the Gaussian
    mechanism at distance ``2 sensitivity`` (replace-one) or ``sensitivity``.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation in units of the clipping bound ``C``, >= 0. Zero
        gives ``inf``.
    sample_rate : float
        Probability ``q`` with which each example is sampled at each step, in
        (0, 1]. ``1.0`` means no subsampling (every example in every step; use it
        for shuffled batches, which get no amplification here).
    steps : int
        Number of steps, >= 0. Zero steps give 0.0.
    delta : float
        Target delta, in (0, 1).
    sensitivity : float, default=1.0
        Largest per-example norm in units of ``C``, > 0: 1 for hard clipping,
        :func:`gelu_clip_max_norm` for GELU clipping.
    accountant : {"rdp", "pld"}, default="rdp"
        ``"rdp"``: Renyi DP composition (Mironov, Talwar & Zhang 2019) converted to
        (epsilon, delta) as ``RdpAccountant.get_epsilon`` does. ``"pld"``: privacy
        loss distributions, tighter, pessimistically discretised.

        .. deprecated:: 0.1
           The default will change from ``"rdp"`` to ``"pld"`` (the default of
           :class:`~sklearn_fil.neural.DPSGDClassifier` and
           :class:`PrivacyBudget`) in 0.2; not passing ``accountant`` warns.
    neighboring_relation : {"add_remove", "replace_one"}, default="add_remove"
        Neighbouring data sets differ by adding or removing one example
        (``sample_rate`` and ``steps`` must then not depend on the data), or by
        replacing one (``n`` public). ``"replace_one"`` with ``0 < sample_rate <
        1`` needs ``accountant="pld"``: dp-accounting's RDP accountant has no
        replace-one analysis of Poisson sampling, and a bound through
        add/remove group privacy would be loose, so this raises a
        ``ValueError`` rather than report a number that is not a guarantee.

    Returns
    -------
    epsilon : float
        Smallest epsilon the accountant certifies at ``delta``; ``math.inf`` when
        ``noise_multiplier`` is 0 and ``steps`` > 0.

    See Also
    --------
    PerInstanceAccountant : The same accounting for each example from its own
        gradient norms.
    gelu_clip_max_norm : Sensitivity of GELU clipping.

    References
    ----------
    Abadi, M. et al. "Deep learning with differential privacy." CCS 2016.

    Mironov, I., Talwar, K. and Zhang, L. "Renyi differential privacy of the sampled
    Gaussian mechanism." arXiv:1908.10530, 2019.

    Examples
    --------
    >>> from sklearn_fil.accounting import dpsgd_epsilon
    >>> round(dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=1000,
    ...                     delta=1e-5, accountant="rdp"), 2)
    2.1
    >>> round(dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=1000,
    ...                     delta=1e-5, accountant="pld"), 2)
    1.83
    >>> round(dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=1000,
    ...                     delta=1e-5, accountant="pld",
    ...                     neighboring_relation="replace_one"), 2)
    2.84
    >>> dpsgd_epsilon(noise_multiplier=0.0, sample_rate=0.01, steps=10, delta=1e-5,
    ...               accountant="pld")
    inf
    """
    accountant = _deprecated_default(accountant, "dpsgd_epsilon")
    noise_multiplier, sample_rate = float(noise_multiplier), float(sample_rate)
    sensitivity, steps, delta = float(sensitivity), int(steps), float(delta)
    _check_replace_one(accountant, neighboring_relation, sample_rate)
    if steps == 0:
        return 0.0
    if noise_multiplier == 0.0:
        return math.inf
    return _accountant_epsilon(
        accountant,
        noise_multiplier / sensitivity,
        sample_rate,
        steps,
        delta,
        neighboring_relation,
    )


@validate_params(
    {**_DPSGD, "steps": [count(0)], "neighboring_relation": _RELATION},
    prefer_skip_nested_validation=True,
)
def dpsgd_dp_event(
    *,
    noise_multiplier,
    sample_rate,
    steps,
    sensitivity=1.0,
    neighboring_relation="add_remove",
):
    """The dp-accounting event whose epsilon :func:`dpsgd_epsilon` reports.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation in units of the clipping bound ``C``, > 0.
    sample_rate : float
        Poisson sampling probability, in (0, 1]; ``1.0`` for no subsampling
        (every example in every step, or one mechanism per epoch of shuffled
        batches).
    steps : int
        Number of steps (mechanisms), >= 0.
    sensitivity : float, default=1.0
        Largest per-example norm in units of ``C``, > 0.
    neighboring_relation : {"add_remove", "replace_one"}, default="add_remove"
        The relation of the guarantee.

    Returns
    -------
    event : dp_accounting.DpEvent
        ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(m)),
        steps)`` with ``m = noise_multiplier / sensitivity``; without sampling
        ``SelfComposedDpEvent(GaussianDpEvent(m), steps)``, with ``m`` halved
        under replace-one (the step's sum moves by twice the bound).
    accounting_relation : {"add_remove", "replace_one"}
        The neighbouring relation to give dp-accounting's accountant:
        ``"replace_one"`` (``REPLACE_ONE``, PLD accountant only) for Poisson
        sampling under replace-one, else ``"add_remove"``
        (``ADD_OR_REMOVE_ONE``), under which a ``GaussianDpEvent(m)`` is the
        Gaussian mechanism at unit distance.

    See Also
    --------
    dpsgd_epsilon : The epsilon of this event.
    dpsgd_noise_multiplier : The noise multiplier for a target epsilon.

    Examples
    --------
    >>> import dp_accounting
    >>> from sklearn_fil.accounting import dpsgd_dp_event, dpsgd_epsilon
    >>> event, relation = dpsgd_dp_event(
    ...     noise_multiplier=1.0, sample_rate=0.01, steps=1000,
    ...     neighboring_relation="replace_one")
    >>> relation
    'replace_one'
    >>> acc = dp_accounting.pld.PLDAccountant(
    ...     dp_accounting.NeighboringRelation.REPLACE_ONE)
    >>> round(acc.compose(event).get_epsilon(1e-5), 2)
    2.84
    """
    return dpsgd_event(
        float(noise_multiplier) / float(sensitivity),
        float(sample_rate),
        int(steps),
        neighboring_relation,
    )


@validate_params(
    {
        "target_epsilon": [POSITIVE],
        "sample_rate": [_SAMPLE_RATE],
        "steps": [count(1)],
        "delta": [OPEN_UNIT],
        "sensitivity": [POSITIVE],
        "accountant": _ACCOUNTANT,
        "neighboring_relation": _RELATION,
    },
    prefer_skip_nested_validation=True,
)
def dpsgd_noise_multiplier(
    *,
    target_epsilon,
    sample_rate,
    steps,
    delta,
    sensitivity=1.0,
    accountant="warn",
    neighboring_relation="add_remove",
):
    """Noise multiplier of DP-SGD for a target epsilon.

    The smallest noise multiplier (to the calibration's tolerance) whose
    epsilon, as :func:`dpsgd_epsilon` reports it with the same arguments, is at
    most ``target_epsilon``. The search is dp-accounting's
    :func:`dp_accounting.calibrate_dp_mechanism` over the event of
    :func:`dpsgd_dp_event` (the very event whose epsilon is reported), with the
    same accountant and neighbouring relation; where :func:`dpsgd_epsilon`
    reports the exact epsilon of a Gaussian mechanism (the PLD accountant
    without sampling), the noise is that mechanism's exact inverse,
    :func:`gaussian_sigma`.

    Parameters
    ----------
    target_epsilon : float
        Target epsilon, > 0.
    sample_rate : float
        Poisson sampling probability ``q``, in (0, 1].
    steps : int
        Number of steps, >= 1.
    delta : float
        Target delta, in (0, 1).
    sensitivity : float, default=1.0
        Largest per-example norm in units of ``C``, > 0 (1 for hard clipping,
        :func:`gelu_clip_max_norm` for GELU clipping).
    accountant : {"rdp", "pld"}, default="rdp"
        The accountant of :func:`dpsgd_epsilon`.

        .. deprecated:: 0.1
           The default will change from ``"rdp"`` to ``"pld"`` in 0.2, as
           :func:`dpsgd_epsilon`'s; not passing ``accountant`` warns.
    neighboring_relation : {"add_remove", "replace_one"}, default="add_remove"
        As in :func:`dpsgd_epsilon`.

    Returns
    -------
    noise_multiplier : float
        Noise standard deviation in units of ``C``, with
        ``dpsgd_epsilon(noise_multiplier=noise_multiplier, ...) <=
        target_epsilon`` exactly as computed.

    See Also
    --------
    dpsgd_epsilon : The epsilon of a noise multiplier.
    gaussian_sigma : The same calibration for one Gaussian mechanism.

    Notes
    -----
    The search brackets the answer between a noise whose epsilon is above the
    target and one whose epsilon is at most the target: the latter starts from
    the exact noise of the same steps without sampling, which can only be
    less private. ``calibrate_dp_mechanism`` then runs Brent's method to a
    tolerance of ``1e-5`` times the bracket's lower end and returns a value on
    the private side. Its accountant is built once for the whole search (ten
    times the PLD grid of the smallest noise in the bracket, see
    :func:`dpsgd_epsilon`: ten times faster, and about ``1e-6`` relative
    from the finer value); the reported epsilon uses the grid of the final
    noise, and the noise is nudged upwards until that one is within the
    target as well, and a few secant steps on the reported epsilon then
    bring it within ``1e-4`` relative below the target where they can (the
    PLD's epsilon is a step function of the noise on its grid).
    Results are cached per argument set.

    References
    ----------
    Doroshenko, V., Ghazi, B., Kamath, P., Kumar, R. and Manurangsi, P.
    "Connect the dots: tighter discrete approximations of privacy loss
    distributions." PETS 2022 (the PLD accountant).

    Examples
    --------
    >>> from sklearn_fil.accounting import dpsgd_epsilon, dpsgd_noise_multiplier
    >>> sigma = dpsgd_noise_multiplier(target_epsilon=2.0, sample_rate=0.01,
    ...                                steps=1000, delta=1e-5, accountant="rdp")
    >>> round(sigma, 3)
    1.022
    >>> eps = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=0.01, steps=1000,
    ...                     delta=1e-5, accountant="rdp")
    >>> eps <= 2.0, round(eps, 4)
    (True, 2.0)
    """
    accountant = _deprecated_default(accountant, "dpsgd_noise_multiplier")
    target_epsilon, sample_rate = float(target_epsilon), float(sample_rate)
    sensitivity, steps, delta = float(sensitivity), int(steps), float(delta)
    _check_replace_one(accountant, neighboring_relation, sample_rate)
    unit = _calibrated_noise(
        accountant, target_epsilon, sample_rate, steps, delta, neighboring_relation
    )
    return unit * sensitivity


# The search is dp-accounting's calibrate_dp_mechanism; what surrounds it is
# ours. calibrate_dp_mechanism alone (its LowerEndpointAndGuess bracket, the
# reported accountant) took 52-77 s against 3-5 s here for the PLD at q =
# 0.01-0.02 and 300-1000 steps, and its noise is another point within its
# tolerance: 4e-8 (RDP) to 2.5e-5 (PLD) relative from the reported noise.
# Bracket widening and upward nudges of the DP-SGD calibration: each converges
# in a few steps, the limits only guard against an endless loop.
_MAX_BRACKET_STEPS = 200
_CALIBRATION_RTOL = 1e-5
# The search's PLD grid is this much coarser than the reported epsilon's:
# about ten times faster, and its epsilon differs by about 1e-6 relative
# (dp-accounting's connect-the-dots discretisation), which the final check
# on the reported epsilon absorbs.
_SEARCH_GRID_FACTOR = 10.0
# Secant steps on the reported epsilon after the search, until it is within
# this relative distance below the target.
_REFINE_STEPS = 4
_REFINE_RTOL = 1e-4


@lru_cache(maxsize=256)
def _calibrated_noise(accountant, target, sample_rate, steps, delta, relation):
    """The calibrated noise over the per-example bound (see the public twin)."""
    import dp_accounting

    def reported(m):
        return _accountant_epsilon(accountant, m, sample_rate, steps, delta, relation)

    unit_event, event_relation = dpsgd_event(1.0, sample_rate, steps, relation)
    # The same steps without sampling: the exact Gaussian noise for the target.
    exact, _ = dpsgd_event(1.0, 1.0, steps, relation)
    noise = gaussian_sigma(
        epsilon=target, delta=delta, sensitivity=1.0
    ) / gaussian_noise_multiplier(exact)
    if not (accountant == "pld" and gaussian_noise_multiplier(unit_event)):
        noise = _search_noise(
            dp_accounting,
            accountant,
            target,
            delta,
            noise,
            sample_rate,
            steps,
            relation,
            event_relation,
        )
    # Whatever the calibration's accountant said, the reported epsilon decides.
    step = _CALIBRATION_RTOL * noise
    for _ in range(_MAX_BRACKET_STEPS):
        if reported(noise) <= target:
            break
        noise += step
        step *= 2.0
    else:  # pragma: no cover - epsilon decreases with the noise
        raise RuntimeError("Could not calibrate the noise multiplier of DP-SGD.")
    return float(_refine(reported, target, noise))


def _refine(reported, target, noise):
    """Regula falsi on the reported epsilon, from a noise within the target.

    The search's coarser grid can leave the reported epsilon a little below
    the target (over many composed steps); a few secant steps on the
    reported epsilon itself close the gap, keeping the last noise within it.
    """
    eps = reported(noise)
    above = None  # (noise, epsilon) with epsilon > target, once one is seen
    for _ in range(_REFINE_STEPS):
        # at epsilon 0 (a huge noise, where the accountant rounds to 0) no
        # secant step is defined, and the noise is already within the target
        if target - eps <= _REFINE_RTOL * target or eps <= 0.0:
            break
        if above is None:
            trial = noise * eps / target  # epsilon about proportional to 1 / noise
        else:
            (m0, e0), (m1, e1) = (noise, eps), above
            trial = m0 + (target - e0) * (m1 - m0) / (e1 - e0)
        trial_eps = reported(trial)
        if trial_eps <= target:
            noise, eps = trial, trial_eps
        else:
            above = (trial, trial_eps)
    return noise


def _search_noise(
    dp_accounting,
    accountant,
    target,
    delta,
    guess,
    sample_rate,
    steps,
    relation,
    event_relation,
):
    """``calibrate_dp_mechanism`` over the DP-SGD event, from a bracket."""
    from dp_accounting.mechanism_calibration import ExplicitBracketInterval

    def event(m):
        return dpsgd_event(m, sample_rate, steps, relation)[0]

    def fresh(grid_noise):
        return make_accountant(
            accountant, event_relation, grid_noise, coarsen=_SEARCH_GRID_FACTOR
        )

    def gap(m, grid_noise):
        acc = fresh(grid_noise)
        with quiet_absl():
            return acc.compose(event(m)).get_epsilon(delta) - target

    # [low, high] brackets the target under the accountant of the grid of low.
    low, high = guess / 2.0, guess
    for _ in range(_MAX_BRACKET_STEPS):
        if gap(low, low) <= 0.0:
            low, high = low / 2.0, low
        elif gap(high, low) > 0.0:
            low, high = high, 2.0 * high
        else:
            break
    else:  # pragma: no cover - epsilon decreases with the noise
        raise RuntimeError("Could not bracket the noise multiplier of DP-SGD.")
    with quiet_absl():
        return float(
            dp_accounting.calibrate_dp_mechanism(
                lambda: fresh(low),
                event,
                target,
                delta,
                bracket_interval=ExplicitBracketInterval(low, high),
                tol=_CALIBRATION_RTOL * low,
            )
        )


# --------------------------------------------------------------------------------------
# per-instance accounting


class PerInstanceAccountant:
    """Per-example Renyi DP accountant for DP-SGD (Yu et al. 2022).

    The privacy loss that one step of DP-SGD causes an example depends on that
    example's clipped gradient norm ``r`` (in units of ``C``): the step is, for
    it, the Poisson-subsampled Gaussian mechanism with noise multiplier
    ``noise_multiplier / r``. Every step adds that mechanism's RDP to the example's
    total -- whether or not the example was sampled, since the subsampling is part of
    the mechanism -- and :meth:`epsilon` converts the totals to (epsilon, delta).
    With every norm equal to ``sensitivity`` this is :func:`dpsgd_epsilon` with
    ``accountant="rdp"``.

    Parameters
    ----------
    n_samples : int
        Number of training examples, >= 1.
    noise_multiplier : float
        Noise standard deviation in units of ``C``, >= 0. Zero makes the epsilon of
        every example with a positive norm infinite.
    sample_rate : float
        Poisson sampling probability ``q`` of each step, in (0, 1].
    sensitivity : float, default=1.0
        Largest possible clipped norm in units of ``C``, > 0 (1 for hard clipping,
        :func:`gelu_clip_max_norm` for GELU clipping). Norms above it are clipped
        to it.
    precision : float, default=0.01
        Norms are rounded up to a multiple of ``precision`` (> 0), capped at
        ``sensitivity``, so that the RDP is computed once per rounded level.
    orders : array-like of shape (n_orders,), default=None
        Renyi orders, each finite and > 1. ``None`` uses the orders of
        ``dp_accounting.rdp.RdpAccountant``.

    Attributes
    ----------
    orders : ndarray of shape (n_orders,)
        The Renyi orders.
    n_steps : int
        Number of calls to :meth:`step` so far.
    rdp : ndarray of shape (n_samples, n_orders)
        Accumulated RDP of each example at each order.

    See Also
    --------
    dpsgd_epsilon : The worst-case epsilon, the same for all examples.

    Notes
    -----
    Rounding up (never to nearest) keeps each per-step RDP an upper bound for the
    norm given; the cap at ``sensitivity`` makes the per-example epsilon never exceed
    the global one. The per-step RDP of the Poisson-subsampled Gaussian and the
    conversion to (epsilon, delta) are those of ``dp_accounting`` (the conversion is
    Proposition 12 of Canonne, Kamath & Steinke 2020, slightly tighter than the
    ``rdp + log(1/delta) / (alpha - 1)`` of Mironov 2017 used by Yu et al.).

    The RDP vector of each rounded level is computed once and cached. Each example
    keeps its current level and the step it reached it; when its norm changes level,
    the steps spent at the old one are added at once, so a step costs O(examples
    whose norms are given). What is added is a count of steps at a level, kept
    sparsely: each example's RDP is ``sum_k c_k rdp(level_k)``, so its counts per
    level are a sufficient statistic, and an example visits only the levels of
    the norms it is given. The counts are exact integers in ``(level, count)``
    slots, eight per example and then blocks of eight from a shared pool, about
    50 bytes per example plus 44 per block (at most ``ceil(sensitivity /
    precision) + 1`` slots per example). No RDP is computed during training: it is
    formed on demand, counts times cached vectors, and :meth:`epsilon` converts it a
    block of examples at a time, so that it needs no ``(n_samples, n_orders)``
    array (:attr:`rdp` builds one).

    The result is a guarantee for an example only if the norms given bound its
    actual clipped gradient norm at every step. Yu et al. (2022) use the latest
    norm known for each example (updated when it is sampled, or by occasional full
    passes) and clip each example to that estimate to make this hold; with a
    common clipping bound it is an estimate.

    References
    ----------
    Yu, D., Kamath, G., Kulkarni, J., Liu, T.-Y., Yin, J. and Zhang, H.
    "Per-instance privacy accounting for differentially private stochastic gradient
    descent." arXiv:2206.02617, 2022, Algorithm 1.

    Feldman, V. and Zrnic, T. "Individual privacy accounting via a Renyi filter."
    NeurIPS 2021 (adaptive composition of per-instance RDP).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.accounting import PerInstanceAccountant, dpsgd_epsilon
    >>> acc = PerInstanceAccountant(3, noise_multiplier=1.0, sample_rate=0.01)
    >>> for _ in range(1000):
    ...     _ = acc.step(np.array([1.0, 0.5, 0.0]))
    >>> acc.epsilon(1e-5).round(2)
    array([2.1 , 0.69, 0.  ])
    >>> round(dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=1000,
    ...                     delta=1e-5, accountant="rdp"), 2)
    2.1
    """

    @validate_params(
        {**_DPSGD, "n_samples": [count(1)], "precision": [POSITIVE]},
        prefer_skip_nested_validation=True,
    )
    def __init__(
        self,
        n_samples,
        *,
        noise_multiplier,
        sample_rate,
        sensitivity=1.0,
        precision=0.01,
        orders=None,
    ):
        self.n_samples = int(n_samples)
        self.noise_multiplier = float(noise_multiplier)
        self.sample_rate, self.sensitivity = float(sample_rate), float(sensitivity)
        self.precision = float(precision)
        self._orders = _check_orders(orders)
        # Levels k = 0..top stand for the norms min(k precision, sensitivity).
        self._top = int(_ceil_multiple(self.sensitivity, self.precision))
        self._cache = {}
        self._hist = LevelHistograms(self.n_samples, self._top)
        self._n_steps = 0

    @property
    def orders(self):
        """The Renyi orders, a copy."""
        return self._orders.copy()

    @property
    def n_steps(self):
        """Number of steps accounted so far."""
        return self._n_steps

    @property
    def rdp(self):
        """Accumulated RDP, ndarray of shape (n_samples, n_orders)."""
        return self._hist.rdp_rows(0, self.n_samples, self._n_steps, self._table())

    def _table(self):
        """RDP of every level reached so far (zero rows for the others)."""
        table = np.zeros((self._top + 1, self._orders.size))
        present = self._hist.levels_in_use(self._n_steps)
        if present.size:
            table[present] = self._level_rdp(present)
        return table

    def _level_rdp(self, levels):
        """RDP vectors of the given level indices, shape (len(levels), n_orders)."""
        integer = np.all(self._orders == np.round(self._orders))
        missing = [lv for lv in dict.fromkeys(levels.tolist()) if lv not in self._cache]
        norms = [min(lv * self.precision, self.sensitivity) for lv in missing]
        closed_form = integer and 0.0 < self.sample_rate < 1.0 and self.noise_multiplier
        positive = [(lv, r) for lv, r in zip(missing, norms, strict=True) if r > 0.0]
        for lv, r in zip(missing, norms, strict=True):
            if r == 0.0:
                self._cache[lv] = np.zeros(self._orders.size, dtype=np.float64)
        if closed_form and positive:
            table = _poisson_gaussian_rdp_integer(
                self.sample_rate,
                [self.noise_multiplier / r for _, r in positive],
                self._orders,
            )
            for (lv, _), row in zip(positive, table, strict=True):
                self._cache[lv] = row
        else:
            for lv, r in positive:
                self._cache[lv] = _poisson_gaussian_rdp(
                    self.sample_rate, self.noise_multiplier / r, self._orders
                )
        rows = [self._cache[level] for level in levels.tolist()]
        return np.array(rows, dtype=np.float64).reshape(len(rows), self._orders.size)

    def step(self, norms=None, indices=None):
        """Account one step of DP-SGD for every example.

        Parameters
        ----------
        norms : array-like of shape (n_samples,) or (n_indices,), default=None
            Clipped gradient norms in units of ``C`` (finite, >= 0; values above
            ``sensitivity`` count as ``sensitivity``): of every example, or of
            the examples ``indices``. The others keep their last norm (at
            first, ``sensitivity``). None accounts the step at the last norms.
        indices : array-like of int of shape (n_indices,), default=None
            Examples whose norms are given; None means all.

        Returns
        -------
        self : PerInstanceAccountant
            The accountant, with one more step accounted.
        """
        if self._n_steps >= MAX_STEPS:
            raise ValueError(f"PerInstanceAccountant counts at most {MAX_STEPS} steps.")
        if norms is not None:
            self.set_norms(norms, indices)
        self._n_steps += 1
        return self

    def set_norms(self, norms, indices=None):
        """Set the current clipped norms without accounting a step.

        Parameters
        ----------
        norms : array-like of shape (n_samples,) or (n_indices,)
            Clipped gradient norms in units of ``C``, as in :meth:`step`.
        indices : array-like of int of shape (n_indices,), default=None
            Examples whose norms are given; None means all.

        Returns
        -------
        self : PerInstanceAccountant
            The accountant.
        """
        try:
            norms = np.asarray(norms, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"norms must be an array of real numbers, got norms={norms!r}."
            ) from exc
        all_rows = indices is None
        if all_rows:
            shape = (self.n_samples,)
            indices = np.empty(0, dtype=np.int64)
        else:
            indices = np.asarray(indices)
            if indices.ndim != 1 or not np.issubdtype(indices.dtype, np.integer):
                raise ValueError(_INDICES_MSG.format(self.n_samples))
            shape = indices.shape
            indices = np.ascontiguousarray(indices, dtype=np.int64)
        if norms.shape != shape:
            raise ValueError(f"norms must have shape {shape}, got shape {norms.shape}.")
        norms = np.ascontiguousarray(norms)
        # one numba pass checks the input before anything changes
        hist = self._hist
        status = check_norms(indices, all_rows, norms, hist.marks, hist.next_stamp())
        if status == -1:
            raise ValueError(_INDICES_MSG.format(self.n_samples))
        if status == -2:
            bad = norms[~np.isfinite(norms) | (norms < 0)]
            raise ValueError(
                f"norms must be finite and >= 0, got a norm equal to {float(bad[0])!r}."
            )
        hist.move(
            indices, all_rows, norms, self._n_steps, self.precision, self.sensitivity
        )
        return self

    @validate_params({"delta": [OPEN_UNIT]}, prefer_skip_nested_validation=True)
    def epsilon(self, delta):
        """Per-example epsilon at a target delta.

        Parameters
        ----------
        delta : float
            Target delta, in (0, 1).

        Returns
        -------
        epsilon : ndarray of shape (n_samples,)
            Each example's epsilon from its accumulated RDP, converted as
            ``dp_accounting``'s ``RdpAccountant.get_epsilon`` does; 0 for an
            example whose norms were all 0, and ``inf`` where the RDP is infinite.
        """
        delta = float(delta)
        table = self._table()
        out = np.empty(self.n_samples)
        for start in range(0, self.n_samples, READ_BLOCK):
            stop = min(start + READ_BLOCK, self.n_samples)
            rdp = self._hist.rdp_rows(start, stop, self._n_steps, table)
            out[start:stop] = _rdp_to_epsilon_rows(self._orders, rdp, delta)
        return out

    def memory_bytes(self):
        """Bytes held for the examples' norm levels and step counts.

        Returns
        -------
        nbytes : int
            Size of the arrays of the sparse histograms (the cached RDP
            vectors of the levels, a few kilobytes, excluded).
        """
        return self._hist.nbytes()


# --------------------------------------------------------------------------------------
# Fisher information loss


def _gaussian_loss_quantile(sigma, sensitivity, delta):
    """``epsilon`` with ``P[L > epsilon] = delta`` for the Gaussian privacy loss ``L``.

    Under the output distribution with the example, ``L = log(p_in / p_out)`` is
    ``N(mu, 2 mu)`` with ``mu = sensitivity^2 / (2 sigma^2)``.
    """
    mu = sensitivity**2 / (2.0 * sigma**2)
    return mu - math.sqrt(2.0 * mu) * float(ndtri(delta))


@validate_params(
    {**_DPSGD, "steps": [count(1)], "n_samples": [count(1)]},
    prefer_skip_nested_validation=True,
)
def fil_subsampling_factor(
    *, noise_multiplier, sample_rate, sensitivity, steps, n_samples
):
    """Subsampling factor kappa of the FIL accounting of DP-SGD (Guo et al. 2022).

    Guo et al. (2022, section 6.1, Theorem 4 and equation 4) bound the Fisher
    information that a subsampled noisy gradient step carries about an example by
    ``kappa`` times its expectation over the batch, with
    ``kappa = q / (q + (1 - q) exp(-epsilon))`` when the step's Gaussian mechanism
    (before subsampling) is epsilon-DP. The Gaussian mechanism is only
    (epsilon, delta')-DP, so the bound may fail with probability ``delta'``; here
    ``delta' = 1 / (n_samples * steps)``, so that the failure probability over all
    steps is at most ``1 / n_samples`` (union bound), as in the paper.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation in units of ``C``, >= 0. Zero gives 1.0.
    sample_rate : float
        Poisson sampling probability ``q``, in (0, 1]. ``1.0`` gives 1.0.
    sensitivity : float
        Largest per-example norm in units of ``C``, > 0 (1 for hard clipping,
        :func:`gelu_clip_max_norm` for GELU clipping).
    steps : int
        Total number of steps ``T`` of the run, >= 1.
    n_samples : int
        Number of training examples ``n``, >= 1.

    Returns
    -------
    kappa : float
        The factor in ``[sample_rate, 1]`` by which to multiply the per-step Fisher
        information of a sampled example, i.e. of ``(1 / sigma^2) J^T J`` with
        ``sigma = noise_multiplier`` and ``J`` the Jacobian of its clipped
        gradient in units of ``C``. 1.0 (no amplification) when
        ``noise_multiplier`` is 0, ``sample_rate`` is 1 or ``n_samples * steps`` is
        1 (``delta' = 1``).

    See Also
    --------
    gaussian_epsilon : The (epsilon, delta) of the Gaussian mechanism, for comparison.
    gelu_clip_max_norm : Sensitivity of GELU clipping.

    Notes
    -----
    The proof below needs the density ratio bound ``p_out >= exp(-epsilon) p_in``
    everywhere except on a set of probability ``delta'`` under ``p_in``: a tail
    bound on the privacy loss ``L = log(p_in / p_out)``, which for the Gaussian
    mechanism is ``N(mu, 2 mu)`` with ``mu = sensitivity^2 / (2 sigma^2)``. So
    ``epsilon = mu + sqrt(2 mu) Phi^-1(1 - delta')``, exact at any epsilon. (The
    (epsilon, delta') of the hockey-stick divergence, e.g.
    :func:`gaussian_epsilon`, is smaller and would understate ``kappa``: a
    hockey-stick bound allows the ratio to fail on a set of larger probability.)
    Guo et al. write Algorithm 1 (line 4) with the classical
    ``epsilon = 1.115 * 2 sqrt(2 log(1.25 / delta)) / sigma`` instead, which
    differs in two ways:

    * the classical formula is only an (epsilon, delta) guarantee for epsilon < 1;
    * the factor 2 is the sensitivity of a sum over a batch of fixed size ``B``
      under replacing one example (their Theorem 4 samples ``B``-subsets and
      compares batches that differ in one element). With Poisson sampling, as here,
      the proof compares the batch with and without the example (add or remove
      one), and the sensitivity is the largest clipped norm: 1 for hard clipping,
      about 1.115 for GELU clipping.

    The Poisson version of the proof: the output density is the mixture
    ``q p_in + (1 - q) p_out`` in which only ``p_in`` depends on the example, so the
    Fisher information is at most
    ``q^2 integral (p_in')^2 / (q p_in + (1 - q) p_out)``; where
    ``p_out >= exp(-epsilon) p_in`` this is ``kappa`` times ``q`` times the Fisher
    information of ``p_in``, i.e. ``kappa`` times the expectation over the batch.
    The "failure with probability delta'" is the paper's treatment of the points
    where that ratio bound does not hold.

    References
    ----------
    Guo, C., Karrer, B., Chaudhuri, K. and van der Maaten, L. "Bounding training data
    reconstruction in private (deep) learning." ICML 2022, section 6.1 (Theorem 4,
    equation 4) and Algorithm 1.

    Balle, B. and Wang, Y.-X. "Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising." ICML 2018.

    Examples
    --------
    >>> from sklearn_fil.accounting import fil_subsampling_factor
    >>> round(fil_subsampling_factor(noise_multiplier=2.0, sample_rate=0.01,
    ...                              sensitivity=1.0, steps=1000, n_samples=1000), 4)
    0.1097
    >>> fil_subsampling_factor(noise_multiplier=2.0, sample_rate=1.0,
    ...                        sensitivity=1.0, steps=1000, n_samples=1000)
    1.0
    """
    noise_multiplier, sample_rate = float(noise_multiplier), float(sample_rate)
    sensitivity = float(sensitivity)
    failures = int(n_samples) * int(steps)
    if noise_multiplier == 0.0 or sample_rate == 1.0 or failures == 1:
        return 1.0
    epsilon = _gaussian_loss_quantile(noise_multiplier, sensitivity, 1.0 / failures)
    kappa = sample_rate / (sample_rate + (1.0 - sample_rate) * math.exp(-epsilon))
    return min(kappa, 1.0)
