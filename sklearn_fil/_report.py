"""The one builder of ``privacy_report_`` tables, so the schema cannot drift.

It also owns the report's scale-free numbers, derived below, and its metadata
(public as :func:`sklearn_fil.report_io.privacy_report_metadata`).

Scale-free bounds
-----------------
Theorem 2 of Guo et al. (2022) bounds the mean squared error of any unbiased
reconstruction ``z_hat`` of an example's ``k`` private coordinates ``z`` from
the release: ``E ||z_hat - z||^2 / k >= k / Tr(I)``, ``I`` the Fisher
information of the release about ``z`` (``mse_bound = 1 / dfil^2``). Its
coordinates mix units: a feature in years and the label in dollars add up.

Measure coordinate ``j`` in units ``t_j`` instead, ``z'_j = z_j / t_j``, i.e.
``z' = D^-1 z`` with ``D = diag(t)``. The release is the same random variable,
so its Fisher information about ``z'`` is ``I' = D I D`` and ``Tr(I') =
sum_j t_j^2 I_jj``. An unbiased reconstruction of ``z`` is one of ``z'``, and
Theorem 2 in the new units reads::

    (1/k) sum_j E (z_hat_j - z_j)^2 / t_j^2  >=  k / sum_j t_j^2 I_jj.

With ``t_j^2`` the training-set variance of coordinate ``j``, the left side is
the mean over coordinates of the reconstruction MSE relative to the variance.
Guessing the training mean scores 1 on average over the training set: a
``rel_mse_bound`` below 1 leaves room for an unbiased attacker to beat that
guess, one above 1 does not. The bound is
unchanged by a change of units of any coordinate, while ``mse_bound`` is not.

The diagonal entries come from the report: for a plain feature and for the
label ``I_jj = ||J e_j||^2 / sigma^2 = eta_ij^2``, the squared per-attribute
FIL (``sigma`` included). A constrained one-hot group of ``m`` columns has
``m - 1`` private coordinates, on the tangent space of "sum to one". We give
each the same unit, ``t_G^2 = V_G / (m - 1)`` with ``V_G = sum_c Var_c`` the
group's variance summed over its columns (``E ||z_G - mean||^2``, since
``z_G - mean`` lies in that tangent space): the group's error relative to
``V_G`` is then the mean of its coordinates' relative errors. Its diagonal
block in those units has trace ``t_G^2 Tr(P I_G P)``, with ``P`` the
projector onto the tangent space. The report holds the group's spectral FIL
``eta_G^2 = lambda_max(P I_G P)`` (the GLMs), so we use ``t_G^2 (m - 1)
eta_G^2 = eta_G^2 V_G``, an upper bound on that trace (equal for ``m = 2``);
a larger trace only lowers the bound, which therefore still holds. Where the
group's FIL is the square root of its trace (DP-SGD, ``group_fil="trace"``)
the term is exact, ``eta_G^2 V_G / (m - 1)``.

A coordinate of zero variance has no unit. It is left out of both ``k`` and
the trace: Theorem 2 applied to the other coordinates, with those known,
uses the principal block of ``I``, whose bound is the smaller
(``(I^-1)_SS >= (I_SS)^-1``), so the bound still holds for them.

Over all examples, attribute ``a`` (its ``n`` values, or ``n (m - 1)``
coordinates of a group) has Fisher information of largest eigenvalue
``eta_a^2``, the attribute FIL of ``attribute_fil_``; Theorem 2 gives
``E ||z_hat - z||^2 / (n_a t_a^2) >= 1 / (eta_a t_a)^2``. The product
``eta_a t_a``, the attribute's FIL in units of its standard deviation
(:func:`attribute_fil_sd`), ranks the attributes without mixing units, and
``1 / (eta_a t_a)^2`` bounds the MSE of reconstructing the attribute relative
to its variance; 1 is again what the training mean scores on average.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
import math
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils.sparsefuncs import mean_variance_axis

from sklearn_fil._threads import row_blocks, row_parallel
from sklearn_fil.utils._dask import is_dask

# Bytes of the per-chunk temporary of the passes over an n x d block: small
# enough to stay in cache, so that each pass reads the block from memory once.
_CHUNK_BYTES = 2**20


def _squared_chunks(A, shift=None, rows=slice(None)):
    """``(chunk, (A[chunk] - shift)**2)`` over ``rows``, in one reused buffer."""
    start, stop, _ = rows.indices(A.shape[0])
    d = A.shape[1]
    size = min(stop - start, max(1, _CHUNK_BYTES // (8 * max(d, 1))))
    buffer = np.empty((size, d))
    for chunk in row_blocks(slice(start, stop), max(size, 1)):
        block = buffer[: chunk.stop - chunk.start]
        if shift is None:
            np.multiply(A[chunk], A[chunk], out=block)
        else:
            np.subtract(A[chunk], shift, out=block)
            np.multiply(block, block, out=block)
        yield chunk, block


def attribute_label(name):
    """Column name of an attribute's FIL in the report: ``fil[<name>]``."""
    return f"fil[{name}]"


