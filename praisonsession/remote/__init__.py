"""Remote sessions: the client side of ``Session(agent_url=...)``.

``wire`` is the format both ends share; ``client`` speaks HTTP to a session server (ours, or
PraisonAI's ``Agent.launch``); ``backend`` is the ``StoreBackend`` whose sessions live on that
server. The modules load on first use: ``client`` imports ``requests`` and ``tenacity``.
A service floor: it imports the stores and the ground; the server end is ``apps/server``.
"""
