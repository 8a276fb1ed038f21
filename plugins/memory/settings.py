"""The memory plugin's ``PLUGHOST_*`` settings (published through ``plughost_settings``).

Each is read through its object (``SEARCH_STEM.read(host.env)``): see :mod:`plughost.util.settings`.
The search stages' defaults are the shipped ones, the stages the quality benchmark kept
(``bench/retrieval_quality.py``, figures in the README); :class:`plughost.plugins.memory.retrieval.flags.SearchFlags`
takes its defaults from here. The hook process's builtins-only stages (``surfacing/hook.py``,
``client.py``, ``context.py``) read the surfacing variables without the host; a test pins their
defaults to these.
"""

from __future__ import annotations

from typing import Any

from plughost import Setting
from plughost.api.settings import declared

# ---------------------------------------------------------------------- memory-search stages
SEARCH_EXPANSION: Setting[bool] = Setting(
    "PLUGHOST_GS_EXPANSION", "bool", False, "search 3-5 paraphrases of the query too (plughost_query_expansions)")
SEARCH_ROUTE: Setting[bool] = Setting(
    "PLUGHOST_GS_ROUTE", "bool", False, "a label filter and fusion weights per retrieval class")
SEARCH_RRF: Setting[bool] = Setting(
    "PLUGHOST_GS_RRF", "bool", False, "fuse the ranked lists by reciprocal rank instead of weighted scores")
SEARCH_BOOSTS: Setting[bool] = Setting(
    "PLUGHOST_GS_BOOSTS", "bool", False, "fractional score bumps (plughost_retrieval_boosts, recall ranking)")
SEARCH_DEDUP: Setting[bool] = Setting(
    "PLUGHOST_GS_DEDUP", "bool", False, "drop repeats by node id, slug, title and text, not node id alone")
SEARCH_NORMALIZE: Setting[bool] = Setting(
    "PLUGHOST_GS_NORMALIZE", "bool", True, "min-max normalise the vector list too before the weighted fusion (0: the baseline)")
SEARCH_CANDIDATES: Setting[int] = Setting(
    "PLUGHOST_GS_CANDIDATES", "int", 200, "hits fetched per path and per query before fusion (the baseline: 50)",
    minimum=1, maximum=1000)
SEARCH_MIN_SCORE: Setting[float] = Setting(
    "PLUGHOST_GS_MIN_SCORE", "float", 0.0, "fused rows scoring below this are dropped")
SEARCH_PATHS: Setting[str] = Setting(
    "PLUGHOST_GS_PATHS", "choice", "hybrid", "both search paths, or one alone (diagnosis, the quality benchmark)",
    choices=("hybrid", "vector", "bm25"))
SEARCH_STEM: Setting[bool] = Setting(
    "PLUGHOST_GS_STEM", "bool", True, "BM25 over the stemmed shadow of the text (0: the baseline)")
SEARCH_STOPWORDS: Setting[bool] = Setting(
    "PLUGHOST_GS_STOPWORDS", "bool", True, "drop question and function words from the BM25 query (0: the baseline)")
SEARCH_VECTOR_WEIGHT: Setting[float] = Setting(
    "PLUGHOST_GS_VECTOR_WEIGHT", "float", 0.5, "the vector share of the weighted fusion; BM25 has the rest (the baseline: 0.7)",
    minimum=0, maximum=1)
EMBED_THREADS: Setting[int | None] = Setting(
    "PLUGHOST_EMBED_THREADS", "int", None, "onnxruntime's intra-op threads for the local embedder (unset: the cores, at most 2)",
    minimum=1, maximum=64, fallback=True)
SEARCH_RRF_K: Setting[int] = Setting(
    "PLUGHOST_GS_RRF_K", "int", 60, "the k of reciprocal rank fusion", minimum=1, maximum=1000)
# a cross-encoder's cost grows with every candidate; 30 is the budget of the latency target, p50 < 100 ms
SEARCH_RERANK_DEPTH: Setting[int] = Setting(
    "PLUGHOST_GS_RERANK_DEPTH", "int", 30, "fused rows a plughost_rerank provider sees", minimum=1, maximum=1000)
