"""Label-privacy lower bound of a DP-SGD step from a gradient label attack.

The audit of Yuan, Xue, Wang & Shen (Algorithm 2 and appendix A.3), in closed
form: :func:`label_dp_lower_bound`.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy.special import log_ndtr

from sklearn_fil.accounting._validation import (
    POSITIVE,
    Number,
    check_entries,
    real_array,
    validate_params,
)

# Relative tolerance of the check that a full-gradient norm is at least the norm of
# its attacked block: generous enough for norms computed in float32.
_NORM_RTOL = 1e-5


@dataclass(frozen=True)
class LabelDPLowerBound:
    """Result of :func:`label_dp_lower_bound`.

    Attributes
    ----------
    epsilon : float
        The lower bound on epsilon: ``max(0, max_r per_example[r])``.
    per_example : ndarray of shape (n_rows,)
        ``LB[r] = log((p0[r] - delta) / p1[r])`` for the dataset pair that flips
        row ``r``'s label; ``-inf`` where ``p0[r] <= delta``.
    p0 : ndarray of shape (n_rows,)
        Probability that the attack outputs row ``r``'s label ``labels[r]`` when
        trained on the given labels ``D_0``.
    p1 : ndarray of shape (n_rows,)
        Probability that it outputs the same label ``labels[r]`` when trained on
        ``D_1[r]``, the labels with row ``r`` flipped.
    example : int
        Row attaining the largest ``per_example`` (the first one on ties).
    batch_epsilon : ndarray of shape (n_batches,)
        ``max(0, max LB[r])`` over each batch, in the order of
        ``numpy.unique(batches)`` (one entry when ``batches`` is None).
    delta : float
        The ``delta`` of the bound.
    """

    epsilon: float
    per_example: np.ndarray
    p0: np.ndarray
    p1: np.ndarray
    example: int
    batch_epsilon: np.ndarray
    delta: float


def _as_float_array(value, name, ndim):
    """``value`` as a finite float64 array of dimension ``ndim``."""
    array = real_array(value, name)
    if array.ndim != ndim:
        raise ValueError(
            f"{name} must be a {ndim}-D array, got an array of shape {array.shape}."
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite values.")
    return array


def _check_rows(array, name, n_rows):
    """``array`` after checking that it has one entry per row."""
    if array.shape != (n_rows,):
        raise ValueError(
            f"{name} must have shape ({n_rows},) (one entry per row of "
            f"coefficients), got shape {array.shape}."
        )
    return array


def _check_norms(norms, name, residual, block_norms):
    """Full-gradient norms are >= 0 and >= the norm of the attacked block."""
    check_entries(norms, norms < 0, f"{name} must be >= 0, got {{!r}}.")
    block = residual * block_norms
    short = norms < block * (1.0 - _NORM_RTOL)
    if np.any(short):
        r = int(np.flatnonzero(short)[0])
        raise ValueError(
            f"{name}[{r}]={float(norms[r])!r} is smaller than the norm "
            f"{float(block[r])!r} of the "
            "attacked layer's gradient |proba - label| * ||coefficients[r]||; "
            "pass the norm of the unclipped per-example gradient over all "
            "parameters (not in units of max_grad_norm, not clipped)."
        )


def _check_inputs(coefficients, proba, labels, grad_norms, flipped_grad_norms):
    """The checked arrays of :func:`label_dp_lower_bound`, and the flipped norms."""
    coef = _as_float_array(coefficients, "coefficients", 2)
    n_rows, d = coef.shape
    if n_rows == 0 or d == 0:
        raise ValueError(
            "coefficients must have at least one row and one column, got shape "
            f"{coef.shape}."
        )
    proba = _check_rows(_as_float_array(proba, "proba", 1), "proba", n_rows)
    if np.any((proba < 0) | (proba > 1)):
        raise ValueError("proba must be in [0, 1].")
    labels = _check_rows(_as_float_array(labels, "labels", 1), "labels", n_rows)
    rule = "labels must be 0 or 1, got a label equal to {!r}."
    check_entries(labels, (labels != 0) & (labels != 1), rule)
    block_norms = np.linalg.norm(coef, axis=1)
    residual0, residual1 = np.abs(proba - labels), np.abs(proba - (1.0 - labels))
    norms0 = _as_float_array(grad_norms, "grad_norms", 1)
    _check_norms(
        _check_rows(norms0, "grad_norms", n_rows), "grad_norms", residual0, block_norms
    )
    if flipped_grad_norms is None:
        if np.any(residual0 == 0):
            r = int(np.flatnonzero(residual0 == 0)[0])
            raise ValueError(
                f"proba[{r}] equals labels[{r}], so the flipped label's gradient "
                "norm cannot be derived from grad_norms; pass flipped_grad_norms."
            )
        norms1 = norms0 * (residual1 / residual0)
    else:
        norms1 = _as_float_array(flipped_grad_norms, "flipped_grad_norms", 1)
        _check_rows(norms1, "flipped_grad_norms", n_rows)
        _check_norms(norms1, "flipped_grad_norms", residual1, block_norms)
    return coef, proba, labels, norms0, norms1


def _batch_ids(batches, n_rows):
    """Each row's batch index (``numpy.unique`` order) and the number of batches."""
    if batches is None:
        return np.zeros(n_rows, dtype=np.intp), 1
    batches = np.asarray(batches)
    if batches.shape != (n_rows,):
        raise ValueError(
            f"batches must have shape ({n_rows},) (one entry per row of "
            f"coefficients), got shape {batches.shape}."
        )
    uniques, batch_ids = np.unique(batches, return_inverse=True)
    return batch_ids.reshape(-1), uniques.size


