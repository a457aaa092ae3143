"""The sensitivity bound of SGD on convex, Lipschitz, smooth losses.

Wu et al. (2017), after Hardt, Recht & Singer (2016): two runs of SGD with the
same seed on data sets that differ in one position of the visiting order end
``||w - w'|| <= 2 k L eta / B`` apart after ``k`` epochs, when every step is a
gradient step of a convex, ``L``-Lipschitz, ``beta``-smooth loss with a constant
step ``eta <= 2 / beta`` (1-expansive), and the differing example enters one
step per epoch with weight ``eta / B``.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from sklearn.linear_model import SGDClassifier

from sklearn_fil.neural import DPSGDClassifier


def _row_norm(X, fit_intercept):
    """Largest row norm of ``[X, 1]`` (or of X without an intercept)."""
    sq = np.einsum("ij,ij->i", X, X) + (1.0 if fit_intercept else 0.0)
    return math.sqrt(sq.max())


def _expansive(eta, beta):
    """None if a step of ``eta`` is 1-expansive at smoothness beta, else why."""
    if eta * beta <= 2.0:
        return None
    return (
        f"the step size {eta:g} exceeds 2 / beta = {2.0 / beta:g}, so a step is "
        "not 1-expansive"
    )


def _sgd_classifier(est, X, n_samples, n_classes):
    p = est.get_params()
    checks = [
        (
            p["loss"] == "log_loss",
            f"loss={p['loss']!r} is not both Lipschitz and "
            "smooth (the bound needs 'log_loss')",
        ),
        (
            n_classes == 2,
            "one-vs-rest over more than two classes runs one SGD per class",
        ),
        (
            p["learning_rate"] == "constant",
            f"learning_rate={p['learning_rate']!r} is not a constant step size",
        ),
        (p["penalty"] in (None, "l2"), f"penalty={p['penalty']!r} is not smooth"),
        (
            p["tol"] is None,
            "a stopping rule (tol) makes the number of epochs "
            "depend on the data; set tol=None",
        ),
        (not p["average"], "averaged SGD is not covered"),
        (not p["early_stopping"], "early stopping holds data out"),
        (p["class_weight"] is None, "class weights scale the steps"),
    ]
    for ok, reason in checks:
        if not ok:
            return None, reason
    lipschitz = _row_norm(X, p["fit_intercept"])
    alpha = p["alpha"] if p["penalty"] == "l2" else 0.0
    eta = p["eta0"]
    reason = _expansive(eta, lipschitz**2 / 4 + alpha)
    if reason:
        return None, reason
    return 2 * p["max_iter"] * lipschitz * eta, None


def _dpsgd_classifier(est, X, n_samples, n_classes):
    p = est.get_params()
    checks = [
        (
            tuple(p["hidden_layer_sizes"]) == (),
            "a network with hidden layers is not convex",
        ),
        (
            p["clipping"] is None,
            "clipped gradients are not the gradient steps "
            "of the bound; set clipping=None",
        ),
        (p["momentum"] == 0, "momentum is not covered"),
        (
            p["sampling"] == "shuffle",
            "with Poisson sampling the number of steps "
            "that see the differing example is random; set sampling='shuffle'",
        ),
    ]
    for ok, reason in checks:
        if not ok:
            return None, reason
    steps = max(1, round(n_samples / p["batch_size"]))
    smallest_batch = n_samples // steps
    row = _row_norm(X, True)
    # Binary: one sigmoid output; more classes: softmax, whose gradient is
    # (p - y) x with ||p - y|| <= sqrt(2) and Hessian at most 1/2 in norm.
    lipschitz = row if n_classes == 2 else math.sqrt(2) * row
    beta = row**2 / (4 if n_classes == 2 else 2) + p["alpha"]
    eta = p["learning_rate"]
    reason = _expansive(eta, beta)
    if reason:
        return None, reason
    return 2 * p["max_iter"] * lipschitz * eta / smallest_batch, None


def sgd_sensitivity_bound(estimator, X, n_samples, n_classes):
    """``(bound, reason)``: ``2 k L eta / B`` for ``estimator``, or why not.

    The data sets have ``n_samples`` rows of ``X``; ``n_classes`` is 0 for a
    regressor. ``L`` is the largest gradient norm over the rows of ``X``, so
    the bound covers neighbouring data sets drawn from ``X``. It is returned
    only where the estimator's parameters show every assumption.
    """
    if isinstance(estimator, SGDClassifier):
        return _sgd_classifier(estimator, X, n_samples, n_classes)
    if isinstance(estimator, DPSGDClassifier):
        return _dpsgd_classifier(estimator, X, n_samples, n_classes)
    return None, (
        f"no sensitivity bound is known for {type(estimator).__name__}: the "
        "bound needs SGD on a convex, Lipschitz and smooth loss with a constant "
        "step (SGDClassifier or DPSGDClassifier configured for it)"
    )
