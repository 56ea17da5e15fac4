"""A helper the engine tests share: a method patched to note its calls and go on as before."""

from __future__ import annotations

from typing import Any


def spy_calls(monkeypatch: Any, cls: type, name: str, *, results: bool = False) -> list:
    """Patch ``cls.name`` (with ``monkeypatch``) to run as before and note each call: its first
    argument after ``self`` (as the call begins) or, with ``results``, what it returned.
    Returns the list the notes go to, in call order."""
    notes: list = []
    plain = getattr(cls, name)

    def noted(self, *args, **kwargs):
        if not results:
            notes.append(args[0])
        result = plain(self, *args, **kwargs)
        if results:
            notes.append(result)
        return result

    monkeypatch.setattr(cls, name, noted)
    return notes