def target_label(target_name, feature_names):
    """The label's attribute name, kept distinct from every feature's.

    ``y = X["age"] + noise`` keeps the Series name ``"age"``: the label is then
    called ``"y"`` (or ``"target"`` when a feature is already called so).
    """
    if target_name not in feature_names:
        return target_name
    return "y" if "y" not in feature_names else "target"


def _check_lengths(columns, n):
    """Refuse a report column whose shape is not ``(n,)``."""
    for name, values in columns.items():
        if values.shape != (n,):
            raise ValueError(
                f"Report column {name!r} has shape {values.shape}; expected ({n},)."
            )


def _float_columns(columns, n):
    """``{name: float64 column of length n}``, checked."""
    out = {
        name: np.asarray(values, dtype=np.float64) for name, values in columns.items()
    }
    _check_lengths(out, n)
    return out


def _assemble(head, attributes, extra, index):
    """One frame from the leading columns, the attribute frame and the extras.

    Nothing is copied: each column of ``head`` and ``extra`` becomes its own
    block, viewing the caller's array, and ``pd.concat`` along the columns
    keeps each part's blocks as they are. The callers pass arrays of their
    own that nothing else holds.
    """
    n = attributes.shape[0]
    parts = [pd.DataFrame(_float_columns(head, n), index=index, copy=False)]
    parts.append(attributes)
    if extra:
        parts.append(pd.DataFrame(_float_columns(extra, n), index=index, copy=False))
    report = pd.concat(parts, axis=1)
    if not report.columns.is_unique:
        raise ValueError(
            f"Column names collide in the privacy report: {list(report.columns)}."
        )
    return report


def privacy_report_frame(fil, dfil, mse_bound, attribute_fil, index=None, **extra):
    """Per-example privacy report as a DataFrame, from its columns.

    Parameters
    ----------
    fil, dfil, mse_bound : ndarray of shape (n_samples,)
        Spectral FIL, diagonal FIL and the MSE bound ``1 / dfil^2``.
    attribute_fil : dict of str to ndarray of shape (n_samples,)
        FIL of each attribute, by attribute name, in report order.
    index : pandas.Index, default=None
        Row index: the training index when X was a DataFrame; otherwise
        ``RangeIndex(n_samples, name="sample")``.
    **extra : ndarray of shape (n_samples,)
        Further float columns appended after the FIL columns (e.g.
        ``rel_mse_bound``, ``weight``).

    Returns
    -------
    report : pandas.DataFrame
        Columns ``fil``, ``dfil``, ``mse_bound``, ``fil[<attribute>]``... then
        ``extra``; float64 throughout.
    """
    n = np.shape(fil)[0]
    if index is None:
        index = pd.RangeIndex(n, name="sample")
    columns = {attribute_label(name): v for name, v in attribute_fil.items()}
    if len(columns) != len(attribute_fil):
        raise ValueError(
            f"Attribute names collide in the privacy report: {list(attribute_fil)}."
        )
    attributes = pd.DataFrame(_float_columns(columns, n), index=index)
    head = {"fil": fil, "dfil": dfil, "mse_bound": mse_bound}
    return _assemble(head, attributes, extra, index)