SEARCH_NEIGHBOURS: Setting[float] = Setting(
    "PLUGHOST_GS_NEIGHBOURS", "float", 0.0, "the share of a candidate turn's fused score the turn after it inherits (0: the baseline)",
    minimum=0, maximum=1)
SEARCH_NEIGHBOURS_BACK: Setting[float] = Setting(
    "PLUGHOST_GS_NEIGHBOURS_BACK", "float", 0.15, "the share a turn passes back to the candidate turns before it",
    minimum=0, maximum=1)
SEARCH_ENTITIES: Setting[bool] = Setting(
    "PLUGHOST_GS_ENTITIES", "bool", False,
    "a third retrieval path: the turns and notes that mention the question's entities (PLUGHOST_MEMORY_ENTITIES writes them)")
SEARCH_ENTITY_WEIGHT: Setting[float] = Setting(
    "PLUGHOST_GS_ENTITY_WEIGHT", "float", 0.3, "the entity path's weight in the weighted fusion, on top of vector and BM25",
    minimum=0, maximum=1)
SEARCH_FACTS: Setting[float] = Setting(
    "PLUGHOST_GS_FACTS", "float", 0.2,
    "the lift over the pool's best of the turn stating the current (or as-of) fact a state question asks about; "
    "its older values are halved (0: off; facts come from PLUGHOST_MEMORY_ENTITIES: without them it changes nothing)", minimum=0, maximum=10)
SEARCH_MMR: Setting[float] = Setting(
    "PLUGHOST_GS_MMR", "float", 1.0, "the relevance share λ of maximal marginal relevance over the best fused rows (1: off)",
    minimum=0, maximum=1)
SEARCH_MMR_SESSION: Setting[float] = Setting(
    "PLUGHOST_GS_MMR_SESSION", "float", 0.0, "the similarity MMR gives two turns of the same conversation (0: words only)",
    minimum=0, maximum=1)
SEARCH_COMPOUND: Setting[bool] = Setting(
    "PLUGHOST_GS_COMPOUND", "bool", False, "search each part of a compound question too and interleave the results")
SEARCH_CLASSIFY: Setting[bool] = Setting(
    "PLUGHOST_GS_CLASSIFY", "bool", False, "classify a query the caller gave no retrievalClass (greetings: none; when: temporal)")
SEARCH_DATED: Setting[float] = Setting(
    "PLUGHOST_GS_DATED", "float", 0.0, "the bump of turns that say when, for a temporal question (0: off)",
    minimum=0, maximum=10)
SEARCH_SESSION: Setting[float] = Setting(
    "PLUGHOST_GS_SESSION", "float", 0.3,
    "the share of its conversation's session score (the mean of its best 3 candidate turns) a turn gains (0: off)",
    minimum=0, maximum=1)
SEARCH_SPEAKER: Setting[float] = Setting(
    "PLUGHOST_GS_SPEAKER", "float", 1.0, "the bump of the turns of a speaker the question names (0: off)",
    minimum=0, maximum=10)
SEARCH_DATES: Setting[float] = Setting(
    "PLUGHOST_GS_DATES", "float", 1.0, "the bump of the turns sent on a day the question names, or the day after (0: off)",
    minimum=0, maximum=10)
SEARCH_MESSAGE_WEIGHT: Setting[float] = Setting(
    "PLUGHOST_GS_MESSAGE_WEIGHT", "float", 0.5,
    "the factor of conversation turns' scores against documents and notes (1: the baseline)", minimum=0, maximum=1)
SEARCH_RECENCY: Setting[float] = Setting(
    "PLUGHOST_GS_RECENCY", "float", 0.0, "the weight of recency in the score, from the newest row of the pool (0: off)",
    minimum=0, maximum=10)
SEARCH_RECENCY_HALF_LIFE: Setting[float] = Setting(
    "PLUGHOST_GS_RECENCY_HALF_LIFE", "float", 90.0, "the recency half-life in days", minimum=0.01, maximum=36500)
SEARCH_CONFIDENCE: Setting[float] = Setting(
    "PLUGHOST_GS_CONFIDENCE", "float", 0.0, "how much a row's confidence below 1 lowers its score (0: off)",
    minimum=0, maximum=1)
