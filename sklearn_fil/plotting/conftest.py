"""Doctests of the displays: skipped without matplotlib, drawn with Agg."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import pytest


@pytest.fixture(autouse=True)
def _agg_figures():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")
