# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numba
import pytest


@pytest.fixture(scope="module")
def one_numba_thread():
    """The estimators' numba kernels on one thread.

    Thousands of tiny fits, two test workers on two cores: parallel kernels
    would only oversubscribe them (a GLM fit is then several times slower).
    """
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)
