"""Attack success against per-example Fisher information loss, by quantile bin."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np
import pandas as pd

_COLUMNS = ["fil_min", "fil_max", "fil_mean", "n", "success_mean", "success_sem"]


def _as_finite_1d(values, name):
    """``values`` as a finite float64 1d array."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers.") from exc
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1d array, got shape {array.shape}.")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity).")
    return array


def check_groups(groups, n_samples, block):
    """``groups`` as an array of ``n_samples`` values, without ``"all"``.

    ``"all"`` names the ``block`` of a report over every example.
    """
    groups = np.asarray(groups)
    if groups.shape != (n_samples,):
        raise ValueError(
            f"groups must be a 1d array of length {n_samples}, got shape "
            f"{groups.shape}."
        )
    if np.isin(groups.astype(object), ["all"]).any():
        raise ValueError(
            f'groups must not contain the value "all", which names the {block} '
            "over every example."
        )
    return groups


def _bin_stats(bins, fil, success, n_bins):
    """Per-bin FIL range and mean, count, success mean and its standard error."""
    index = bins - 1
    n = np.bincount(index, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        fil_mean = np.bincount(index, weights=fil, minlength=n_bins) / n
        mean = np.bincount(index, weights=success, minlength=n_bins) / n
        squares = np.bincount(
            index, weights=(success - mean[index]) ** 2, minlength=n_bins
        )
        sem = np.sqrt(squares / (n - 1) / n)
    sem[n < 2] = np.nan
    fil_min = np.full(n_bins, np.inf)
    fil_max = np.full(n_bins, -np.inf)
    np.minimum.at(fil_min, index, fil)
    np.maximum.at(fil_max, index, fil)
    empty = n == 0
    fil_min[empty] = fil_max[empty] = np.nan
    return {
        "fil_min": fil_min,
        "fil_max": fil_max,
        "fil_mean": fil_mean,
        "n": n.astype(np.int64),
        "success_mean": mean,
        "success_sem": sem,
    }


def attack_report(fil, success, *, groups=None, n_bins=10, baseline=None):
    """Attack success by FIL quantile bin, over all examples and by group.

    Sorts the examples by their Fisher information loss and cuts them into
    ``n_bins`` bins of equal count, numbered 1 (least exposed) to ``n_bins``
    (most exposed), then summarises the attack's per-example success in each
    bin, as in Figure 7 of Hannun et al. (2021), where the accuracy of a
    white-box attack rises with the FIL decile. Bins are built once over all
    examples; the per-group blocks reuse them, so groups are comparable.

    Parameters
    ----------
    fil : array-like of shape (n_samples,)
        Per-example FIL, e.g. ``model.privacy_report_["fil"]`` or one
        attribute's column.
    success : array-like of shape (n_samples,)
        Per-example success of the attack: booleans (correct or not) or any
        numeric score (e.g. a reconstruction error).
    groups : array-like of shape (n_samples,), default=None
        Group of each example; one block of bins per distinct value, in
        sorted order. The value ``"all"`` is reserved.
    n_bins : int, default=10
        Number of equal-count bins, between 1 and ``n_samples``.
    baseline : float, default=None
        The success of a guess without the model (an attack's ``baseline_``,
        e.g. the majority frequency of the attacked attribute); when given,
        a column ``baseline`` beside ``success_mean``.

    Returns
    -------
    report : pandas.DataFrame
        Indexed by (``group``, ``fil_bin``): the block ``"all"`` over every
        example, then one block per group, each with ``n_bins`` rows (empty
        bins have ``n = 0`` and NaN statistics). Columns ``fil_min``,
        ``fil_max``, ``fil_mean``, ``n``, ``success_mean`` and
        ``success_sem`` (standard error of the mean, ``std(ddof=1) /
        sqrt(n)``; NaN when ``n < 2``), then ``baseline`` when given.

    Raises
    ------
    ValueError
        When the lengths differ, ``fil`` or ``success`` is not finite,
        ``n_bins`` is outside ``[1, n_samples]`` or ``groups`` contains
        ``"all"``.
    TypeError
        When ``n_bins`` is not an integer or ``fil``/``success`` are not
        numeric.

    See Also
    --------
    LossThresholdMembershipInference : A membership attack whose per-example
        success can be summarised here.

    Notes
    -----
    Examples are ranked with a stable sort, and example ``k`` of the ranking
    goes to bin ``1 + floor(k n_bins / n_samples)``: every bin holds
    ``n_samples / n_bins`` examples, up to one. Ties in ``fil`` are broken by
    position in the input, so equal values may straddle two adjacent bins.

    References
    ----------
    Hannun, A., Guo, C. and van der Maaten, L. "Measuring data leakage in
    machine-learning models with Fisher information." UAI 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.attacks import attack_report
    >>> fil = np.arange(8.0)
    >>> success = np.array([0, 0, 0, 1, 0, 1, 1, 1], dtype=bool)
    >>> report = attack_report(fil, success, n_bins=2)
    >>> report[["fil_min", "fil_max", "n", "success_mean"]]
                   fil_min  fil_max  n  success_mean
    group fil_bin
    all   1            0.0      3.0  4          0.25
          2            4.0      7.0  4          0.75
    """
    fil = _as_finite_1d(fil, "fil")
    success = _as_finite_1d(success, "success")
    n_samples = fil.shape[0]
    if success.shape[0] != n_samples:
        raise ValueError(
            f"fil and success must have the same length, got {n_samples} and "
            f"{success.shape[0]}."
        )
    if isinstance(n_bins, bool | np.bool_) or not isinstance(
        n_bins, Integral | np.integer
    ):
        raise TypeError(f"n_bins must be an integer, got n_bins={n_bins!r}.")
    if not 1 <= n_bins <= n_samples:
        raise ValueError(
            f"n_bins must be in [1, n_samples={n_samples}], got n_bins={n_bins}."
        )
    n_bins = int(n_bins)
    blocks = []
    if groups is not None:
        groups = check_groups(groups, n_samples, "block")
        try:
            values = np.unique(groups)
        except TypeError as exc:
            raise TypeError("groups must hold values of one sortable type.") from exc
        for value in values:
            key = value.item() if isinstance(value, np.generic) else value
            blocks.append((key, groups == value))

    order = np.argsort(fil, kind="stable")
    bins = np.empty(n_samples, dtype=np.int64)
    bins[order] = np.arange(n_samples) * n_bins // n_samples + 1

    frames = []
    keys = ["all"]
    frames.append(_bin_stats(bins, fil, success, n_bins))
    for key, mask in blocks:
        keys.append(key)
        frames.append(_bin_stats(bins[mask], fil[mask], success[mask], n_bins))
    index = pd.MultiIndex.from_product(
        [pd.Index(keys, dtype=object), np.arange(1, n_bins + 1)],
        names=["group", "fil_bin"],
    )
    data = {
        column: np.concatenate([frame[column] for frame in frames])
        for column in _COLUMNS
    }
    columns = list(_COLUMNS)
    if baseline is not None:
        data["baseline"] = np.full(len(index), float(baseline))
        columns.append("baseline")
    return pd.DataFrame(data, index=index, columns=columns)
