"""What every attack on a released GLM needs: the training recipe and the data.

An attack reads the target only through its publishable state
(:func:`target_glm`); the example weights are not released: the adversary
brings its knowledge of them (:func:`adversary_weights`).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import dataclass
from numbers import Integral

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_fil._glm import GLMProblem
from sklearn_fil._losses import get_family
from sklearn_fil.linear_model import (
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.utils._clipping import clip_rows
from sklearn_fil.utils._onehot import onehot_columns
from sklearn_fil.utils._pipeline import transform_dense
from sklearn_fil.utils._release import fitted_params
from sklearn_fil.utils._sklearn_compat import _check_sample_weight

_OUTPUT_PERTURBED = (OutputPerturbedLinearRegression, OutputPerturbedLogisticRegression)
_IRFIL = (IRFILRegressor, IRFILClassifier)


@dataclass(frozen=True, kw_only=True)
class GLMRecipe(GLMProblem):
    """The released weights of a GLM and how they were trained.

    The :class:`~sklearn_fil._glm.GLMProblem` without data; the example
    weights are not part of the recipe (they are not released).

    Attributes
    ----------
    data_norm : float or None
        Rows were clipped to this L2 norm before training.
    label_bound : float or None
        Regression labels were clipped to ``[-label_bound, label_bound]``.
    clip_exempt : tuple of int
        Columns of one-hot groups, which clipping leaves as they are.
    classes : ndarray or None
        The two classes of a classifier (``classes[1]`` is encoded as 1).
    coef : ndarray of shape (n_features,)
        Released coefficients.
    intercept : float
        Released intercept (0 without one).
    weighted : bool
        Whether the target was trained with non-uniform example weights
        (``sample_weight``, or the data-dependent weights of IRFIL).
    """

    data_norm: float | None
    classes: np.ndarray | None
    coef: np.ndarray
    intercept: float
    weighted: bool = False
    clip_exempt: tuple[int, ...] = ()
    label_bound: float | None = None

    @property
    def weights(self):
        """The released parameter vector ``[coef, intercept]`` (no intercept: coef)."""
        if self.fit_intercept:
            return np.append(self.coef, self.intercept)
        return self.coef.copy()

    @property
    def n_params(self):
        return self.coef.size + self.fit_intercept

    def clip(self, X):
        """Rows as the training procedure saw them (clipped to ``data_norm``)."""
        if self.data_norm is None:
            return X
        return clip_rows(X, self.data_norm, exempt=self.clip_exempt)[0]

    def encode(self, y):
        """Targets as the loss sees them: floats, clipped; or 0/1 against classes."""
        y = np.asarray(y)
        if self.classes is None:
            y = y.astype(np.float64)
            if self.label_bound is None:
                return y
            return np.clip(y, -self.label_bound, self.label_bound)
        check_known_labels(y, self.classes, "the target model")
        return (y == self.classes[1]).astype(np.float64)


def check_known_labels(y, classes, model="the model"):
    """``classes`` as an array, checked to hold every label of ``y``."""
    classes = np.asarray(classes)
    unknown = ~np.isin(y, classes)
    if unknown.any():
        raise ValueError(
            f"y has labels {np.unique(y[unknown])[:5].tolist()} that are not "
            f"classes of {model} {classes.tolist()}."
        )
    return classes


def target_glm(model, attack, *, informed=False):
    """The :class:`GLMRecipe` of a fitted or released output-perturbed GLM.

    The recipe is the constructor parameters of the fit, which the white-box
    threat model hands to the adversary: a ``set_params`` after the fit does
    not change it.

    Parameters
    ----------
    model : estimator
        A fitted (or released) :class:`~sklearn_fil.OutputPerturbedLinearRegression`
        or :class:`~sklearn_fil.OutputPerturbedLogisticRegression`, or an
        IRFIL model when ``informed``.
    attack : str
        Name of the attack, for the error messages.
    informed : bool, default=False
        Whether the adversary passes its knowledge of the example weights
        (the attack's ``sample_weight``).

    Returns
    -------
    recipe : GLMRecipe
        Released weights and training recipe.

    Raises
    ------
    TypeError
        For any other model: the attack re-runs the training procedure, which
        it knows only for these. IRFIL models are refused unless ``informed``:
        their example weights depend on all the data and are not released.
    ValueError
        When the target was trained with non-uniform example weights and the
        adversary passes none: the attack would re-run the wrong objective;
        or when the target is multinomial (more than two classes).
    """
    irfil = isinstance(model, _IRFIL)
    if not (isinstance(model, _OUTPUT_PERTURBED) or (irfil and informed)):
        raise TypeError(
            f"{attack} attacks OutputPerturbedLinearRegression and "
            "OutputPerturbedLogisticRegression models (fitted or released), whose "
            f"training procedure it can re-run; got {type(model).__name__}."
            + (
                " IRFIL trains with data-dependent example weights that are not "
                "released, so the adversary cannot re-run it without knowing them: "
                "pass the adversary's knowledge of the weights as sample_weight "
                "(they are the 'weight' column of the fitted model's privacy "
                "report)."
                if irfil
                else ""
            )
        )
    check_is_fitted(model, "coef_")
    if np.ndim(model.coef_) == 2:  # one row of weights per class
        raise ValueError(
            f"{attack} re-runs the training procedure of a binary or regression "
            f"GLM; the target is a multinomial model of {len(model.classes_)} "
            "classes, which it does not attack. Membership inference by loss "
            "(LossThresholdMembershipInference) and BlackBoxAttributeInversion "
            "query any classifier."
        )
    # models from before the flag existed fall back to the unweighted recipe
    weighted = bool(getattr(model, "_weighted", False))
    if weighted and not informed:
        raise ValueError(
            f"{attack}: the target was trained with sample weights; pass the "
            "adversary's knowledge of them as sample_weight (the attack re-runs "
            "the weighted training objective, which it cannot do without them)."
        )
    family = get_family(model._loss)
    params = fitted_params(model)
    return GLMRecipe(
        family=family,
        # the values the fit used ("auto" resolved); older models: the params
        lam=float(getattr(model, "lam_", params["lam"])),
        fit_intercept=bool(params["fit_intercept"]),
        penalize_intercept=bool(
            getattr(model, "penalize_intercept_", params["penalize_intercept"])
        ),
        # only the output-perturbed models clip
        data_norm=params.get("data_norm"),
        label_bound=params.get("label_bound"),
        classes=np.asarray(model.classes_) if family.is_classifier else None,
        coef=np.asarray(model.coef_, dtype=np.float64).copy(),
        intercept=float(model.intercept_),
        weighted=weighted,
        clip_exempt=tuple(
            j
            for cols in onehot_columns(
                params["onehot_groups"],
                getattr(model, "feature_names_in_", None),
                model.n_features_in_,
            ).values()
            for j in cols
        ),
    )


def check_model_features(X, model):
    """Raise unless ``X`` has as many columns as ``model`` was trained on."""
    n_model = getattr(model, "n_features_in_", X.shape[1])
    if X.shape[1] != n_model:
        raise ValueError(
            f"X has {X.shape[1]} features but the target model was trained on "
            f"{n_model}."
        )


def training_rows(attack, prefix, model, recipe, X, y):
    """``X`` and ``y`` validated as the rows ``model`` was trained on.

    ``X`` goes through the (public) ``prefix`` of a Pipeline first, when there
    is one; ``validate_data`` records ``n_features_in_`` (and the feature
    names of a DataFrame) on ``attack``.
    """
    if prefix is not None:
        # the prefix is public: attack the final model on transformed rows
        X = transform_dense(prefix, X)
    X, y = validate_data(
        attack,
        X,
        y,
        dtype=np.float64,
        ensure_min_samples=2,
        y_numeric=not recipe.family.is_classifier,
    )
    check_model_features(X, model)
    return X, y


def adversary_weights(sample_weight, X):
    """The adversary's example weights (None: unit) as floats, one per row of X.

    Checked as training checks them: a ValueError unless they are one finite
    number per row with a positive sum.
    """
    omega = _check_sample_weight(sample_weight, X, dtype=np.float64)
    if not omega.sum() > 0:
        raise ValueError("sample_weight must have a positive sum.")
    return omega


def resolve_attribute(attribute, model, n_features, label=None):
    """Column indices (one, or a one-hot group's) and report name of ``attribute``.

    ``attribute`` is a column index, a feature name of ``model``, the name of
    one of its ``onehot_groups``, or a list of columns (indices or names)
    forming a one-hot group; a ValueError names the features otherwise, and
    ``label`` beside them (the label itself is resolved by the caller).
    """
    names = list(getattr(model, "feature_names_in_", []))
    groups = fitted_params(model).get("onehot_groups") or {}

    def column(key):
        if isinstance(key, Integral | np.integer) and not isinstance(key, bool):
            if not 0 <= key < n_features:
                raise ValueError(f"attribute index {key} is outside [0, {n_features}).")
            return int(key)
        if isinstance(key, str) and key in names:
            return names.index(key)
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        raise ValueError(
            f"attribute {key!r} is not a feature of the data"
            + (f" (features: {shown}" if names else " (the model has no names")
            + (f"; the label: {label!r})." if label is not None else ").")
        )

    if isinstance(attribute, str) and attribute in groups and attribute not in names:
        cols = [column(c) for c in groups[attribute]]
        name = attribute
    elif isinstance(attribute, list | tuple | np.ndarray):
        cols = [column(c) for c in attribute]
        if len(cols) < 2 or len(set(cols)) != len(cols):
            raise ValueError(
                "A list attribute is a one-hot group: at least two distinct "
                f"columns; got {list(attribute)!r}."
            )
        name = "|".join(names[c] if names else f"x{c}" for c in cols)
    else:
        cols = [column(attribute)]
        name = names[cols[0]] if names else f"x{cols[0]}"
    return np.asarray(cols, dtype=np.int64), name
