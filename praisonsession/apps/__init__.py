"""The top floor: the programs. ``cli`` (the ``praisonsession`` command), ``server``
(``praisonsession serve``), ``ui`` (the session browser) and ``demo`` (``make demo``).

They may import any floor; nothing in the library imports them.
"""
