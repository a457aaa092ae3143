"""Privacy accounting for DP-SGD, a Poisson-subsampled Gaussian mechanism.

Each step samples every example with probability ``sample_rate``, clips each
per-example gradient to norm ``max_grad_norm`` (``C``), sums them and adds
``N(0, (noise_multiplier C)^2 I)``. Norms and sensitivities here are in units of ``C``.
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

from sklearn_fil.accounting._events import (
    ACCOUNTANTS,
    ACCOUNTING_RELATIONS,
    DEFAULT_ACCOUNTANT,
    dp_event_epsilon,
    dpsgd_event,
    gaussian_noise_multiplier,
    make_accountant,
    quiet_absl,
    smallest_noise,
)
from sklearn_fil.accounting._gaussian import gaussian_sigma
from sklearn_fil.accounting._validation import (
    NONNEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    Hidden,
    Number,
    StrOptions,
    check_entries,
    count,
    real_array,
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


def _poisson_gaussian_rdp(sample_rate, noise_multiplier, orders):
    """RDP at ``orders`` of the Poisson-subsampled Gaussian mechanism.

    ``noise_multiplier`` is the noise over the sensitivity. Cached: a
    per-instance accountant needs one vector per norm level, and refits the
    same ones.
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
    orders)``. Equal to dp-accounting's value to 1e-10 relative (tested).

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
    Steinke 2020, Proposition 12), vectorised over rows (examples) with its
    branches kept: a negative RDP or one below the KL bound gives 0, orders up
    to 1.01 give no bound. Tested equal to ``compute_epsilon`` row by row.
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


# A pure function of hashable numbers, and slow: refits with the same
# settings (an audit's thousands of releases) compute it once per process.
@lru_cache(maxsize=256)
def _accountant_epsilon(
    accountant, noise_multiplier, sample_rate, steps, delta, relation="add_remove"
):
    """Epsilon of the event of :func:`~sklearn_fil.accounting._events.dpsgd_event`.

    ``noise_multiplier`` is the noise over the per-example norm bound.
    """
    event, event_relation = dpsgd_event(noise_multiplier, sample_rate, steps, relation)
    if accountant == "pld":
        # T Gaussian mechanisms at unit distance are one at noise sigma /
        # sqrt(T): the exact epsilon, which the PLD only approaches from above
        return dp_event_epsilon(event, delta, event_relation=event_relation)
    acc = make_accountant(accountant, event_relation, smallest_noise(event))
    with quiet_absl():
        acc.compose(event)
        return float(acc.get_epsilon(delta))


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
    array = real_array(orders, "orders", "a 1-D array of real numbers > 1")
    if array.ndim != 1 or array.size == 0:
        raise ValueError(
            f"orders must be a non-empty 1-D array, got an array of shape "
            f"{array.shape}."
        )
    rule = "orders must be finite and > 1, got an order equal to {!r}."
    return check_entries(array, ~np.isfinite(array) | (array <= 1.0), rule)


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
def _gelu_unit_peak():
    """``(u*, max)``: the argmax and the maximum over ``u >= 0`` of ``u /
    (GELU(u - 1) + 1)``, by a root of the derivative."""
    u_star = brentq(
        _gelu_clip_norm_slope_sign,
        *_GELU_BRACKET,
        xtol=1e-15,
        rtol=4 * np.finfo(np.float64).eps,
        maxiter=200,
    )
    return float(u_star), float(_gelu_clip_norm(u_star))


