# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""A small raw table of mixed types, for the CLI's and the preparer's tests."""

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
