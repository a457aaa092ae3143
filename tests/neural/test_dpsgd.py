# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPSGDClassifier: training, accounting and the privacy report."""

import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from sklearn.datasets import make_classification
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_fil.accounting import gelu_clip_max_norm
from sklearn_fil.exceptions import PrivacyLeakWarning
from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.neural._network import Network, clip_factor


def _data(n=120, d=4, classes=2, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=d,
        n_informative=d,
        n_redundant=0,
        n_classes=classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    return X / np.linalg.norm(X, axis=1).max(), y


@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_no_noise_no_clipping_is_plain_minibatch_sgd(momentum):
    # Logistic regression from zeros, shuffled batches: the same updates as a
    # hand-written mini-batch SGD on the mean gradient, with the same shuffles.
    X, y = _data()
    clf = DPSGDClassifier(
        noise_multiplier=0.0,
        clipping=None,
        sampling="shuffle",
        batch_size=30,
        learning_rate=0.3,
        momentum=momentum,
        max_iter=3,
        random_state=0,
    )
    with pytest.warns(PrivacyLeakWarning):
        clf.fit(X, y)
        assert clf.epsilon_ is None
    rs = np.random.RandomState(0)
    w, b, vw, vb = np.zeros(4), 0.0, np.zeros(4), 0.0
    for _ in range(3):
        for idx in np.array_split(rs.permutation(len(X)), 4):
            r = expit(X[idx] @ w + b) - y[idx]
            gw, gb = X[idx].T @ r / idx.size, r.mean()
            vw, vb = momentum * vw + gw, momentum * vb + gb
            w, b = w - 0.3 * vw, b - 0.3 * vb
    assert_allclose(clf.coefs_[0][:, 0], w, rtol=1e-12)
    assert_allclose(clf.intercepts_[0][0], b, rtol=1e-12)
    assert np.isnan(clf.privacy_report_["fil"]).all()


def test_given_initialisation_is_where_sgd_starts():
    X, y = _data()
    w0, b0 = np.array([0.5, -1.0, 0.25, 2.0]), -0.3
    clf = DPSGDClassifier(
        noise_multiplier=0.0,
        clipping=None,
        sampling="shuffle",
        batch_size=30,
        learning_rate=0.3,
        max_iter=2,
        random_state=0,
    )
    init = {"coefs_init": [w0[:, None]], "intercepts_init": [np.array([b0])]}
    clf.fit(X, y, **init)
    rs = np.random.RandomState(0)
    w, b = w0.copy(), b0
    for _ in range(2):
        for idx in np.array_split(rs.permutation(len(X)), 4):
            r = expit(X[idx] @ w + b) - y[idx]
            w, b = w - 0.3 * X[idx].T @ r / idx.size, b - 0.3 * r.mean()
    assert_allclose(clf.coefs_[0][:, 0], w, rtol=1e-12)
    assert_allclose(clf.intercepts_[0][0], b, rtol=1e-12)
    assert init["coefs_init"][0][0, 0] == 0.5  # the input is not modified

    mlp = clf.set_params(hidden_layer_sizes=(3,), max_iter=1, record_steps=1)
    W1, W2 = np.full((4, 3), 0.1), np.full((3, 1), -0.2)
    mlp.fit(X, y, coefs_init=[W1, W2], intercepts_init=[np.zeros(3), np.ones(1)])
    first = mlp.recorded_steps_[0]
    assert_array_equal(first["coefs"][0], W1)
    assert_array_equal(first["intercepts"][1], np.ones(1))
    bad = [
        ({"coefs_init": [W1, W2]}, "must be given together"),
        ({"coefs_init": [W1], "intercepts_init": [np.zeros(3)]}, "need 2 layers"),
        (
            {"coefs_init": [W1.T, W2], "intercepts_init": [np.zeros(3), np.ones(1)]},
            r"Layer 0 of the initialisation needs weights of shape \(4, 3\)",
        ),
        (
            {"coefs_init": [W1, W2 * np.nan], "intercepts_init": [np.zeros(3), [0]]},
            "Layer 1 of the initialisation is not finite",
        ),
    ]
    for kwargs, match in bad:
        with pytest.raises(ValueError, match=match):
            mlp.fit(X, y, **kwargs)
        assert not hasattr(mlp, "coefs_")


@pytest.mark.parametrize("clipping", ["gelu", "hard"])
@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_epsilon_matches_dp_accounting(clipping, accountant):
    X, y = _data(n=200)
    clf = DPSGDClassifier(
        noise_multiplier=1.3,
        clipping=clipping,
        batch_size=20,
        max_iter=2,
        accountant=accountant,
        fil_accounting=False,
        random_state=0,
    ).fit(X, y)
    q, steps = 20 / 200, clf.t_
    assert steps == 20
    sensitivity = 1.0 if clipping == "hard" else gelu_clip_max_norm(1.0)
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            q, dp_accounting.GaussianDpEvent(1.3 / sensitivity)
        ),
        steps,
    )
    acc = (
        dp_accounting.rdp.RdpAccountant()
        if accountant == "rdp"
        else dp_accounting.pld.PLDAccountant()
    )
    expected = acc.compose(event).get_epsilon(1 / 200)
    assert clf.epsilon_ == pytest.approx(expected, rel=1e-9)
    assert clf.delta_ == 1 / 200
    per_instance = clf.privacy_report_["epsilon"]
    if accountant == "rdp":
        assert (per_instance <= clf.epsilon_ * (1 + 1e-12)).all()


