"""Other frameworks' sessions on praisonsession stores: the OpenAI Agents SDK
(``openai_agents``), Google ADK (``adk``), LangGraph (``langgraph``), PraisonAI's agent
persistence (``praisonai``) and AgentScope 2.0's app storage (``agentscope``).

Each module implements that framework's own session protocol over our stores, so a user
changes one constructor and gains listing, TTL, forks, archives, erasure, encryption, the
session browser and multi-process safety. One of our sessions per conversation, addressed by
our ``(user_id, session_id)``; what the framework appends is an append-only log of it; the
framework's bytes stay the framework's.

A floor above the session floor and below the programs: it imports the public API below it
(``session``, ``stores``, ``recall``), and nothing of ours imports it. Each framework is an
optional extra (``pip install ".[openai-agents]"``, ``".[adk]"``, ``".[langgraph]"``,
``".[praisonai]"``, ``".[agentscope2]"``), imported only by its own module.
"""