RECALL_RANKING: Setting[bool] = Setting(
    "PLUGHOST_RECALL_RANKING", "bool", False,
    "pinned recall items up, snoozed ones down (with PLUGHOST_GS_BOOSTS=1), and snoozed ones never surfaced")

# ---------------------------------------------------------------------- prompt-time surfacing
SURFACE: Setting[bool] = Setting(
    "PLUGHOST_SURFACE", "bool", True, "surface memory into Claude Code prompts (the UserPromptSubmit hook)")
SURFACE_COLD: Setting[bool] = Setting(
    "PLUGHOST_SURFACE_COLD", "bool", True, "without a listening serve, load the host in the hook process")
SURFACE_TIMEOUT_MS: Setting[int] = Setting(
    "PLUGHOST_SURFACE_TIMEOUT_MS", "int", 3000, "milliseconds the hook waits for serve's answer (50 at least)")
SURFACE_COLD_TIMEOUT_MS: Setting[int] = Setting(
    "PLUGHOST_SURFACE_COLD_TIMEOUT_MS", "int", 8000, "milliseconds the hook's in-process fallback may take (50 at least)")
SURFACE_BUDGET: Setting[int] = Setting(
    "PLUGHOST_SURFACE_BUDGET", "int", 2000, "characters surfaced into one prompt at most (a bad value: the default, logged)",
    minimum=200, maximum=100_000, fallback=True)
SURFACE_LIMIT: Setting[int] = Setting(
    "PLUGHOST_SURFACE_LIMIT", "int", 4, "items surfaced into one prompt at most (a bad value: the default, logged)",
    minimum=1, maximum=20, fallback=True)
SURFACE_MIN_SIMILARITY: Setting[float] = Setting(
    "PLUGHOST_SURFACE_MIN_SIMILARITY", "float", 0.3, "the vector similarity an item needs to be surfaced",
    minimum=0, maximum=1, fallback=True)
SURFACE_MIN_BM25: Setting[float] = Setting(
    "PLUGHOST_SURFACE_MIN_BM25", "float", 0.5, "the normalised BM25 score an item found by BM25 alone needs",
    minimum=0, maximum=1, fallback=True)
SURFACE_SERVER: Setting[bool | None] = Setting(
    "PLUGHOST_SURFACE_SERVER", "bool", None, "serve's loopback listener for the hooks (unset: under plughost serve only)")

CONSULT_GATE: Setting[bool] = Setting(
    "PLUGHOST_CONSULT_GATE", "bool", True,
    "refuse a document deliverable when no profile-read ran since the user's last message (the PreToolUse gate)",
    fallback=True)
CONSULT_GATE_TOOLS: Setting[str] = Setting(
    "PLUGHOST_CONSULT_GATE_TOOLS", "str", "Write,Edit,MultiEdit,SendUserFile,mcp__*__*pdf-save*,mcp__*__*send*,mcp__*__*email*,mcp__*__*mail*",
    "the deliverable tools the gate checks, comma-separated names, * any run of characters (within the hooks.json matcher)",
    fallback=True)

ASK_GATE: Setting[bool] = Setting(
    "PLUGHOST_ASK_GATE", "bool", True,
    "refuse AskUserQuestion in an owner's session when no investigation tool ran since the owner's last message "
    "(the PreToolUse gate)", fallback=True)
ASK_GATE_TOOLS: Setting[str] = Setting(
    "PLUGHOST_ASK_GATE_TOOLS", "str",
    "Read,Grep,Glob,LS,WebSearch,WebFetch,ToolSearch,mcp__*__*search*,mcp__*__*read*,mcp__*__*list*,mcp__*__*get*",
    "the investigation tools that let a question through, comma-separated names, * any run of characters",
    fallback=True)

SESSION_CONTEXT: Setting[bool] = Setting(
    "PLUGHOST_SESSION_CONTEXT", "bool", True,
    "an owner's new or resumed Claude Code session is told its open tasks, leads, audit findings and alerts")
