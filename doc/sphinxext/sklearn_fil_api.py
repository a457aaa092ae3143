"""Sphinx helpers for sklearn-fil's API reference.

Two jobs:

* Re-exported names resolve under every public path. The estimators are
  documented once, under their top-level names (``sklearn_fil.DPSGDClassifier``);
  a reference to the path of the subpackage that defines them
  (``sklearn_fil.neural.DPSGDClassifier``, or one of its methods) resolves to
  that page instead of being reported as missing.
* The build fails when a public name of sklearn-fil has no API page.

Every public module of the package (a submodule whose name has no leading
underscore and which defines ``__all__``) lists its public names in
``__all__``. After Sphinx has read every page, this extension checks that each
of those names (modules and ``__version__`` aside) is documented, under its own
path or under the top-level re-export, and warns about each one that is not;
with ``-W`` the build then fails, so the API reference cannot fall behind the
code.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib
import inspect
import pkgutil

from sphinx.util import logging

logger = logging.getLogger(__name__)

PACKAGE = "sklearn_fil"


def public_modules(package=PACKAGE):
    """The package and its public submodules that define ``__all__``."""
    root = importlib.import_module(package)
    modules = [root]
    for info in pkgutil.iter_modules(root.__path__, prefix=f"{package}."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        if hasattr(module, "__all__"):
            modules.append(module)
    return modules


def public_names(package=PACKAGE):
    """``(module name, name, object)`` for every public name to document."""
    names = []
    for module in public_modules(package):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or name == "__version__":
                continue
            names.append((module.__name__, name, obj))
    return names


def check_api_coverage(app, env):
    documented = env.get_domain("py").objects
    root = importlib.import_module(PACKAGE)
    for module, name, obj in public_names():
        candidates = [f"{module}.{name}"]
        if getattr(root, name, None) is obj:
            candidates.append(f"{PACKAGE}.{name}")
        if not any(c in documented for c in candidates):
            logger.warning(
                "%s.%s is public but has no page in the API reference "
                "(add it to doc/api.rst)",
                module,
                name,
                type="sklearn_fil",
                subtype="api_coverage",
            )


def resolve_reexport(app, env, node, contnode):
    """Resolve ``sklearn_fil.<subpackage>.<Name>[.attr]`` to ``sklearn_fil.<Name>``."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    root = importlib.import_module(PACKAGE)
    for module in public_modules():
        prefix = module.__name__ + "."
        if module is root or not target.startswith(prefix):
            continue
        name, _, rest = target[len(prefix) :].partition(".")
        if name in root.__all__ and getattr(root, name) is getattr(module, name, None):
            new_target = f"{PACKAGE}.{name}" + (f".{rest}" if rest else "")
            return env.get_domain("py").resolve_xref(
                env,
                node["refdoc"],
                app.builder,
                node["reftype"],
                new_target,
                node,
                contnode,
            )
    return None


def setup(app):
    app.connect("env-check-consistency", check_api_coverage)
    app.connect("missing-reference", resolve_reexport)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
