# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Label reconstruction from aggregated gradients (Yuan et al.).

The observations are computed independently of the attack: released gradients
recorded by DPSGDClassifier's own training loop, or the batch gradient of a
scikit-learn MLPClassifier written out by hand below; the derivatives are
checked against finite differences of ``predict_proba``. The truth is the
labels that produced the gradient.
"""

import dataclasses
import warnings

import numpy as np
import pytest
import scipy.linalg
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit, logit
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_fil.attacks import GradientLabelAttack, gradient_label_inputs
from sklearn_fil.exceptions import PrivacyLeakWarning
from sklearn_fil.neural import DPSGDClassifier, RecordedStep

ACTIVATIONS = {
    "tanh": (np.tanh, lambda z: 1.0 - np.tanh(z) ** 2),
    "relu": (lambda z: np.maximum(z, 0.0), lambda z: (z > 0).astype(float)),
    "logistic": (expit, lambda z: expit(z) * (1.0 - expit(z))),
    "identity": (lambda z: z, np.ones_like),
}


def _reference_pass(coefs, intercepts, activation, X):
    """Pre-activations and activations of every hidden layer, and the logit."""
    act, _ = ACTIVATIONS[activation]
    zs, acts = [], [X]
    for W, b in zip(coefs[:-1], intercepts[:-1], strict=True):
        zs.append(acts[-1] @ W + b)
        acts.append(act(zs[-1]))
    return zs, acts, (acts[-1] @ coefs[-1] + intercepts[-1])[:, 0]


def _reference_gradient(coefs, intercepts, activation, X, y):
    """Summed log-loss gradient of every layer, by hand-written backprop."""
    _, slope = ACTIVATIONS[activation]
    zs, acts, z_out = _reference_pass(coefs, intercepts, activation, X)
    delta = (expit(z_out) - y)[:, None]
    grads = [None] * len(coefs)
    for k in range(len(coefs) - 1, -1, -1):
        grads[k] = (acts[k].T @ delta, delta.sum(axis=0))
        if k > 0:
            delta = (delta @ coefs[k].T) * slope(zs[k - 1])
    return grads


def _dpsgd(X, y, *, hidden, sigma=0.0, activation="tanh", record=10, **params):
    settings = dict(
        hidden_layer_sizes=hidden,
        activation=activation,
        noise_multiplier=sigma,
        clipping="hard",
        batch_size=8,
        sampling="shuffle",
        learning_rate=0.05,
        max_iter=1,
        record_steps=record,
        fil_accounting=False,
        per_instance_accounting=False,
        random_state=0,
    )
    settings.update(params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return DPSGDClassifier(**settings).fit(X, y)


def _data(n=200, d=5, weights=None, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=d,
        n_informative=min(d, 3),
        n_redundant=0,
        weights=weights,
        random_state=seed,
    )
    return X, y


def _mlp(activation, hidden=(4, 3), n_classes=2, seed=0):
    X, y = make_classification(
        n_samples=60,
        n_features=3,
        n_informative=3,
        n_redundant=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier(
            hidden_layer_sizes=hidden,
            activation=activation,
            max_iter=50,
            random_state=seed,
        ).fit(X, y)
    return mlp, X, y


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("layer", [0, 1, -1])
def test_coefficients_are_finite_differences_of_the_logit(activation, layer):
    mlp, X, _ = _mlp(activation)
    Xb = X[:6]
    inputs = gradient_label_inputs(mlp, Xb, layer=layer)
    k = layer % len(mlp.coefs_)
    W, b = mlp.coefs_[k], mlp.intercepts_[k]
    theta = np.vstack([W, b[None, :]]).ravel()

    def logits(flat):
        block = flat.reshape(W.shape[0] + 1, W.shape[1])
        mlp.coefs_[k], mlp.intercepts_[k] = block[:-1], block[-1]
        try:
            return logit(mlp.predict_proba(Xb)[:, 1])
        finally:
            mlp.coefs_[k], mlp.intercepts_[k] = W, b

    h = 1e-6
    numeric = np.column_stack(
        [
            (logits(theta + h * e) - logits(theta - h * e)) / (2 * h)
            for e in np.eye(theta.size)
        ]
    )
    assert inputs.coefficients.shape == (6, theta.size)
    assert inputs.layer == k
    assert_allclose(inputs.coefficients, numeric, rtol=1e-5, atol=1e-7)
    assert_allclose(inputs.proba, mlp.predict_proba(Xb)[:, 1], rtol=1e-12)
    _, acts, _ = _reference_pass(mlp.coefs_, mlp.intercepts_, activation, Xb)
    assert_allclose(inputs.inputs, acts[k], rtol=1e-12)
    assert_allclose(inputs.last_hidden, acts[-1], rtol=1e-12)


def test_inputs_at_given_weights():
    # Differentiating at other weights is differentiating a model that has them.
    mlp, X, _ = _mlp("tanh")
    rng = np.random.default_rng(1)
    coefs = [W + 0.3 * rng.standard_normal(W.shape) for W in mlp.coefs_]
    intercepts = [b + 0.3 * rng.standard_normal(b.shape) for b in mlp.intercepts_]
    at = gradient_label_inputs(mlp, X[:5], layer=0, coefs=coefs, intercepts=intercepts)
    mlp.coefs_, mlp.intercepts_ = coefs, intercepts
    moved = gradient_label_inputs(mlp, X[:5], layer=0)
    assert_allclose(at.coefficients, moved.coefficients, rtol=1e-12)
    assert not np.allclose(
        at.coefficients,
        gradient_label_inputs(_mlp("tanh")[0], X[:5], layer=0).coefficients,
    )


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_dpsgd_every_label_recovered_without_noise(activation):
    X, y = _data()
    clf = _dpsgd(X, y, hidden=(24,), activation=activation, record=10)
    assert len(clf.recorded_steps_) == 10
    for variant, layers in [("last_hidden", [None]), ("general", [None, 0])]:
        for record in clf.recorded_steps_:
            for layer in layers:
                attack = GradientLabelAttack(clf, variant=variant, layer=layer)
                labels = attack.fit(X, step=record).labels_
                # batch 8 <= 24 + 1 equations: every label, exactly
                assert_array_equal(labels, y[record.indices])
                assert attack.determined_.all()
                assert attack.rank_ == 8


def test_dpsgd_poisson_batches_and_logistic_regression():
    # Poisson batches (divisor q n) and a model without hidden layers, whose
    # "last hidden layer" is the input: 5 + 1 equations for batches of ~3.
    X, y = _data(n=300)
    clf = _dpsgd(
        X, y, hidden=(), sampling="poisson", batch_size=3, record=20, learning_rate=0.5
    )
    attack = GradientLabelAttack(clf, variant="last_hidden")
    n_checked = 0
    for record in clf.recorded_steps_:
        labels = attack.fit(X, step=record).labels_
        truth = y[record.indices]
        if record.indices.size <= 6:
            assert_array_equal(labels, truth)
            n_checked += 1
        else:
            assert (labels == -1).all()
    assert n_checked >= 15


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_mlpclassifier_with_hand_computed_gradient(activation):
    mlp, X, _ = _mlp(activation, hidden=(12,))
    # A linear network's hidden layer is affine in the 3 features: 4 equations.
    n = 4 if activation == "identity" else 10
    rng = np.random.default_rng(0)
    Xb = X[10 : 10 + n]
    y = rng.integers(0, 2, size=n)  # any labels: the gradient is what they made
    y[:2] = [0, 1]
    (gW0, gb0), (gW1, gb1) = _reference_gradient(
        mlp.coefs_, mlp.intercepts_, activation, Xb, y
    )

    inputs = gradient_label_inputs(mlp, Xb)
    attack = GradientLabelAttack(variant="last_hidden")
    labels = attack.fit_predict(inputs.last_hidden, gradient=gW1 / n, intercept=gb1 / n)
    assert_array_equal(labels, y)
    # the update of plain SGD, Delta W = -lr * gradient
    labels = attack.fit_predict(
        inputs.last_hidden, update=-0.01 * gW1, intercept=-0.01 * gb1
    )
    assert_array_equal(labels, y)
    assert attack.sign_ == -1

    general = GradientLabelAttack(variant="general")
    C0 = gradient_label_inputs(mlp, Xb, layer=0).coefficients  # 48 equations
    labels = general.fit_predict(C0, gradient=np.vstack([gW0, gb0[None]]).ravel())
    assert_array_equal(labels, y)


def test_linear_network_identifies_at_most_its_input_dimension():
    mlp, X, _ = _mlp("identity", hidden=(12,))
    Xb, y = X[:6], np.array([0, 1, 1, 0, 1, 0])
    _, (gW1, gb1) = _reference_gradient(mlp.coefs_, mlp.intercepts_, "identity", Xb, y)
    attack = GradientLabelAttack(variant="last_hidden")
    attack.fit_predict(
        gradient_label_inputs(mlp, Xb).last_hidden, gradient=gW1, intercept=gb1
    )
    assert attack.rank_ == 4
    assert_array_equal(attack.labels_, -1)


def test_solved_coefficients_are_the_residuals():
    # Without clipping or noise the solution is exactly p - y.
    mlp, X, _ = _mlp("tanh", hidden=(12,))
    Xb, y = X[:7], np.array([1, 0, 0, 1, 1, 0, 1])
    (_, _), (gW1, gb1) = _reference_gradient(mlp.coefs_, mlp.intercepts_, "tanh", Xb, y)
    attack = GradientLabelAttack(variant="last_hidden")
    attack.fit_predict(
        gradient_label_inputs(mlp, Xb).last_hidden, gradient=gW1, intercept=gb1
    )
    assert_allclose(attack.residuals_, mlp.predict_proba(Xb)[:, 1] - y, atol=1e-10)


def test_accuracy_falls_to_chance_as_noise_grows(global_random_seed):
    X, y = _data(n=400, d=6)
    accuracy = {}
    for sigma in [0.0, 0.1, 1.0, 300.0]:
        clf = _dpsgd(
            X,
            y,
            hidden=(32,),
            sigma=sigma,
            sampling="poisson",
            record=50,
            learning_rate=1e-3,  # keep the weights near the initialisation
            random_state=global_random_seed,
        )
        attack = GradientLabelAttack(clf, variant="last_hidden")
        hits = []
        for record in clf.recorded_steps_:
            labels = attack.fit(X, step=record).labels_
            assert attack.determined_.all()
            hits.append(labels == y[record.indices])
        accuracy[sigma] = np.concatenate(hits).mean()
        n_labels = sum(h.size for h in hits)
    assert accuracy[0.0] == 1.0
    assert accuracy[0.0] > accuracy[0.1] > accuracy[1.0] > accuracy[300.0]
    assert accuracy[0.1] > 0.85
    assert accuracy[1.0] < 0.85
    # chance: a sign decided by the noise alone, within 3 standard errors
    assert abs(accuracy[300.0] - 0.5) < 3 * 0.5 / np.sqrt(n_labels)


def test_batch_larger_than_the_layer_is_undetermined():
    X, y = _data()
    clf = _dpsgd(X, y, hidden=(4,), batch_size=12, record=3)
    attack = GradientLabelAttack(clf, variant="last_hidden")
    for record in clf.recorded_steps_:
        labels = attack.fit(X, step=record).labels_
        # independent: the null space of the 5 x 12 system, generic support
        _, acts, _ = _reference_pass(
            record.coefs, record.intercepts, "tanh", X[record.indices]
        )
        F = np.column_stack([acts[-1], np.ones(12)])
        null = scipy.linalg.null_space(F.T)
        assert null.shape[1] == 12 - 5
        assert (np.linalg.norm(null, axis=1) > 1e-3).all()
        assert attack.rank_ == 5
        assert_array_equal(labels, -1)
        assert np.isnan(attack.residuals_).all()


def test_undetermined_examples_in_a_partly_identified_system():
    # Rows 0 and 1 have directions of their own; rows 2 and 3 share one
    # (only their sum is fixed); row 4 has no derivative at all.
    C = np.array(
        [
            [1.0, 0.0, 0.0, 2.0],
            [0.0, 1.0, 0.0, -1.0],
            [0.0, 0.0, 1.0, 0.5],
            [0.0, 0.0, 1.0, 0.5],
            [0.0, 0.0, 0.0, 0.0],
        ]
    )
    p = np.array([0.3, 0.8, 0.4, 0.6, 0.5])
    y = np.array([1, 0, 0, 1, 1])
    attack = GradientLabelAttack(variant="general")
    labels = attack.fit_predict(C, gradient=C.T @ (p - y) / 5)
    assert_array_equal(labels, [1, 0, -1, -1, -1])
    assert_array_equal(attack.determined_, [True, True, False, False, False])
    assert attack.rank_ == 3
    assert_allclose(attack.residuals_[:2], (p - y)[:2] / 5)


def test_dead_relu_unit_leaves_its_examples_undetermined():
    # Algorithm 4 with ReLU: an example with Z_J <= 0 has U = 0, so its
    # derivatives, and its coefficient, vanish from every equation.
    X, y = _data(n=240, weights=[0.8])
    clf = _dpsgd(X, y, hidden=(10, 6), activation="relu", batch_size=6, record=40)
    n_mixed = 0
    for record in clf.recorded_steps_:
        Xb, truth = X[record.indices], y[record.indices]
        zs, _, _ = _reference_pass(record.coefs, record.intercepts, "relu", Xb)
        for neuron in range(6):
            alive = zs[1][:, neuron] > 0
            if alive.all() or not alive.any() or truth[alive].mean() >= 0.5:
                continue
            n_mixed += 1
            attack = GradientLabelAttack(
                clf, variant="second_last", neuron=neuron, positive_rate_below_half=True
            )
            labels = attack.fit(X, step=record).labels_
            assert_array_equal(labels[~alive], -1)
            assert_array_equal(labels[alive], truth[alive])
            assert_array_equal(attack.determined_, alive)
    assert n_mixed >= 10


@pytest.mark.parametrize("hidden", [(12,), (16, 8)])
def test_second_last_with_the_positive_rate_prior(hidden):
    X, y = _data(n=240, d=10, weights=[0.8])  # with (12,): 10 + 1 equations
    clf = _dpsgd(X, y, hidden=hidden, batch_size=8, record=30)
    n_checked = 0
    for record in clf.recorded_steps_:
        truth = y[record.indices]
        if truth.mean() >= 0.5:
            continue
        n_checked += 1
        for neuron in (0, hidden[-1] - 1):
            right, wrong = (
                GradientLabelAttack(
                    clf,
                    variant="second_last",
                    neuron=neuron,
                    positive_rate_below_half=p,
                )
                for p in (True, False)
            )
            assert_array_equal(right.fit(X, step=record).labels_, truth)
            # the wrong prior flips the whole batch
            assert_array_equal(wrong.fit(X, step=record).labels_, 1 - truth)
    assert n_checked >= 25


def test_unknown_sign_tie_is_undetermined():
    H = np.eye(4)
    attack = GradientLabelAttack(
        variant="input_malicious", positive_rate_below_half=True
    )
    labels = attack.fit_predict(H, gradient=np.array([0.3, -0.7, 0.4, -0.6]))
    assert_array_equal(labels, -1)
    assert attack.sign_ == 0
    labels = attack.fit_predict(H, gradient=np.array([0.3, -0.7, 0.4, 0.6]))
    assert_array_equal(labels, [0, 1, 0, 0])


def test_malicious_input_layer_attack_recovers_every_label():
    # Algorithm 5: wide input (p1 = 40), narrow first hidden layer (p2 = 3),
    # features built so that every row gives the same pre-activations.
    p1, p2, n = 40, 3, 30
    rng = np.random.default_rng(0)
    y = (rng.uniform(size=n) < 0.3).astype(int)
    y[:2] = [0, 1]
    params = dict(hidden=(p2, 4), batch_size=10, record=[1, 2, 3])
    # the initial weights depend only on the shapes and random_state
    init = _dpsgd(rng.standard_normal((n, p1)), y, **params).recorded_steps_[0]
    W, b = init.coefs[0], init.intercepts[0]
    V = rng.standard_normal(p2)
    particular = np.linalg.lstsq(W.T, V - b, rcond=None)[0]
    basis = scipy.linalg.null_space(W.T)  # p1 x (p1 - p2)
    Xc = particular + basis[:, :n].T
    assert_allclose(Xc @ W + b, np.tile(V, (n, 1)), atol=1e-12)

    clf = _dpsgd(Xc, y, **params)
    first = clf.recorded_steps_[0]
    assert_allclose(first.coefs[0], W)
    for neuron in range(p2):
        attack = GradientLabelAttack(
            clf, variant="input_malicious", neuron=neuron, positive_rate_below_half=True
        )
        labels = attack.fit(Xc, step=first).labels_
        assert_array_equal(labels, y[first.indices])
    # later steps moved the weights away from the construction
    assert not np.allclose(clf.recorded_steps_[1].coefs[0], W)


@pytest.fixture(scope="module")
def fitted():
    X, y = _data()
    return _dpsgd(X, y, hidden=(6,), record=1), X


def test_gradient_shapes_must_match(fitted):
    clf, X = fitted
    attack = GradientLabelAttack(variant="last_hidden")
    with pytest.raises(ValueError, match="gradient has 4 entries but features has 3"):
        attack.fit_predict(np.ones((5, 3)), gradient=np.ones(4))
    with pytest.raises(ValueError, match="must be a vector"):
        attack.fit_predict(np.ones((5, 3)), gradient=np.ones((3, 2)))
    with pytest.raises(ValueError, match="exactly one of gradient and update"):
        attack.fit_predict(np.ones((5, 3)), gradient=np.ones(3), update=np.ones(3))
    with pytest.raises(ValueError, match="exactly one of gradient and update"):
        attack.fit_predict(np.ones((5, 3)))
    with pytest.raises(ValueError, match="NaN"):
        attack.fit_predict(np.ones((5, 3)), gradient=[1.0, np.nan, 0.0])
    attack = GradientLabelAttack(clf, variant="last_hidden")
    step = clf.recorded_steps_[0]
    record = dataclasses.replace(step, grad_coefs=(step.grad_coefs[0], np.ones((5, 1))))
    with pytest.raises(ValueError, match=r"grad_coefs\[1\] has shape \(5, 1\)"):
        attack.fit(X, step=record)
    record = dataclasses.replace(step, grad_intercepts=step.grad_intercepts[:1])
    with pytest.raises(ValueError, match="list of 2 arrays"):
        attack.fit(X, step=record)
    with pytest.raises(ValueError, match="X has 4 features"):
        attack.fit(X[:, :4], step=step)
    with pytest.raises(ValueError, match="model takes 5"):
        gradient_label_inputs(clf, X[:, :4])
    with pytest.raises(ValueError, match="coefs\\[0\\] has shape"):
        gradient_label_inputs(clf, X, coefs=[np.ones((4, 6)), np.ones((6, 1))])


def test_batch_indices_must_be_rows_of_X(fitted):
    clf, X = fitted
    attack = GradientLabelAttack(clf, variant="last_hidden")
    step = clf.recorded_steps_[0]
    for bad in ([0, 200], [-1, 3]):
        record = dataclasses.replace(step, indices=np.array(bad))
        with pytest.raises(ValueError, match=r"rows outside \[0, 200\)"):
            attack.fit(X, step=record)
    record = dataclasses.replace(step, indices=np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="1-D array of row numbers"):
        attack.fit(X, step=record)
    # the dicts of earlier versions, and anything else, are refused
    as_dict = {f.name: getattr(step, f.name) for f in dataclasses.fields(step)}
    with pytest.raises(TypeError, match="must be a RecordedStep"):
        attack.fit(X, step=as_dict)
    with pytest.raises(TypeError, match="must be a RecordedStep"):
        attack.fit(X, step=[1, 2])
    empty = dataclasses.replace(step, indices=np.array([], dtype=int))
    assert attack.fit(X, step=empty).labels_.shape == (0,)
    assert attack.rank_ == 0


def test_model_must_be_a_binary_network():
    X, y = make_classification(
        n_samples=60,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    multiclass = _dpsgd(X, y, hidden=(4,), record=1)
    with pytest.raises(ValueError, match="for binary labels"):
        gradient_label_inputs(multiclass, X)
    with pytest.raises(ValueError, match="for binary labels"):
        GradientLabelAttack(multiclass).fit(X, step=multiclass.recorded_steps_[0])
    with pytest.raises(ValueError, match="for binary labels"):
        gradient_label_inputs(_mlp("tanh", n_classes=3)[0], X[:, :3])
    with pytest.raises(TypeError, match="DPSGDClassifier or a scikit-learn MLP"):
        gradient_label_inputs(LogisticRegression().fit(X, y > 0), X)
    with pytest.raises(TypeError, match="DPSGDClassifier or a scikit-learn MLP"):
        GradientLabelAttack(LogisticRegression().fit(X, y > 0)).fit(
            X, step=multiclass.recorded_steps_[0]
        )
    with pytest.raises(NotFittedError):
        gradient_label_inputs(DPSGDClassifier(), X)
    with pytest.raises(NotFittedError):
        GradientLabelAttack(DPSGDClassifier()).fit(
            X, step=multiclass.recorded_steps_[0]
        )
    with pytest.raises(ValueError, match=r"use fit_predict\(features, gradient="):
        GradientLabelAttack().fit(X, step=multiclass.recorded_steps_[0])


def test_variant_options_are_checked(fitted):
    clf, X = fitted
    record = clf.recorded_steps_[0]
    with pytest.raises(ValueError, match="positive_rate_below_half=True or False"):
        GradientLabelAttack(clf, variant="second_last").fit(X, step=record)
    with pytest.raises(ValueError, match="variant"):
        GradientLabelAttack(variant="penultimate").fit_predict(
            np.eye(2), gradient=np.ones(2)
        )
    with pytest.raises(ValueError, match="needs slopes"):
        GradientLabelAttack(
            variant="second_last", positive_rate_below_half=True
        ).fit_predict(np.eye(2), gradient=np.ones(2))
    with pytest.raises(ValueError, match="only used by variant='second_last'"):
        GradientLabelAttack(variant="last_hidden").fit_predict(
            np.eye(2), gradient=np.ones(2), slopes=np.ones(2)
        )
    with pytest.raises(ValueError, match="add the bias derivatives as columns"):
        GradientLabelAttack().fit_predict(np.eye(2), gradient=np.ones(2), intercept=1.0)
    with pytest.raises(ValueError, match="outside the model's 2 weight layers"):
        GradientLabelAttack(clf, layer=2).fit(X, step=record)
    with pytest.raises(ValueError, match="only applies to variant='general'"):
        GradientLabelAttack(clf, variant="last_hidden", layer=0).fit(X, step=record)
    with pytest.raises(ValueError, match=r"neuron must be an int in \[0, 6\)"):
        GradientLabelAttack(
            clf, variant="second_last", neuron=6, positive_rate_below_half=True
        ).fit(X, step=record)
    with pytest.raises(InvalidParameterError, match="neuron"):
        GradientLabelAttack(clf, variant="second_last", neuron=-1).fit(X, step=record)
    logistic = _dpsgd(*_data(), hidden=(), record=1)
    with pytest.raises(ValueError, match="the model has none"):
        GradientLabelAttack(
            logistic, variant="input_malicious", positive_rate_below_half=False
        ).fit(_data()[0], step=logistic.recorded_steps_[0])


def test_released_model_gives_the_same_labels():
    # release() drops recorded_steps_ (the batch indices are secret), so the
    # step comes from the fitted model; the attack needs only the released
    # architecture and activation.
    X, y = _data(n=240, d=10)  # with (12,): 13, 11 and 132 equations for 8
    clf = _dpsgd(X, y, hidden=(12,), sigma=1e-3, record=[2])
    released = clf.release()
    assert not hasattr(released, "recorded_steps_")
    step = clf.recorded_steps_[0]
    for variant, extra in [
        ("general", {"layer": 0}),
        ("last_hidden", {}),
        ("second_last", {"neuron": 3, "positive_rate_below_half": True}),
    ]:
        on_fitted = GradientLabelAttack(clf, variant=variant, **extra).fit(X, step=step)
        on_released = GradientLabelAttack(released, variant=variant, **extra).fit(
            X, step=step
        )
        assert on_fitted.determined_.all()
        assert_array_equal(on_released.labels_, on_fitted.labels_)
        assert_array_equal(on_released.residuals_, on_fitted.residuals_)
        assert on_released.rank_ == on_fitted.rank_


def test_failed_fit_leaves_no_fitted_state(fitted):
    clf, X = fitted
    attack = GradientLabelAttack(clf, variant="last_hidden")
    assert attack.fit(X, step=clf.recorded_steps_[0]) is attack
    assert attack.labels_.shape == clf.recorded_steps_[0].indices.shape
    # a step of another model, with other shapes
    other = _dpsgd(*_data(), hidden=(3,), record=1).recorded_steps_[0]
    with pytest.raises(ValueError, match=r"step.coefs\[0\] has shape \(5, 3\)"):
        attack.fit(X, step=other)
    for name in ("labels_", "residuals_", "determined_", "rank_", "sign_"):
        assert not hasattr(attack, name)
    # fit_predict clears state on failure too
    attack.fit_predict(np.eye(3), gradient=np.ones(3))
    assert hasattr(attack, "labels_")
    with pytest.raises(ValueError, match="exactly one of gradient and update"):
        attack.fit_predict(np.eye(3))
    assert not hasattr(attack, "labels_")


def test_recorded_step_is_frozen(fitted):
    clf, _ = fitted
    step = clf.recorded_steps_[0]
    assert isinstance(step, RecordedStep)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.divisor = 1.0
    with pytest.raises(ValueError, match="read-only"):
        step.grad_coefs[0][0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        step.indices[0] = 0
    # the arrays are copies: training on did not move the recorded weights
    assert not np.array_equal(step.coefs[0], clf.coefs_[0])


def test_positional_step_and_recover_are_deprecated(fitted):
    clf, X = fitted
    step = clf.recorded_steps_[0]
    attack = GradientLabelAttack(clf, variant="last_hidden")
    labels = attack.fit_predict(X, step=step)
    assert attack.model_ is clf
    with pytest.warns(FutureWarning, match="step"):
        assert_array_equal(attack.fit(X, step).labels_, labels)
    H = np.random.default_rng(0).normal(size=(5, 3))
    raw = GradientLabelAttack(variant="last_hidden")
    expected = raw.fit_predict(H, gradient=np.array([0.3, -0.7, 0.4]))
    with pytest.warns(FutureWarning, match="recover"):
        assert_array_equal(raw.recover(H, np.array([0.3, -0.7, 0.4])), expected)
    with pytest.raises(ValueError, match="not both"):
        attack.fit(X, step=step, gradient=np.ones(3))
