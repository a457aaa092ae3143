"""Tests of the distribution of SGD's weights over seeds (Hyland & Tople, section 6).

Every function takes ``R``, an ``(n_samples, n_weights)`` array of centred weight
vectors (one row per seed, each data set's mean removed).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from scipy import stats
from scipy.spatial.distance import pdist

# Dimensions tested jointly by Henze-Zirkler: the statistic is numerically
# unreliable above about 55 (Hyland & Tople, appendix C.1).
_HZ_MAX_DIM = 55


def henze_zirkler(R):
    """Henze-Zirkler statistic and p-value for multivariate normality.

    The data are whitened by the maximum-likelihood covariance; directions of
    (numerically) zero variance are dropped, so a degenerate Gaussian is
    tested on its support. The statistic (Henze & Zirkler, 1990) is

        HZ = 1/n sum_jk exp(-b^2/2 D_jk) - 2 (1+b^2)^(-p/2) sum_j exp(-b^2 D_j /
        (2 (1+b^2))) + n (1+2b^2)^(-p/2),

    with ``D_jk`` the squared Mahalanobis distance between samples ``j`` and
    ``k``, ``D_j`` that of sample ``j`` to the mean and the smoothing ``b =
    ((2p+1)/4)^(1/(p+4)) n^(1/(p+4)) / sqrt(2)``; its p-value comes from the
    log-normal with the statistic's null mean and variance. Returns
    ``(statistic, p_value, dimension)``, NaN and 0 when no direction varies.
    """
    R = np.asarray(R, dtype=np.float64)
    n = R.shape[0]
    centred = R - R.mean(axis=0)
    eigval, eigvec = np.linalg.eigh(centred.T @ centred / n)
    keep = eigval > eigval.max(initial=0.0) * 1e-12
    p = int(keep.sum())
    if p == 0:
        return math.nan, math.nan, 0
    Z = centred @ (eigvec[:, keep] / np.sqrt(eigval[keep]))
    b2 = 0.5 * ((2 * p + 1) / 4) ** (2 / (p + 4)) * n ** (2 / (p + 4))
    pair = 2.0 * np.exp(-0.5 * b2 * pdist(Z, "sqeuclidean")).sum() + n  # j != k, j = k
    to_mean = np.exp(-b2 / (2 * (1 + b2)) * np.einsum("ij,ij->i", Z, Z)).sum()
    hz = pair / n - 2 * (1 + b2) ** (-p / 2) * to_mean + n * (1 + 2 * b2) ** (-p / 2)

    a = 1 + 2 * b2
    w = (1 + b2) * (1 + 3 * b2)
    mean = 1 - a ** (-p / 2) * (1 + p * b2 / a + p * (p + 2) * b2**2 / (2 * a**2))
    var = (
        2 * (1 + 4 * b2) ** (-p / 2)
        + 2
        * a ** (-p)
        * (1 + 2 * p * b2**2 / a**2 + 3 * p * (p + 2) * b2**4 / (4 * a**4))
        - 4
        * w ** (-p / 2)
        * (1 + 3 * p * b2**2 / (2 * w) + p * (p + 2) * b2**4 / (2 * w**2))
    )
    log_sd = math.sqrt(math.log1p(var / mean**2))
    log_mean = math.log(mean) - log_sd**2 / 2
    return hz, float(stats.lognorm.sf(hz, log_sd, scale=math.exp(log_mean))), p


def henze_zirkler_subsets(R, rng):
    """Henze-Zirkler on random subsets of weights when there are too many.

    With more than ``min(55, n // 2)`` weights, tests ``2 (p // m + 1)``
    random subsets of ``m`` weights (Hyland & Tople, appendix C.1): a
    multivariate normal has normal marginals, so the smallest p-value decides.
    Returns ``(statistic, p_value, n_subsets)`` of that subset.
    """
    n, p = R.shape
    m = min(p, _HZ_MAX_DIM, max(1, n // 2))
    if m == p:
        subsets = [np.arange(p)]
    else:
        subsets = [rng.choice(p, m, replace=False) for _ in range(2 * (p // m + 1))]
    results = [henze_zirkler(R[:, s]) for s in subsets]
    valid = [r for r in results if not math.isnan(r[1])]
    if not valid:
        return math.nan, math.nan, len(subsets)
    hz, p_value, _ = min(valid, key=lambda r: r[1])
    return hz, p_value, len(subsets)


def _laplace_ad(samples):
    """Anderson-Darling statistic of each column against its fitted Laplace.

    The location and scale are the maximum-likelihood ones (median, mean
    absolute deviation from it), as in :meth:`scipy.stats.laplace.fit`.
    """
    n = samples.shape[0]
    x = np.sort(samples, axis=0)
    loc = np.median(x, axis=0)
    scale = np.abs(x - loc).mean(axis=0)
    z = (x - loc) / scale
    # log F and log(1 - F) of the standard Laplace, each exact on its side.
    log_cdf = np.where(z < 0, z - math.log(2), np.log1p(-0.5 * np.exp(-np.abs(z))))
    log_sf = np.where(z > 0, -z - math.log(2), np.log1p(-0.5 * np.exp(-np.abs(z))))
    i = np.arange(1, n + 1)[:, None]
    return -n - ((2 * i - 1) * (log_cdf + log_sf[::-1])).sum(axis=0) / n


def laplace_anderson_darling(R, rng, n_null=9999):
    """Anderson-Darling test of each weight against a Laplace distribution.

    The statistic's null distribution with fitted location and scale does not
    depend on them, so one Monte-Carlo sample of ``n_null`` standard-Laplace
    data sets of the same size gives the p-values of every weight. Returns
    ``(statistic, p_value)``, NaN for weights that do not vary.
    """
    R = np.asarray(R, dtype=np.float64)
    n, p = R.shape
    varies = R.std(axis=0) > 0
    statistic = np.full(p, np.nan)
    p_value = np.full(p, np.nan)
    if not varies.any():
        return statistic, p_value
    statistic[varies] = _laplace_ad(R[:, varies])
    null = np.concatenate(
        [
            _laplace_ad(rng.laplace(size=(n, size)))
            for size in np.diff(np.r_[0:n_null:1000, n_null])
        ]
    )
    null.sort()
    exceed = null.size - np.searchsorted(null, statistic[varies], side="left")
    p_value[varies] = (1 + exceed) / (1 + null.size)
    return statistic, p_value


def shapiro_wilk(R):
    """Shapiro-Wilk p-value of each weight (NaN for weights that do not vary)."""
    R = np.asarray(R, dtype=np.float64)
    p_value = np.full(R.shape[1], np.nan)
    for j in np.flatnonzero(R.std(axis=0) > 0):
        p_value[j] = stats.shapiro(R[:, j]).pvalue
    return p_value


def tail_index(R):
    """Tail index alpha of an assumed symmetric alpha-stable distribution.

    The estimator of Mohammadi, Mohammadpour & Ogata (2015): split the ``n``
    samples into ``K2`` blocks of ``K1 = floor(sqrt(n))``, sum each block, and

        1 / alpha = (mean log ||block sum|| - mean log ||sample||) / log K1,

    since a sum of ``K1`` stable vectors is ``K1^(1/alpha)`` times one of
    them. ``alpha = 2`` is Gaussian, ``alpha = 1`` Cauchy; NaN with fewer
    than 4 samples or a zero sample.
    """
    R = np.asarray(R, dtype=np.float64)
    k1 = math.isqrt(R.shape[0])
    k2 = R.shape[0] // k1
    if k1 < 2:
        return math.nan
    X = R[: k1 * k2]
    norms = np.linalg.norm(X, axis=1)
    sums = np.linalg.norm(X.reshape(k2, k1, -1).sum(axis=1), axis=1)
    if not (norms > 0).all() or not (sums > 0).all():
        return math.nan
    ratio = np.log(sums).mean() - np.log(norms).mean()
    return math.log(k1) / ratio if ratio > 0 else math.inf
