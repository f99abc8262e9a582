"""Debian's Chromium driven by Playwright for Python (no `playwright install` download)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import IN_CI

CHROMIUM = Path(os.environ.get("HARVESTMAN_TEST_CHROMIUM", "/usr/bin/chromium"))
# Screenshots go to tests/artifacts/ unless HARVESTMAN_TEST_SHOTS names another directory.
ARTIFACTS = Path(
    os.environ.get("HARVESTMAN_TEST_SHOTS", Path(__file__).resolve().parent.parent / "artifacts")
)


def require_chromium() -> None:
    """Skip when Chromium or Playwright is missing here; in CI their absence is a failure."""
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing.append("the playwright package (pip install -e '.[dev]')")
    if not missing:
        return
    message = f"the dashboard's browser tests need {' and '.join(missing)}"
    if IN_CI:
        pytest.fail(f"{message}; `make test` installs them")
    pytest.skip(message)


def screenshot_path(name: str) -> str:
    """Where a view's screenshot goes (tests/artifacts/, kept out of git)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return str(ARTIFACTS / f"dashboard-{name}.png")
