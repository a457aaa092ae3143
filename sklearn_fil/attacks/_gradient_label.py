"""Label reconstruction from an aggregated gradient (Yuan et al., section 2)."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator
from sklearn.neural_network import MLPClassifier
from sklearn.utils import Bunch, check_array
from sklearn.utils.validation import check_is_fitted

from sklearn_fil._network import DenseNetwork
from sklearn_fil.attacks._contract import deprecation
from sklearn_fil.neural import DPSGDClassifier, RecordedStep
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._release import fitted_params
from sklearn_fil.utils._sklearn_compat import Interval, StrOptions

# Tolerance on the leverage 1 of a determined example (see _solve).
_LEVERAGE_TOL = float(np.sqrt(np.finfo(np.float64).eps))

_UNKNOWN_SIGN = frozenset({"second_last", "input_malicious"})


def _target_network(model):
    """The released weights of a fitted binary network, as a DenseNetwork."""
    if not isinstance(model, DPSGDClassifier | MLPClassifier):
        raise TypeError(
            "The gradient label attack needs the layers of a DPSGDClassifier or "
            f"a scikit-learn MLPClassifier; got {type(model).__name__}."
        )
    check_is_fitted(model, "coefs_")
    coefs = [np.asarray(W, dtype=np.float64) for W in model.coefs_]
    intercepts = [np.asarray(b, dtype=np.float64) for b in model.intercepts_]
    binary = coefs[-1].shape[1] == 1 and len(model.classes_) == 2
    if isinstance(model, MLPClassifier):
        binary = binary and model.out_activation_ == "logistic"
    if not binary:
        raise ValueError(
            "The gradient label attack is for binary labels (one sigmoid "
            f"output); the model has {len(model.classes_)} classes and "
            f"{coefs[-1].shape[1]} outputs."
        )
    # the activation of the fit, not one set on the model afterwards
    activation = fitted_params(model)["activation"]
    return DenseNetwork(coefs, intercepts, activation, xp=np)


def _weights_like(values, reference, name):
    """``values`` as a list of float64 arrays shaped like ``reference``."""
    if not isinstance(values, list | tuple) or len(values) != len(reference):
        raise ValueError(
            f"{name} must be a list of {len(reference)} arrays, one per layer of "
            f"the model; got {type(values).__name__}"
            + (
                f" of length {len(values)}."
                if isinstance(values, list | tuple)
                else "."
            )
        )
    out = []
    for layer, (value, ref) in enumerate(zip(values, reference, strict=True)):
        value = np.asarray(value, dtype=np.float64)
        if value.shape != ref.shape:
            raise ValueError(
                f"{name}[{layer}] has shape {value.shape}; the model's layer "
                f"{layer} needs {ref.shape}."
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{name}[{layer}] has NaN or infinite values.")
        out.append(value)
    return out


def _layer_index(layer, n_layers):
    if not isinstance(layer, Integral) or isinstance(layer, bool):
        raise TypeError(f"layer must be an int; got {type(layer).__name__}.")
    if not -n_layers <= layer < n_layers:
        raise ValueError(
            f"layer={layer} is outside the model's {n_layers} weight layers "
            f"[{-n_layers}, {n_layers})."
        )
    return int(layer) % n_layers


def _check_features(X, net):
    """``X`` as float64 with the network's number of input features."""
    X = check_array(X, dtype=np.float64, input_name="X")
    n_in = net.coefs[0].shape[0]
    if X.shape[1] != n_in:
        raise ValueError(f"X has {X.shape[1]} features but the model takes {n_in}.")
    return X


def _derivatives(net, X, layer):
    """The arrays of :func:`gradient_label_inputs` for a checked network."""
    n = X.shape[0]
    acts, logits = net.forward(X)
    # dZ/dz of every layer's pre-activations: the chain rule from dZ/dZ = 1
    sens = net.backpropagate(acts, np.ones((n, 1)))[layer]
    last = len(net.coefs) - 1
    slopes = np.ones((n, 1)) if layer == last else net.slope(acts, layer + 1)
    inputs = acts[layer]
    augmented = np.hstack([inputs, np.ones((n, 1))])
    coefficients = (augmented[:, :, None] * sens[:, None, :]).reshape(n, -1)
    return Bunch(
        coefficients=coefficients,
        inputs=inputs,
        sensitivities=sens,
        slopes=slopes,
        last_hidden=acts[-1],
        proba=net.proba(logits)[:, 0],
        layer=layer,
    )


