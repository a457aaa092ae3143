# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The package's layers (DESIGN.md, "Package map"): names, arrows, circles.

No private name across subpackages: a module of one subpackage (``attacks``,
``plotting``, ...) or a top-level module (``cli.py``, ``report_io.py``) may
import only the public names of another subpackage: never one of its private
modules (``sklearn_fil.attacks._membership``) nor a private name (``from
sklearn_fil.attacks import _x``). ``utils`` is shared, and the top-level
private modules (``_glm``, ``_losses``, ``_network``, ``_report``, ...) are
the shared lower layers: both may be imported from any layer above them.

No module imports one above its layer (:data:`LAYERS`), and no two modules
import each other, directly or around a longer circle: the import graph of
``sklearn_fil`` has no cycle. Lazy imports inside functions count too; only
imports under ``if TYPE_CHECKING:`` do not, for the graph (they never run).

The graph as a command, from the repository root::

    python -m pytest tests/test_layers.py -q
"""

import ast
import itertools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sklearn_fil"
SHARED = {"utils"}
# modules without a source: setup.py compiles them (they import nothing)
EXTENSIONS = {"sklearn_fil._aot"}


def _subpackages():
    return {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}


def _from_module(node, parts):
    """The module of ``from <module> import ...``, a relative one resolved."""
    module = node.module or ""
    if node.level:  # from ..x import y, inside sklearn_fil/<parts>.py
        base = ["sklearn_fil", *parts[:-1]][: len(parts) + 1 - node.level]
        module = ".".join([*base, module] if module else base)
    return module


def _imports(tree, parts):
    """``(lineno, module, names)`` of every import, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
            yield node.lineno, _from_module(node, parts), names


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


# -- layers and cycles ------------------------------------------------------------

# DESIGN.md's layers, top to bottom, by unit: a subpackage or a top-level
# module of sklearn_fil ("sklearn_fil" itself: the package's __init__, the
# public facade, which imports from every layer below it). A module may import
# any module of a lower layer and any module of its own unit; of another unit
# of its own layer only along an arrow of SAME_LAYER. DESIGN.md names neither
# exceptions nor _backend: both import nothing of the package, so they sit at
# the bottom; so do _moments (a kernel) and _compiled (the kernels compiled
# when installing), above the extension _aot that setup.py builds. tabular
# (planned, "raw-table preparation as a Pipeline step, shared by the CLI and
# Python") sits just below the CLI that uses it.
LAYERS = (
    ("sklearn_fil", "cli", "report_io"),
    ("plotting", "tabular"),
    ("attacks", "audit", "model_selection"),
    ("linear_model", "neural"),
    ("fisher", "_report", "_leave_one_out", "_multinomial"),
    ("_glm", "_network"),
    ("accounting", "utils", "_losses", "datasets"),
    ("_backend", "exceptions", "_threads", "_compiled", "_moments"),
    ("_aot",),
)

# Arrows inside one layer that DESIGN.md draws: the CLI orchestrates, writing
# reports with report_io and fitting the estimators the package exports; utils
# is shared (helpers used by two subpackages), so the rest of its layer may use
# it (and it imports none of them).
SAME_LAYER = {
    ("cli", "report_io"),
    ("cli", "sklearn_fil"),
    ("accounting", "utils"),
    ("_losses", "utils"),
    ("datasets", "utils"),
}