def _batch_lower_bounds(coef, u0, u1, labels, scale, delta):
    """Closed form for a stack of batches of equal size.

    ``coef`` is ``(n_batches, N, d)`` and ``u0``, ``u1``, ``labels`` are
    ``(n_batches, N)``; ``scale = noise_multiplier * max_grad_norm`` is the noise
    standard deviation of the summed gradient. Returns ``p0``, ``p1`` and ``LB``.
    """
    n_rows, d = coef.shape[1:]
    _, s, vt = np.linalg.svd(coef, full_matrices=False)
    # Rank cutoff of numpy.linalg.lstsq; zero singular values are dropped.
    cutoff = s[:, :1] * (max(n_rows, d) * np.finfo(np.float64).eps)
    keep = s > cutoff
    inv_s = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    # Left singular vectors as coef V S^+: exactly zero for a zero row of coef.
    u = np.matmul(coef, np.swapaxes(vt, 1, 2)) * inv_s[:, None, :]
    leverage = np.sum(u * u, axis=2)  # P[r, r] for P = pinv(C) C
    a_norm = np.sqrt(np.sum((u * inv_s[:, None, :]) ** 2, axis=2))  # ||a_r||
    # a_r^T (sum of clipped gradients) for D_0 and D_1[r]
    proj0 = np.matmul(u, np.matmul(np.swapaxes(u, 1, 2), u0[..., None]))[..., 0]
    proj1 = proj0 + (u1 - u0) * leverage
    sign = 1.0 - 2.0 * labels  # (-1)^y
    seen = leverage > 0.0
    denom = np.where(seen, scale * a_norm, 1.0)
    z0 = np.where(seen, sign * proj0 / denom, 0.0)
    z1 = np.where(seen, sign * proj1 / denom, 0.0)
    log_p0, log_p1 = log_ndtr(z0), log_ndtr(z1)
    p0, p1 = np.exp(log_p0), np.exp(log_p1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_num = log_p0 + np.log1p(-delta / p0) if delta > 0 else log_p0
    bound = np.where(p0 > delta, log_num - log_p1, -np.inf)
    return p0, p1, bound


@validate_params(
    {
        "noise_multiplier": [POSITIVE],
        "max_grad_norm": [POSITIVE],
        "delta": [Number(Real, 0, 1, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def label_dp_lower_bound(
    coefficients,
    proba,
    labels,
    grad_norms,
    *,
    noise_multiplier,
    max_grad_norm,
    delta=0.0,
    flipped_grad_norms=None,
    batches=None,
):
    """Lower bound on the label-DP epsilon of a DP-SGD step (Yuan et al., Alg. 2).

    Threat model: the adversary sees the released noisy gradient of one layer
    ``W`` for a batch of ``N`` examples and knows the batch and the model, hence
    ``C = [dZ[1]/dW, ..., dZ[N]/dW]`` (``Z[r]`` the logit of example ``r``), but
    not the binary labels. With a sigmoid output and log loss, DP-SGD releases
    ``G = (1 / N) (C u + e)``, ``u[r] = f[r] (p[r] - y[r])``, ``f[r] = min(1,
    C_clip / n[r])`` for the full per-example gradient norm ``n[r]`` and ``e ~
    N(0, (sigma C_clip)^2 I)``. The attack (Algorithm 1) solves ``min ||C x -
    G||`` and predicts ``y[r] = 1`` when ``a_r^T G < 0``, ``a_r^T`` row ``r`` of
    the pseudo-inverse of ``C``. ``D_0`` is the given labels and ``D_1[r]``
    flips label ``r`` (its clipping factor recomputed from the flipped norm).

    Parameters
    ----------
    coefficients : array-like of shape (n_rows, d)
        Row ``r`` is ``dZ[r]/dW``, the derivative of row ``r``'s output logit with
        respect to the attacked layer's weights (the transpose of the paper's
        ``C``). Rows of different batches may be taken at different weights.
    proba : array-like of shape (n_rows,)
        Predicted probability ``p[r]`` of class 1, in [0, 1].
    labels : array-like of shape (n_rows,)
        Binary labels ``y[r]`` of ``D_0``, 0 or 1.
    grad_norms : array-like of shape (n_rows,)
        L2 norm of the unclipped per-example gradient over all the clipped
        parameters (every layer), under ``labels``: ``|p[r] - y[r]| *
        ||dZ[r]/dtheta||``, in the units of the weights (for a network, summed
        over the layers of ``sklearn_fil.attacks.gradient_label_inputs``).
    noise_multiplier : float
        DP-SGD noise multiplier ``sigma`` > 0: the summed clipped gradients get
        noise of standard deviation ``sigma * max_grad_norm``.
    max_grad_norm : float
        Clipping threshold ``C_clip`` > 0 (hard clipping).
    delta : float, default=0.0
        The ``delta`` of the bound, in [0, 1).
    flipped_grad_norms : array-like of shape (n_rows,), default=None
        The same norms under the flipped labels ``1 - y[r]``. None derives them
        as ``grad_norms * |p - (1 - y)| / |p - y|``, exact for a sigmoid output
        with log loss (every per-example gradient is ``(p - y) dZ/dtheta``); it
        then needs ``proba != labels`` everywhere.
    batches : array-like of shape (n_rows,), default=None
        Batch of each row: rows with equal values form one batch, attacked
        separately (the all-batches estimate of the paper's appendix A.3.1).
        None: all rows form one batch.

    Returns
    -------
    result : LabelDPLowerBound
        Frozen dataclass: ``epsilon`` (the bound), ``per_example``, ``p0``,
        ``p1``, ``example``, ``batch_epsilon`` and ``delta``.

    Raises
    ------
    ValueError
        On a bad array (shape, non-finite entries, labels not 0 or 1, ``proba``
        outside [0, 1], a norm below the attacked block's), ``proba == labels``
        without ``flipped_grad_norms``, or a parameter out of range.

    Notes
    -----
    With ``s = sigma C_clip / N``, ``a_r^T e / N ~ N(0, s^2 ||a_r||^2)`` and
    ``||a_r||^2 = R[r]^T (C^T C)^-1 R[r]``, so the attack outputs the true label
    ``y[r]`` with probability (Algorithm 2, lines 5-6, and appendix A.3)::

        p0[r] = Phi((-1)^y[r] a_r^T G_0    / (s ||a_r||))
        p1[r] = Phi((-1)^y[r] a_r^T G_1[r] / (s ||a_r||))

    where ``G_0`` and ``G_1[r]`` are the noise-free averaged clipped gradients
    of the two datasets (``N`` cancels). With full column rank ``p0[r] >= 1/2
    >= p1[r]``; without (``d < N``, dead ReLU units) the pseudo-inverse, cut as
    in :func:`numpy.linalg.lstsq`, lets the other examples leak into ``a_r^T
    G`` and the bound need not be monotone in ``sigma``. A row the attack does
    not see (``a_r = 0``) gets ``p0 = p1 = 1/2``.

    ``LB[r] = log((p0[r] - delta) / p1[r])`` (by ``scipy.special.log_ndtr``,
    accurate when ``p1`` is tiny) is a lower bound on the step's epsilon, as
    (epsilon, delta)-DP bounds ``P[A(D_0) in O] <= exp(epsilon) P[A(D_1) in
    O] + delta`` for every event ``O``. Label DP replaces one label, and the
    two clipped gradients of a flipped example point in opposite directions:
    compare with ``dpsgd_epsilon(noise_multiplier=sigma, sample_rate=1.0,
    steps=1, delta=delta, sensitivity=2.0)``. The adversary knows the step's
    weights and batch, so no amplification by subsampling applies. With
    ``batches`` the maximum over batches is computed (one stacked SVD per
    batch size), not extrapolated as in the paper's appendix A.3.1.

    References
    ----------
    Yuan, X., Xue, W., Wang, Y. and Shen, Y. "Deep gradient attacks with strong
    DP-SGD lower bounds for label privacy." Algorithms 1 and 2, appendix A.3.

    Jagielski, M., Ullman, J. and Oprea, A. "Auditing differentially private
    machine learning: how private is private SGD?" NeurIPS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.accounting import dpsgd_epsilon, label_dp_lower_bound
    >>> rng = np.random.default_rng(0)
    >>> coefficients = rng.normal(size=(4, 6))  # last layer: hidden activations
    >>> proba = np.array([0.2, 0.7, 0.6, 0.1])
    >>> labels = np.array([0, 1, 0, 1])
    >>> # a logistic-regression-like model: dZ/dtheta is the attacked layer only
    >>> grad_norms = np.abs(proba - labels) * np.linalg.norm(coefficients, axis=1)
    >>> bound = label_dp_lower_bound(coefficients, proba, labels, grad_norms,
    ...                              noise_multiplier=0.5, max_grad_norm=1.0,
    ...                              delta=1e-5)
    >>> round(bound.epsilon, 2), bound.example
    (3.54, 1)
    >>> np.round(bound.p0, 3), np.round(bound.p1, 3)
    (array([0.632, 0.905, 0.961, 0.969]), array([0.088, 0.026, 0.039, 0.36 ]))

    The accountant's epsilon of the same step (label flip: sensitivity ``2 C``)
    is far above:

    >>> round(dpsgd_epsilon(noise_multiplier=0.5, sample_rate=1.0, steps=1,
    ...                     delta=1e-5, sensitivity=2.0, accountant="rdp"), 2)
    25.93
    """
    noise_multiplier, max_grad_norm = float(noise_multiplier), float(max_grad_norm)
    delta = float(delta)
    coef, proba, labels, norms0, norms1 = _check_inputs(
        coefficients, proba, labels, grad_norms, flipped_grad_norms
    )
    batch_ids, n_batches = _batch_ids(batches, coef.shape[0])
    n_rows = coef.shape[0]
    with np.errstate(divide="ignore"):
        f0 = np.minimum(1.0, max_grad_norm / norms0)
        f1 = np.minimum(1.0, max_grad_norm / norms1)
    u0 = f0 * (proba - labels)
    u1 = f1 * (proba - (1.0 - labels))
    scale = noise_multiplier * max_grad_norm

    p0, p1 = np.empty(n_rows), np.empty(n_rows)
    per_example = np.empty(n_rows)
    order = np.argsort(batch_ids, kind="stable")
    sizes = np.bincount(batch_ids, minlength=n_batches)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for size in np.unique(sizes):
        # rows of every batch of this size, one batch per row of ``idx``
        first = starts[sizes == size]
        idx = order[first[:, None] + np.arange(size)[None, :]]
        q0, q1, lb = _batch_lower_bounds(
            coef[idx], u0[idx], u1[idx], labels[idx], scale, delta
        )
        p0[idx], p1[idx], per_example[idx] = q0, q1, lb

    batch_max = np.full(n_batches, -np.inf)
    np.maximum.at(batch_max, batch_ids, per_example)
    example = int(np.argmax(per_example))
    return LabelDPLowerBound(
        epsilon=max(0.0, float(per_example[example])),
        per_example=per_example,
        p0=p0,
        p1=p1,
        example=example,
        batch_epsilon=np.maximum(batch_max, 0.0),
        delta=delta,
    )
