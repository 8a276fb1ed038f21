"""For store providers and plugins that write the graph (docs/graph.md, docs/guards.md): the
reserved labels and properties, the write guards both built-in stores apply, the Conversation and
Message shape, the JSON-lines import line checks and the import session (docs/graph.md#import)."""

from plughost.ports.graph import (
    CHANNEL_MESSAGE_LABELS,
    CONFINED_LABELS,
    CONVERSATION_LABEL,
    DERIVED_LABELS,
    FULLTEXT_EXTRA_LABELS,
    HAS_MESSAGE,
    MESSAGE_LABEL,
    OWNER_SCOPE,
    RESERVED_LABELS,
    RESERVED_PROPERTIES,
    TEXT_PROPERTIES,
    USER_SCOPE,
    VECTOR_LABELS,
    VISITOR_SLICE_LABEL,
    can_change,
    check_confined,
    check_write,
    confined_ok,
    confined_view,
    conversation_node_id,
    edge_denied,
    edge_guards,
    guarded_upsert_many,
    keyed_conversation_id,
    needs_own,
    own_conversation,
    owns,
    require_admin,
    reserved_label_problem,
    resolve_conversation_id,
    session_conversation,
    session_conversation_id,
    visitor_key,
    write_defaults,
    write_guards,
)
from plughost.ports.importing import (
    BatchWriter,
    Enrichment,
    ImportBatch,
    ImportRow,
    ImportSession,
    WaitingEdges,
    is_reingest,
)
from plughost.ports.jsonl import (
    EDGE_KEYS,
    LINE_KEYS,
    MAX_LABELS,
    NAME_RE,
    STORE_SET_KEYS,
    ImportSummary,
    JsonLines,
    check_line,
    int_problem,
    labels_problem,
    line_id,
    line_text,
    stamps_of,
)
from plughost.runtime.install_record import record_store
from plughost.util.jsonparse import LONE_SURROGATE, BadLine, has_lone_surrogate, parse_line

__all__ = [
    "CHANNEL_MESSAGE_LABELS", "CONFINED_LABELS", "CONVERSATION_LABEL", "DERIVED_LABELS", "FULLTEXT_EXTRA_LABELS",
    "HAS_MESSAGE", "MESSAGE_LABEL", "OWNER_SCOPE", "RESERVED_LABELS", "RESERVED_PROPERTIES", "TEXT_PROPERTIES", "USER_SCOPE",
    "VECTOR_LABELS", "VISITOR_SLICE_LABEL",
    "can_change", "check_confined", "check_write", "confined_ok", "confined_view", "needs_own", "own_conversation", "owns", "resolve_conversation_id", "keyed_conversation_id", "session_conversation_id", "conversation_node_id", "edge_denied", "edge_guards", "write_guards",
    "guarded_upsert_many", "require_admin", "reserved_label_problem", "session_conversation", "visitor_key", "write_defaults",
    "EDGE_KEYS", "LINE_KEYS", "MAX_LABELS", "NAME_RE", "STORE_SET_KEYS", "ImportSummary", "JsonLines",
    "check_line", "int_problem", "labels_problem", "line_id", "line_text", "stamps_of",
    "BatchWriter", "Enrichment", "ImportBatch", "ImportRow", "ImportSession", "WaitingEdges", "is_reingest",
    "BadLine", "LONE_SURROGATE", "has_lone_surrogate", "parse_line", "record_store",
]
