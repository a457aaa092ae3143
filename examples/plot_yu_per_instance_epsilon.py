"""
=====================================================================
Per-instance epsilon of DP-SGD on MNIST (Yu et al. 2022, Figure 1)
=====================================================================

DP-SGD's accountant reports one epsilon, the worst case over all training
examples: it assumes that every example's clipped gradient has the largest
norm allowed, at every step. Yu et al. (2022) account each example with its
own gradient norms instead and find that most examples are far better
protected than the worst case says (their Figure 1; 3% of the MNIST examples
reach it). This example reproduces their MNIST experiment, all ten digits
and 60,000 training images, with their noise multiplier, batch size, number
of epochs and clipping rule, on the closest model we support: a small tanh
network instead of their ResNet-20. It shows the distribution of the
per-instance epsilon, overall and by class.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Data and run size
# -----------------
# The 60,000 MNIST training images (grey levels in [0, 1]) and the 10,000
# test images. ``SKLEARN_FIL_EXAMPLE_QUICK=1`` (set by the test suite) keeps
# 3,000 training images and 2 epochs, with the batch size scaled to keep the
# paper's sampling rate; its numbers are then not the paper's.
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from sklearn_fil.datasets import load_mnist
from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.plotting import PerInstanceEpsilonDisplay

QUICK = os.environ.get("SKLEARN_FIL_EXAMPLE_QUICK") == "1"
N_TRAIN = 3_000 if QUICK else None  # training images kept (None: all 60,000)
EPOCHS = 2 if QUICK else 100  # the paper's 100

mnist = load_mnist(digits=None, subset="all", scale=None)
train = mnist.split == "train"
X, y = mnist.data[train], mnist.target[train]
X_test, y_test = mnist.data[~train], mnist.target[~train]
if N_TRAIN is not None:
    keep = np.sort(np.random.default_rng(0).choice(len(X), N_TRAIN, replace=False))
    X, y = X[keep], y[keep]
n = len(X)
batch_size = round(4_000 * n / 60_000)  # sampling rate 1/15, as in the paper

# %%
# The paper's setup, on a smaller model
# -------------------------------------
# Yu et al. train a ResNet-20 (group normalisation) with noise multiplier 6,
# expected batch 4,000 (Poisson sampling), 100 epochs, the clipping bound
# ``C`` set to the median per-example gradient norm at initialisation, and
# delta = 1e-5 (the value is lost in our text copy of the paper; 1e-5 is the
# customary choice for 60,000 examples). Our model is a tanh network with
# one hidden layer of 64 units, hard clipping as in the paper, and plain SGD.
#
# The median gradient norm at initialisation is read from a probe fit: the
# same seed (so the same initial weights), one epoch with a learning rate so
# small that the weights do not move, and a clipping bound so large that no
# gradient is clipped; the report's ``grad_norm`` column, in units of the
# bound, then holds every example's norm at initialisation. Like the paper's,
# this choice of ``C`` looks at the data and is not itself private. A fixed
# ``random_state`` makes the noise reproducible, and so not private.
hidden = (64,)
big = 1e6
probe = DPSGDClassifier(
    hidden_layer_sizes=hidden,
    max_grad_norm=big,
    clipping="hard",
    batch_size=batch_size,
    learning_rate=1e-30,
    max_iter=1,
    per_instance_accounting=False,
    fil_accounting=False,
    random_state=0,
).fit(X, y)
C = float(np.median(probe.privacy_report_["grad_norm"] * big))
print(f"clipping bound C = median gradient norm at initialisation = {C:.3g}")

# %%
# Train with DP-SGD and per-instance accounting. Yu et al. refresh every
# example's gradient norm twice per epoch; we refresh once per epoch (the
# most often the estimator allows), and in between an example's norm is
# updated whenever it is sampled, as in their Algorithm 1. Norms are rounded
# up to 1% of ``C`` before accounting.
clf = DPSGDClassifier(
    hidden_layer_sizes=hidden,
    noise_multiplier=6.0,
    max_grad_norm=C,
    clipping="hard",
    batch_size=batch_size,
    learning_rate=1.0,
    max_iter=EPOCHS,
    delta=1e-5,
    per_instance_accounting=True,
    fil_accounting=False,
    norm_refresh=1,
    random_state=0,
).fit(X, y)
report = clf.privacy_report_
eps = report["epsilon"].to_numpy()
worst = clf.epsilon_
quantiles = np.quantile(eps, [0.1, 0.3, 0.5, 0.7, 0.9])
rows = [
    ("model", "ResNet-20", f"tanh MLP {hidden}"),
    ("test accuracy", "97.3%", f"{clf.score(X_test, y_test):.1%}"),
    ("worst-case epsilon (all examples)", "-", f"{worst:.3g}"),
    ("mean per-instance epsilon", "0.906", f"{eps.mean():.3g}"),
    ("10% quantile", "0.563", f"{quantiles[0]:.3g}"),
    ("30% quantile", "0.672", f"{quantiles[1]:.3g}"),
    ("median", "0.790", f"{quantiles[2]:.3g}"),
    ("70% quantile", "0.967", f"{quantiles[3]:.3g}"),
    ("90% quantile", "1.422", f"{quantiles[4]:.3g}"),
    ("examples at the worst case", "3%", f"{np.mean(eps >= 0.99 * worst):.1%}"),
]
print(f"{'quantity':<34} | {'paper':>9} | {'ours':>16}")
for name, paper, ours in rows:
    print(f"{name:<34} | {paper:>9} | {ours:>16}")

# %%
# Figure 1: the distribution of the per-instance epsilon (left; the dotted
# line is its mean, the dashed one the worst case) and the same by class
# (right).
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
PerInstanceEpsilonDisplay.from_estimator(clf, ax=axes[0], bins=50)
axes[0].axvline(eps.mean(), color="C1", linestyle=":", label="mean")
axes[0].legend()
PerInstanceEpsilonDisplay.from_estimator(
    clf, groups=y, kind="box", ax=axes[1], showfliers=False
)
fig.suptitle(f"DP-SGD on MNIST, {n} examples, {EPOCHS} epochs, noise multiplier 6")
fig.tight_layout()
plt.show()

# %%
# By class: the mean per-instance epsilon, the mean loss of the released
# model and its training accuracy. Yu et al. find that classes with a higher
# loss also have a higher epsilon (their Figure 9 for MNIST).
by_class = (
    pd.DataFrame(
        {
            "epsilon": eps,
            "loss": report["loss"].to_numpy(),
            "accuracy": clf.predict(X) == y,
            "class": y,
        }
    )
    .groupby("class")[["epsilon", "loss", "accuracy"]]
    .mean()
)
print(by_class.round(3).to_string())
rho_class = spearmanr(by_class["loss"], by_class["epsilon"]).statistic
rho_example = spearmanr(report["loss"], eps).statistic
print(
    f"Spearman correlation of loss and epsilon: {rho_class:.2f} over classes, "
    f"{rho_example:.2f} over examples"
)

# %%
# What matches and what does not
# ------------------------------
# The paper's finding holds. In the full run most examples are far better
# protected than the worst case: the median per-instance epsilon is about
# a ninth of it, and only about 2% of the examples reach it (3% in the
# paper). Classes the model fits worse (5, 8, 9 and 3) have larger
# per-instance epsilons than the easy ones (0 and 1), and so do the
# examples with larger losses, as in the paper's Figures 5 and 9.
#
# The numbers differ, and we did not tune anything to bring them closer:
#
# * **Model.** A one-hidden-layer tanh network reaches about 91% test
#   accuracy under this noise, against 97.3% for the paper's ResNet-20.
#   Epsilon depends on the gradient norms relative to ``C`` (the median norm
#   at initialisation). Our small network's norms fall quickly on the many
#   easy examples, so its distribution has a tall peak near 0.2 and a long
#   tail; the paper's has a median of 0.79 and a 90% quantile of 1.42. The
#   top of the distribution agrees better: our 90% quantile is 1.26.
# * **Conversion from RDP to (epsilon, delta).** Both accountants compose the
#   Rényi DP of the subsampled Gaussian mechanism at integer orders (theirs
#   up to 256). The paper converts with Mironov's (2017) bound, while
#   ``dp-accounting``, which we use, converts with the tighter bound of
#   Canonne, Kamath & Steinke (2020). For the worst case of these settings
#   the two conversions give about 2.2 and 1.86: our epsilons are smaller
#   for the same RDP. The paper's worst-case epsilon is not legible in our
#   text copy, so the table leaves it out.
# * **delta and accounting details.** We take delta = 1e-5 (assumed, see
#   above), refresh every norm once per epoch instead of twice, and round
#   the norms up to 1% of ``C``.
#
# The per-instance epsilons and the per-class table are computed from every
# example's data. They are sensitive, like any privacy report, and must not
# be published.