def make_privacy_report(result, attribute_names, index=None, **extra):
    """Per-example privacy report of a :class:`FisherInformationLoss` result.

    ``attribute_names`` names each column of ``result.attribute_fil``; see
    :func:`privacy_report_frame` for the rest. The ``n x n_attributes`` block
    ``result.attribute_fil`` becomes the report's attribute columns without a
    copy (when it is float64), and so do the other columns: the report views
    them, so they must not be modified afterwards.
    """
    if len(set(attribute_names)) != len(attribute_names):
        raise ValueError(
            f"Attribute names collide in the privacy report: {list(attribute_names)}."
        )
    if is_dask(result.fil):
        return _dask_report(result, attribute_names, extra)
    block = np.asarray(result.attribute_fil, dtype=np.float64)
    n = block.shape[0]
    if block.shape != (n, len(attribute_names)):
        raise ValueError(
            f"attribute_fil has shape {block.shape}; expected "
            f"({n}, {len(attribute_names)}) for the attributes {attribute_names}."
        )
    if index is None:
        index = pd.RangeIndex(n, name="sample")
    attributes = pd.DataFrame(
        block,
        index=index,
        columns=[attribute_label(name) for name in attribute_names],
        copy=False,
    )
    head = {"fil": result.fil, "dfil": result.dfil, "mse_bound": result.mse_bound}
    return _assemble(head, attributes, extra, index)


def _dask_report(result, attribute_names, extra):
    """:func:`make_privacy_report` of a Dask result: a lazy Dask DataFrame.

    The columns of the pandas report, in its order and float64, from one
    ``(n_samples, n_columns)`` Dask array in the row chunks of the data;
    its index counts the rows from 0 as ``sample`` (the pandas report's
    ``RangeIndex``), one partition per block of rows.
    """
    import dask.array as da
    import dask.dataframe as dd

    columns = {"fil": result.fil, "dfil": result.dfil, "mse_bound": result.mse_bound}
    columns |= extra
    _check_lengths(columns, result.fil.shape[0])
    names = list(columns)[:3] + [attribute_label(name) for name in attribute_names]
    names += list(extra)
    if len(set(names)) != len(names):
        raise ValueError(f"Column names collide in the privacy report: {names}.")
    parts = [v[:, None] for v in list(columns.values())[:3]]
    parts += [result.attribute_fil] + [v[:, None] for v in extra.values()]
    table = da.concatenate(parts, axis=1).astype(np.float64)
    table = table.rechunk({0: result.fil.chunks[0], 1: -1})
    return dd.from_dask_array(table, columns=names).rename_axis("sample")


def _with_attrs(frame, attrs):
    frame = frame.copy(deep=False)
    frame.attrs = dict(attrs)
    return frame


def with_report_attrs(report, attrs):
    """``report`` with ``attrs`` (the report's context), pandas or Dask.

    Dask DataFrames have no ``attrs``: a Dask report gets them as a plain
    attribute of the collection, and every partition (so ``compute()`` and
    the files of ``to_parquet``, which pandas reads back into ``attrs``)
    carries them too.
    """
    if not is_dask(report):
        report.attrs = attrs
        return report
    report = report.map_partitions(
        _with_attrs, attrs, meta=_with_attrs(report._meta, attrs)
    )
    report.attrs = attrs
    return report


SENSITIVE_NOTE = "computed from every example's data: keep it private"


@functools.cache
def _version():
    """The installed package's version, ``sklearn_fil.__version__``.

    Asked once per process, and read here rather than from the package, which
    imports every layer above this module.
    """
    try:
        return version("sklearn-fil")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0+unknown"


