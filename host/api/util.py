"""Helpers any plugin may use so its output matches the host's: redaction before anything is
stored or logged (docs/redaction.md), ISO 8601 times, atomic JSON writes, progress lines, the
log line format (docs/logs.md) and the GC pause for bulk work."""

from plughost.util.gcpause import gc_paused
from plughost.util.jsonio import jsonl_file_problem, write_atomic
from plughost.util.log import bounded_repr, emit, format_line
from plughost.util.progress import Progress
from plughost.util.redact import MARKER as REDACTED
from plughost.util.redact import redact_schema, redact_text, redact_value, schema_secret_keys
from plughost.util.times import parse_time, read_time

__all__ = ["redact_text", "redact_value", "redact_schema", "schema_secret_keys", "REDACTED", "parse_time",
           "read_time", "write_atomic", "jsonl_file_problem", "Progress", "gc_paused", "format_line", "emit",
           "bounded_repr"]
