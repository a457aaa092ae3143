# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""numpydoc validation of every public class, method and function."""

import inspect

import pytest
from numpydoc.validate import validate

import sklearn_fil
import sklearn_fil.attacks
import sklearn_fil.neural
import sklearn_fil.report_io
import sklearn_fil.utils.estimator_checks

# Parameters documented, in order, with types and descriptions; returns
# documented; a one-line summary; every public object has a docstring.
CHECKS = {"GL08", "PR01", "PR02", "PR03", "PR07", "PR10", "RT01", "RT03", "SS01"}
# A frozen dataclass documents its fields as Attributes, not as Parameters.
ALLOWED = {"sklearn_fil.fisher.FisherInformationLoss": {"PR01"}}


def _public_objects():
    names = []
    exported = [(sklearn_fil, name) for name in sklearn_fil.__all__]
    modules = (sklearn_fil.fisher, sklearn_fil.accounting, sklearn_fil.attacks)
    for module in (
        *modules,
        sklearn_fil.audit,
        sklearn_fil.datasets,
        sklearn_fil.neural,
        sklearn_fil.plotting,
        sklearn_fil.report_io,
        sklearn_fil.utils.estimator_checks,
    ):
        exported += [(module, name) for name in module.__all__]
    for module, name in exported:
        obj = getattr(module, name)
        if inspect.ismodule(obj) or isinstance(obj, str):
            continue
        names.append(f"{module.__name__}.{name}")
        if not inspect.isclass(obj):
            continue
        for attr, member in inspect.getmembers(obj, inspect.isfunction):
            if not attr.startswith("_") and member.__module__.startswith("sklearn_fil"):
                names.append(f"{module.__name__}.{name}.{attr}")
    return names


@pytest.mark.parametrize("name", _public_objects())
def test_docstring(name):
    errors = validate(name)["errors"]
    bad = [
        f"{code}: {msg}"
        for code, msg in errors
        if code in CHECKS and code not in ALLOWED.get(name, ())
    ]
    assert not bad, "\n".join(bad)
