"""Per-example losses of any fitted scikit-learn model.

The membership attacks and the intrinsic-privacy audit score examples by them.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.base import is_classifier, is_regressor

# Probabilities are clipped here before the log: a loss of -log(1e-300) = 691
# keeps thresholds finite where a model is certain and wrong.
_MIN_PROBA = 1e-300


def loss_kind(model):
    """``"log"`` (classifier, ``predict_proba``) or ``"squared"`` (``predict``)."""
    try:
        classifier, regressor = is_classifier(model), is_regressor(model)
    except AttributeError:  # not an sklearn estimator: decide by its methods
        classifier = regressor = False
    has_proba = hasattr(model, "predict_proba")
    if classifier or (not regressor and has_proba):
        if not has_proba:
            raise TypeError(
                "The log loss of a classifier needs predict_proba, which "
                f"{type(model).__name__} does not provide (e.g. use "
                "SVC(probability=True) or wrap it in CalibratedClassifierCV)."
            )
        return "log"
    if hasattr(model, "predict"):
        return "squared"
    raise TypeError(
        "model must be a fitted classifier with predict_proba (for the log loss) "
        f"or a regressor with predict (for the squared error); {type(model).__name__} "
        "has neither."
    )


def per_example_loss(model, kind, X, y):
    """Log loss ``-log p(y | x)`` or squared error ``(predict(x) - y)^2``."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1d array, got an array of shape {y.shape}.")
    if kind == "log":
        classes = np.asarray(model.classes_)
        if classes.ndim != 1:
            raise ValueError("Multi-output classifiers are not supported.")
        unknown = ~np.isin(y, classes)
        if unknown.any():
            raise ValueError(
                f"y has labels {np.unique(y[unknown])[:5].tolist()} that are not "
                f"classes of the model {classes.tolist()}."
            )
        sorter = np.argsort(classes)
        column = sorter[np.searchsorted(classes, y, sorter=sorter)]
        proba = np.asarray(model.predict_proba(X), dtype=np.float64)
        if proba.shape != (y.shape[0], classes.shape[0]):
            raise ValueError(
                f"predict_proba returned shape {proba.shape}, expected "
                f"{(y.shape[0], classes.shape[0])}."
            )
        p = np.clip(proba[np.arange(y.shape[0]), column], _MIN_PROBA, 1.0)
        loss = 0.0 - np.log(p)  # not -0.0 where p = 1
    else:
        if y.dtype.kind not in "biuf":
            raise ValueError(f"y must be numeric for a regressor, got dtype {y.dtype}.")
        y = y.astype(np.float64)
        pred = np.asarray(model.predict(X), dtype=np.float64)
        if pred.ndim == 2 and pred.shape[1] == 1:
            pred = pred[:, 0]
        if pred.shape != y.shape:
            raise ValueError(
                f"predict returned shape {pred.shape}, expected {y.shape} (only "
                "single-output regressors are supported)."
            )
        loss = (pred - y) ** 2
    if not np.isfinite(loss).all():
        raise ValueError(
            "The per-example loss is not finite for some rows (NaN or infinite "
            "targets or predictions)."
        )
    return loss
