"""Remote sessions: the client side of ``Session(agent_url=...)``.

``wire`` is the format both ends share; ``client`` speaks HTTP to a session server (ours, or
PraisonAI's ``Agent.launch``); ``store`` is the ``SessionBase`` backend whose sessions live on
that server. The modules load on first use: ``client`` imports ``requests`` and ``tenacity``.
"""
