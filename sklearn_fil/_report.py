"""The one builder of ``privacy_report_`` tables, so the schema cannot drift."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pandas as pd


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
        Further float columns appended after the FIL columns (e.g. ``weight``).

    Returns
    -------
    report : pandas.DataFrame
        Columns ``fil``, ``dfil``, ``mse_bound``, ``fil[<attribute>]``... then
        ``extra``; float64 throughout.
    """
    if index is None:
        index = pd.RangeIndex(np.shape(fil)[0], name="sample")
    columns = {"fil": fil, "dfil": dfil, "mse_bound": mse_bound}
    for name, values in attribute_fil.items():
        columns[attribute_label(name)] = values
    columns.update(extra)
    if len(columns) != 3 + len(attribute_fil) + len(extra):
        raise ValueError(
            f"Attribute names collide in the privacy report: {list(attribute_fil)}."
        )
    return pd.DataFrame(
        {k: np.asarray(v, dtype=np.float64) for k, v in columns.items()}, index=index
    )


def make_privacy_report(result, attribute_names, index=None, **extra):
    """Per-example privacy report of a :class:`FisherInformationLoss` result.

    ``attribute_names`` names each column of ``result.attribute_fil``; see
    :func:`privacy_report_frame` for the rest.
    """
    if len(set(attribute_names)) != len(attribute_names):
        raise ValueError(
            f"Attribute names collide in the privacy report: {list(attribute_names)}."
        )
    attribute_fil = {
        name: result.attribute_fil[:, j] for j, name in enumerate(attribute_names)
    }
    return privacy_report_frame(
        result.fil, result.dfil, result.mse_bound, attribute_fil, index, **extra
    )
