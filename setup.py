"""Compiles the kernels a first report calls into ``sklearn_fil._aot`` at build time.

The project's metadata and configuration live in ``pyproject.toml``; this file
only adds that extension (see ``sklearn_fil/_compiled.py``). A build that cannot
compile it (no C or C++ compiler, a numba without ``pycc``) warns and goes on:
the kernels then compile on their first call.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib.util
import os
import tempfile
import traceback
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _load(module):
    """The module ``module`` from its file, without its package's ``__init__``."""
    spec = importlib.util.spec_from_file_location(
        module, ROOT.joinpath(*module.split(".")).with_suffix(".py")
    )
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def _define(source, name, **namespace):
    exec(source, namespace)
    return namespace[name]


def _compile_kernels(path):
    """Compile ``sklearn_fil._compiled.KERNELS`` into the extension at ``path``."""
    # the build's compiles go to a throwaway numba cache
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="sklearn-fil-build-")
    spec = _load("sklearn_fil._compiled")
    from numba.core import codegen
    from numba.core.compiler import Flags
    from numba.pycc import CC, compiler

    # pycc compiles for the named CPU model with its default features, and its
    # functions hold the GIL; the twins must be the JIT's machine code (the
    # host's features, as the JIT targets) and run in row_parallel's threads.
    class GILFreeFlags(Flags):
        def __init__(self, *args):
            super().__init__(*args)
            self.release_gil = True

    compiler.Flags = GILFreeFlags
    codegen.AOTCPUCodegen._customize_tm_features = (
        codegen.CPUCodegen._get_host_cpu_features
    )
    path = Path(path)
    cc = CC(path.name.split(".")[0])
    cc.output_dir, cc.output_file = str(path.parent), path.name
    cc.target_cpu = "host"
    for module, kernels in spec.KERNELS.items():
        loaded = _load(module)
        for name, signature in kernels.items():
            # a caller of the dispatcher: the kernel keeps its own options
            # (pycc compiles what it exports with numba's default flags)
            code = getattr(loaded, name).py_func.__code__
            args = ", ".join(code.co_varnames[: code.co_argcount])
            source = f"def {name}({args}):\n    return kernel({args})\n"
            caller = _define(source, name, kernel=getattr(loaded, name))
            cc.export(name, signature)(caller)
    tag = spec.build_tag()  # a constant of the compiled function
    cc.export("build_tag", "int64()")(
        _define("def build_tag():\n    return TAG\n", "build_tag", TAG=tag)
    )
    cc.compile()


class BuildKernels(build_ext):
    def build_extensions(self):
        (ext,) = self.extensions
        try:
            _compile_kernels(self.get_ext_fullpath(ext.name))
        except Exception:
            traceback.print_exc()
            print(
                "warning: sklearn-fil's kernels were not compiled ahead of time "
                "(the error above); they will compile on their first call."
            )
            self.extensions = []  # nothing to copy or install


setup(
    ext_modules=[Extension("sklearn_fil._aot", sources=[])],
    cmdclass={"build_ext": BuildKernels},
)
