# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""Small raw tables for the CLI's and the preparer's tests."""

import numpy as np
import pandas as pd


def mixed_frame(n=80, seed=0):
    """Numbers, text and true/false columns, with missing values, and a label.

    The label ``y`` ("yes"/"no") is the last column.
    """
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.normal(40, 10, n).round(1),
            "income": rng.integers(10, 100, n),
            "colour": rng.choice(["red", "green", "blue"], n),
            "member": rng.choice([True, False], n),
            "score": rng.integers(0, 10, n).astype(str),
        }
    )
    frame.loc[[1, 5, 9, 13, 40], "age"] = np.nan
    frame.loc[[2, 3, 7, 21, 33, 50, 66], "colour"] = np.nan
    frame.loc[[4, 8, 12], "score"] = "?"
    signal = frame["income"] / 50 + (frame["colour"] == "red") + rng.normal(0, 1, n)
    frame["y"] = np.where(signal > signal.median(), "yes", "no")
    return frame


# Why the preparer drops each column of uninformative_frame.
UNINFORMATIVE_REASONS = {
    "visit": "dates or times (e.g. '2020-01-01')",
    "comment": "free text or an identifier: 120 distinct values in 120 rows",
    "unit": "constant: 'kg' in every row",
    "blank": "empty: every value is missing",
    "x_copy": "duplicate of 'x' (the same value in every row)",
}


def uninformative_frame(label=False):
    """One numeric column ``x`` beside the columns of ``UNINFORMATIVE_REASONS``.

    With ``label``, a last column ``y``: 0/1 from ``x`` plus noise.
    """
    rng = np.random.default_rng(1)
    n = 120
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "visit": pd.date_range("2020-01-01", periods=n, freq="D").astype(str),
            "comment": [f"note number {i}" for i in range(n)],
            "unit": "kg",
            "blank": np.nan,
        }
    )
    frame["x_copy"] = frame["x"]
    if label:
        frame["y"] = (frame["x"] + rng.normal(size=n) > 0).astype(int)
    return frame