def gradient_label_inputs(model, X, *, layer=-1, coefs=None, intercepts=None):
    """Per-example derivatives of a binary network's output logit.

    Everything the :class:`GradientLabelAttack` needs about a batch ``X``:
    for the weight layer ``layer`` (``z = a W + b``, ``W`` of shape ``(n_in,
    n_out)``), the derivatives ``dZ[r]/dW`` and ``dZ[r]/db`` of the output
    logit ``Z[r]`` of every example, and the activations that enter them.
    ``dZ[r]/dW[i, j] = a[r, i] s[r, j]`` and ``dZ[r]/db[j] = s[r, j]``, with
    ``a`` the layer's input activations and ``s = dZ/dz`` the sensitivities of
    its pre-activations (1 for the output layer).

    Parameters
    ----------
    model : DPSGDClassifier or sklearn.neural_network.MLPClassifier
        A fitted (or released) binary network (one sigmoid output). Its
        hidden activation (``"tanh"``, ``"relu"``, ``"logistic"`` or
        ``"identity"``) is read from the model.
    X : array-like of shape (n_samples, n_features)
        The examples (a batch).
    layer : int, default=-1
        Weight layer, numbered as in ``model.coefs_``: ``-1`` is the output
        layer (from the last hidden layer), ``0`` the input layer.
    coefs : list of ndarray, default=None
        Weights at which to differentiate, shaped like ``model.coefs_``
        (e.g. the ``coefs`` of a :class:`~sklearn_fil.neural.RecordedStep`,
        the weights before the step); None uses ``model.coefs_``.
    intercepts : list of ndarray, default=None
        Biases at which to differentiate, shaped like ``model.intercepts_``;
        None uses ``model.intercepts_``.

    Returns
    -------
    derivatives : sklearn.utils.Bunch
        With the fields

        - ``coefficients``, ndarray of shape (n_samples, (n_in + 1) * n_out):
          row ``r`` is ``dZ[r]/dtheta`` for ``theta = np.vstack([W,
          b]).ravel()``, so the batch gradient of the layer, flattened the
          same way (``np.vstack([grad_W, grad_b]).ravel()``), is
          ``coefficients.T @ (p - y)``;
        - ``inputs``, ndarray of shape (n_samples, n_in): the activations
          entering the layer (``X`` for ``layer=0``);
        - ``sensitivities``, ndarray of shape (n_samples, n_out): ``dZ/dz`` of
          the layer's pre-activations;
        - ``slopes``, ndarray of shape (n_samples, n_out): the derivative of
          the layer's activation at its pre-activations (ones for the output
          layer);
        - ``last_hidden``, ndarray of shape (n_samples, n_last): activations
          of the last hidden layer (``X`` without hidden layers);
        - ``proba``, ndarray of shape (n_samples,): ``p``, the probability of
          ``classes_[1]``;
        - ``layer``, int: the layer's non-negative index.

    Raises
    ------
    TypeError
        When ``model`` is neither a DPSGDClassifier nor an MLPClassifier.
    ValueError
        When the model is not binary, or ``X``, ``layer``, ``coefs`` or
        ``intercepts`` do not fit it.

    See Also
    --------
    GradientLabelAttack : Recovers the labels from these and a gradient.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.neural_network import MLPClassifier
    >>> from sklearn_fil.attacks import gradient_label_inputs
    >>> X, y = make_classification(n_samples=50, n_features=4, random_state=0)
    >>> mlp = MLPClassifier(hidden_layer_sizes=(3,), solver="lbfgs",
    ...                     random_state=0).fit(X, y)
    >>> inputs = gradient_label_inputs(mlp, X[:5])
    >>> inputs.coefficients.shape, inputs.last_hidden.shape
    ((5, 4), (5, 3))
    >>> gradient_label_inputs(mlp, X[:5], layer=0).coefficients.shape
    (5, 15)
    """
    net = _target_network(model)
    layer = _layer_index(layer, len(net.coefs))
    if coefs is not None or intercepts is not None:
        net = DenseNetwork(
            net.coefs if coefs is None else _weights_like(coefs, net.coefs, "coefs"),
            net.intercepts
            if intercepts is None
            else _weights_like(intercepts, net.intercepts, "intercepts"),
            net.activation,
            xp=np,
        )
    return _derivatives(net, _check_features(X, net), layer)


