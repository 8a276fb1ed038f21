"""The owner's work (docs/memory.md): :mod:`.tasks` (a turn's Task and what it produced), :mod:`.worktime`
(time on tasks), :mod:`.reports` (durable workflow output) and :mod:`.preferences` (the profile and
the active rules every admin turn is given).
"""
