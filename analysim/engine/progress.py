"""Progress bars (``tqdm.auto``: a widget in Jupyter, text elsewhere) that stay out of sight
for work that ends quickly: a bar appears only once its work has taken ``DELAY`` seconds, so
sub-second runs leave nothing in logs."""

from __future__ import annotations

from typing import Any

DELAY = 1.0
"""Seconds of work before a progress bar is drawn."""


def progress_bar(*args: Any, **kwargs: Any) -> Any:
    """``tqdm.auto.tqdm(*args, **kwargs)`` drawn only after :data:`DELAY` seconds."""
    from tqdm.auto import tqdm

    kwargs.setdefault("delay", DELAY)
    return tqdm(*args, **kwargs)