@validate_params(
    {"max_grad_norm": [POSITIVE], "return_raw_norm": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def gelu_clip_max_norm(max_grad_norm=1.0, *, return_raw_norm=False):
    """Largest norm of a gradient smoothed by GELU clipping.

    GELU clipping (Guo et al. 2022, section 6.2) rescales a gradient ``g`` to
    ``g / (GELU(||g|| / C - 1) + 1)``, ``C = max_grad_norm``, ``GELU(x) = x Phi(x)``;
    it can leave a norm slightly above ``C``. This is the exact bound, the L2
    sensitivity of a sum of GELU-clipped gradients under adding or removing one example.

    Parameters
    ----------
    max_grad_norm : float, default=1.0
        Clipping threshold ``C`` > 0.
    return_raw_norm : bool, default=False
        Also return the norm of the gradients that GELU clipping lets
        through largest (what a worst-case canary's gradient should have).

    Returns
    -------
    max_norm : float
        ``C * max_{u >= 0} u / (GELU(u - 1) + 1)``, about ``1.1152 C``.
    raw_norm : float
        ``C u*``, ``u*`` the argmax, about ``1.549 C``; only with
        ``return_raw_norm=True``.

    Notes
    -----
    The map ``u -> u / (GELU(u - 1) + 1)`` peaks near ``u = 1.549``, found as the
    root of its derivative to a few ulps (Guo et al. (2022) round the peak to 1.115).

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
    >>> [round(v, 4) for v in gelu_clip_max_norm(return_raw_norm=True)]
    [1.1152, 1.5487]
    """
    u_star, peak = _gelu_unit_peak()
    C = float(max_grad_norm)
    return (C * peak, C * u_star) if return_raw_norm else C * peak


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

    With per-example norms at most ``sensitivity C``, each step is the
    Poisson-subsampled Gaussian mechanism of noise multiplier ``noise_multiplier /
    sensitivity``; ``dp_accounting``'s ``RdpAccountant`` or ``PLDAccountant``
    composes ``steps`` of them.

    Under ``"add_remove"`` one step's sum moves by at most ``sensitivity C``
    (the example is in it or not), under ``"replace_one"`` by up to ``2
    sensitivity C``: dp-accounting's ``REPLACE_ONE`` privacy loss distribution
    with Poisson sampling, the Gaussian mechanism at distance ``2 sensitivity``
    with ``sample_rate=1``.

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
        ``"rdp"``: Renyi DP (Mironov, Talwar & Zhang 2019); ``"pld"``: privacy
        loss distributions, tighter, pessimistically discretised.

        .. deprecated:: 0.1
           The default will change from ``"rdp"`` to ``"pld"`` (the default of
           :class:`~sklearn_fil.neural.DPSGDClassifier` and
           :class:`PrivacyBudget`) in 0.2; not passing ``accountant`` warns.
    neighboring_relation : {"add_remove", "replace_one"}, default="add_remove"
        Neighbouring data sets differ by adding or removing one example
        (``sample_rate`` and ``steps`` must then not depend on the data, and
        are public), or by replacing one (``n`` public). ``"replace_one"`` with
        ``0 < sample_rate < 1`` needs ``accountant="pld"`` (``ValueError``
        otherwise: dp-accounting's RDP accountant has no such analysis).

    Returns
    -------
    epsilon : float
        Smallest epsilon the accountant certifies at ``delta``; ``math.inf`` when
        ``noise_multiplier`` is 0 and ``steps`` > 0.

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
        Poisson sampling probability, in (0, 1]; ``1.0`` for no subsampling.
    steps : int
        Number of steps (mechanisms), >= 0.
    sensitivity : float, default=1.0
        Largest per-example norm in units of ``C``, > 0.
    neighboring_relation : {"add_remove", "replace_one"}, default="add_remove"
        The relation of the guarantee.

    Returns
    -------
    event : dp_accounting.DpEvent
        ``steps`` self-composed ``PoissonSampledDpEvent(q, GaussianDpEvent(m))``,
        ``m = noise_multiplier / sensitivity``; without sampling
        ``GaussianDpEvent(m)``, ``m`` halved under replace-one.
    accounting_relation : {"add_remove", "replace_one"}
        The relation to give dp-accounting's accountant: ``"replace_one"`` for
        Poisson sampling under replace-one (PLD only), else ``"add_remove"``.

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
    :func:`dpsgd_epsilon` with the same arguments is at most ``target_epsilon``:
    dp-accounting's :func:`dp_accounting.calibrate_dp_mechanism` over the event
    of :func:`dpsgd_dp_event`, or :func:`gaussian_sigma` where that epsilon is
    the exact one of a Gaussian mechanism (PLD without sampling).

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
        As in :func:`dpsgd_epsilon`.
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

    Notes
    -----
    The bracket starts from the exact noise of the same steps without
    sampling (less private). ``calibrate_dp_mechanism`` runs Brent's method to
    ``1e-5`` times the bracket's lower end on a ten times coarser PLD grid;
    the noise is then nudged up until the reported epsilon is within the
    target, and a few secant steps bring it within ``1e-4`` relative below it
    where they can. Results are cached per argument set.

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


# The search is dp-accounting's calibrate_dp_mechanism, from our bracket; the
# limits on bracket widening and nudges only guard against an endless loop.
_MAX_BRACKET_STEPS = 200
_CALIBRATION_RTOL = 1e-5
# The search's PLD grid is this much coarser than the reported epsilon's (its
# epsilon differs by about 1e-6 relative; the final check absorbs it).
_SEARCH_GRID_FACTOR = 10.0
# Secant steps on the reported epsilon after the search, until it is within
# this relative distance below the target.
_REFINE_STEPS = 4
_REFINE_RTOL = 1e-4


@lru_cache(maxsize=256)
def _calibrated_noise(accountant, target, sample_rate, steps, delta, relation):
    """The calibrated noise over the per-example bound (see the public twin)."""

    def reported(m):
        return _accountant_epsilon(accountant, m, sample_rate, steps, delta, relation)

    unit_event, _ = dpsgd_event(1.0, sample_rate, steps, relation)
    # The same steps without sampling: the exact Gaussian noise for the target.
    exact, _ = dpsgd_event(1.0, 1.0, steps, relation)
    noise = gaussian_sigma(
        epsilon=target, delta=delta, sensitivity=1.0
    ) / gaussian_noise_multiplier(exact)
    if not (accountant == "pld" and gaussian_noise_multiplier(unit_event)):
        noise = _search_noise(
            accountant, target, delta, noise, sample_rate, steps, relation
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


def _search_noise(accountant, target, delta, guess, sample_rate, steps, relation):
    """``calibrate_dp_mechanism`` over the DP-SGD event, from a bracket."""
    import dp_accounting

    _, event_relation = dpsgd_event(1.0, sample_rate, steps, relation)

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
                bracket_interval=dp_accounting.ExplicitBracketInterval(low, high),
                tol=_CALIBRATION_RTOL * low,
            )
        )


class PerInstanceAccountant:
    """Per-example Renyi DP accountant for DP-SGD (Yu et al. 2022).

    For an example of clipped gradient norm ``r`` (in units of ``C``) a step is
    the Poisson-subsampled Gaussian mechanism with noise multiplier
    ``noise_multiplier / r``; every step, sampled or not, adds its RDP to the
    example's total. With every norm equal to ``sensitivity`` this is
    :func:`dpsgd_epsilon` with ``accountant="rdp"`` (under add/remove).

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

    Notes
    -----
    Rounding up (never to nearest) keeps each per-step RDP an upper bound for the
    norm given; the cap at ``sensitivity`` makes the per-example epsilon never exceed
    the global one. The per-step RDP of the Poisson-subsampled Gaussian and the
    conversion to (epsilon, delta) are those of ``dp_accounting`` (the conversion is
    Proposition 12 of Canonne, Kamath & Steinke 2020, slightly tighter than the
    ``rdp + log(1/delta) / (alpha - 1)`` of Mironov 2017 used by Yu et al.).

    Each example's steps per rounded level are counted exactly and sparsely
    (about 50 bytes per example, ``accounting/_dpsgd_histogram.py``);
    a step costs O(examples whose norms are given), and :attr:`rdp` builds the
    whole array.

    The result is a guarantee for an example only if the norms given bound its
    clipped gradient norm at every step (Yu et al. clip each example to its
    last known norm); with a common clipping bound it is an estimate.

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
        from sklearn_fil.accounting._dpsgd_histogram import LevelHistograms

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
            Clipped gradient norms in units of ``C`` (finite, >= 0, capped at
            ``sensitivity``) of every example or of ``indices``; the others keep
            their last norm (at first, ``sensitivity``). None: the last norms.
        indices : array-like of int of shape (n_indices,), default=None
            Examples whose norms are given; None means all.

        Returns
        -------
        self : PerInstanceAccountant
            The accountant, with one more step accounted.
        """
        if self._n_steps >= self._hist.MAX_STEPS:
            raise ValueError(
                f"PerInstanceAccountant counts at most {self._hist.MAX_STEPS} steps."
            )
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
        norms = real_array(norms, "norms")
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
        status = self._hist.check_norms(indices, all_rows, norms)
        if status == -1:
            raise ValueError(_INDICES_MSG.format(self.n_samples))
        if status == -2:
            rule = "norms must be finite and >= 0, got a norm equal to {!r}."
            check_entries(norms, ~np.isfinite(norms) | (norms < 0), rule)
        self._hist.move(
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
            Each example's epsilon from its accumulated RDP (as
            ``RdpAccountant.get_epsilon`` converts it).
        """
        delta = float(delta)
        table = self._table()
        out = np.empty(self.n_samples)
        block = self._hist.READ_BLOCK
        for start in range(0, self.n_samples, block):
            stop = min(start + block, self.n_samples)
            rdp = self._hist.rdp_rows(start, stop, self._n_steps, table)
            out[start:stop] = _rdp_to_epsilon_rows(self._orders, rdp, delta)
        return out

    def memory_bytes(self):
        """Bytes held for the examples' norm levels and step counts.

        Returns
        -------
        nbytes : int
            Size of the sparse histograms' arrays (cached RDP vectors excluded).
        """
        return self._hist.nbytes()


def _gaussian_loss_quantile(sigma, sensitivity, delta):
    """``epsilon`` with ``P[L > epsilon] = delta``, ``L ~ N(mu, 2 mu)``."""
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
    information of a subsampled noisy gradient step about an example by ``kappa =
    q / (q + (1 - q) exp(-epsilon))`` times its expectation over the batch, the
    step's Gaussian mechanism being epsilon-DP except with probability ``delta' =
    1 / (n_samples * steps)`` (at most ``1 / n_samples`` over the run).

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation in units of ``C``, >= 0. Zero gives 1.0.
    sample_rate : float
        Poisson sampling probability ``q``, in (0, 1]. ``1.0`` gives 1.0.
    sensitivity : float
        As in :func:`dpsgd_epsilon`.
    steps : int
        Total number of steps ``T`` of the run, >= 1.
    n_samples : int
        Number of training examples ``n``, >= 1.

    Returns
    -------
    kappa : float
        The factor in ``[sample_rate, 1]`` on the per-step Fisher information
        ``(1 / sigma^2) J^T J`` of a sampled example (``J`` the Jacobian of its
        clipped gradient in units of ``C``). 1.0 when ``noise_multiplier`` is 0,
        ``sample_rate`` is 1 or ``n_samples * steps`` is 1.

    Notes
    -----
    The output density is the mixture ``q p_in + (1 - q) p_out`` in which only
    ``p_in`` depends on the example, so its Fisher information is at most
    ``q^2 integral (p_in')^2 / (q p_in + (1 - q) p_out)``: ``kappa`` times the
    expectation over the batch where ``p_out >= exp(-epsilon) p_in``. That
    ratio bound fails with probability ``delta'`` under ``p_in`` for
    ``epsilon = mu + sqrt(2 mu) Phi^-1(1 - delta')``, a tail of the privacy
    loss ``L = log(p_in / p_out) ~ N(mu, 2 mu)``, ``mu = sensitivity^2 / (2
    sigma^2)``. (The hockey-stick epsilon of :func:`gaussian_epsilon` is
    smaller and would understate ``kappa``.) Guo et al.'s Algorithm 1 (line 4)
    uses the classical ``epsilon = 1.115 * 2 sqrt(2 log(1.25 / delta)) /
    sigma`` instead: a guarantee only below 1, and the factor 2 is the
    sensitivity under replacing one example of a batch of fixed size; with
    Poisson sampling, as here, the batch is compared with and without the
    example, and the sensitivity is the largest clipped norm.

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