def test_per_instance_epsilon_is_below_the_global_one_and_varies():
    X, y = _data(n=300)
    clf = DPSGDClassifier(
        noise_multiplier=1.0, batch_size=30, max_iter=3, random_state=0
    ).fit(X, y)
    eps = clf.privacy_report_["epsilon"].to_numpy()
    assert (eps <= clf.epsilon_ * (1 + 1e-12)).all()
    assert eps.min() < 0.9 * clf.epsilon_  # small gradients cost less privacy
    norms = clf.privacy_report_["grad_norm"].to_numpy()
    assert ((norms >= 0) & (norms <= gelu_clip_max_norm(1.0) + 1e-12)).all()


def _clipped_gradient(net, x, y, C, clipping):
    acts, logits = net.forward(x[None])
    deltas = net.backward(acts, logits, y[None])
    g = np.concatenate(
        [
            np.concatenate([np.outer(a[0], d[0]).ravel(), d[0]])
            for a, d in zip(acts, deltas, strict=True)
        ]
    )
    return clip_factor(np.linalg.norm(g)[None], C, clipping)[0][0] * g


def _trace_by_finite_differences(net, X, Y, C, clipping):
    h = 1e-6
    out = np.zeros(X.shape)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            e = np.zeros(X.shape[1])
            e[j] = h
            col = (
                _clipped_gradient(net, X[i] + e, Y[i], C, clipping)
                - _clipped_gradient(net, X[i] - e, Y[i], C, clipping)
            ) / (2 * h)
            out[i, j] = col @ col
    return out


@pytest.mark.parametrize("hidden", [(), (3,)])
def test_fil_sums_the_per_step_fisher_information(hidden):
    # Shuffled batches visit every example once per epoch, and a vanishing
    # learning rate keeps the weights at their initial values: the FIL is then
    # epochs * ||J_i||_F^2 / (sigma C)^2, with J_i from finite differences.
    X, y = _data(n=24, d=3)
    sigma, C, epochs = 2.0, 0.5, 3
    clf = DPSGDClassifier(
        hidden_layer_sizes=hidden,
        noise_multiplier=sigma,
        max_grad_norm=C,
        batch_size=8,
        sampling="shuffle",
        learning_rate=1e-300,
        max_iter=epochs,
        random_state=0,
    ).fit(X, y)
    net = Network(clf.coefs_, clf.intercepts_, "tanh")  # = the initial weights
    Y = y[:, None].astype(float)
    per_coord = _trace_by_finite_differences(net, X, Y, C, "gelu")
    expected = epochs * per_coord / (sigma * C) ** 2
    report = clf.privacy_report_
    assert_allclose(report["fil"] ** 2, expected.sum(axis=1), rtol=1e-6)
    assert_allclose(report["dfil"] ** 2, expected.sum(axis=1) / 3, rtol=1e-6)
    assert_allclose(report["mse_bound"], 3 / expected.sum(axis=1), rtol=1e-6)
    for j in range(3):
        assert_allclose(report[f"fil[x{j}]"] ** 2, expected[:, j], rtol=1e-6)


