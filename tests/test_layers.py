# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""No private name across subpackages (DESIGN.md, "Package map").

A module of one subpackage (``attacks``, ``plotting``, ...) or a top-level
module (``cli.py``, ``report_io.py``) may import only the public names of
another subpackage: never one of its private modules (``sklearn_fil.attacks.
_membership``) nor a private name (``from sklearn_fil.attacks import _x``).
``utils`` is shared, and the top-level private modules (``_glm``, ``_losses``,
``_network``, ``_report``, ...) are the shared lower layers: both may be
imported from anywhere. Lazy imports inside functions count too.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sklearn_fil"
SHARED = {"utils"}


def _subpackages():
    return {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}


def _imports(tree, parts):
    """``(lineno, module, names)`` of every import, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # from ..x import y, inside sklearn_fil/<parts>.py
                base = ["sklearn_fil", *parts[:-1]][: len(parts) + 1 - node.level]
                module = ".".join([*base, module] if module else base)
            yield node.lineno, module, [alias.name for alias in node.names]


def private_imports(source, relpath, subpackages):
    """Imports of another subpackage's private names in one module's source.

    Parameters
    ----------
    source : str
        The module's source.
    relpath : str
        Its path inside ``sklearn_fil/``, e.g. ``"plotting/_attacks.py"``.
    subpackages : set of str
        The subpackages of ``sklearn_fil``.

    Returns
    -------
    found : list of str
        ``"<line>: <module> <names>"`` for each offending import.
    """
    parts = Path(relpath).with_suffix("").parts
    own = parts[0] if len(parts) > 1 else None
    found = []
    for lineno, module, names in _imports(ast.parse(source), parts):
        target = module.split(".")
        if target[0] != "sklearn_fil" or len(target) < 2:
            continue
        sub = target[1]
        if sub not in subpackages or sub == own or sub in SHARED:
            continue
        private = [p for p in target[2:] if p.startswith("_")]
        private += [n for n in names if n.startswith("_")]
        if private:
            found.append(f"{lineno}: {module} {names}")
    return found


def test_no_private_name_across_subpackages():
    subpackages = _subpackages()
    offending = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relpath = path.relative_to(PACKAGE).as_posix()
        found = private_imports(path.read_text(), relpath, subpackages)
        if found:
            offending[relpath] = found
    assert not offending, (
        "Private names imported across subpackages (make them public in their "
        f"subpackage, or move a helper two subpackages share to utils): {offending}"
    )


SUBPACKAGES = {"attacks", "plotting", "utils", "linear_model"}


@pytest.mark.parametrize(
    "relpath, source",
    [
        ("plotting/_attacks.py", "from sklearn_fil.attacks._membership import f"),
        ("plotting/_attacks.py", "from sklearn_fil.attacks import _helper"),
        ("plotting/_attacks.py", "import sklearn_fil.attacks._membership"),
        ("plotting/_attacks.py", "def f():\n    from ..attacks._report import g"),
        ("cli.py", "from sklearn_fil.linear_model._base import f"),
    ],
)
def test_the_scan_finds_private_imports(relpath, source):
    assert private_imports(source, relpath, SUBPACKAGES)


@pytest.mark.parametrize(
    "relpath, source",
    [
        ("plotting/_attacks.py", "from sklearn_fil.attacks import attack_report"),
        ("plotting/_attacks.py", "from sklearn_fil.plotting._base import _axes"),
        ("plotting/_attacks.py", "from ._base import _axes"),
        ("plotting/_attacks.py", "from sklearn_fil.utils._membership import f"),
        ("attacks/_inversion.py", "from sklearn_fil._glm import GLMProblem"),
        ("cli.py", "from sklearn_fil.linear_model import IRFILClassifier"),
    ],
)
def test_the_scan_allows_public_shared_and_own_names(relpath, source):
    assert not private_imports(source, relpath, SUBPACKAGES)