def _vector(value, name, length=None):
    """A finite float64 vector; a one-column matrix counts as a vector."""
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == 2 and value.shape[1] == 1:
        value = value[:, 0]
    if value.ndim != 1:
        raise ValueError(
            f"{name} must be a vector; got an array of shape {value.shape}."
        )
    if length is not None and value.shape[0] != length:
        raise ValueError(f"{name} has {value.shape[0]} entries; expected {length}.")
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name} has NaN or infinite values.")
    return value


def _solve(F, g, tol):
    """Minimum-norm least-squares solution of ``F^T v = g`` and what it fixes.

    From the thin SVD ``F = U S V^T``: the numerical rank ``k`` counts the
    singular values above ``tol * s_max``, ``v = U_k S_k^-1 V_k^T g``, and
    entry ``r`` is determined when its leverage ``||U_k[r]||^2`` is 1 (its
    unit vector lies in the row space of ``F^T``).
    """
    n, d = F.shape
    try:
        U, s, Vt = scipy.linalg.svd(F, full_matrices=False, check_finite=False)
    except np.linalg.LinAlgError:  # gesdd did not converge
        U, s, Vt = scipy.linalg.svd(
            F, full_matrices=False, check_finite=False, lapack_driver="gesvd"
        )
    rel = max(n, d) * np.finfo(np.float64).eps if tol is None else tol
    k = int(np.sum(s > rel * s[0])) if s.size and s[0] > 0 else 0
    Uk = U[:, :k]
    v = Uk @ ((Vt[:k] @ g) / s[:k])
    leverage = np.einsum("ij,ij->i", Uk, Uk)
    return v, leverage >= 1.0 - _LEVERAGE_TOL, k


def _step_network(step, net):
    """The weights before ``step`` as a DenseNetwork, and its released gradients."""
    if not isinstance(step, RecordedStep):
        raise TypeError(
            "step must be a RecordedStep (an entry of "
            f"DPSGDClassifier.recorded_steps_); got {type(step).__name__}."
        )
    at = DenseNetwork(
        _weights_like(step.coefs, net.coefs, "step.coefs"),
        _weights_like(step.intercepts, net.intercepts, "step.intercepts"),
        net.activation,
        xp=np,
    )
    grad_coefs = _weights_like(step.grad_coefs, net.coefs, "step.grad_coefs")
    grad_intercepts = _weights_like(
        step.grad_intercepts, net.intercepts, "step.grad_intercepts"
    )
    return at, grad_coefs, grad_intercepts


def _batch_rows(indices, n_rows):
    """The step's batch indices, checked as rows of an ``n_rows``-row X."""
    indices = np.asarray(indices)
    if indices.ndim != 1 or (indices.size and indices.dtype.kind not in "iu"):
        raise ValueError(
            f"step.indices must be a 1-D array of row numbers; got {indices!r}."
        )
    if indices.size and (indices.min() < 0 or indices.max() >= n_rows):
        raise ValueError(
            f"step.indices has rows outside [0, {n_rows}), the rows of X: is X "
            "the training set of this step?"
        )
    return indices


