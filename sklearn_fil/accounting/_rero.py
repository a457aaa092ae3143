"""Reconstruction robustness (ReRo): how likely any reconstruction can succeed.

An informed adversary knows every training example but the target ``z``, knows
that ``z`` was drawn from a prior ``π``, sees the release and outputs a guess
``ẑ``. It succeeds when ``ẑ`` lies within an error radius ``η`` of ``z``. The
baseline ``κ = sup_c P_{z ~ π}(‖z - c‖ <= η)`` is the best success without the
release. Hayes, Mahloujifar & Balle (2023) bound the success with the release by
the blow-up ``sup {Q(E) : P(E) <= κ}`` of the mechanism's pair of output
distributions, and Kaissis, Hayes, Ziller & Rueckert (2023) identify it with the
trade-off function ``f`` of f-DP: the success is at most ``1 - f(κ)``.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import gammaln
from scipy.stats import chi2, norm

from sklearn_fil.accounting._budget import _as_guarantee
from sklearn_fil.accounting._events import _PLD_GRID as _DEFAULT_PLD_GRID
from sklearn_fil.accounting._events import (
    gaussian_noise_multiplier,
    make_accountant,
    pld_grid,
    quiet_absl,
    smallest_noise,
)
from sklearn_fil.accounting._gaussian import _gaussian_privacy_loss
from sklearn_fil.accounting._validation import (
    POSITIVE,
    StrOptions,
    count,
    real_array,
    validate_params,
)

METHODS = ("auto", "trade_off", "profile", "epsilon_delta")
# The privacy profile is searched for its minimum over ε in [-E, E], E the ε at
# which δ(ε) falls to the first of these that is finite (dp-accounting's PLD
# drops tails of about 1e-15 per step into its infinite loss): beyond E the
# objective moves by at most that δ.
_TAIL_DELTAS = (1e-12, 1e-9, 1e-6)
# Absolute tolerance of the search over ε: at the minimum the objective is flat,
# so its value is within about (tolerance)² of the minimum (and is a bound anyway).
_EPSILON_XTOL = 1e-4
# The PLD grid: 1e-3, or the one epsilon_ is reported on where that is coarser
# (tiny noise, see pld_grid); ten times faster to build than the default 1e-4.
# The pessimistic discretisation rounds each loss up by at most the grid h,
# which raises the bound by at most a factor e^h over the undiscretised pair's.
_PLD_GRID = 1e-3
# Above this ε, e^ε overflows and e^ε κ exceeds 1 for every κ > 1e-300.
_LOG_MAX = 700.0


def _kappa_array(kappa):
    """``kappa`` as a float64 array with entries in the open interval (0, 1)."""
    array = real_array(kappa, "kappa", "a float or an array of floats in (0, 1)")
    bad = ~((array > 0.0) & (array < 1.0))
    if np.any(bad):
        raise ValueError(
            "kappa must lie in the open interval (0, 1) (the prior probability "
            f"of the best guess without the release), got kappa="
            f"{float(array[bad].flat[0])!r}."
        )
    return array


def _holding_guarantee(privacy):
    """``(guarantee or None, dp_event or None, relation)``; refuses a missing one."""
    guarantee = _as_guarantee(privacy)
    if guarantee is None:  # a bare dp-accounting event, at unit distance
        return None, privacy, "add_remove"
    if not guarantee.holds:
        raise ValueError(
            "There is no differential-privacy guarantee to bound reconstruction "
            f"with: {guarantee.reason}"
        )
    return guarantee, guarantee.dp_event, guarantee.event_relation


def _resolve_method(method, guarantee, event):
    if method == "auto":
        return "trade_off" if event is not None else "epsilon_delta"
    if method in ("trade_off", "profile") and event is None:
        raise ValueError(
            f"method={method!r} needs the mechanism's dp_event, and this guarantee "
            "has none (e.g. a group guarantee of Poisson-sampled DP-SGD); use "
            "method='epsilon_delta'."
        )
    if method == "epsilon_delta" and guarantee is None:
        raise ValueError(
            "method='epsilon_delta' needs a Guarantee (its epsilon and delta), "
            "not a bare dp-accounting event."
        )
    return method


def _epsilon_delta_bound(kappa, epsilon, delta):
    """``1 - f(κ)`` of (ε, δ)-DP: ``min(1, δ + e^ε κ, 1 - e^-ε (1 - δ - κ))``."""
    if epsilon > _LOG_MAX:
        return np.ones_like(kappa)
    first = delta + math.exp(epsilon) * kappa
    second = 1.0 - math.exp(-epsilon) * (1.0 - delta - kappa)
    return np.minimum(1.0, np.minimum(first, second))


def _gaussian_noise(event, relation):
    """The noise of the one unit-distance Gaussian mechanism equal to ``event``
    (None if it holds anything else): dp-accounting's PLD accountant reads a
    ``GaussianDpEvent(m)`` under REPLACE_ONE as distance 2, noise ``m / 2``."""
    m = gaussian_noise_multiplier(event)
    if m is not None and relation == "replace_one":
        m = m / 2.0
    return m


def _delta_curve(event, relation):
    """``(δ(ε) for any real ε, E)`` of the event: the largest hockey-stick
    divergence over both orders of the pair, and an ε beyond which δ(ε) is
    below one of ``_TAIL_DELTAS``."""
    m = _gaussian_noise(event, relation)
    if m is not None:  # a composition of Gaussians: exact, one at noise m
        if m == 0.0:
            return (lambda eps: 1.0), math.inf
        if math.isinf(m):
            return (lambda eps: max(0.0, 1.0 - math.exp(eps))), 0.0
        loss = _gaussian_privacy_loss(m, 1.0)
        z = float(norm.isf(_TAIL_DELTAS[0]))
        return (lambda eps: float(loss.get_delta_for_epsilon(eps))), (
            z / m + 0.5 / m**2
        )
    noise = smallest_noise(event) or None
    grid = _DEFAULT_PLD_GRID if noise is None else pld_grid(noise)
    accountant = make_accountant(
        "pld", relation, noise_multiplier=noise, coarsen=max(1.0, _PLD_GRID / grid)
    )
    with quiet_absl():
        accountant.compose(event)
        tails = [float(accountant.get_epsilon(d)) for d in _TAIL_DELTAS]
    tail = next((t for t in tails if math.isfinite(t)), math.inf)
    return (lambda eps: float(accountant.get_delta(eps))), tail


def _profile_minimum(delta, kappa, low, high):
    """``min(1, min over ε in [low, high] of e^ε κ + δ(ε))`` for one κ.

    The objective is quasi-convex in ε (its derivative is ``e^ε (κ - P(L > ε))``,
    ``L`` the privacy loss under the reference distribution), so bounded Brent
    finds its minimum; every ε tried gives a valid bound, and the smallest one is
    returned.
    """
    tried = []

    def objective(eps):
        value = math.inf if eps > _LOG_MAX else math.exp(eps) * kappa + delta(eps)
        tried.append(value)
        return value

    objective(low)
    objective(high)
    minimize_scalar(
        objective,
        bounds=(low, high),
        method="bounded",
        options={"xatol": _EPSILON_XTOL},
    )
    return min(1.0, min(tried))


def _curve_bound(kappa, event, relation, method):
    """``trade_off`` (ε over the reals) or ``profile`` (ε >= 0) from the event."""
    m = _gaussian_noise(event, relation)
    if method == "trade_off" and m is not None:
        mu = math.inf if m == 0.0 else 1.0 / m
        return norm.cdf(norm.ppf(kappa) + mu)
    delta, tail = _delta_curve(event, relation)
    if math.isinf(tail):
        return np.ones_like(kappa)
    out = np.empty_like(kappa)
    for index, k in np.ndenumerate(kappa):
        high = max(tail, math.log(1.0 / k)) + 1.0
        low = 0.0 if method == "profile" else -high
        out[index] = _profile_minimum(delta, float(k), low, high)
    return out


@validate_params(
    {
        "privacy": "no_validation",
        "kappa": ["array-like", Real],
        "method": [StrOptions(set(METHODS))],
    },
    prefer_skip_nested_validation=True,
)
def rero_bound(privacy, kappa, *, method="auto"):
    """Upper bound on the success of any reconstruction attack (ReRo).

    An informed adversary knows every training example but the target, knows the
    prior the target was drawn from, and sees the release; it succeeds if its
    guess lies within a chosen error radius of the target. ``kappa`` is its best
    success without the release: the prior mass of the most probable error ball
    (:func:`rero_kappa`). With the release, no adversary succeeds with probability
    above ``1 - f(kappa)``, ``f`` the mechanism's trade-off function (Hayes et al.
    2023; Kaissis et al. 2023).

    Parameters
    ----------
    privacy : estimator, Guarantee or dp_accounting.DpEvent
        A fitted estimator (or pipeline) with ``guarantee_``, a
        :class:`Guarantee` that holds, or a dp-accounting event at unit distance
        under add/remove (as ``Guarantee.dp_event`` with
        ``event_relation="add_remove"``).
    kappa : float or array-like of float
        Baseline success probability, in the open interval (0, 1).
    method : {"auto", "trade_off", "profile", "epsilon_delta"}, default="auto"
        How the bound is computed:

        - ``"trade_off"``: ``1 - f(kappa)`` of the mechanism's event. For Gaussian
          mechanisms and their compositions (output perturbation, DP-SGD without
          sampling or with shuffled batches) the closed form
          ``Phi(Phi^-1(kappa) + mu)`` of mu-GDP, ``mu`` the sensitivity over the
          noise (over all steps); for Poisson-sampled DP-SGD
          ``min over real eps of e^eps kappa + delta(eps)``, ``delta`` the
          privacy profile of dp-accounting's PLD accountant (pessimistic, so
          still an upper bound), which equals ``1 - f(kappa)`` of the
          PLD's pair of distributions.
        - ``"profile"``: ``min over eps >= 0 of e^eps kappa + delta(eps)`` (Hayes
          et al.'s bound from (eps, delta)-DP, at the best eps of the privacy
          profile). At least ``"trade_off"``; equal to it for the Gaussian
          mechanism when ``kappa <= Phi(-mu/2)``.
        - ``"epsilon_delta"``: ``1 - f(kappa)`` of the guarantee's own (eps, delta)
          alone, ``min(1, delta + e^eps kappa, 1 - e^-eps (1 - delta - kappa))``:
          valid for any (eps, delta)-DP mechanism, and the loosest.
        - ``"auto"``: ``"trade_off"`` when the guarantee has a ``dp_event``, else
          ``"epsilon_delta"`` (a group guarantee of Poisson-sampled DP-SGD).

    Returns
    -------
    bound : float or ndarray
        The largest success probability of any attack, in ``[kappa, 1]``; a float
        for a scalar ``kappa``, else an array of its shape.

    Raises
    ------
    ValueError
        If the guarantee does not hold (its reason is quoted), ``kappa`` is not in
        (0, 1), or ``method`` needs a ``dp_event`` the guarantee lacks.

    See Also
    --------
    rero_kappa : The baseline ``kappa`` of common priors.
    mse_bound_fil : Guo et al.'s bound on the error of unbiased attacks.

    Notes
    -----
    The bound holds for the guarantee's neighbouring relation and protects what
    the guarantee protects: it is a guarantee only where ``guarantee_`` holds. It
    covers every attack, biased or not, and every prior with baseline ``kappa``;
    Guo et al.'s FIL bound (``mse_bound``) covers unbiased attacks only, but is
    specific to each example. For mu-GDP the bound is attained: two candidates
    whose releases differ by the full sensitivity in opposite directions from the
    reference data set (``kappa = 1/2``) are told apart with probability
    ``Phi(mu)``.

    References
    ----------
    Hayes, J., Mahloujifar, S. and Balle, B. "Bounding training data
    reconstruction in DP-SGD." NeurIPS 2023.

    Kaissis, G., Hayes, J., Ziller, A. and Rueckert, D. "Bounding data
    reconstruction attacks with the hypothesis testing interpretation of
    differential privacy." 2023 (arXiv:2307.03928).

    Dong, J., Roth, A. and Su, W. J. "Gaussian differential privacy." JRSS B,
    2022.

    Examples
    --------
    >>> from sklearn_fil.accounting import Guarantee, rero_bound
    >>> from sklearn_fil.accounting._events import gaussian_event
    >>> g = Guarantee(epsilon=4.38, delta=1e-5, neighboring_relation="replace_one",
    ...               sensitivity=1.0, noise_std=1.0,
    ...               dp_event=gaussian_event(1.0, 1.0), event_relation="add_remove")
    >>> round(rero_bound(g, 0.1), 4)          # Phi(Phi^-1(0.1) + 1), mu = 1
    0.3891
    >>> rero_bound(g, [1e-3, 1e-2]).round(4)
    array([0.0183, 0.0924])
    >>> round(rero_bound(g, 1e-3, method="epsilon_delta"), 4)  # e^eps kappa + delta
    0.0798

    A fitted estimator's bound in one call, for a guess among ten equally likely
    candidates:

    >>> import numpy as np
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.accounting import rero_kappa
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(500, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = OutputPerturbedLogisticRegression(
    ...     sigma=0.1, lam=0.1, data_norm=1.0, random_state=0).fit(X, y)
    >>> bound = rero_bound(clf, rero_kappa(10))
    >>> print(round(clf.guarantee_.epsilon, 2), round(bound, 3))
    2.29 0.237
    """
    guarantee, event, relation = _holding_guarantee(privacy)
    k = _kappa_array(kappa)
    method = _resolve_method(method, guarantee, event)
    if method == "epsilon_delta":
        bound = _epsilon_delta_bound(k, float(guarantee.epsilon), guarantee.delta)
    else:
        bound = _curve_bound(k, event, relation, method)
    bound = np.clip(np.maximum(np.asarray(bound, dtype=np.float64), k), None, 1.0)
    return float(bound) if bound.ndim == 0 else bound


def _ball_log_volume(radius, n_dims):
    """log of the volume of the L2 ball of ``radius`` in ``n_dims`` dimensions."""
    return (
        0.5 * n_dims * math.log(math.pi)
        + n_dims * math.log(radius)
        - float(gammaln(0.5 * n_dims + 1.0))
    )


def _continuous_kappa(prior, radius, scale, n_dims, norm_):
    if prior == "gaussian":
        if norm_ == "l2":  # ‖N(0, s² I_d)‖² / s² is chi-squared with d dof
            return float(chi2.cdf((radius / scale) ** 2, n_dims))
        return float(np.exp(n_dims * np.log1p(-2.0 * norm.sf(radius / scale))))
    if norm_ == "linf":  # every coordinate within radius of the box's centre
        return float(min(1.0, 2.0 * radius / scale) ** n_dims)
    # The ball inside the box (exact for 2 radius <= scale), else an upper bound.
    log_ratio = _ball_log_volume(radius, n_dims) - n_dims * math.log(scale)
    return float(math.exp(min(0.0, log_ratio)))


@validate_params(
    {
        "prior": ["array-like", Integral, StrOptions({"gaussian", "uniform"})],
        "radius": [POSITIVE, None],
        "scale": [POSITIVE],
        "n_dims": [count(1)],
        "norm": [StrOptions({"l2", "linf"})],
    },
    prefer_skip_nested_validation=True,
)
def rero_kappa(prior, *, radius=None, scale=1.0, n_dims=1, norm="l2"):
    """Baseline success ``kappa`` of a reconstruction prior (for :func:`rero_bound`).

    ``kappa`` is the largest prior probability of an error ball: the success of
    the best guess made without the release.

    Parameters
    ----------
    prior : int, array-like of float, "gaussian" or "uniform"
        - an int ``K >= 2``: the target is one of ``K`` known candidates, equally
          likely, and only an exact guess succeeds: ``kappa = 1 / K``;
        - an array of probabilities (summing to 1): candidates with these prior
          probabilities: ``kappa = max(probabilities)``;
        - ``"gaussian"``: the target is ``N(m, scale² I)`` in ``n_dims``
          dimensions; a ball of ``radius`` around the mean holds the most mass
          (Anderson's inequality);
        - ``"uniform"``: the target is uniform on a cube of side ``scale`` in
          ``n_dims`` dimensions.
    radius : float, default=None
        The error radius (required for a continuous prior, unused otherwise).
    scale : float, default=1.0
        Standard deviation of the Gaussian prior per coordinate, or the side of
        the uniform prior's cube.
    n_dims : int, default=1
        Number of reconstructed coordinates.
    norm : {"l2", "linf"}, default="l2"
        How the error is measured: the Euclidean norm, or the largest
        coordinate. For the uniform prior under ``"l2"`` with ``2 radius >
        scale`` (the ball sticks out of the cube) the result is the upper bound
        ``min(1, ball volume / cube volume)``, which keeps :func:`rero_bound` an
        upper bound.

    Returns
    -------
    kappa : float
        The baseline success probability, in (0, 1].

    Examples
    --------
    >>> from sklearn_fil.accounting import rero_kappa
    >>> rero_kappa(10)
    0.1
    >>> rero_kappa([0.5, 0.3, 0.2])
    0.5
    >>> round(rero_kappa("gaussian", radius=1.0, n_dims=1), 4)   # P(|Z| <= 1)
    0.6827
    >>> rero_kappa("uniform", radius=0.1, scale=1.0, n_dims=2, norm="linf")
    0.04000000000000001
    """
    if isinstance(prior, str):
        if radius is None:
            raise ValueError(f"prior={prior!r} needs an error radius, got None.")
        return _continuous_kappa(prior, float(radius), float(scale), n_dims, norm)
    if isinstance(prior, Integral) and not isinstance(prior, bool):
        if prior < 2:
            raise ValueError(f"A prior over K candidates needs K >= 2, got {prior}.")
        return 1.0 / int(prior)
    p = real_array(prior, "prior", "an int, an array of probabilities or a name")
    if p.ndim != 1 or p.size < 2 or np.any(~np.isfinite(p)) or np.any(p < 0):
        raise ValueError(
            "prior must be a 1-D array of at least two finite, non-negative "
            f"probabilities, got {prior!r}."
        )
    if not math.isclose(float(p.sum()), 1.0, rel_tol=0.0, abs_tol=1e-9):
        raise ValueError(f"prior probabilities must sum to 1, got {float(p.sum())!r}.")
    return float(p.max())
