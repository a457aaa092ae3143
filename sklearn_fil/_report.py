"""The one builder of ``privacy_report_`` tables, so the schema cannot drift."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pandas as pd


def attribute_label(name):
    """Column name of an attribute's FIL in the report: ``fil[<name>]``."""
    return f"fil[{name}]"


def make_privacy_report(result, attribute_names, index=None, **extra):
    """Per-example privacy report as a DataFrame.

    Parameters
    ----------
    result : FisherInformationLoss
        Output of :func:`sklearn_fil.fisher.fisher_information_loss`.
    attribute_names : list of str
        Name of each attribute of ``result.attribute_fil``, in order.
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
    n = result.fil.shape[0]
    if index is None:
        index = pd.RangeIndex(n, name="sample")
    columns = {"fil": result.fil, "dfil": result.dfil, "mse_bound": result.mse_bound}
    for j, name in enumerate(attribute_names):
        columns[attribute_label(name)] = result.attribute_fil[:, j]
    columns.update(extra)
    if len(columns) != 3 + len(attribute_names) + len(extra):
        raise ValueError(
            f"Attribute names collide in the privacy report: {list(attribute_names)}."
        )
    return pd.DataFrame(
        {k: np.asarray(v, dtype=np.float64) for k, v in columns.items()}, index=index
    )
