"""The ground floor: how our coroutines run, and the checks and helpers every floor shares.

``runtime`` (the inline and background-loop execution, deadlines), ``checks`` (counts,
choices, seconds, flags), ``identifiers``, ``json_data``, ``redaction``, ``retry``,
``progress``, ``display`` (what a notebook shows), ``sealing`` (AES-GCM for texts) and
``file_lock`` (the one cross-process lock on a file).

Private to the package: none of it is public API. It imports only ``errors`` and ``clock``,
and every other floor may import it.
"""
