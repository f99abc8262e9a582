"""The one check of every string that enters the API: no NUL, no lone surrogate, a bounded
length.

A NUL is refused by PostgreSQL's text and cut by C libraries; a lone surrogate (JSON's
``"\\ud800"``) decodes to a Python string that no UTF-8 encoder takes, so a job whose metadata
held one was stored and then broke every list that showed it. Strings enter by two doors, and
each is checked once there: a body's JSON (every key and value, at any depth) in
``intake.RequestIntake`` as it is decoded; the query and path parameters in ``admission.access``,
the dependency every route declares; a cursor's key where it is decoded (``paging``). A refusal
is a 422 ``invalid_text`` naming where, never repeating the text.

>>> text_problem("fine", 10) is None
True
>>> text_problem("a\\x00b", 10), text_problem("\\ud800", 10), text_problem("x" * 11, 10)
('a NUL character', 'a lone surrogate', 'a string longer than 10 characters')
>>> find_bad_text({"a": [1, {"b\\ud800": 2}]}, 10)
('a.1', 'a key holding a lone surrogate')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from harvestman.api.errors import ApiError

# A NUL or a UTF-16 surrogate code point: neither belongs in text that is stored or shown.
_BAD = re.compile("[\x00\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}|[0-9]{1,9}")


def text_problem(text: str, max_length: int) -> str | None:
    """What is wrong with ``text``, or None."""
    if len(text) > max_length:
        return f"a string longer than {max_length} characters"
    found = _BAD.search(text)
    if found is None:
        return None
    return "a NUL character" if found.group() == "\x00" else "a lone surrogate"


def find_bad_text(value: Any, max_length: int, where: str = "") -> tuple[str, str] | None:
    """The first string in a decoded JSON value (keys included) that ``text_problem`` refuses:
    its place (dotted keys and indexes, the bad key itself left out) and the problem."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        place, item = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item, max_length)
            if problem is not None:
                return place, problem
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                problem = text_problem(key, max_length)
                if problem is not None:
                    return place, f"a key holding {problem}"
                children.append((_join(place, key), child))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(_join(place, str(n)), c) for n, c in enumerate(item)]))
    return None


def _join(place: str, part: str) -> str:
    # A key that is not a plain name is input: it is not repeated.
    part = part if _NAME.fullmatch(part) else "?"
    return f"{place}.{part}" if place else part


def check_parameters(items: Iterable[tuple[str, str]], max_length: int, kind: str) -> None:
    """ApiError 422 for the first parameter (name or value) ``text_problem`` refuses."""
    for name, value in items:
        for text in (name, value):
            problem = text_problem(text, max_length)
            if problem is not None:
                shown = name if _NAME.fullmatch(name) else "?"
                raise invalid_text(f"{kind} {shown}", problem, max_length)


def invalid_text(where: str, problem: str, max_length: int) -> ApiError:
    return ApiError(
        422,
        f"{where or 'the body'} holds {problem}",
        code="invalid_text",
        details={"field": where, "problem": problem, "max_length": max_length},
    )
