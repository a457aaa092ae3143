# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""A Dask LocalCluster as CI runs it: two worker processes on 127.0.0.1."""

import warnings
from contextlib import contextmanager

import pytest


@contextmanager
def local_cluster():
    """Two one-thread worker processes on 127.0.0.1 and a client of them.

    A busy CI machine makes distributed warn about slow event loops; those
    RuntimeWarnings are silenced inside.
    """
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with (
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield client
