# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The accounting on dp-accounting's public API: imports, accountants, checks."""

import ast
import inspect
import math
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import sklearn_fil.accounting as accounting
from sklearn_fil.accounting import (
    PrivacyBudget,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
)
from sklearn_fil.accounting._events import (
    ACCOUNTANTS,
    DEFAULT_ACCOUNTANT,
    make_accountant,
)
from sklearn_fil.neural import DPSGDClassifier

ROOT = Path(__file__).resolve().parents[2]


def _private_dp_accounting_imports(source):
    """``module.name`` of each private dp-accounting name imported in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "dp_accounting"
        ):
            path = [*node.module.split("."), *(a.name for a in node.names)]
            found += [
                f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")
            ]
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append(".".join(path))
        elif isinstance(node, ast.Import):
            found += [
                a.name
                for a in node.names
                if a.name.startswith("dp_accounting")
                and any(part.startswith("_") for part in a.name.split("."))
            ]
    return found


def test_private_import_finder():
    assert _private_dp_accounting_imports(
        "from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp\n"
        "from dp_accounting.rdp import RdpAccountant\n"
        "import dp_accounting._private\n"
    ) == [
        "dp_accounting.rdp.rdp_privacy_accountant._compute_rdp",
        "dp_accounting._private",
    ]


def test_no_private_dp_accounting_import():
    found = {
        path.relative_to(ROOT).as_posix(): names
        for path in sorted((ROOT / "sklearn_fil").rglob("*.py"))
        if (names := _private_dp_accounting_imports(path.read_text()))
    }
    assert not found, f"Private dp-accounting names imported: {found}"


def test_installed_dp_accounting_is_in_the_pinned_range():
    text = (ROOT / "pyproject.toml").read_text()
    (pin,) = map(Requirement, re.findall(r'"(dp-accounting[^"]*)"', text))
    assert pin.specifier, "dp-accounting needs a version range"
    assert version("dp-accounting") in pin.specifier


def test_one_accountant_registry_with_one_default():
    assert DEFAULT_ACCOUNTANT in ACCOUNTANTS
    assert PrivacyBudget(1.0, 1e-5).accountant == DEFAULT_ACCOUNTANT
    assert DPSGDClassifier().accountant == DEFAULT_ACCOUNTANT
    for name in ACCOUNTANTS:
        assert hasattr(make_accountant(name, "add_remove"), "get_epsilon")
    with pytest.raises(ValueError, match="accountant must be one of"):
        make_accountant("moments", "add_remove")


@pytest.mark.parametrize("function", [dpsgd_epsilon, dpsgd_noise_multiplier])
def test_dpsgd_default_accountant_is_deprecated(function):
    # not passed: the old default "rdp", with a FutureWarning naming the new one
    kwargs = dict(sample_rate=0.02, steps=200, delta=1e-5)
    if function is dpsgd_epsilon:
        kwargs["noise_multiplier"] = 1.1
    else:
        kwargs["target_epsilon"] = 2.0
    with pytest.warns(FutureWarning, match="will change from 'rdp' to 'pld'"):
        got = function(**kwargs)
    assert got == function(**kwargs, accountant="rdp")
    assert got != function(**kwargs, accountant="pld")
    assert math.isfinite(got)


def _validated():
    """The public accounting functions and methods with validate_params."""
    for name in accounting.__all__:
        obj = getattr(accounting, name)
        members = [obj]
        if inspect.isclass(obj):
            members = [m for _, m in inspect.getmembers(obj, inspect.isfunction)]
        for member in members:
            if hasattr(member, "_skl_parameter_constraints"):
                yield member


def test_parameter_constraints_name_parameters():
    checked = list(_validated())
    assert len(checked) >= 15
    for function in checked:
        parameters = inspect.signature(function).parameters
        extra = set(function._skl_parameter_constraints) - set(parameters)
        assert not extra, f"{function.__qualname__}: constraints of {extra}"


@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_not_numbers(value):
    # scikit-learn's Interval takes True for 1; a boolean noise or step count
    # is a mistake
    with pytest.raises(ValueError, match=f"Got {value} instead"):
        dpsgd_epsilon(
            noise_multiplier=1.0,
            sample_rate=0.1,
            steps=value,
            delta=1e-5,
            accountant="rdp",
        )
