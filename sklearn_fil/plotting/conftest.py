"""Doctests of the displays: skipped without matplotlib, drawn with Agg."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib.util

import pytest

_HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def pytest_collection_modifyitems(config, items):
    if _HAS_MATPLOTLIB:
        return
    skip = pytest.mark.skip(reason="matplotlib is not installed")
    for item in items:
        if isinstance(item, pytest.DoctestItem) and ".plotting." in item.name:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _close_figures():
    if not _HAS_MATPLOTLIB:
        yield
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")
