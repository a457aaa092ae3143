# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPSGDClassifier's per-instance epsilon with the sparse accountant.

Each fit is repeated with the accountant as it was before its storage became
sparse (dense step counts per level, kept verbatim in
``tests/accounting/_per_instance_reference.py``) put in its place: the
accountant draws no random numbers and changes no weights, so both fits see
the same norms, and the epsilons must agree to rounding.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification

import sklearn_fil.neural._dpsgd as dpsgd_module
from sklearn_fil.neural import DPSGDClassifier
from tests.accounting._per_instance_reference import ReferencePerInstanceAccountant

CONFIGS = {
    "poisson-gelu-logistic": dict(),
    "poisson-hard-logistic": dict(clipping="hard", max_grad_norm=0.5),
    "poisson-gelu-mlp": dict(hidden_layer_sizes=(8,), learning_rate=0.5),
    "poisson-hard-mlp-refresh": dict(
        hidden_layer_sizes=(6, 5), clipping="hard", norm_refresh=2
    ),
    "poisson-fine-precision": dict(norm_precision=0.002, max_iter=6),
    "poisson-add-remove": dict(
        neighboring_relation="add_remove", accountant="rdp", public_n_samples=400
    ),
    "shuffle": dict(sampling="shuffle"),
}


def _data(n=400, d=6, seed=0):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=4, random_state=seed
    )
    return X / np.linalg.norm(X, axis=1).max(), y


@pytest.mark.parametrize("name", list(CONFIGS))
def test_per_instance_epsilon_equals_the_dense_reference(name, monkeypatch):
    X, y = _data()
    params = dict(
        batch_size=20,
        max_iter=8,
        learning_rate=1.0,
        noise_multiplier=0.8,
        fil_accounting=False,
        random_state=0,
    )
    params.update(CONFIGS[name])
    new = DPSGDClassifier(**params).fit(X, y)
    monkeypatch.setattr(
        dpsgd_module, "PerInstanceAccountant", ReferencePerInstanceAccountant
    )
    old = DPSGDClassifier(**params).fit(X, y)
    for a, b in zip(new.coefs_, old.coefs_, strict=True):
        assert np.array_equal(a, b)  # the same run
    got = new.privacy_report_["epsilon"].to_numpy()
    expected = old.privacy_report_["epsilon"].to_numpy()
    assert_allclose(got, expected, rtol=1e-12, atol=0)
    if name == "shuffle":  # no per-instance accounting without Poisson sampling
        assert np.all(got == got[0])
    else:  # the comparison can fail: the epsilons differ between examples
        assert np.ptp(got) > 0.05 * got.max()


def test_full_pass_in_blocks_equals_one_pass(monkeypatch):
    """The norms' full passes run on row blocks: the fit is unchanged."""
    X, y = _data(n=300)
    params = dict(
        hidden_layer_sizes=(7,),
        batch_size=25,
        max_iter=4,
        norm_refresh=1,
        fil_accounting=False,
        random_state=0,
    )
    whole = DPSGDClassifier(**params).fit(X, y)
    monkeypatch.setattr(dpsgd_module, "_FULL_PASS_ROWS", 64)  # five blocks
    blocks = DPSGDClassifier(**params).fit(X, y)
    for column in ("epsilon", "grad_norm"):
        assert_allclose(
            blocks.privacy_report_[column], whole.privacy_report_[column], rtol=1e-12
        )
    for a, b in zip(blocks.coefs_, whole.coefs_, strict=True):
        assert_allclose(a, b, rtol=1e-12)