SESSION_CONTEXT_CHARS: Setting[int] = Setting(
    "PLUGHOST_SESSION_CONTEXT_CHARS", "int", 3000, "characters of that session context at most (whole lines)",
    minimum=300, maximum=50_000)

# ---------------------------------------------------------------------- what is stored and embedded
MESSAGE_CONTEXT_TURNS: Setting[int] = Setting(
    "PLUGHOST_MESSAGE_CONTEXT_TURNS", "int", 1, "preceding turns in a Message's indexed form (0: the bare turn)",
    minimum=0, maximum=10)
MESSAGE_EMBED: Setting[str] = Setting(
    "PLUGHOST_MESSAGE_EMBED", "choice", "turn", "what a Message embeds: the bare turn, or the turn and its context",
    choices=("context", "turn"))
MEMORY_ENTITIES: Setting[bool] = Setting(
    "PLUGHOST_MEMORY_ENTITIES", "bool", False,
    "extract speakers, names, places, dates, numbers, codes and simple facts from written Messages into Entity and Fact nodes")
MEMORY_EXTRA_LABELS: Setting[list[str] | None] = Setting(
    "PLUGHOST_MEMORY_EXTRA_LABELS", "csv", None, "more node labels the memory write tools accept")
AUDIT_MCP: Setting[bool] = Setting(
    "PLUGHOST_AUDIT_MCP", "bool", True, "store a ToolCall node for every tool call plughost's MCP servers answer")
IMPORT_MAX_BYTES: Setting[int] = Setting(
    "PLUGHOST_IMPORT_MAX_BYTES", "int", 2 << 30,
    "the most bytes memory import-archive reads from one file or zip entry, and from a zip in all (default 2 GiB)",
    minimum=1)
AUDIT_INPUT_CHARS: Setting[int] = Setting(
    "PLUGHOST_AUDIT_INPUT_CHARS", "int", 4000, "characters of a ToolCall's input JSON kept", minimum=0)
AUDIT_OUTPUT_CHARS: Setting[int] = Setting(
    "PLUGHOST_AUDIT_OUTPUT_CHARS", "int", 4000, "characters of a ToolCall's output kept", minimum=0)
EMBED_QUEUE: Setting[bool] = Setting(
    "PLUGHOST_EMBED_QUEUE", "bool", True, "under plughost serve, embed stored Messages in a background thread")
EMBED_QUEUE_POLL_S: Setting[int] = Setting(
    "PLUGHOST_EMBED_QUEUE_POLL_S", "int", 10, "seconds between the embed queue's looks for Messages without a vector",
    minimum=1, maximum=3600)
AUDIT_PERIOD: Setting[int] = Setting(
    "PLUGHOST_AUDIT_PERIOD", "int", 300,
    "seconds between plughost serve's standing audits (embed the backlog, count, purge past the grace; 0: off)",
    minimum=0, maximum=86400)
AUDIT_EMBED_LIMIT: Setting[int] = Setting(
    "PLUGHOST_AUDIT_EMBED_LIMIT", "int", 500,
    "nodes one standing audit embeds at most (its turns' context pass included)",
    minimum=1, maximum=100000)

VISITOR_IDLE_S: Setting[int] = Setting(
    "PLUGHOST_VISITOR_IDLE_S", "int", 1800,
    "seconds of a visitor's silence that end their conversation (its slice of per-visitor memory is written)",
    minimum=1, maximum=30 * 86400)

# ---------------------------------------------------------------------- folder collections
COLLECTIONS_WATCH: Setting[bool | None] = Setting(
    "PLUGHOST_COLLECTIONS_WATCH", "bool", None, "watch the synced collections' folders (unset: under plughost serve only)")
COLLECTIONS_REHASH: Setting[bool] = Setting(
    "PLUGHOST_COLLECTIONS_REHASH", "bool", False, "hash every file of a collection sync, unchanged size and times too")
COLLECTIONS_WORKERS: Setting[int | None] = Setting(
    "PLUGHOST_COLLECTIONS_WORKERS", "int", None, "parse processes of a big sync (unset: the cores less one, at most 4; 0: parse in process)",
    minimum=0, maximum=16)

ALL: tuple[Setting[Any], ...] = declared(vars())