def test_sampled_coordinates_estimate_the_trace_without_bias():
    X, y = _data(n=10, d=6)
    params = dict(
        noise_multiplier=1.0,
        batch_size=10,
        sampling="shuffle",
        learning_rate=1e-300,
        max_iter=400,
        random_state=0,
    )
    full = DPSGDClassifier(**params).fit(X, y)
    sampled = DPSGDClassifier(**params, fil_coordinates=2).fit(X, y)
    ratio = sampled.privacy_report_["fil"] ** 2 / full.privacy_report_["fil"] ** 2
    # 400 draws of 2 of 6 coordinates: relative sampling error of a few percent
    assert_allclose(ratio, 1.0, atol=0.15)
    assert "fil[x0]" not in sampled.privacy_report_


def test_per_step_fisher_information_against_monte_carlo_scores():
    # The released step is o = g~(x) + N(0, (sigma C)^2 I) (one example in the
    # batch). The score of o about x, d log p(o | x) / dx, computed by finite
    # differences of the Gaussian log-density, has covariance J^T J / (sigma C)^2.
    rng = np.random.default_rng(0)
    net = Network([rng.standard_normal((3, 1))], [np.array([0.2])], "tanh")
    x, y = np.array([0.4, -0.3, 0.8]), np.array([1.0])
    sigma, C = 0.7, 0.6
    mean = _clipped_gradient(net, x, y, C, "gelu")
    h = 1e-6
    columns = []
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        columns.append(
            (
                _clipped_gradient(net, x + e, y, C, "gelu")
                - _clipped_gradient(net, x - e, y, C, "gelu")
            )
            / (2 * h)
        )
    J = np.column_stack(columns)
    noise = rng.normal(0.0, sigma * C, size=(20000, mean.size))
    scores = noise @ J / (sigma * C) ** 2  # d/dx of -||o - mean(x)||^2 / (2 s^2)
    fim_mc = scores.T @ scores / len(scores)
    acts, logits = net.forward(x[None])
    deltas = net.backward(acts, logits, y[None])
    norms = net.grad_norms(acts, deltas)
    c, dc = clip_factor(norms, C, "gelu")
    diag = net.jacobian_sq_norms(acts, logits, deltas, norms, c, dc, np.arange(3))[0]
    se = np.sqrt(2.0 / len(scores)) * np.diag(fim_mc)
    assert np.all(np.abs(np.diag(fim_mc) - diag / (sigma * C) ** 2) < 4 * se)


def test_multiclass_mlp_learns_and_predicts():
    X, y = _data(n=300, d=4, classes=3)
    clf = DPSGDClassifier(
        hidden_layer_sizes=(8,),
        noise_multiplier=0.5,
        batch_size=30,
        learning_rate=0.5,
        max_iter=15,
        random_state=0,
    ).fit(X * 5, y)
    proba = clf.predict_proba(X * 5)
    assert proba.shape == (300, 3)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(X * 5, y) > 0.6
    assert set(clf.predict(X * 5)) <= set(clf.classes_)


def test_release_keeps_the_guarantee_and_drops_the_report():
    X, y = _data()
    clf = DPSGDClassifier(batch_size=20, max_iter=1, random_state=0).fit(X, y)
    released = clf.release()
    assert not hasattr(released, "privacy_report_")
    assert released.epsilon_ == clf.epsilon_
    assert released.random_state is None
    assert_allclose(released.predict_proba(X), clf.predict_proba(X))