# Known exceptions: another change's to remove, allowed here meanwhile (a set
# of modules for a cycle; "<module> -> <module>" as upward_imports gives it,
# without the line, for an arrow). test_known_exceptions_still_occur fails
# once one is gone, so that the lists empty. Issue 31's were the accounting
# rework's circle {"sklearn_fil.accounting._gaussian",
# "sklearn_fil.accounting._per_instance_gaussian"}, gone with its _validation
# module: add it back here only if that rework does not land.
KNOWN_CYCLES = []
KNOWN_UPWARD = []


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(node):
    """The nodes under ``node``, leaving out ``if TYPE_CHECKING:`` bodies."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _runtime_nodes(other)
            continue
        yield child
        yield from _runtime_nodes(child)


def module_name(relpath):
    """``"fisher/_engine.py"`` -> ``"sklearn_fil.fisher._engine"``."""
    parts = list(Path(relpath).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["sklearn_fil", *parts])


def import_graph(sources):
    """Which module of the package imports which, and on which line.

    Parameters
    ----------
    sources : dict of str to str
        Each module's source by its path inside ``sklearn_fil/``, e.g.
        ``{"fisher/_engine.py": "..."}``.

    Returns
    -------
    graph : dict of str to dict of str to int
        ``graph[a][b]``: the first line where module ``a`` imports module
        ``b`` (``from p import m`` imports module ``p.m`` when there is one,
        else ``p``; a name that is no module imports the module that has it).
        Module-level and lazy imports count, ``TYPE_CHECKING`` ones do not.
    """
    modules = {module_name(relpath) for relpath in sources} | EXTENSIONS

    def known(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for relpath, source in sources.items():
        name = module_name(relpath)
        parts = Path(relpath).with_suffix("").parts
        edges = graph.setdefault(name, {})
        for node in _runtime_nodes(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = _from_module(node, parts)
                targets = [
                    f"{module}.{alias.name}"
                    if f"{module}.{alias.name}" in modules
                    else module
                    for alias in node.names
                ]
            else:
                continue
            for target in map(known, targets):
                if target and target != name:
                    edges.setdefault(target, node.lineno)
    return graph


def import_cycles(graph):
    """The strongly connected components of ``graph`` with two modules or more.

    Returns
    -------
    cycles : list of set of str
        Each set of modules that import each other around a circle.
    """
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = itertools.count()

    def visit(v):  # Tarjan's; recursion no deeper than the package's modules
        index[v] = low[v] = next(counter)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _unit(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(graph, layers=LAYERS, same_layer=SAME_LAYER):
    """Imports of a module above the importer's layer, or across its layer.

    Returns
    -------
    found : list of str
        ``"<module> -> <module> (line <n>)"`` for each import of a higher
        layer, or of another unit of the same layer along no arrow of
        ``same_layer``; ``"<module>: no layer"`` for a unit ``layers`` lacks.
    """
    layer = {unit: i for i, units in enumerate(layers) for unit in units}
    found = []
    for a in sorted(graph):
        if _unit(a) not in layer:
            found.append(f"{a}: no layer")
            continue
        for b, lineno in sorted(graph[a].items()):
            ua, ub = _unit(a), _unit(b)
            if ua == ub or ub not in layer:  # no layer: reported as its own
                continue
            if layer[ub] < layer[ua] or (
                layer[ub] == layer[ua] and (ua, ub) not in same_layer
            ):
                found.append(f"{a} -> {b} (line {lineno})")
    return found


def _package_graph():
    sources = {
        path.relative_to(PACKAGE).as_posix(): path.read_text()
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    return import_graph(sources)


def _strip_line(found):
    return found.split(" (line")[0]


def test_no_import_cycle():
    graph = _package_graph()
    cycles = [c for c in import_cycles(graph) if c not in KNOWN_CYCLES]
    described = [
        sorted(
            f"{a} -> {b} (line {graph[a][b]})" for a in c for b in graph[a] if b in c
        )
        for c in cycles
    ]
    assert not cycles, (
        "Modules that import each other around a circle (move what both need "
        f"to a lower module, or the caller above both): {described}"
    )


def test_no_import_from_a_higher_layer():
    found = upward_imports(_package_graph())
    offending = [f for f in found if _strip_line(f) not in KNOWN_UPWARD]
    assert not offending, (
        "Imports against DESIGN.md's layers (move the imported code down, or "
        f"give a new unit its layer in LAYERS and DESIGN.md): {offending}"
    )


def test_known_exceptions_still_occur():
    # once a known cycle or arrow is fixed, delete it from its list above
    graph = _package_graph()
    cycles = import_cycles(graph)
    gone = [c for c in KNOWN_CYCLES if c not in cycles]
    upward = {_strip_line(f) for f in upward_imports(graph)}
    gone += [arrow for arrow in KNOWN_UPWARD if arrow not in upward]
    assert not gone, f"Fixed: remove from KNOWN_CYCLES / KNOWN_UPWARD: {gone}"


def test_the_graph_resolves_imports():
    sources = {
        "__init__.py": "from sklearn_fil import fisher",
        "fisher/__init__.py": "from ._api import f\nfrom . import _engine",
        "fisher/_api.py": (
            "from sklearn_fil.fisher import _engine\n"
            "def f():\n    from ._dask import g\n"
        ),
        "fisher/_engine.py": (
            "import numpy\nimport sklearn_fil.utils._dask as d\n"
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from sklearn_fil.fisher._api import f\n"
        ),
        "fisher/_dask.py": "from .. import utils\nfrom ._engine import _Problem",
        "utils/__init__.py": "",
        "utils/_dask.py": "",
    }
    assert import_graph(sources) == {
        "sklearn_fil": {"sklearn_fil.fisher": 1},
        "sklearn_fil.fisher": {
            "sklearn_fil.fisher._api": 1,
            "sklearn_fil.fisher._engine": 2,
        },
        "sklearn_fil.fisher._api": {
            "sklearn_fil.fisher._engine": 1,
            "sklearn_fil.fisher._dask": 3,
        },
        "sklearn_fil.fisher._engine": {"sklearn_fil.utils._dask": 2},
        "sklearn_fil.fisher._dask": {
            "sklearn_fil.utils": 1,
            "sklearn_fil.fisher._engine": 2,
        },
        "sklearn_fil.utils": {},
        "sklearn_fil.utils._dask": {},
    }
    assert import_cycles(import_graph(sources)) == []


@pytest.mark.parametrize(
    "sources, cycle",
    [
        (  # the engine dispatching into a module that imports its privates
            {
                "fisher/_engine.py": "def f():\n    from ._dask import g",
                "fisher/_dask.py": "from sklearn_fil.fisher import _engine",
            },
            {"sklearn_fil.fisher._engine", "sklearn_fil.fisher._dask"},
        ),
        (  # a longer circle, through a package's __init__
            {
                "a/__init__.py": "from sklearn_fil.a._x import f",
                "a/_x.py": "from sklearn_fil._low import g",
                "_low.py": "def h():\n    import sklearn_fil.a",
            },
            {"sklearn_fil.a", "sklearn_fil.a._x", "sklearn_fil._low"},
        ),
        (  # the report builder reading the version from the package's facade
            {
                "__init__.py": "from sklearn_fil.linear_model import Est",
                "linear_model/__init__.py": "from ._base import Est",
                "linear_model/_base.py": "from sklearn_fil.report_io import meta",
                "report_io.py": "def v():\n    import sklearn_fil",
            },
            {
                "sklearn_fil",
                "sklearn_fil.linear_model",
                "sklearn_fil.linear_model._base",
                "sklearn_fil.report_io",
            },
        ),
    ],
)
def test_the_scan_finds_cycles(sources, cycle):
    assert import_cycles(import_graph(sources)) == [cycle]


@pytest.mark.parametrize(
    "relpath, source, found",
    [
        (  # an estimator importing the report writer
            "linear_model/_base.py",
            "from sklearn_fil.report_io import privacy_report_metadata",
            "sklearn_fil.linear_model._base -> sklearn_fil.report_io",
        ),
        (  # lazily, relative
            "_glm.py",
            "def f():\n    from .fisher import fisher_information_loss",
            "sklearn_fil._glm -> sklearn_fil.fisher",
        ),
        (  # same layer, no arrow in DESIGN.md
            "attacks/_base.py",
            "from sklearn_fil.audit import EpsilonAudit",
            "sklearn_fil.attacks._base -> sklearn_fil.audit",
        ),
        (  # the package's facade, from below
            "report_io.py",
            "import sklearn_fil",
            "sklearn_fil.report_io -> sklearn_fil",
        ),
        (  # a unit without a layer
            "newthing.py",
            "import numpy",
            "sklearn_fil.newthing: no layer",
        ),
        (  # utils is shared, but uses nothing of its own layer
            "utils/_guarantee.py",
            "from sklearn_fil.accounting import Guarantee",
            "sklearn_fil.utils._guarantee -> sklearn_fil.accounting",
        ),
    ],
)
def test_the_scan_finds_upward_imports(relpath, source, found):
    stubs = (
        "__init__.py",
        "fisher/__init__.py",
        "audit/__init__.py",
        "accounting/__init__.py",
        "report_io.py",
    )
    sources = {**dict.fromkeys(stubs, ""), relpath: source}
    assert [_strip_line(f) for f in upward_imports(import_graph(sources))] == [found]


@pytest.mark.parametrize(
    "relpath, source",
    [
        ("linear_model/_base.py", "from sklearn_fil._report import metadata"),
        ("linear_model/_base.py", "from sklearn_fil.fisher import f"),
        ("cli.py", "from sklearn_fil.report_io import write_privacy_report"),
        ("cli.py", "from sklearn_fil import __version__"),
        ("fisher/_api.py", "def f():\n    from ._dask import g"),
        ("accounting/_budget.py", "from sklearn_fil.exceptions import W"),
        ("_report.py", "if TYPE_CHECKING:\n    from sklearn_fil.report_io import x"),
        ("accounting/_validation.py", "from ..utils._sklearn_compat import Interval"),
    ],
)
def test_the_scan_allows_downward_own_unit_and_design_arrows(relpath, source):
    stubs = (
        "__init__.py",
        "_report.py",
        "fisher/__init__.py",
        "fisher/_dask.py",
        "report_io.py",
        "exceptions.py",
        "utils/__init__.py",
        "utils/_sklearn_compat.py",
    )
    sources = {**dict.fromkeys(stubs, ""), relpath: source}
    assert upward_imports(import_graph(sources)) == []
