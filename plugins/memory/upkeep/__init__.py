"""The upkeep ``plughost serve`` runs on a timer (the standing audits): :mod:`.standing` runs them,
:mod:`.counts` is what they and ``plughost memory audit`` count, :mod:`.record` the last run's record.
"""
