"""Lower bounds on the error of unbiased reconstruction attacks.

Guo, Karrer, Chaudhuri & van der Maaten (2022) bound the mean squared error with which
an adversary who sees the released model can reconstruct one training example, either
from a Rényi-DP guarantee (Theorem 1) or from the Fisher information loss (Theorem 2).
Both bounds here are the forms for *unbiased* attacks only.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_fil.accounting._validation import (
    check_entries,
    count,
    nonnegative_array,
    real_array,
    validate_params,
)


@validate_params({"n_features": [None, count(1)]}, prefer_skip_nested_validation=True)
def mse_bound_rdp(epsilon, diameter, n_features=None):
    """Lower bound on the MSE of unbiased reconstruction under (2, ε)-RDP.

    Guo et al. (2022, Theorem 1): if the training algorithm is (2, ε)-Rényi
    differentially private, any *unbiased* reconstruction ``z_hat`` of a training
    example ``z`` in a data space of per-coordinate diameters ``diam_i`` satisfies
    ``E ||z_hat - z||^2 / d >= (sum_i diam_i^2 / (4 d)) / (exp(epsilon) - 1)``.

    Parameters
    ----------
    epsilon : float or array-like of float
        RDP parameter(s) ε >= 0 at order 2. Broadcast against the result; 0 gives
        ``inf`` and ``np.inf`` gives 0.
    diameter : float or array-like of shape (n_features,)
        Diameter of the data space along each coordinate (the largest change of
        that coordinate with the others held fixed), finite and >= 0. A scalar is
        the same diameter for every coordinate.
    n_features : int, default=None
        Dimension d of the example. Optional: with a scalar ``diameter`` the bound
        does not depend on it; with an array it must equal ``len(diameter)``.

    Returns
    -------
    mse_bound : float or ndarray
        Lower bound on ``E ||z_hat - z||^2 / d``, a float when ``epsilon`` is a
        scalar, else an array of the shape of ``epsilon``.

    See Also
    --------
    mse_bound_fil : The (usually tighter) bound from Fisher information loss.
    gaussian_rdp : RDP of the Gaussian mechanism, a source of ε.

    Notes
    -----
    The bound holds for unbiased attacks only: Theorem 1 in general adds the squared
    bias and scales each diameter by the attack's sensitivity ``gamma_i``, so a biased
    attack (e.g. one that clips its output to the data range) can do better. When
    every diameter is 0 the data space is a single point and the bound is 0.

    References
    ----------
    Guo, C., Karrer, B., Chaudhuri, K. and van der Maaten, L. "Bounding training data
    reconstruction in private (deep) learning." ICML 2022, Theorem 1.

    Examples
    --------
    >>> from sklearn_fil.accounting import mse_bound_rdp
    >>> round(mse_bound_rdp(2.0, 100.0), 1)
    391.3
    >>> mse_bound_rdp([0.0, 1.0, 2.0], [1.0, 3.0]).round(3)
    array([  inf, 0.727, 0.196])
    """
    eps = nonnegative_array(epsilon, "epsilon")
    kind = "a real number or a 1-D array of real numbers"
    diam = real_array(diameter, "diameter", kind)
    if diam.ndim > 1:
        raise ValueError(
            f"diameter must be a scalar or a 1-D array, got an array of shape "
            f"{diam.shape}."
        )
    if diam.ndim == 1 and diam.size == 0:
        raise ValueError("diameter must not be empty, got diameter=[].")
    rule = "diameter must be finite and >= 0, got diameter={!r}."
    check_entries(diam, ~np.isfinite(diam) | (diam < 0), rule)
    if n_features is not None and diam.ndim == 1 and diam.size != n_features:
        raise ValueError(
            f"n_features={n_features!r} does not match len(diameter)={diam.size}."
        )

    # (sum_i diam_i^2 / (4 d)) is a quarter of the mean squared diameter.
    numerator = 0.25 * float(np.mean(diam**2))
    if numerator == 0.0:
        bound = np.zeros(eps.shape, dtype=np.float64)
    else:
        with np.errstate(divide="ignore", over="ignore"):
            bound = numerator / np.expm1(eps)
    if eps.ndim == 0:
        return float(bound)
    return bound


def mse_bound_fil(dfil):
    """Lower bound on the MSE of unbiased reconstruction from Fisher information.

    Guo et al. (2022, Theorem 2): for a released model whose Fisher information
    matrix about a d-dimensional training example ``z`` is ``I``, any *unbiased*
    reconstruction ``z_hat`` satisfies
    ``E ||z_hat - z||^2 / d >= d / Tr(I) = 1 / dfil^2``, where
    ``dfil = sqrt(Tr(I) / d)`` is the diagonal Fisher information loss.

    Parameters
    ----------
    dfil : float or array-like of float
        Diagonal FIL η̄ (one value per example, say), finite and >= 0. 0 gives
        ``inf``. Passing the spectral FIL η >= η̄ instead gives the weaker, still
        valid bound ``1 / eta^2``.

    Returns
    -------
    mse_bound : float or ndarray
        ``1 / dfil**2`` elementwise, a float when ``dfil`` is a scalar.

    See Also
    --------
    mse_bound_rdp : The bound from a (2, ε)-RDP guarantee.

    Notes
    -----
    The bound is the Cramér-Rao bound and holds for unbiased attacks only (and under
    the usual regularity conditions on the density of the released model); a biased
    attack can achieve a smaller MSE. The Fisher information loss is computed from
    the training data, so these bounds are themselves sensitive.

    References
    ----------
    Guo, C., Karrer, B., Chaudhuri, K. and van der Maaten, L. "Bounding training data
    reconstruction in private (deep) learning." ICML 2022, Theorem 2.

    Hannun, A., Guo, C. and van der Maaten, L. "Measuring data leakage in
    machine-learning models with Fisher information." UAI 2021.

    Examples
    --------
    >>> from sklearn_fil.accounting import mse_bound_fil
    >>> mse_bound_fil(0.5)
    4.0
    >>> mse_bound_fil([0.0, 1.0, 10.0])
    array([ inf, 1.  , 0.01])
    """
    eta = nonnegative_array(dfil, "dfil")
    check_entries(eta, np.isinf(eta), "dfil must be finite, got dfil={!r}.")
    with np.errstate(divide="ignore", over="ignore"):
        bound = 1.0 / np.square(eta)
    if eta.ndim == 0:
        return float(bound)
    return bound
