"""Differential-privacy accounting and reconstruction bounds.

Exact (ε, δ) and Rényi accounting for the Gaussian mechanism, the sensitivity of
output-perturbed logistic regression, noise calibration for a target ε, a privacy
budget across releases, the lower bounds of Guo et al. (2022) on the
error of unbiased reconstruction attacks, and the upper bounds of Hayes et al.
(2023) on the success of any reconstruction attack (reconstruction robustness).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.accounting._bounds import mse_bound_fil, mse_bound_rdp
from sklearn_fil.accounting._budget import BudgetRefit, PrivacyBudget, within_budget
from sklearn_fil.accounting._dpsgd import (
    PerInstanceAccountant,
    dpsgd_dp_event,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
    fil_subsampling_factor,
    gelu_clip_max_norm,
)
from sklearn_fil.accounting._events import dp_event_epsilon, scale_dp_event
from sklearn_fil.accounting._gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_rdp,
    gaussian_sigma,
    output_perturbation_sensitivity,
)
from sklearn_fil.accounting._guarantee import Guarantee, check_delta, default_delta
from sklearn_fil.accounting._label_dp import label_dp_lower_bound
from sklearn_fil.accounting._lam import (
    output_perturbation_lam,
    output_perturbation_ridge_lam,
)
from sklearn_fil.accounting._per_instance_gaussian import per_instance_gaussian_epsilon
from sklearn_fil.accounting._rero import rero_bound, rero_kappa

__all__ = [
    "BudgetRefit",
    "Guarantee",
    "PerInstanceAccountant",
    "PrivacyBudget",
    "check_delta",
    "default_delta",
    "dp_event_epsilon",
    "dpsgd_dp_event",
    "dpsgd_epsilon",
    "dpsgd_noise_multiplier",
    "fil_subsampling_factor",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_rdp",
    "gaussian_sigma",
    "gelu_clip_max_norm",
    "label_dp_lower_bound",
    "mse_bound_fil",
    "mse_bound_rdp",
    "output_perturbation_lam",
    "output_perturbation_ridge_lam",
    "output_perturbation_sensitivity",
    "per_instance_gaussian_epsilon",
    "rero_bound",
    "rero_kappa",
    "scale_dp_event",
    "within_budget",
]
