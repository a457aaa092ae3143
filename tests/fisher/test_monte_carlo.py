# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""Monte-Carlo check of what the FIL means.

The release is ``w' = w*(z) + b``, ``b ~ N(0, sigma^2 I)``. Its Fisher information
about one example's data ``z_i = (x_i, y_i)`` is ``E[s s^T]`` with the score

    s = grad_z log p(w' | z) = (d w*/d z)^T (w' - w*(z)) / sigma^2,

since ``log p(w' | z) = -|w' - w*(z)|^2 / (2 sigma^2) + const``. Here ``d w*/d z`` is
obtained by central finite differences of re-fitted minimisers (no derivative
formula), ``E[s s^T]`` is estimated from 20,000 simulated releases, and the estimate
is compared with ``J_i^T J_i / sigma^2`` from the brute-force reference and with the
engine's ``eta_i^2`` (its top eigenvalue) and ``eta_bar_i^2`` (its trace / k).

With N draws the relative standard error of such second moments is about
sqrt(2 / N) = 1%; each comparison is asserted both within five estimated standard
errors and within 5%.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_fil.fisher import fisher_information_loss
from tests._reference import (
    brute_force_fil,
    finite_difference_jacobian,
    make_problem,
)

N_DRAWS = 20_000
SIGMA = 0.3

CASES = {
    "squared": {"loss": "squared", "n": 30, "d": 4, "lam": 0.05, "onehot": False},
    "logistic-onehot": {
        "loss": "logistic",
        "n": 40,
        "d": 8,
        "lam": 0.05,
        "onehot": True,
    },
}


@pytest.mark.parametrize("case", list(CASES))
def test_empirical_fisher_information_matches(case, global_random_seed):
    spec = CASES[case]
    problem = make_problem(
        spec["loss"],
        n=spec["n"],
        d=spec["d"],
        lam=spec["lam"],
        onehot=spec["onehot"],
        weights="random",
        # weights summing to n: the engine and the reference may scale the penalty
        # by n or by sum(omega); this keeps the check about the information only
        normalise_weights=True,
        seed=41,
    )
    coef, intercept = problem["coef"], problem["intercept"]
    omega = problem["sample_weight"]

    kwargs = {
        "loss": spec["loss"],
        "lam": spec["lam"],
        "sigma": SIGMA,
        "sample_weight": omega,
        "onehot_groups": problem["onehot_groups"],
    }
    args = (problem["X"], problem["y"], coef, intercept)
    ref = brute_force_fil(*args, **kwargs)
    res = fisher_information_loss(*args, **kwargs)
    N = ref["projector"]  # private tangent coordinates of z_i
    k = N.shape[1]

    rng = np.random.default_rng(global_random_seed)
    w_star = np.append(coef, intercept)
    for i in [int(np.argmax(ref["fil"])), 5]:
        # d w*/d z_i by finite differences of re-fitted minimisers
        jac = finite_difference_jacobian(problem, i)  # (p, d + 1)

        releases = w_star + SIGMA * rng.standard_normal((N_DRAWS, w_star.size))
        # score with respect to the private tangent coordinates of z_i
        scores = (releases - w_star) @ jac @ N / SIGMA**2  # (N_DRAWS, k)
        fim_hat = scores.T @ scores / N_DRAWS

        J = ref["jacobians"][i] @ N
        fim = J.T @ J / SIGMA**2
        # the whole matrix
        rel_frobenius = np.linalg.norm(fim_hat - fim) / np.linalg.norm(fim)
        assert rel_frobenius < 0.05, rel_frobenius

        # top eigenvalue: eta_i^2 from the engine, along the exact top direction
        eigval, eigvec = np.linalg.eigh(fim)
        assert_allclose(eigval[-1], res.fil[i] ** 2, rtol=1e-8)
        along = (scores @ eigvec[:, -1]) ** 2
        estimate, stderr = along.mean(), along.std(ddof=1) / np.sqrt(N_DRAWS)
        assert abs(estimate - res.fil[i] ** 2) < 5 * stderr
        assert abs(estimate - res.fil[i] ** 2) < 0.05 * res.fil[i] ** 2
        top_hat = np.linalg.eigvalsh(fim_hat)[-1]
        assert abs(top_hat - res.fil[i] ** 2) < 0.05 * res.fil[i] ** 2

        # trace / k: the diagonal FIL eta_bar_i^2
        per_draw = np.sum(scores**2, axis=1) / k
        estimate, stderr = per_draw.mean(), per_draw.std(ddof=1) / np.sqrt(N_DRAWS)
        assert abs(estimate - res.dfil[i] ** 2) < 5 * stderr
        assert abs(estimate - res.dfil[i] ** 2) < 0.05 * res.dfil[i] ** 2
