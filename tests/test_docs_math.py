# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The documentation's math renders offline (issue 17).

A one-page Sphinx project with the site's math extension
(``doc/sphinxext/offline_math.py``) is built; its page must load MathJax from
a file inside the build, never from the network. The ``browser`` test opens
the page in a headless Chromium (Debian's ``chromium-headless-shell``) with
every host name unresolvable: MathJax must have typeset every formula (SVG in
the DOM, no TeX delimiters left), and a screenshot is taken. Chromium is not
pip-installable, so that test is deselected by default (``-m "not browser"``
in pyproject.toml's ``addopts``); ``.ci/run`` installs Chromium and runs it
with ``python -m pytest -m browser -q tests/test_docs_math.py``, where a
missing Chromium fails the test rather than skipping it.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPHINXEXT = ROOT / "doc" / "sphinxext"

pytest.importorskip("sphinx")

PAGE = r"""Math
====

Inline :math:`\mathbb{E}\|\hat z - z\|^2 / k \ge k / \operatorname{Tr}(\mathcal{I})`.

.. math::

   \eta_i = \frac{\|J_i\|_2}{\sigma}, \qquad \boldsymbol{w}' = w^* + b.
"""


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    sys.path.insert(0, str(SPHINXEXT))
    try:
        offline_math = pytest.importorskip("offline_math")
        from sphinx.errors import ConfigError

        try:
            offline_math.mathjax_static_dir()
        except ConfigError as exc:  # the docs extra is not installed
            pytest.skip(str(exc))
    finally:
        sys.path.remove(str(SPHINXEXT))
    src = tmp_path_factory.mktemp("site")
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(SPHINXEXT)!r})\n"
        'extensions = ["offline_math"]\n'
    )
    (src / "index.rst").write_text(PAGE)
    out = src / "_build" / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def test_page_loads_mathjax_from_the_build(built_site):
    html = (built_site / "index.html").read_text()
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', html)
    mathjax = [src for src in scripts if "mathjax" in src.lower()]
    assert mathjax, scripts
    for src in mathjax:
        assert "://" not in src and not src.startswith("//"), src
        path = built_site / src.split("?")[0]
        assert path.is_file(), path
        assert "MathJax" in path.read_text(errors="replace")[:200_000]
    assert not [src for src in scripts if "://" in src or src.startswith("//")]


def _chromium():
    for name in ("chromium-headless-shell", "chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(
        "The browser tests need a headless Chromium: apt-get install "
        'chromium-headless-shell, or deselect them with -m "not browser".'
    )


def _offline_chromium(page, *args):
    """Chromium with no network: every host name fails to resolve."""
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--virtual-time-budget=20000",
        *args,
        page.as_uri(),
    ]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)


def test_missing_chromium_fails_rather_than_skips(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="chromium-headless-shell"):
        _chromium()


def test_browser_tests_are_deselected_by_default():
    # the README's test command has no -m: pyproject.toml's addopts deselects
    # the browser tests, and a -m on the command line replaces it
    def collected(*args):
        cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", *args, __file__]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout
        return {line.split("::")[-1] for line in out.splitlines() if "::" in line}

    browser = "test_math_renders_offline_in_headless_chromium"
    default = collected()
    assert browser not in default
    assert "test_page_loads_mathjax_from_the_build" in default
    assert collected("-m", "browser") == {browser}


@pytest.mark.browser
def test_math_renders_offline_in_headless_chromium(built_site, tmp_path):
    page = built_site / "index.html"
    dom = _offline_chromium(page, "--dump-dom").stdout
    # MathJax replaced each formula by a typeset container drawn in SVG
    assert dom.count("<mjx-container") == 2, dom[-2000:]
    assert "<svg" in dom
    body = dom[dom.index("<body") :]
    assert "\\(" not in body and "\\[" not in body, "TeX left untypeset"
    png = tmp_path / "math.png"
    _offline_chromium(page, f"--screenshot={png}", "--window-size=900,400")
    assert png.stat().st_size > 1000
