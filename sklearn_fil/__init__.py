"""sklearn-fil: private scikit-learn estimators with Fisher-information reports."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from importlib.metadata import PackageNotFoundError, version

from sklearn_fil import (
    accounting,
    attacks,
    audit,
    datasets,
    exceptions,
    fisher,
    model_selection,
    plotting,
    tabular,
)
from sklearn_fil.linear_model import (
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.model_selection import PrivateSearchCV
from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.utils._pipeline import release

try:
    __version__ = version("sklearn-fil")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "DPSGDClassifier",
    "IRFILClassifier",
    "IRFILRegressor",
    "OutputPerturbedLinearRegression",
    "OutputPerturbedLogisticRegression",
    "PrivateSearchCV",
    "__version__",
    "accounting",
    "attacks",
    "audit",
    "datasets",
    "exceptions",
    "fisher",
    "model_selection",
    "plotting",
    "release",
    "tabular",
]