class GradientLabelAttack(BaseEstimator):
    """Exact label reconstruction from an aggregated gradient (Yuan et al.).

    An honest-but-curious adversary who sees the batch gradient (or the
    update ``Delta W = -lr * dL/dW``) of one weight vector of a binary
    network, and the per-example derivatives ``dZ[r]/dW`` of the output logit
    ``Z``, solves Equation 1,

    ``gradient = sum_r w_r (p[r] - y[r]) dZ[r]/dW (+ noise)``,

    by least squares for the coefficients ``w_r (p[r] - y[r])`` and reads
    ``y[r] = 1`` where the coefficient is negative. DP-SGD's clip factors and
    divisor ``w_r > 0`` keep the signs; its noise only perturbs the solution.
    The variants differ in what the adversary knows:

    - ``"general"`` (Algorithm 1): the matrix of derivatives itself, one row
      ``dZ[r]/dW`` per example;
    - ``"last_hidden"`` (Algorithm 3): the activations of the last hidden
      layer, which are ``dZ[r]/dW^L`` for the output weights (the output
      bias adds the equation with coefficient 1);
    - ``"second_last"`` (Algorithm 4): for the weights into neuron ``J`` of
      the last hidden layer, the activations of the layer below and the
      slopes ``U[r] = A'(Z_J[r])``: ``dZ[r]/dW = W_J^L U[r] X^{L-1}[r]``,
      known up to the output weight ``W_J^L``, whose sign is settled by the
      prior ``positive_rate_below_half``;
    - ``"input_malicious"`` (Algorithm 5): a malicious adversary who chose
      the features so that every example gives the first hidden layer the
      same pre-activations; then ``dZ[r]/dW = g_J X[r]`` for the input
      weights of neuron ``J``, with one unknown ``g_J`` whose sign is again
      settled by the prior. This is a demonstration of the threat model: on
      ordinary data the equations do not hold.

    Like a clusterer, the attack labels the batch it is fitted on
    (``labels_``, returned by :meth:`fit_predict`): that of a step a
    :class:`~sklearn_fil.neural.DPSGDClassifier` recorded (``record_steps``),
    or of raw (e.g. federated) gradients. Labels whose coefficient the
    equations do not determine are returned as ``-1``, never guessed: an
    example is determined when its unit vector is orthogonal to the null
    space of the system, which fails when the batch has more examples than
    independent equations or when all of an example's derivatives vanish
    (e.g. a dead ReLU unit in ``"second_last"``).

    Read more in :ref:`the user guide <attacks>`.

    Parameters
    ----------
    model : DPSGDClassifier or sklearn.neural_network.MLPClassifier, default=None
        The target: a fitted, or released (:meth:`DPSGDClassifier.release
        <sklearn_fil.DPSGDClassifier.release>`), binary network, whose
        architecture and hidden activation :meth:`fit` uses with ``step``.
        Raw gradients need none.
    variant : {"general", "last_hidden", "second_last", "input_malicious"}, \
            default="general"
        What the adversary knows, see above.
    layer : int, default=None
        Weight layer attacked by ``"general"``, numbered as in
        ``model.coefs_`` (None means -1, the output layer); must be None for
        the other variants, whose layer is fixed. Used by :meth:`fit`.
    neuron : int, default=0
        The neuron ``J`` of ``"second_last"`` (of the last hidden layer) and
        ``"input_malicious"`` (of the first hidden layer). Used by
        :meth:`fit`; ignored by the other variants.
    positive_rate_below_half : bool, default=None
        The adversary's prior for the variants with an unknown sign
        (``"second_last"`` and ``"input_malicious"``, where it is required):
        True when fewer than half of the labels are positive, False when
        more than half are. The labelling that agrees is chosen among the
        two candidate labellings of the determined examples; if both have
        the same number of positives, every label is undetermined. Ignored
        by the other variants.
    tol : float, default=None
        Relative cutoff of the singular values of the derivative matrix: the
        numerical rank counts those above ``tol`` times the largest. None
        means ``max(n_samples, n_equations)`` times the machine epsilon.

    Attributes
    ----------
    model_ : estimator or None
        The target model.
    labels_ : ndarray of shape (n_samples,)
        Labels of the attacked batch (in the order of the step's
        ``indices``): 1 for the positive class (``classes_[1]``), 0 for the
        negative one, -1 where undetermined.
    residuals_ : ndarray of shape (n_samples,)
        The solved coefficients ``w_r (p[r] - y[r])``, known up to a positive
        factor for the variants with an unknown scale; NaN where
        undetermined.
    determined_ : ndarray of shape (n_samples,)
        Whether the equations determine each example's coefficient.
    rank_ : int
        Numerical rank of the system.
    sign_ : int
        Sign applied to the raw least-squares solution to get
        ``residuals_``: -1 for an update, the prior's choice for the
        unknown-sign variants (0 when the prior cannot choose), else 1.

    See Also
    --------
    gradient_label_inputs : The derivatives of a fitted network.
    sklearn_fil.neural.DPSGDClassifier : Records released gradients with
        ``record_steps``.
    sklearn_fil.neural.RecordedStep : One recorded step.

    References
    ----------
    Yuan, S., Xue, M., Wang, K. and Shen, M. "Deep gradient attacks with
    strong DP-SGD lower bounds for label privacy." Section 2 (Equation 1,
    Algorithm 1) and appendix A.1 (Algorithms 3 to 5).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil.neural import DPSGDClassifier
    >>> from sklearn_fil.attacks import GradientLabelAttack
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> clf = DPSGDClassifier(hidden_layer_sizes=(16,), noise_multiplier=1e-3,
    ...                       clipping="hard", batch_size=8, sampling="shuffle",
    ...                       max_iter=1, record_steps=[3], fil_accounting=False,
    ...                       per_instance_accounting=False, random_state=0)
    >>> step = clf.fit(X, y).recorded_steps_[0]
    >>> attack = GradientLabelAttack(clf.release(), variant="last_hidden")
    >>> labels = attack.fit_predict(X, step=step)
    >>> bool(np.all(labels == y[step.indices]))  # every label of the batch
    True

    With more examples than equations nothing is determined:

    >>> H = np.random.default_rng(0).normal(size=(5, 3))
    >>> GradientLabelAttack(variant="last_hidden").fit_predict(H, gradient=np.ones(3))
    array([-1, -1, -1, -1, -1])
    """

    _parameter_constraints: ClassVar[dict] = {
        "model": "no_validation",
        "variant": [
            StrOptions({"general", "last_hidden", "second_last", "input_malicious"})
        ],
        "layer": [None, Integral],
        "neuron": [Interval(Integral, 0, None, closed="left")],
        "positive_rate_below_half": ["boolean", None],
        "tol": [Interval(Real, 0, 1, closed="left"), None],
    }

    def __init__(
        self,
        model=None,
        *,
        variant="general",
        layer=None,
        neuron=0,
        positive_rate_below_half=None,
        tol=None,
    ):
        self.model = model
        self.variant = variant
        self.layer = layer
        self.neuron = neuron
        self.positive_rate_below_half = positive_rate_below_half
        self.tol = tol

    def _check_config(self):
        self._validate_params()
        if self.variant in _UNKNOWN_SIGN and self.positive_rate_below_half is None:
            raise ValueError(
                f"variant={self.variant!r} knows the derivatives only up to an "
                "unknown sign: pass positive_rate_below_half=True or False (the "
                "adversary's prior on the rate of positive labels)."
            )

    def fit(
        self,
        X,
        y=None,
        *,
        step=None,
        gradient=None,
        update=None,
        intercept=None,
        slopes=None,
    ):
        """Recover the labels of a batch from its aggregated gradient.

        With ``step``, the derivatives are taken at the weights before the
        step, for the rows ``X[step.indices]``, and the observation is the
        step's released noisy gradient of the attacked weights, bias included.
        Raw gradients do not use ``model``, ``layer`` and ``neuron``. A failed
        fit leaves no fitted attributes, not even those of an earlier fit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            With ``step``, the training features as the model takes them: the
            rows the step's indices refer to. Otherwise one row per example
            of the batch: ``dZ[r]/dW`` (``"general"``, e.g.
            ``gradient_label_inputs(...).coefficients``), the activations of
            the last hidden layer (``"last_hidden"``), of the layer below it
            (``"second_last"``), or the constructed features
            (``"input_malicious"``).
        y : None
            Ignored.
        step : RecordedStep, default=None
            An entry of ``model.recorded_steps_`` (of the fitted model: a
            released copy does not carry them).
        gradient : array-like of shape (n_weights,), default=None
            The observed batch gradient ``dL/dW`` (of any positive scale: a
            sum, a mean, a noisy DP-SGD release). Without ``step``, give
            exactly one of ``gradient`` and ``update``.
        update : array-like of shape (n_weights,), default=None
            The observed weight update ``Delta W = -lr * dL/dW`` (plain SGD:
            momentum and weight decay break the proportionality).
        intercept : float, default=None
            The bias entry of the same observation (gradient or update) for
            the output bias (``"last_hidden"``) or the bias of neuron ``J``
            (``"second_last"``, ``"input_malicious"``): one more equation,
            with coefficient 1 (``U[r]`` for ``"second_last"``). Not used by
            ``"general"``, whose ``X`` holds every equation.
        slopes : array-like of shape (n_samples,), default=None
            ``U[r] = A'(Z_J[r])``, the activation slopes of neuron ``J``;
            required by ``"second_last"`` with raw gradients, only used there.

        Returns
        -------
        self : object
            The attack, with ``labels_`` of the batch (``X[step.indices]`` in
            that order).

        Raises
        ------
        ValueError
            When ``step`` is given with ``model`` None or with raw gradients,
            the model is not binary, or ``X``, ``layer``, ``neuron``, the
            arrays of ``step`` or the raw gradients do not fit.
        TypeError
            When ``model`` is not a DPSGDClassifier or MLPClassifier, or
            ``step`` is not a :class:`~sklearn_fil.neural.RecordedStep`.
        sklearn.exceptions.NotFittedError
            When ``model`` is not fitted.
        """
        if isinstance(y, RecordedStep) and step is None:
            deprecation(
                f"Passing step to {type(self).__name__}.fit positionally (pass "
                "step=...)"
            )
            step = y
        raw = (gradient, update, intercept, slopes)
        return fit_or_clear(self, self._fit, X, step, raw)

    def fit_predict(self, X, y=None, **fit_params):
        """Fit and return the labels of the batch, ``labels_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            See :meth:`fit`.
        y : None
            Ignored.
        **fit_params : dict
            ``step``, or ``gradient`` (or ``update``), ``intercept`` and
            ``slopes``: see :meth:`fit`.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            1 (positive class), 0 (negative class) or -1 (undetermined).
        """
        return self.fit(X, y, **fit_params).labels_

    def recover(
        self, features, gradient=None, *, update=None, intercept=None, slopes=None
    ):
        """Recover the labels of a batch from raw gradients (deprecated).

        Deprecated: ``fit_predict(features, gradient=...)`` takes the same
        inputs, see :meth:`fit`.

        Parameters
        ----------
        features : array-like of shape (n_samples, n_weights)
            ``X`` of :meth:`fit`.
        gradient, update, intercept, slopes : array-like or float, default=None
            As in :meth:`fit`.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            ``labels_``.
        """
        deprecation(
            f"{type(self).__name__}.recover (use fit_predict(features, gradient=...))"
        )
        return self.fit_predict(
            features,
            gradient=gradient,
            update=update,
            intercept=intercept,
            slopes=slopes,
        )

    def _attacked_layer(self, net):
        """Index of the weight layer the variant attacks, checked on ``net``."""
        n_layers, variant = len(net.coefs), self.variant
        if variant != "general" and self.layer is not None:
            raise ValueError(
                f"layer is chosen by variant={variant!r}; it only applies to "
                "variant='general'."
            )
        if variant == "general":
            return _layer_index(-1 if self.layer is None else self.layer, n_layers)
        if variant == "last_hidden":
            return n_layers - 1
        if n_layers < 2:
            raise ValueError(
                f"variant={variant!r} attacks a hidden layer; the model has none."
            )
        k = n_layers - 2 if variant == "second_last" else 0
        width = net.coefs[k].shape[1]
        if isinstance(self.neuron, bool) or not 0 <= self.neuron < width:
            raise ValueError(
                f"neuron must be an int in [0, {width}) (the width of the "
                f"attacked layer); got {self.neuron!r}."
            )
        return k

    def _fit(self, X, step, raw):
        self._check_config()
        if step is None:
            self._recover(X, *raw)
        else:
            self._fit_step(X, step, raw)
        self.model_ = self.model
        return self

    def _fit_step(self, X, step, raw):
        if any(value is not None for value in raw):
            raise ValueError(
                "Give step (a recorded step of model) or the raw gradient, "
                "update, intercept and slopes, not both."
            )
        if self.model is None:
            raise ValueError(
                "GradientLabelAttack.fit attacks a recorded step of a target "
                "model: pass model=<fitted or released DPSGDClassifier>. For raw "
                "(e.g. federated) gradients use fit_predict(features, gradient=...)."
            )
        net = _target_network(self.model)
        k = self._attacked_layer(net)
        at, grad_coefs, grad_intercepts = _step_network(step, net)
        X = _check_features(X, net)
        indices = _batch_rows(step.indices, X.shape[0])
        if indices.size == 0:
            self.labels_ = np.empty(0, dtype=np.int64)
            self.residuals_ = np.empty(0)
            self.determined_ = np.empty(0, dtype=bool)
            self.rank_, self.sign_ = 0, 1
            return
        Xb = X[indices]
        inputs = _derivatives(at, Xb, k)
        gW, gb = grad_coefs[k], grad_intercepts[k]
        j = self.neuron
        if self.variant == "general":
            gradient = np.vstack([gW, gb[None, :]]).ravel()
            self._recover(inputs.coefficients, gradient)
        elif self.variant == "last_hidden":
            self._recover(inputs.inputs, gW[:, 0], intercept=gb[0])
        elif self.variant == "second_last":
            slopes = inputs.slopes[:, j]
            self._recover(inputs.inputs, gW[:, j], intercept=gb[j], slopes=slopes)
        else:
            self._recover(Xb, gW[:, j], intercept=gb[j])

    def _system(self, features, gradient, update, intercept, slopes):
        """The checked equations ``F^T v = g`` of raw gradients."""
        F = check_array(features, dtype=np.float64, input_name="features")
        n, d = F.shape
        if (gradient is None) == (update is None):
            raise ValueError(
                "Give exactly one of gradient and update (or step, a recorded "
                "step of model)."
            )
        name = "gradient" if update is None else "update"
        g = _vector(gradient if update is None else update, name)
        if g.shape[0] != d:
            raise ValueError(
                f"{name} has {g.shape[0]} entries but features has {d} columns "
                "(one per weight)."
            )
        variant = self.variant
        if variant == "general" and intercept is not None:
            raise ValueError(
                "variant='general' takes every equation from features: add the "
                "bias derivatives as columns instead of passing intercept."
            )
        column = np.ones(n)
        if variant == "second_last":
            if slopes is None:
                raise ValueError(
                    "variant='second_last' needs slopes, the activation "
                    "derivatives U[r] of the chosen last-hidden neuron."
                )
            column = _vector(slopes, "slopes", n)
            F = F * column[:, None]
        elif slopes is not None:
            raise ValueError(
                f"slopes are only used by variant='second_last', not {variant!r}."
            )
        if intercept is not None:
            b = np.asarray(intercept, dtype=np.float64)
            if b.size != 1 or not np.isfinite(b).all():
                raise ValueError(
                    f"intercept must be one finite number; got {intercept!r}."
                )
            F = np.column_stack([F, column])
            g = np.append(g, b.item())
        return F, g

    def _recover(
        self, features, gradient=None, update=None, intercept=None, slopes=None
    ):
        F, g = self._system(features, gradient, update, intercept, slopes)
        n = F.shape[0]
        v, determined, rank = _solve(F, g, self.tol)
        sign = -1 if update is not None else 1
        if self.variant in _UNKNOWN_SIGN:
            # positives under each orientation, among the determined examples
            pos_plus = int(np.sum(determined & (v < 0)))
            pos_minus = int(np.sum(determined & (v > 0)))
            fewer = 1 if pos_plus < pos_minus else -1 if pos_minus < pos_plus else 0
            sign = fewer if self.positive_rate_below_half else -fewer
            if sign == 0:
                determined = np.zeros(n, dtype=bool)
        residuals = np.where(determined, sign * v, np.nan)
        labels = np.full(n, -1, dtype=np.int64)
        labels[determined & (residuals < 0)] = 1
        labels[determined & (residuals > 0)] = 0
        self.labels_ = labels
        self.residuals_ = residuals
        self.determined_ = determined
        self.rank_ = rank
        self.sign_ = int(sign)
