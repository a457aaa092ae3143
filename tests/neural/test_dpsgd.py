# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPSGDClassifier: training, accounting and the privacy report."""

import dataclasses
import itertools
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
from sklearn_fil.exceptions import PrivacyLeakWarning, UtilityWarning
from sklearn_fil.neural import DPSGDClassifier, RecordedStep
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
    assert_array_equal(first.coefs[0], W1)
    assert_array_equal(first.intercepts[1], np.ones(1))
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
@pytest.mark.parametrize(
    "relation, accountant",
    [("replace_one", "pld"), ("add_remove", "rdp"), ("add_remove", "pld")],
)
def test_epsilon_matches_dp_accounting(clipping, relation, accountant):
    # Poisson sampling: dp-accounting's own accountant of the relation, with
    # the noise multiplier over the per-example bound s (the GELU constant
    # included); replace-one's distance 2 s is dp-accounting's REPLACE_ONE.
    X, y = _data(n=200)
    public = {} if relation == "replace_one" else {"public_n_samples": 200}
    clf = DPSGDClassifier(
        noise_multiplier=1.3,
        clipping=clipping,
        batch_size=20,
        max_iter=2,
        neighboring_relation=relation,
        accountant=accountant,
        fil_accounting=False,
        random_state=0,
        **public,
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
    rel = (
        dp_accounting.NeighboringRelation.REPLACE_ONE
        if relation == "replace_one"
        else dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    )
    acc = (
        dp_accounting.rdp.RdpAccountant(neighboring_relation=rel)
        if accountant == "rdp"
        else dp_accounting.pld.PLDAccountant(neighboring_relation=rel)
    )
    expected = acc.compose(event).get_epsilon(1e-5)
    assert clf.epsilon_ == pytest.approx(expected, rel=1e-9)
    assert clf.delta_ == 1e-5  # min(1e-5, 1 / (10 n))
    g = clf.guarantee_
    assert g.neighboring_relation == relation
    factor = 2.0 if relation == "replace_one" else 1.0
    assert g.sensitivity == pytest.approx(factor * sensitivity * 1.0)
    assert g.noise_std == pytest.approx(1.3)
    assert g.public == (
        ("n_samples", "classes")  # the label set read from y
        if relation == "replace_one"
        else ("public_n_samples", "sample_rate", "steps", "classes")
    )
    # The per-instance column (add/remove) is capped by the add/remove RDP
    # epsilon of the same run, and so is below epsilon_ of either relation.
    cap = dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(1e-5)
    per_instance = clf.privacy_report_["epsilon"]
    assert (per_instance <= cap * (1 + 1e-12)).all()
    if accountant == "rdp" or relation == "replace_one":
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
        private_label=False,
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
    # the parameters of the fit, not those set afterwards
    clf.set_params(noise_multiplier=100.0, max_iter=50)
    released = clf.release()
    assert (released.noise_multiplier, released.max_iter) == (1.0, 1)


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

    from sklearn_fil.neural._training import poisson_batch

    rng = np.random.RandomState(0)
    n, q, draws = 50, 0.1, 4000
    counts = np.zeros(n)
    sizes = []
    pairs = 0
    for _ in range(draws):
        idx = poisson_batch(rng, n, q)
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
    assert poisson_batch(rng, 7, 1.0).tolist() == list(range(7))


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
    clf = DPSGDClassifier(**params).fit(X, pd.Series(y, name="t"))  # the default
    features = DPSGDClassifier(**params, private_label=False).fit(X, y).privacy_report_
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
    assert [r.step for r in rec.recorded_steps_] == [2, 5]
    # Without noise the released gradient is the clipped sum over the divisor,
    # recomputed here from the recorded weights and batch alone.
    quiet = DPSGDClassifier(**{**params, "noise_multiplier": 0.0}, record_steps=3)
    with pytest.warns(PrivacyLeakWarning):
        assert quiet.fit(X, y).epsilon_ is None
    for r in quiet.recorded_steps_:
        net = Network(r.coefs, r.intercepts, "tanh")
        Y = y[r.indices][:, None].astype(float)
        total = sum(
            _clipped_gradient(net, X[i], Y[k], 0.3, "hard")
            for k, i in enumerate(r.indices)
        )
        flat = np.concatenate(
            [
                np.concatenate([gW.ravel(), gb])
                for gW, gb in zip(r.grad_coefs, r.grad_intercepts, strict=True)
            ]
        )
        assert_allclose(flat, total / r.divisor, rtol=1e-10, atol=1e-14)
    assert not hasattr(rec.release(), "recorded_steps_")
    with pytest.raises(ValueError, match="record_steps"):
        DPSGDClassifier(record_steps=[0, 1], batch_size=15).fit(X, y)


def test_recorded_logistic_gradient_is_the_mean_batch_gradient():
    # Written out by hand, without the Network: C far above every gradient
    # norm (no clipping) and no noise, so the released gradient is the
    # mean log-loss gradient of the batch; then weight decay and momentum.
    X, y = _data(n=90, d=4)
    lr, alpha, momentum = 0.4, 0.1, 0.5
    clf = DPSGDClassifier(
        noise_multiplier=0.0,
        max_grad_norm=1e2,
        clipping="hard",
        batch_size=15,
        sampling="shuffle",
        accountant="rdp",
        learning_rate=lr,
        alpha=alpha,
        momentum=momentum,
        max_iter=1,
        record_steps=[1, 2, 3],
        random_state=0,
    ).fit(X, y)
    steps = clf.recorded_steps_
    assert all(isinstance(r, RecordedStep) for r in steps)
    velocity = np.zeros(5)
    for r, following in itertools.pairwise(steps):
        w, b = r.coefs[0][:, 0], r.intercepts[0][0]
        Xb, yb = X[r.indices], y[r.indices]
        assert r.indices.size == 15  # the mean over the batch
        residual = expit(Xb @ w + b) - yb
        mean = np.append(Xb.T @ residual, residual.sum()) / Xb.shape[0]
        released = np.append(r.grad_coefs[0][:, 0], r.grad_intercepts[0])
        assert_allclose(released, mean, rtol=1e-6, atol=1e-9)
        velocity = momentum * velocity + released + alpha * np.append(w, 0.0)
        moved = np.append(following.coefs[0][:, 0], following.intercepts[0])
        assert_allclose(moved, np.append(w, b) - lr * velocity, rtol=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        steps[0].step = 7


def _repro_data():
    # 20 rows, every gradient longer than C = 0.5 at the zero start (|delta|
    # = 0.5 and ||(x, 1)|| > 1), so relabelling row 0 flips its clipped
    # gradient: the sum moves by 2 C, twice the add/remove sensitivity.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = (X[:, 0] > 0).astype(int)
    y_flip = y.copy()
    y_flip[0] = 1 - y_flip[0]
    return X, y, y_flip


def _full_batch_release(X, y, seed, **params):
    settings = {
        "batch_size": 20,
        "sampling": "shuffle",
        "max_iter": 1,
        "noise_multiplier": 1.0,
        "max_grad_norm": 0.5,
        "clipping": "hard",
        "delta": 0.05,
        "learning_rate": 1.0,
        "fil_accounting": False,
        "record_steps": 1,
        "random_state": seed,
    }
    clf = DPSGDClassifier(**{**settings, **params})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # delta >= 1/n
        clf.fit(X, y)
    step = clf.recorded_steps_[0]
    released = np.concatenate([step.grad_coefs[0].ravel(), step.grad_intercepts[0]])
    return clf, released


def test_shuffle_replace_one_epsilon_covers_the_measured_shift():
    # Issue 15, reproduction 1: one full-batch step, one row relabelled.
    from sklearn_fil.accounting import gaussian_epsilon

    X, y, y_flip = _repro_data()
    reps = 400
    a = np.array([_full_batch_release(X, y, s)[1] for s in range(reps)])
    b = np.array([_full_batch_release(X, y_flip, reps + s)[1] for s in range(reps)])
    clf, _ = _full_batch_release(X, y, 0)
    assert clf.recorded_steps_[0].divisor == 20.0  # batch_size, a constant
    unit = 1.0 * 0.5 / 20  # sigma C / batch_size: one noise std of a release
    diff = (a.mean(axis=0) - b.mean(axis=0)) / unit
    shift = np.linalg.norm(diff)
    se = np.sqrt(2.0 / reps)  # std of each coordinate of diff
    g = clf.guarantee_
    assert g.neighboring_relation == "replace_one"
    assert g.sensitivity == pytest.approx(2 * 0.5)
    assert g.noise_std == pytest.approx(0.5)
    # the measured shift is the replace-one sensitivity, 2 C
    assert shift == pytest.approx(2.0, abs=5 * se)
    assert shift <= g.sensitivity / g.noise_std + 5 * se
    # the claimed epsilon covers the exact Gaussian epsilon at that shift
    measured = gaussian_epsilon(sigma=1.0, sensitivity=shift - 5 * se, delta=0.05)
    assert clf.epsilon_ >= measured
    exact = gaussian_epsilon(sigma=1.0, sensitivity=2.0, delta=0.05)
    assert clf.epsilon_ == pytest.approx(exact, rel=1e-6)
    rdp, _ = _full_batch_release(X, y, 0, accountant="rdp")
    assert rdp.epsilon_ >= exact  # RDP, looser, is still a bound


def test_shuffle_with_gelu_clipping_uses_twice_the_gelu_bound():
    from sklearn_fil.accounting import gaussian_epsilon

    X, y, _ = _repro_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        clf = DPSGDClassifier(
            batch_size=10,
            sampling="shuffle",
            max_iter=3,
            delta=1e-3,
            fil_accounting=False,
            random_state=0,
        ).fit(X, y)
    s = gelu_clip_max_norm(1.0)
    # three epochs: one Gaussian mechanism each, at distance 2 s
    expected = gaussian_epsilon(sigma=1.0 / np.sqrt(3), sensitivity=2 * s, delta=1e-3)
    assert clf.epsilon_ == pytest.approx(expected, rel=1e-9)
    assert clf.guarantee_.sensitivity == pytest.approx(2 * s)


def test_poisson_replace_one_epsilon_is_dp_accounting_replace_one():
    # Issue 15, reproduction 2, at the estimator's parameters.
    from sklearn_fil.accounting import dpsgd_epsilon

    rel = dp_accounting.NeighboringRelation.REPLACE_ONE
    for clipping, s in [("hard", 1.0), ("gelu", gelu_clip_max_norm(1.0))]:
        acc = dp_accounting.pld.PLDAccountant(neighboring_relation=rel)
        acc.compose(
            dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(
                    0.01, dp_accounting.GaussianDpEvent(1.0 / s)
                ),
                1000,
            )
        )
        got = dpsgd_epsilon(
            noise_multiplier=1.0,
            sample_rate=0.01,
            steps=1000,
            delta=1e-5,
            sensitivity=s,
            accountant="pld",
            neighboring_relation="replace_one",
        )
        assert got == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
        if clipping == "hard":
            assert got == pytest.approx(2.84, abs=0.01)


def test_add_remove_needs_public_n_and_then_ignores_the_realised_n():
    X, y = _data(n=26)
    fits = []
    for n in (25, 26):
        clf = DPSGDClassifier(
            batch_size=5,
            max_iter=2,
            neighboring_relation="add_remove",
            public_n_samples=30,
            record_steps=[1],
            fil_accounting=False,
            random_state=0,
        ).fit(X[:n], y[:n])
        fits.append(clf)
    released = [clf.release() for clf in fits]
    assert released[0].t_ == released[1].t_ == 12  # round(30 / 5) * 2
    assert fits[0].epsilon_ == fits[1].epsilon_
    assert fits[0].guarantee_.mechanism == fits[1].guarantee_.mechanism
    assert "q=0.166667" in fits[0].guarantee_.mechanism  # 5 / 30
    assert fits[0].recorded_steps_[0].divisor == 5.0
    g = released[0].guarantee_
    assert g.neighboring_relation == "add_remove"
    assert g.public == ("public_n_samples", "sample_rate", "steps", "classes")


def test_bad_relation_settings_fail_before_any_work():
    X, y = _data()
    clf = DPSGDClassifier(batch_size=20, max_iter=1, random_state=0).fit(X, y)
    bad = [
        ({"neighboring_relation": "add_remove"}, "needs public_n_samples"),
        (
            {
                "neighboring_relation": "add_remove",
                "public_n_samples": 120,
                "sampling": "shuffle",
            },
            "partition",
        ),
        ({"accountant": "rdp"}, "cannot account Poisson sampling"),
        ({"public_n_samples": 120}, "only used with"),
        (
            {"neighboring_relation": "add_remove", "public_n_samples": 10},
            "exceeds public_n_samples",
        ),
    ]
    for params, match in bad:
        clf.set_params(**params)
        with pytest.raises(ValueError, match=match):
            clf.fit(X, y)
        assert not [a for a in vars(clf) if a.endswith("_")]
        clf.set_params(
            neighboring_relation="replace_one",
            public_n_samples=None,
            sampling="poisson",
            accountant="pld",
        )
    with pytest.raises(InvalidParameterError):
        DPSGDClassifier(neighboring_relation="replace").fit(X, y)


def test_default_delta_is_below_one_over_n_and_large_delta_warns():
    X, y = _data(n=120)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = DPSGDClassifier(batch_size=20, max_iter=1, random_state=0).fit(X, y)
    assert clf.delta_ == pytest.approx(min(1e-5, 1 / 1200))
    assert clf.delta_ < 1 / 120
    with pytest.warns(PrivacyLeakWarning, match="1/n"):
        DPSGDClassifier(batch_size=20, max_iter=1, delta=1 / 120).fit(X, y)


@pytest.mark.parametrize("clipping", ["hard", "gelu"])
def test_huge_rows_are_clipped_not_dropped(clipping):
    # ||x||^2 overflows for rows of 1e200; the scaled norms do not, so the
    # row's gradient is clipped to about C instead of being scaled to 0.
    X = np.zeros((20, 3))
    X[0] = 1e200
    y = np.zeros(20, dtype=int)
    y[0] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        clf = DPSGDClassifier(
            batch_size=20,
            sampling="shuffle",
            max_iter=1,
            clipping=clipping,
            noise_multiplier=0.0,
            accountant="rdp",
            record_steps=1,
            fil_accounting=False,
            random_state=0,
            delta=1e-3,
        ).fit(X, y)
    summed = clf.recorded_steps_[0].grad_coefs[0].ravel() * 20
    # row 0's clipped gradient: -c (x_0, 1) / 2 with norm C (hard) or ~C
    # (GELU: 1 / (GELU(u - 1) + 1) u C -> C as u -> inf); the others have x = 0
    assert np.linalg.norm(summed) == pytest.approx(1.0, rel=1e-4)
    assert_allclose(summed, -np.ones(3) / np.sqrt(3), rtol=1e-4)
    assert clf.privacy_report_["grad_norm"].iloc[0] == pytest.approx(1.0, rel=1e-4)
    net = Network([np.zeros((3, 1))], [np.zeros(1)], "tanh")
    acts, logits = net.forward(X[:1])
    norm = net.grad_norms(acts, net.backward(acts, logits, np.ones((1, 1))))
    assert norm[0] == pytest.approx(0.5 * 1e200 * np.sqrt(3), rel=1e-12)


def test_non_finite_gradient_is_a_clear_error():
    X = np.full((6, 2), 1e300)
    X[::2] *= -1
    y = np.array([0, 1, 2, 0, 1, 2])
    # (the FIL accounting refuses such X before training: see
    # test_dpsgd_inputs.py, test_bad_input_is_a_clear_error_before_any_work)
    clf = DPSGDClassifier(
        batch_size=3, max_iter=1, fil_accounting=False, random_state=0
    )
    coefs = [np.array([[1e10, -1e10, 0.0], [1e10, -1e10, 0.0]])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match="gradient is not finite"):
            clf.fit(X, y, coefs_init=coefs, intercepts_init=[np.zeros(3)])
    assert not [a for a in vars(clf) if a.endswith("_")]


def _onehot_data(n=24, classes=2, levels=3, seed=0):
    """Two continuous features, then a one-hot block of ``levels`` columns."""
    X, y = _data(n=n, d=2, classes=classes, seed=seed)
    level = np.random.default_rng(seed).integers(0, levels, n)
    return np.hstack([X, np.eye(levels)[level]]), y


def _jacobian_by_finite_differences(net, x, y, C, clipping):
    h = 1e-6
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = h
        cols.append(
            (
                _clipped_gradient(net, x + e, y, C, clipping)
                - _clipped_gradient(net, x - e, y, C, clipping)
            )
            / (2 * h)
        )
    return np.column_stack(cols)


@pytest.mark.parametrize(
    "hidden, classes, clipping",
    [((), 2, "gelu"), ((), 3, "hard"), ((3,), 2, "gelu"), ((3,), 3, "gelu")],
)
def test_onehot_group_fil_is_the_trace_on_the_constraint_tangent_space(
    hidden, classes, clipping
):
    # With a vanishing learning rate (shuffled batches, every example once per
    # epoch) the group's squared FIL is epochs * ||J_G P||_F^2 / (sigma C)^2,
    # P an orthonormal basis of {v : sum_G v = 0}, J from finite differences.
    X, y = _onehot_data(classes=classes)
    sigma, C, epochs = 2.0, 0.5, 2
    params = dict(
        hidden_layer_sizes=hidden,
        noise_multiplier=sigma,
        max_grad_norm=C,
        clipping=clipping,
        batch_size=8,
        sampling="shuffle",
        learning_rate=1e-300,
        max_iter=epochs,
        private_label=False,
        random_state=0,
    )
    clf = DPSGDClassifier(**params, onehot_groups={"colour": [2, 3, 4]}).fit(X, y)
    plain = DPSGDClassifier(**params).fit(X, y)
    net = Network(clf.coefs_, clf.intercepts_, "tanh")
    Y = np.eye(classes)[y] if classes > 2 else y[:, None].astype(float)
    # an orthonormal basis of the tangent space of the 3 group columns
    P = np.linalg.svd(np.eye(3) - 1.0 / 3)[0][:, :2]
    group = np.empty(len(X))
    for i in range(len(X)):
        J = _jacobian_by_finite_differences(net, X[i], Y[i], C, clipping)
        group[i] = np.sum((J[:, 2:] @ P) ** 2)
    expected = epochs * group / (sigma * C) ** 2
    report = clf.privacy_report_
    names = ["fil[x0]", "fil[x1]", "fil[colour]"]
    assert [c for c in report.columns if c.startswith("fil[")] == names
    assert_allclose(report["fil[colour]"] ** 2, expected, rtol=1e-5, atol=1e-12)
    # the plain features are unchanged; fil sums them and the group
    for name in names[:2]:
        assert_array_equal(report[name], plain.privacy_report_[name])
    total = report["fil[x0]"] ** 2 + report["fil[x1]"] ** 2 + expected
    assert_allclose(report["fil"] ** 2, total, rtol=1e-5)
    assert_allclose(report["dfil"] ** 2, total / 4, rtol=1e-5)  # k = 2 + (3 - 1)
    assert np.all(report["fil"] <= plain.privacy_report_["fil"] * (1 + 1e-12))
    # over all examples: the sqrt of the sum of each column's squares
    hand = np.sqrt((report[names] ** 2).sum())
    assert list(clf.attribute_fil_.index) == ["x0", "x1", "colour"]
    assert_allclose(clf.attribute_fil_.to_numpy(), hand.to_numpy(), rtol=1e-12)
    assert_allclose(clf.dataset_fil_, np.sqrt(np.sum(report["fil"] ** 2)), rtol=1e-12)
    assert clf.dataset_fil_ >= clf.attribute_fil_.max()


def test_onehot_groups_by_name_with_a_private_label():
    X, y = _onehot_data(n=40, classes=3)
    frame = pd.DataFrame(X, columns=["age", "income", "red", "green", "blue"])
    clf = DPSGDClassifier(
        batch_size=10,
        max_iter=2,
        private_label=True,
        onehot_groups={"colour": ["red", 3, "blue"]},
        random_state=0,
    ).fit(frame, pd.Series(y, name="t"))
    report = clf.privacy_report_
    attrs = ["age", "income", "colour", "t"]
    assert [c for c in report.columns if c.startswith("fil[")] == [
        f"fil[{a}]" for a in attrs
    ]
    assert list(clf.attribute_fil_.index) == attrs
    assert_allclose(
        clf.attribute_fil_.to_numpy(),
        np.sqrt((report[[f"fil[{a}]" for a in attrs]] ** 2).sum()).to_numpy(),
        rtol=1e-12,
    )
    # the label's two constrained dimensions and the group's two
    assert_allclose(report["dfil"] ** 2, report["fil"] ** 2 / 6, rtol=1e-12)
    assert clf.dataset_fil_ >= clf.attribute_fil_.max()
    assert "attribute_fil_" not in vars(clf.release())


def test_onehot_groups_with_sampled_coordinates_keep_an_unbiased_trace():
    X, y = _onehot_data(n=10)
    params = dict(
        noise_multiplier=1.0,
        batch_size=10,
        sampling="shuffle",
        learning_rate=1e-300,
        max_iter=400,
        onehot_groups={"g": [2, 3, 4]},
        private_label=False,
        random_state=0,
    )
    full = DPSGDClassifier(**params).fit(X, y)
    sampled = DPSGDClassifier(**params, fil_coordinates=2).fit(X, y)
    ratio = sampled.privacy_report_["fil"] ** 2 / full.privacy_report_["fil"] ** 2
    assert_allclose(ratio, 1.0, atol=0.2)
    assert "fil[g]" not in sampled.privacy_report_
    assert sampled.attribute_fil_.empty
    assert np.isfinite(sampled.dataset_fil_)


@pytest.mark.parametrize(
    "groups, match",
    [
        ({"g": [2, 3]}, "not a one-hot encoding"),  # a level is missing
        ({"g": [0, 1]}, "not a one-hot encoding"),
        ({"g": [2, 3, 4], "h": [4, 0]}, "overlaps"),
        ({"g": ["red", 3]}, "not a feature"),
        ({"g": [2, 9]}, "outside"),
    ],
)
def test_bad_onehot_groups_fail_before_any_work(groups, match, monkeypatch):
    X, y = _onehot_data()

    def no_training(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(DPSGDClassifier, "_train", no_training)
    with pytest.raises(ValueError, match=match):
        DPSGDClassifier(batch_size=8, onehot_groups=groups).fit(X, y)


@pytest.mark.parametrize("hidden", [(), (3,)])
def test_direction_sq_norms_along_unit_vectors_are_the_column_norms(hidden):
    # the generic direction code against the numba kernel (logistic) and the
    # per-coordinate forward-over-reverse code (MLP), and a group direction
    # against the finite-difference Jacobian applied to 1_G
    X, y = _onehot_data(n=12, classes=3)
    clf = DPSGDClassifier(
        hidden_layer_sizes=hidden, batch_size=6, max_iter=2, random_state=0
    ).fit(X, y)
    net = Network(clf.coefs_, clf.intercepts_, "tanh")
    Y = np.eye(3)[y]
    acts, logits = net.forward(X)
    deltas = net.backward(acts, logits, Y)
    norms = net.grad_norms(acts, deltas)
    c, dc = clip_factor(norms, 0.5, "gelu")
    args = (acts, logits, deltas, norms, c, dc)
    cols = net.jacobian_sq_norms(*args, np.arange(5))
    assert_allclose(net.direction_sq_norms(*args, np.eye(5)), cols, rtol=1e-12)
    ones = np.zeros((1, 5))
    ones[0, 2:] = 1.0
    got = net.direction_sq_norms(*args, ones)[:, 0]
    for i in range(len(X)):
        J = _jacobian_by_finite_differences(net, X[i], Y[i], 0.5, "gelu")
        assert_allclose(got[i], np.sum((J @ ones[0]) ** 2), rtol=1e-6)


@pytest.mark.parametrize("classes", [2, 3])
def test_utility_check_and_loss_column_are_the_released_models(classes):
    # The fit's one pass over the data gives both the report's loss column
    # and the utility check's training accuracy: each against the released
    # model's predict_proba, computed afresh.
    # labels independent of X: a useless release whose predictions still vary
    X, _ = _data(n=300, classes=classes, seed=1)
    y = np.random.default_rng(0).integers(0, classes, 300)
    clf = DPSGDClassifier(
        hidden_layer_sizes=(5,),
        noise_multiplier=3.0,
        learning_rate=2.0,
        max_iter=2,
        batch_size=32,
        random_state=0,
    )
    with pytest.warns(UtilityWarning, match="training accuracy") as record:
        clf.fit(X, y)
    proba = clf.predict_proba(X)
    assert np.ptp(np.argmax(proba, axis=1)) > 0
    accuracy = np.mean(clf.classes_[np.argmax(proba, axis=1)] == y)
    message = next(str(w.message) for w in record if w.category is UtilityWarning)
    assert f"training accuracy {accuracy:.3f} " in message
    loss = -np.log(proba[np.arange(300), np.searchsorted(clf.classes_, y)])
    assert_allclose(clf.privacy_report_["loss"], loss, rtol=1e-12, atol=1e-14)
