"""Hypothesis profiles: ``ci`` (the default: every example each test asks for) for ``make test``
and CI, ``dev`` (a few examples) for ``make check``; chosen by ``HYPOTHESIS_PROFILE``.

A profile sets what a test leaves unsaid, and most property tests here say ``max_examples``
themselves (300-600, chosen for CI). Under ``dev`` that count is capped at the profile's
(``cap_examples``, from the collection hook), so the fast tier runs every property a few times
and CI runs it as often as its author asked.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import pytest
from hypothesis import settings

DEV_EXAMPLES = 20

settings.register_profile("ci", settings.get_profile("default"))
settings.register_profile("dev", max_examples=DEV_EXAMPLES)


def load() -> str:
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(name)
    return name


def cap_examples(items: Iterable[pytest.Item], cap: int) -> None:
    """Lower each property test's own ``max_examples`` to ``cap``. Hypothesis reads a test's
    settings from the attribute its ``@settings`` decorator sets, when the test runs."""
    for item in items:
        function = getattr(item, "obj", None)
        function = getattr(function, "__func__", function)  # a method's function
        own = getattr(function, "_hypothesis_internal_use_settings", None)
        if own is not None and own.max_examples > cap:
            function._hypothesis_internal_use_settings = settings(own, max_examples=cap)  # type: ignore[union-attr]
