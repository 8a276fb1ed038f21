"""Prompt-time surfacing: a Claude Code ``UserPromptSubmit`` hook that brings memory to the agent.

``client`` is the hook process (stdlib only, so a warm call costs an interpreter start and one
loopback round trip); ``server`` is the loopback listener ``plughost serve`` runs; ``core`` is
the decision + search + budget + no-repeat logic both paths share; ``sessions`` records what
each session was shown (recall tracking reads the same files). ``rules`` and ``context`` are
stdlib-only so the client can import them without the host.
"""
