# SPDX-License-Identifier: GPL-2.0-only
"""Headless Chromium for the pages the profiler writes (tests/tools/cdp.py drives it): the
suite's `browser` fixture (conftest.py) and a page opened on an SVG flame graph."""

import re
import sys
from pathlib import Path

import pytest

from .paths import REPO

sys.path.insert(0, str(REPO / "tests" / "tools"))
from cdp import Browser, find_chromium  # noqa: E402


def open_browser():
    """A Browser, or the test fails saying what to install; a generator for a fixture."""
    if not find_chromium():
        pytest.fail("no Chromium: apt-get install chromium (tools/install-deps.sh test)")
    b = Browser()
    try:
        yield b
    finally:
        b.close()


def open_svg(browser, path, timeout=None):
    """A new page showing the SVG file at path (or the HTML page holding one, by its
    suffix); fails if it is not a parsed SVG, or an HTML page with exactly one."""
    page = browser.new_page()
    page.navigate(Path(path).resolve().as_uri(), timeout=timeout)
    if Path(path).suffix.lower() in (".html", ".htm"):
        root = page.evaluate("document.documentElement.tagName + ' ' + "
                             "document.querySelectorAll('svg').length + ' ' + "
                             "document.querySelector('#frames').ownerSVGElement.namespaceURI")
        assert root == "HTML 1 http://www.w3.org/2000/svg", \
            f"{path} did not load as an HTML page with one SVG: {root!r}\n{page.errors()}"
        # Offline: nothing but the namespace names is a URL.
        text = Path(path).read_text()
        assert not re.search(r"(src|href)\s*=|@import|url\(", text), f"{path} refers out"
        return page
    root = page.evaluate("document.documentElement.namespaceURI + ' ' + "
                         "document.getElementsByTagName('parsererror').length")
    assert root == "http://www.w3.org/2000/svg 0", \
        f"{path} did not load as an SVG document: {root!r}\n{page.errors()}"
    return page