def test_bad_input_and_failed_fit_leaves_nothing():
    X, y = _data()
    with pytest.raises(InvalidParameterError):
        DPSGDClassifier(noise_multiplier=-1.0).fit(X, y)
    with pytest.raises(InvalidParameterError):
        DPSGDClassifier(max_grad_norm=0.0).fit(X, y)
    with pytest.raises(InvalidParameterError):
        DPSGDClassifier(batch_size=0).fit(X, y)
    with pytest.raises(ValueError, match="exceeds the number of examples"):
        DPSGDClassifier(batch_size=1000).fit(X, y)
    with pytest.raises(ValueError, match="smooth network"):
        DPSGDClassifier(hidden_layer_sizes=(4,), activation="relu", batch_size=20).fit(
            X, y
        )
    DPSGDClassifier(
        hidden_layer_sizes=(4,),
        activation="relu",
        fil_accounting=False,
        batch_size=20,
        max_iter=1,
    ).fit(X, y)
    clf = DPSGDClassifier(batch_size=20, max_iter=1, random_state=0).fit(X, y)
    X_bad = X.copy()
    X_bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(X_bad, y)
    assert not [a for a in vars(clf) if a.endswith("_")]
    with pytest.raises(ValueError, match="2 classes"):
        DPSGDClassifier(batch_size=20).fit(X, np.zeros(len(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a private fit warns about nothing
        fitted = DPSGDClassifier(batch_size=20, max_iter=1, random_state=0).fit(X, y)
        assert fitted.epsilon_ > 0


def test_per_instance_accounting_off_reports_the_global_epsilon():
    X, y = _data(n=200)
    params = dict(noise_multiplier=1.0, batch_size=20, max_iter=2, random_state=0)
    on = DPSGDClassifier(**params).fit(X, y)
    off = DPSGDClassifier(**params, per_instance_accounting=False).fit(X, y)
    assert (off.privacy_report_["epsilon"] == off.epsilon_).all()
    assert off.epsilon_ == on.epsilon_
    assert_allclose(off.coefs_[0], on.coefs_[0])  # accounting never changes training
    assert_allclose(off.privacy_report_["fil"], on.privacy_report_["fil"])


def test_poisson_batches_include_each_example_independently_with_rate_q():
    from scipy.stats import binomtest

    from sklearn_fil.neural._dpsgd import _poisson_batch

    rng = np.random.RandomState(0)
    n, q, draws = 50, 0.1, 4000
    counts = np.zeros(n)
    sizes = []
    pairs = 0
    for _ in range(draws):
        idx = _poisson_batch(rng, n, q)
        assert np.all(np.diff(idx) > 0) and (idx.size == 0 or idx[-1] < n)
        counts[idx] += 1
        sizes.append(idx.size)
        pairs += int(np.isin(0, idx) and np.isin(1, idx))
    # every example at rate q, sizes Binomial(n, q), neighbours independent
    for k in (0, 25, 49):
        assert binomtest(int(counts[k]), draws, q).pvalue > 1e-3
    assert abs(np.mean(sizes) - n * q) < 4 * np.sqrt(n * q * (1 - q) / draws)
    assert abs(np.var(sizes) - n * q * (1 - q)) < 0.1 * n * q * (1 - q)
    assert binomtest(pairs, draws, q * q).pvalue > 1e-3
    assert _poisson_batch(rng, 7, 1.0).tolist() == list(range(7))


@pytest.mark.parametrize("hidden", [(), (3,)])
def test_private_label_adds_the_label_fisher_information(hidden):
    # As above, with the label a private coordinate: its column is
    # epochs * ||J_y||^2 / (sigma C)^2, with J_y from finite differences in y.
    X, y = _data(n=24, d=3)
    sigma, C, epochs = 2.0, 0.5, 2
    params = dict(
        hidden_layer_sizes=hidden,
        noise_multiplier=sigma,
        max_grad_norm=C,
        batch_size=8,
        sampling="shuffle",
        learning_rate=1e-300,
        max_iter=epochs,
        random_state=0,
    )
    clf = DPSGDClassifier(**params, private_label=True).fit(X, pd.Series(y, name="t"))
    features = DPSGDClassifier(**params).fit(X, y).privacy_report_
    net = Network(clf.coefs_, clf.intercepts_, "tanh")
    h = 1e-6
    label = np.empty(len(X))
    for i in range(len(X)):
        up = _clipped_gradient(net, X[i], np.array([y[i] + h]), C, "gelu")
        down = _clipped_gradient(net, X[i], np.array([y[i] - h]), C, "gelu")
        label[i] = ((up - down) / (2 * h)) @ ((up - down) / (2 * h))
    expected = epochs * label / (sigma * C) ** 2
    report = clf.privacy_report_
    assert_allclose(report["fil[t]"] ** 2, expected, rtol=1e-6)
    total = features["fil"] ** 2 + expected
    assert_allclose(report["fil"] ** 2, total, rtol=1e-6)
    assert_allclose(report["dfil"] ** 2, total / 4, rtol=1e-6)  # k = 3 + 1


@pytest.mark.parametrize("clipping", ["hard", "gelu"])
def test_label_fisher_information_of_clipped_rows_is_finite_and_exact(clipping):
    # Badly scaled rows: most gradients clipped, GELU deep in saturation. The
    # label column used to come out NaN there (a negative square before sqrt).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4)) * np.array([1e-2, 1.0, 1e2, 1e3])
    y = (X[:, 1] + rng.standard_normal(60) > 0).astype(int)
    sigma, C = 1.5, 0.5
    clf = DPSGDClassifier(
        noise_multiplier=sigma,
        max_grad_norm=C,
        clipping=clipping,
        batch_size=20,
        sampling="shuffle",
        learning_rate=1e-300,  # the weights stay where they start
        max_iter=1,
        private_label=True,
        random_state=0,
    ).fit(X, pd.Series(y, name="t"))
    report = clf.privacy_report_
    assert not report.isna().any().any()
    net = Network(clf.coefs_, clf.intercepts_, "tanh")
    h = 1e-8
    label = np.empty(len(X))
    for i in range(len(X)):
        up = _clipped_gradient(net, X[i], np.array([y[i] + h]), C, clipping)
        down = _clipped_gradient(net, X[i], np.array([y[i] - h]), C, clipping)
        label[i] = ((up - down) / (2 * h)) @ ((up - down) / (2 * h))
    assert np.sum(np.linalg.norm(X, axis=1) > 10 * C) >= 40  # mostly clipped
    assert_allclose(
        report["fil[t]"] ** 2, label / (sigma * C) ** 2, rtol=1e-5, atol=1e-12
    )


def test_recorded_steps_hold_the_released_update_and_change_nothing():
    X, y = _data(n=90, d=4)
    params = dict(
        hidden_layer_sizes=(5,),
        noise_multiplier=0.8,
        max_grad_norm=0.3,
        clipping="hard",
        batch_size=15,
        max_iter=2,
        momentum=0.5,
        random_state=0,
    )
    plain = DPSGDClassifier(**params).fit(X, y)
    rec = DPSGDClassifier(**params, record_steps=[2, 5]).fit(X, y)
    for a, b in zip(plain.coefs_, rec.coefs_, strict=True):
        assert_array_equal(a, b)  # recording never changes training
    assert [r["step"] for r in rec.recorded_steps_] == [2, 5]
    # Without noise the released gradient is the clipped sum over the divisor,
    # recomputed here from the recorded weights and batch alone.
    quiet = DPSGDClassifier(**{**params, "noise_multiplier": 0.0}, record_steps=3)
    with pytest.warns(PrivacyLeakWarning):
        assert quiet.fit(X, y).epsilon_ is None
    for r in quiet.recorded_steps_:
        net = Network(r["coefs"], r["intercepts"], "tanh")
        Y = y[r["indices"]][:, None].astype(float)
        total = sum(
            _clipped_gradient(net, X[i], Y[k], 0.3, "hard")
            for k, i in enumerate(r["indices"])
        )
        flat = np.concatenate(
            [
                np.concatenate([gW.ravel(), gb])
                for gW, gb in zip(r["grad_coefs"], r["grad_intercepts"], strict=True)
            ]
        )
        assert_allclose(flat, total / r["divisor"], rtol=1e-10, atol=1e-14)
    assert not hasattr(rec.release(), "recorded_steps_")
    with pytest.raises(ValueError, match="record_steps"):
        DPSGDClassifier(record_steps=[0, 1], batch_size=15).fit(X, y)
