"""Backends over backends: ``encrypted`` seals what passes to the backend it wraps.

A wrapper is a ``StoreBackend`` that holds another and changes what passes through; it uses
only the public protocol, so it wraps every backend (``tests/counting_store.py`` is another).
"""
