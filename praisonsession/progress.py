"""A progress bar for long work, or nothing at all for short work.

tqdm's notebook-aware bar (``tqdm.auto``), imported only when a bar is shown.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["progress_bar"]


class _Silent:
    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def update(self, count: int) -> None:
        pass


def progress_bar(total: int, show: bool, unit: str, desc: str) -> Any:
    """A context manager with ``update(n)``: a bar when ``show``, else one that does nothing."""
    if not show:
        return _Silent()
    from tqdm.auto import tqdm

    with warnings.catch_warnings():  # tqdm warns when a notebook lacks ipywidgets; text is fine
        warnings.simplefilter("ignore")
        return tqdm(total=total, unit=unit, desc=desc)