def to_jsonable(value):
    """``value`` made JSON-safe: non-finite floats None, unknown objects ``str``."""
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | np.ndarray | pd.Index):
        return [to_jsonable(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def privacy_report_metadata(estimator, n_samples=None):
    """The context of a fitted estimator's privacy report, JSON-safe.

    What ``privacy_report_.attrs`` holds and
    :func:`~sklearn_fil.report_io.write_privacy_report` writes beside the CSV.

    Parameters
    ----------
    estimator : fitted estimator
        An estimator of sklearn-fil with a ``privacy_report_``.
    n_samples : int, default=None
        Number of examples; None: the report's length (given by the fit of
        a Dask array, whose lazy report knows its length only after a pass).

    Returns
    -------
    metadata : dict
        Keys ``sklearn_fil_version``, ``estimator``, ``estimator_params``,
        ``n``, ``sigma``, ``epsilon``, ``delta``, ``neighboring_relation``,
        ``public``, ``no_guarantee_reason``, ``n_clipped``, ``dataset_fil``,
        ``sensitive``; ``epsilon`` and the two after it are None without a
        guarantee.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil.linear_model import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.report_io import privacy_report_metadata
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> clf = OutputPerturbedLogisticRegression(
    ...     data_norm=3.0, penalize_intercept=True, random_state=0
    ... ).fit(X, y)
    >>> meta = privacy_report_metadata(clf)
    >>> meta["n"], meta["neighboring_relation"]
    (100, 'replace_one')
    >>> meta == clf.privacy_report_.attrs
    True
    """
    guarantee = getattr(estimator, "guarantee_", None)
    holds = guarantee is not None and guarantee.epsilon is not None
    params = getattr(estimator, "_fitted_params", None) or estimator.get_params(
        deep=False
    )
    if holds:
        reason = None
    elif guarantee is not None:
        reason = guarantee.reason
    else:
        reason = "the estimator reports no differential-privacy guarantee"
    metadata = {
        "sklearn_fil_version": _version(),
        "estimator": type(estimator).__name__,
        "estimator_params": params,
        "n": int(
            estimator.privacy_report_.shape[0] if n_samples is None else n_samples
        ),
        "sigma": getattr(estimator, "sigma_", None),
        "epsilon": guarantee.epsilon if holds else None,
        "delta": guarantee.delta if holds else None,
        "neighboring_relation": guarantee.neighboring_relation if holds else None,
        "public": list(guarantee.public) if holds else None,
        "no_guarantee_reason": reason,
        "n_clipped": int(getattr(estimator, "n_clipped_", 0)),
        "dataset_fil": getattr(estimator, "dataset_fil_", None),
        "sensitive": SENSITIVE_NOTE,
    }
    return to_jsonable(metadata)


def attribute_sizes(attributes):
    """Private coordinates of each attribute: 1, or ``m - 1`` for a group.

    Parameters
    ----------
    attributes : list
        The engine's attributes: ``(j,)`` for feature ``j``, a tuple of the
        ``m`` columns of a constrained one-hot group, or ``"label"``.

    Returns
    -------
    sizes : ndarray of shape (n_attributes,)
        Number of private coordinates of each attribute.
    """
    return np.array(
        [1 if att == "label" else max(len(att) - 1, 1) for att in attributes],
        dtype=np.int64,
    )


def _column_moments(X, sample_weight):
    """``(sum of weights, column means, squared deviations)`` of dense or sparse ``X``.

    Weighted when ``sample_weight`` is given. A dense ``X`` is read once:
    each cache-sized block's moments take two passes over it in cache
    (:func:`~sklearn_fil._moments.block_moments`), and the blocks' are merged
    by the update of Chan, Golub & LeVeque (:func:`_merge_moments`), in row
    order whatever the threads (:func:`~sklearn_fil._threads.row_parallel`).
    """
    n = X.shape[0]
    weight = np.ones(n) if sample_weight is None else sample_weight
    if sp.issparse(X):
        if X.format not in ("csr", "csc"):
            X = X.tocsr()
        mean, var = mean_variance_axis(X, axis=0, weights=sample_weight)
        total = float(weight.sum())
        return total, np.asarray(mean), np.asarray(var) * total
    from sklearn_fil._compiled import compiled
    from sklearn_fil._moments import block_moments

    X = np.asarray(X, dtype=np.float64)
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    block = max(1, _CHUNK_BYTES // (8 * max(X.shape[1], 1)))
    kernel = compiled(block_moments)

    def segment(rows):
        return kernel(X, weight, rows.start, rows.stop, block)

    return functools.reduce(_merge_moments, row_parallel(segment, n))


def attribute_variances(X, y, attributes, sample_weight=None):
    """Training-set variance of each attribute (summed over a group's columns).

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The rows as fitted (after any preprocessing the FIL refers to).
    y : ndarray of shape (n_samples,) or None
        The labels as fitted; needed when ``"label"`` is an attribute.
    attributes : list
        The engine's attributes (see :func:`attribute_sizes`).
    sample_weight : ndarray of shape (n_samples,), default=None
        Example weights of the fit; the variances are then weighted.

    Returns
    -------
    variance : ndarray of shape (n_attributes,)
        Population variance (``ddof=0``) of each feature and of the label,
        and ``sum_c Var_c`` over the columns of each one-hot group.
    """
    n = X.shape[0]
    if is_dask(X):
        return _attribute_sums(
            *_dask_variances(X, y, attributes, sample_weight), attributes
        )
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != (n,) or not np.all(sample_weight >= 0):
            raise ValueError(
                "sample_weight must be non-negative of shape "
                f"({n},); got shape {sample_weight.shape}."
            )
        if not sample_weight.sum() > 0:
            raise ValueError("sample_weight must have a positive entry.")
    total, _, squares = _column_moments(X, sample_weight)
    columns = squares / total
    label = None
    if "label" in attributes:
        if y is None:
            raise ValueError("The label is an attribute but y is None.")
        y = np.asarray(y, dtype=np.float64)
        mean = np.average(y, weights=sample_weight)
        label = np.average((y - mean) ** 2, weights=sample_weight)
    return _attribute_sums(columns, label, attributes)


def _attribute_sums(columns, label, attributes):
    """Each attribute's variance from its columns' (and the label's)."""
    variance = np.empty(len(attributes))
    for a, att in enumerate(attributes):
        variance[a] = label if att == "label" else columns[list(att)].sum()
    return np.maximum(variance, 0.0)


def _block_moments(X, y, omega):
    """``(sum(omega), weighted means, weighted squared deviations)`` of ``[X, y]``."""
    omega = np.ones(X.shape[0]) if omega is None else omega
    width = X.shape[1] + (y is not None)
    total = float(omega.sum())
    if not total > 0:
        return 0.0, np.zeros(width), np.zeros(width)
    _, mean, squares = _column_moments(X, omega)
    if y is not None:
        mean_y = float(omega @ y) / total
        mean = np.append(mean, mean_y)
        squares = np.append(squares, omega @ ((y - mean_y) ** 2))
    return total, mean, squares


def _merge_moments(a, b):
    """The moments of two sets of rows together (Chan et al., 1979)."""
    wa, mean_a, m2_a = a
    wb, mean_b, m2_b = b
    if wa == 0 or wb == 0:
        return a if wb == 0 else b
    total = wa + wb
    shift = mean_b - mean_a
    mean = mean_a + shift * (wb / total)
    return total, mean, m2_a + m2_b + shift * shift * (wa * wb / total)


def _dask_variances(X, y, attributes, sample_weight):
    """``(column variances, label variance or None)`` of a Dask ``X`` and ``y``.

    One pass: each block's means and squared deviations, merged in a tree
    by the pairwise update of Chan, Golub & LeVeque, as stable as the two
    passes of :func:`_column_moments`.
    """
    from sklearn_fil.utils._dask import rows_like, tree_reduce

    with_label = "label" in attributes
    if with_label and y is None:
        raise ValueError("The label is an attribute but y is None.")
    y = rows_like(y, X, "y") if with_label else None
    total, _, squares = tree_reduce(
        _block_moments,
        _merge_moments,
        X,
        (y, rows_like(sample_weight, X, "sample_weight")),
    )
    variances = squares / total
    if with_label:
        return variances[:-1], float(variances[-1])
    return variances, None


def _check_scale_inputs(shape, variance, sizes, caller):
    variance = np.asarray(variance, dtype=np.float64)
    sizes = np.asarray(sizes)
    n_attributes = shape[-1]
    for name, values in (("variance", variance), ("sizes", sizes)):
        if values.shape != (n_attributes,):
            raise ValueError(
                f"{caller}: {name} has shape {values.shape}; expected "
                f"({n_attributes},), one entry per attribute."
            )
    if not np.all(np.isfinite(variance)) or np.any(variance < 0):
        raise ValueError(f"{caller}: variance must be finite and >= 0.")
    if not np.issubdtype(sizes.dtype, np.integer) or np.any(sizes < 1):
        raise ValueError(f"{caller}: sizes must be integers >= 1.")
    return variance, sizes


def relative_mse_bound(attribute_fil, variance, sizes, *, group_fil="spectral"):
    """Theorem 2's bound with every coordinate in units of its own std.

    ``rel_mse_bound_i = k / sum_a c_a eta_ia^2``, the sum and ``k = sum_a
    sizes_a`` over the attributes of positive variance, with ``c_a`` the
    variance for a feature, the label and (``group_fil="spectral"``) a
    group, and the variance over ``sizes_a`` for a group whose FIL is the
    square root of its trace (``group_fil="trace"``). See the module
    docstring for the derivation; it bounds the mean over coordinates of
    ``MSE_j / Var_j`` of any unbiased reconstruction of example ``i``.

    Parameters
    ----------
    attribute_fil : ndarray of shape (n_samples, n_attributes) or dict
        Per-example FIL of each attribute (``sigma`` included), or a dict of
        its columns in attribute order.
    variance : ndarray of shape (n_attributes,)
        From :func:`attribute_variances`.
    sizes : ndarray of shape (n_attributes,)
        From :func:`attribute_sizes`.
    group_fil : {"spectral", "trace"}, default="spectral"
        What a group's FIL is: the spectral norm of its Fisher information
        (the GLMs), or the square root of its trace (DP-SGD).

    Returns
    -------
    rel_mse_bound : ndarray of shape (n_samples,)
        ``inf`` for an example of zero FIL, ``nan`` when no attribute varies.
    """
    caller = "relative_mse_bound"
    if group_fil not in ("spectral", "trace"):
        raise ValueError(f"{caller}: group_fil must be 'spectral' or 'trace'.")
    if is_dask(attribute_fil):  # lazy, block by block
        if attribute_fil.ndim != 2:
            raise ValueError(f"{caller}: attribute_fil must be 2-D.")
        _check_scale_inputs(attribute_fil.shape, variance, sizes, caller)
        return attribute_fil.rechunk({1: -1}).map_blocks(
            relative_mse_bound,
            variance,
            sizes,
            group_fil=group_fil,
            drop_axis=1,
            dtype=np.float64,
            meta=np.empty((0,)),
        )
    if isinstance(attribute_fil, Mapping):  # {name: column}, as DP-SGD keeps it
        columns = [np.asarray(v, dtype=np.float64) for v in attribute_fil.values()]
        n = columns[0].shape[0] if columns else 0
        if any(column.shape != (n,) for column in columns):
            raise ValueError(f"{caller}: the columns must be 1-D of one length.")
        shape = (n, len(columns))
    else:
        attribute_fil = np.asarray(attribute_fil, dtype=np.float64)
        if attribute_fil.ndim != 2:
            raise ValueError(f"{caller}: attribute_fil must be 2-D.")
        shape = attribute_fil.shape
    variance, sizes = _check_scale_inputs(shape, variance, sizes, caller)
    weight = variance / sizes if group_fil == "trace" else variance.copy()
    k = float(sizes[variance > 0].sum())
    n = shape[0]
    trace = np.zeros(n)
    if isinstance(attribute_fil, Mapping):
        for column, c in zip(columns, weight, strict=True):
            trace += c * column**2
    else:

        def segment(rows):
            for chunk, block in _squared_chunks(attribute_fil, rows=rows):
                np.dot(block, weight, out=trace[chunk])

        row_parallel(segment, n)
    if k == 0:
        return np.full(n, np.nan)
    with np.errstate(divide="ignore"):
        return k / trace


def attribute_fil_sd(attribute_fil, variance, sizes):
    """Attribute FIL in units of the attribute's standard deviation.

    ``eta_a t_a`` with ``t_a^2 = variance_a / sizes_a``, whose meaning the
    module docstring derives.

    Parameters
    ----------
    attribute_fil : ndarray of shape (n_attributes,)
        FIL of each attribute over all examples (``attribute_fil_``).
    variance : ndarray of shape (n_attributes,)
        From :func:`attribute_variances`.
    sizes : ndarray of shape (n_attributes,)
        From :func:`attribute_sizes`.

    Returns
    -------
    fil_sd : ndarray of shape (n_attributes,)
        ``nan`` for an attribute of zero variance, which has no unit.
    """
    attribute_fil = np.asarray(attribute_fil, dtype=np.float64)
    if attribute_fil.ndim != 1:
        raise ValueError("attribute_fil_sd: attribute_fil must be 1-D.")
    variance, sizes = _check_scale_inputs(
        attribute_fil.shape, variance, sizes, "attribute_fil_sd"
    )
    with np.errstate(invalid="ignore"):
        sd = np.where(variance > 0, np.sqrt(variance / sizes), np.nan)
    return attribute_fil * sd
