"""A progress bar for long work, or nothing at all for short work.

tqdm, imported only when a bar is shown: its widget bar in a Jupyter kernel that has
ipywidgets (the ``notebook`` extra), its plain-text bar everywhere else, a notebook without
ipywidgets included (tqdm's own choice there would warn ``IProgress not found``).
"""

from __future__ import annotations

import sys
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
    if _widgets_can_draw():
        from tqdm.notebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm(total=total, unit=unit, desc=desc)


def _widgets_can_draw() -> bool:
    """True in a Jupyter kernel where ipywidgets imports."""
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    shell = sys.modules["IPython"].get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return False  # a terminal IPython: text bars
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True
