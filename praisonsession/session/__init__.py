"""The session floor: ``Session`` (``sync.py``, the synchronous shell) over ``AsyncSession``
(``core.py``, the one core), and what works on a whole session or user: ``options`` (settings
and stores resolved), ``copies`` (what forks and archives carry), ``praisonai`` (PraisonAI's
``session.memory`` and ``session.knowledge`` views), ``erasure`` and ``rotation``.

It may import every floor below it (agents, archive, remote, recall, llm, stores, state, the
ground); only the programs in ``apps/`` and the package's front door import it.
"""
