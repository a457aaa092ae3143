"""The L2 strength of output perturbation that minimises its excess-risk bound.

:func:`output_perturbation_lam` (logistic and other Lipschitz losses) and
:func:`output_perturbation_ridge_lam` (ridge regression with bounded labels)
are the rules behind ``lam="auto"`` of the output-perturbed models with a
``target_epsilon``: functions of public numbers only.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from scipy.optimize import brentq

from sklearn_fil.accounting._gaussian import gaussian_sigma
from sklearn_fil.accounting._validation import (
    OPEN_UNIT,
    POSITIVE,
    count,
    validate_params,
)

# How much each coordinate of a good model moves the margin on a typical row:
# the comparator's norm is B = COEF_SCALE p / L. Chosen on development data
# only (Adult, COMPAS, breast cancer, synthetic; see "lam='auto'" in
# doc/modules/choosing_parameters.rst), never on the data sets of
# benchmarks/bench_utility.py.
COEF_SCALE = 0.35
# Ridge regression: the comparator's predictions, in units of the label bound,
# B L = RIDGE_COEF_SCALE label_bound sqrt(p). Chosen on development data only
# (scikit-learn's diabetes, IWPC warfarin, synthetic), never on the data sets
# of benchmarks/bench_utility_regression.py.
RIDGE_COEF_SCALE = 0.25


@validate_params(
    {
        "n_samples": [POSITIVE],
        "n_params": [count(1)],
        "row_norm": [POSITIVE],
        "epsilon": [POSITIVE],
        "delta": [OPEN_UNIT],
        "lipschitz": [POSITIVE],
        "smoothness": [POSITIVE],
        "coef_scale": [POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def output_perturbation_lam(
    n_samples,
    n_params,
    row_norm,
    epsilon,
    delta,
    *,
    lipschitz=1.0,
    smoothness=0.25,
    coef_scale=COEF_SCALE,
):
    r"""The L2 strength that minimises the excess-risk bound of output perturbation.

    The rule of ``lam="auto"``: every argument is public (the number of rows,
    the number of weights, the clipping norm, the target (ε, δ), the loss's
    constants), so the λ it returns costs no privacy.

    The model minimises ``F(w) = R(w) + (lam / 2) ||w||^2`` with ``R(w) =
    (1/n) sum_i l(w^T x_i, y_i)``, ``||x_i|| <= L`` (``row_norm``, the
    intercept's constant column included), and releases ``w' = w* + b``, ``b
    ~ N(0, sigma^2 I_p)``, with ``sigma = c(ε, δ) Δ``, ``Δ = 2 G L / (n lam)``
    the replace-one sensitivity and ``c(ε, δ)`` the noise of the analytic
    Gaussian mechanism at unit sensitivity. For any comparator ``w0`` of norm
    ``B``, the expected excess empirical risk of the release is at most

    ``g(lam) = lam B^2 / 2 + 2 s p c^2 G^2 L^4 / (n^2 lam^2) + 2 G^2 L^2 / (n lam)``

    * penalty bias: ``R(w*) - R(w0) <= lam ||w0||^2 / 2``, since ``w*``
      minimises ``F``;
    * noise: ``R`` is ``s L^2``-smooth, so ``E R(w* + b) <= R(w*) + s L^2 p
      sigma^2 / 2`` (the linear term has mean zero);
    * generalisation: ``w*`` is uniformly ``2 G^2 L^2 / (n lam)``-stable
      (Bousquet & Elisseeff 2002; Shalev-Shwartz et al. 2009), which bounds
      the expected gap between its risk on new rows and on the training rows.

    ``B`` is not public; it is fixed from public numbers: a comparator each of
    whose ``p`` coordinates moves the margin by ``coef_scale`` (``a``) on a
    typical coordinate of a row, ``L / sqrt(p)``, has ``|w0_j| = a sqrt(p) /
    L`` and ``B = a p / L``: ``B L = m = a p``. With ``u = lam / L^2`` every
    ``L`` cancels, ``g = L^{-2} h(u)`` with ``h(u) = u m^2 / 2 + 2 s p c^2
    G^2 / (n^2 u^2) + 2 G^2 / (n u)``, whose one positive stationary point
    solves the cubic ``(m^2 / 2) u^3 - (2 G^2 / n) u - 4 s p c^2 G^2 / n^2 =
    0`` (one sign change: one positive root, the minimiser, as ``h`` is
    convex on ``u > 0``). The rule returns ``lam = L^2 u``: invariant to
    rescaling the features with ``data_norm`` (the intercept's column
    aside). The certificate's factor ``1 + 2e-6`` on ``Δ`` is left out (it
    moves λ by less than ``1e-6``).

    Parameters
    ----------
    n_samples : float
        Number of training rows ``n`` (public under replace-one), or the sum
        of public weights scaled to a largest weight of 1.
    n_params : int
        Number of released weights ``p`` (features, plus the intercept).
    row_norm : float
        Bound ``L`` on every row's norm, the intercept's column included:
        ``sqrt(data_norm^2 + fit_intercept)``.
    epsilon : float
        Target ε, > 0.
    delta : float
        δ of the guarantee, in (0, 1).
    lipschitz : float, default=1.0
        ``G``: the loss's gradient in ``w`` has norm at most ``G ||x||`` (1
        for the binary logistic loss).
    smoothness : float, default=0.25
        ``s``: the loss's Hessian in ``w`` is at most ``s ||x||^2 I`` (1/4
        for the binary logistic loss).
    coef_scale : float, default=0.35
        ``a``: the margin each coordinate of the comparator contributes on a
        typical row (``B L = a p``). Chosen on development data.

    Returns
    -------
    lam : float
        The minimiser of ``g``.

    See Also
    --------
    output_perturbation_ridge_lam : The rule for ridge regression.

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate (2011), *Differentially private
    empirical risk minimization*, JMLR.
    Bousquet & Elisseeff (2002), *Stability and generalization*, JMLR.
    Shalev-Shwartz, Shamir, Srebro & Sridharan (2009), *Stochastic convex
    optimization*, COLT.

    Examples
    --------
    >>> import math
    >>> from sklearn_fil.accounting import output_perturbation_lam
    >>> lam = output_perturbation_lam(10_000, 21, math.sqrt(21), 1.0, 1e-5)
    >>> round(lam, 4)
    0.1109
    >>> # stronger privacy, more regularisation
    >>> output_perturbation_lam(10_000, 21, math.sqrt(21), 0.5, 1e-5) > lam
    True
    """
    c = gaussian_sigma(epsilon=epsilon, delta=delta, sensitivity=1.0)
    n, g2 = float(n_samples), float(lipschitz) ** 2
    margin = coef_scale * n_params  # B L
    # (m^2 / 2) u^3 + 0 u^2 - (2 G^2 / n) u - 4 s p c^2 G^2 / n^2 = 0
    cubic = [
        margin**2 / 2.0,
        0.0,
        -2.0 * g2 / n,
        -4.0 * smoothness * n_params * c**2 * g2 / n**2,
    ]
    u = _positive_root(cubic)
    return float(row_norm**2 * u)


@validate_params(
    {
        "n_samples": [POSITIVE],
        "n_params": [count(1)],
        "row_norm": [POSITIVE],
        "epsilon": [POSITIVE],
        "delta": [OPEN_UNIT],
        "coef_scale": [POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def output_perturbation_ridge_lam(
    n_samples, n_params, row_norm, epsilon, delta, *, coef_scale=RIDGE_COEF_SCALE
):
    r"""The L2 strength of output-perturbed ridge regression, from public numbers.

    The rule of ``lam="auto"`` of
    :class:`~sklearn_fil.OutputPerturbedLinearRegression` with a
    ``target_epsilon``: the bound of :func:`output_perturbation_lam` on the
    expected excess risk, for the squared loss ``(w^T x - y)^2 / 2`` with
    rows ``||x|| <= L`` and labels ``|y| <= B_y``. The loss is ``1``-smooth
    in the margin, and the sensitivity is ``Δ = 2 G L / (n lam)`` with
    ``G(lam) = B_y (L / (2 sqrt(lam)) + 1)``, the largest residual where
    the minimiser can lie (``||w|| <= B_y / (2 sqrt(lam))``;
    :func:`~sklearn_fil.accounting.output_perturbation_sensitivity`). With
    ``u = lam / L^2`` and the comparator's ``B L = a B_y sqrt(p)`` (``a``
    the ``coef_scale``: predictions a fraction of the label bound), ``g =
    B_y^2 L^{-2} h(u)`` with

    ``h(u) = a^2 p u / 2 + 2 p c^2 (1 + u^{-1/2} / 2)^2 / (n^2 u^2)``

    (penalty bias and noise), a sum of powers of ``u`` with positive
    coefficients, hence convex in ``log u`` with one minimiser, the root of
    its derivative found by Brent's method. ``B_y`` cancels, so the rule
    needs no label bound, and ``lam = L^2 u`` is invariant to rescaling the
    features with ``data_norm``.

    The logistic rule's third term, uniform stability ``2 G^2 L^2 / (n
    lam)``, is left out: with ``G(lam)`` the worst residual it grows as
    ``lam^-2``, dominates, and leaves λ almost independent of ε; on the
    development data (scikit-learn's diabetes, IWPC warfarin, synthetic; 3
    splits, ε in {0.5, 1, 3}) it lost 0.035 of test R² on average against
    the best λ of a grid, the rule without it 0.018 (at most 0.053).

    Parameters
    ----------
    n_samples : float
        Number of training rows ``n`` (public under replace-one), or the sum
        of public weights scaled to a largest weight of 1.
    n_params : int
        Number of released weights ``p`` (features, plus the intercept).
    row_norm : float
        Bound ``L`` on every row's norm, the intercept's column included.
    epsilon : float
        Target ε, > 0.
    delta : float
        δ of the guarantee, in (0, 1).
    coef_scale : float, default=0.25
        ``a``: the comparator's norm in units of the label bound, ``B L = a
        B_y sqrt(p)``. Chosen on development data.

    Returns
    -------
    lam : float
        The minimiser of ``g``.

    See Also
    --------
    output_perturbation_lam : The rule for Lipschitz losses (logistic).

    Examples
    --------
    >>> import math
    >>> from sklearn_fil.accounting import output_perturbation_ridge_lam
    >>> lam = output_perturbation_ridge_lam(10_000, 11, math.sqrt(11), 1.0, 1e-5)
    >>> round(lam, 3)
    0.663
    >>> # stronger privacy, more regularisation
    >>> output_perturbation_ridge_lam(10_000, 11, math.sqrt(11), 0.5, 1e-5) > lam
    True
    """
    c = gaussian_sigma(epsilon=epsilon, delta=delta, sensitivity=1.0)
    n, p = float(n_samples), float(n_params)
    noise = 2.0 * p * c**2 / n**2
    # h(u) = sum of coefs * u**powers; (1 + u^-1/2 / 2)^2 = 1 + u^-1/2 + u^-1 / 4
    coefs = np.array([coef_scale**2 * p / 2.0, noise, noise, noise / 4.0])
    powers = np.array([1.0, -2.0, -2.5, -3.0])

    def slope(t):  # d h / d log u: increasing in t = log u
        return float(np.sum(coefs * powers * np.exp(powers * t)))

    low, high = -1.0, 1.0
    while slope(low) > 0:
        low *= 2.0
    while slope(high) < 0:
        high *= 2.0
    t = brentq(slope, low, high, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return float(row_norm**2 * math.exp(t))


def _positive_root(cubic):
    """The one positive real root of ``cubic`` (one sign change), polished."""
    roots = np.roots(cubic)
    u = float(max(r.real for r in roots if abs(r.imag) <= 1e-9 * abs(r)))
    a, _, b, c = cubic
    for _ in range(3):  # Newton: the companion matrix's roots lose digits
        u -= (a * u**3 + b * u + c) / (3 * a * u**2 + b)
    if not (math.isfinite(u) and u > 0):  # pragma: no cover - one sign change
        raise RuntimeError(f"No positive root of {cubic}.")
    return u
