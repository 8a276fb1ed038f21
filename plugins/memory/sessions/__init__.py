"""An owner's Claude Code sessions: :mod:`.compaction` (the briefing stored before a compaction and
given back after) and :mod:`.context` (what a new or resumed session is told first).
"""
