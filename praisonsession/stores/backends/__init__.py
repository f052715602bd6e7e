"""The five backends: ``memory``, ``json``, ``sqlite``, ``redis`` and ``postgres``. Each is a
``StoreBackend`` (the record operations) and the store class users make (``SqliteSession``...),
which holds it.

A backend imports the store floor's protocol and the ground floor; no backend imports another.
"""
