"""The ``memory`` agent runner (``PLUGHOST_AGENT=memory``, the default): answers from the account's memory.

No language model. A visitor's question is answered first from the public agent's curated
KNOWLEDGE.md (``accounts/<id>/agents/<slug>/``, docs/agents.md#runners), a paragraph counting as an
answer by the same coverage rule as a passage; only when it holds none does the question go through the same hybrid search the
``memory-search`` tool runs (``host.memory_search``, typed rows), as the sender's principal (a
public visitor's is ``host.principal.visitor()``: public memory only), and the reply is the best-matching passage, cut to whole sentences,
with its source named. A passage counts as an answer only when it covers at least
``PLUGHOST_AGENT_MIN_MATCH`` (default 0.5) of the question's content words; below that the
reply says so and offers to pass the question on. Every word of a reply is either the stored
passage or one of the fixed sentences below, so nothing is invented. Greetings get a greeting
naming the brand's ``productName``.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from plughost import AgentTurn, Host, MemoryHit, Node, Principal, log
from plughost.api import hooks
from plughost.api.credentials import conversation_secret
from plughost.api.store import resolve_conversation_id
from plughost.plugins.channels.brand import GREETING, product_name
from plughost.plugins.channels.knowledge import AgentFiles
from plughost.plugins.channels.runner import RunnerError
from plughost.plugins.channels.settings import AGENT_MIN_MATCH
from plughost.plugins.channels.wire import JSON, JSONObject

FOLLOW_UP_TOOL = "work-create"
SEARCH_LIMIT = 30
PART_FIELDS = ["attachmentId", "sectionIndex", "index", "searchContext"]
"""Where a document passage sits: a Chunk and the Section it was cut from are one part."""
FIELDS = ["title", "body", "content", "name", "description", "path", *PART_FIELDS]
# conversation records are memory too, but never an answer to a visitor's question
NOT_KNOWLEDGE = {"Message", "WebchatMessage", "TelegramMessage", "WhatsAppMessage", "Conversation",
                 "Preference", "Outcome", "Session", "Turn", "Report", "Briefing", "Task", "ToolCall", "TimeEntry"}
"""Labels never quoted to a visitor, whatever their scope: the team's records, not the business's knowledge."""
MAX_REPLY_CHARS = 480

DONT_KNOW = ("Sorry, I don't know the answer to that. I can pass your question on to the team: "
             "reply with your email or phone number and they will get back to you.")
JOINED = ("Sorry, I don't know the answer to that. I have passed your question on to the team, and they will "
          "get back to you at {contact}.")
"""A visitor whose contact the team already has is never asked for it again: the question joins their lead."""
GREETING_AGAIN = "Hello again, {name}, and welcome back to {product}! What can I do for you today?"
YOUR_NAME = "You told us your name is {name}."
NO_NAME = "You haven't told me your name yet."
YOUR_CONTACT = "Yes: the team has your contact details ({contact}) and will get back to you there."
NO_CONTACT = ("I don't have a way to reach you yet. If you'd like the team to get back to you, reply with your "
              "email or phone number.")
YOU_TOLD_US = "Here is what you told us last time:"
NOTHING_TOLD = "I don't have anything from an earlier conversation with you."
FACT_LINES = {"telephone": "Our phone number is {value}.", "email": "Our email address is {value}.",
              "address": "Our address is {value}.", "openingHours": "Our opening hours: {value}."}
SOURCE = "(Source: {source})"
PASSED_ON = ("Thank you. I have passed your question on to the team, and they will get back to you at "
             "{contact}.")
NOTED = "Thank you. I have passed your message and your contact details ({contact}) on to the team."
WELCOME = "You're welcome! Is there anything else I can help you with?"
THANKS = {"thanks", "thank", "thx", "ty", "cheers", "ok", "okay", "great", "perfect", "cool", "fine", "bye",
          "goodbye", "you", "very", "much", "a", "lot", "so", "that", "s", "it", "all", "good", "nice", "many"}
THANKING = {"thanks", "thank", "thx", "ty", "cheers", "bye", "goodbye"}
EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")
PHONE = re.compile(r"\+?\d[\d ().-]{6,18}\d")
PENDING_MAX = 1000  # unanswered questions remembered per process, oldest forgotten first
LEAD_SCAN = 2000  # follow-up Tasks read to find a visitor's lead
BUSINESS_LABELS = ("LocalBusiness", "Organization", "Store", "Restaurant")
"""Entities that are the business itself: their fields answer "what is your phone number?"."""
ADDRESS = re.compile(r"\b\d{1,5}[A-Za-z]?,?\s+(?:[A-Z][\w'’-]+\s+){1,4}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Square|"
                     r"Sq|Place|Way|Quay|Drive|Boulevard|Blvd|Parade|Row|Terrace|Close|Court|Gardens|Hill|Walk|"
                     r"Strasse|Straße|Rue|Calle|Via)\b\.?")
FACT_WORDS = {
    "telephone": {"phone", "telephone", "tel", "call", "ring", "mobile", "landline", "phoned", "calling"},
    "email": {"email", "mail", "emails", "mailing"},
    "address": {"address", "located", "location", "directions", "situated", "postcode", "whereabouts"},
}
WHERE_FILLER = {"shop", "store", "bakery", "find", "based", "situated", "exactly", "business", "place", "you",
                "your", "premises", "workshop", "cafe", "café"}
FILLER = set("""guys folks today currently actually really maybe perhaps possible possibly anyone someone
something anything usually normally generally ever still also kind sort bit please hello hi hey thanks
tell know wondering wonder curious question quick find out information info details nearby near far
long time big large small cost costs charge charges price prices fee fees make take takes give need
accept available""".split())
"""Words a question asks *with* (politeness, hedges, "how much does it cost"): one the stored
passages lack does not mean memory does not know."""

WORD = re.compile(r"[^\W_]+", re.UNICODE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
GREETINGS = {"hi", "hello", "hey", "hiya", "howdy", "hallo", "hola", "bonjour", "ciao", "salut", "moin",
             "morning", "evening", "afternoon", "day", "good", "there", "greetings", "yo", "everyone", "all"}
GREETING_OPENERS = {"hi", "hello", "hey", "hiya", "howdy", "hallo", "hola", "bonjour", "ciao", "salut", "moin",
                    "greetings", "yo", "good", "morning", "evening"}
STOP_WORDS = set("""a about above after again all also am an and any are as at be been before being below
between both but by can could did do does doing done for from get got had has have having he her here hers
him his how i if in into is it its just know let like me might more most much must my need no nor not now of
off on once only or other our ours out over own please same shall she should so some such tell than thank
thanks that the their theirs them then there these they this those through to too under until up us very
want was we were what when where which while who whom why will with would yes you your yours""".split())


@dataclass
class Passage:
    """One search result as the runner reads it: the fields it quotes from, as text."""

    labels: tuple[str, ...]
    node_id: str
    score: float
    props: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, hit: MemoryHit) -> Passage:
        props = {key: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
                 for key in FIELDS if (value := hit.properties.get(key)) is not None}
        return cls(hit.labels, hit.id, hit.score, props)

    @property
    def text(self) -> str:
        for key in ("body", "content", "description"):
            if self.props.get(key):
                return self.props[key].strip()
        return ""

    @property
    def source(self) -> str:
        raw = self.props.get("path", "")
        if raw.startswith("["):
            try:
                parts = [str(p) for p in json.loads(raw) if p]
            except ValueError:
                parts = []
            if parts:
                return " › ".join(parts)
        return (self.props.get("title") or self.props.get("name") or self.props.get("searchContext")
                or self.node_id)

    @property
    def part(self) -> str:
        """The document section this passage is (a Chunk and its Section share it), else the node itself."""
        doc = self.props.get("attachmentId")
        index = self.props.get("sectionIndex" if "Chunk" in self.labels else "index")
        if doc and index is not None and {"Chunk", "Section"} & set(self.labels):
            return f"{doc}#{index.strip()}"
        return self.node_id


def normalised(text: str) -> str:
    """Words only, case-folded: two passages that differ in spacing, case or punctuation are one text."""
    return " ".join(WORD.findall(text.casefold()))


def distinct(ranked: list[tuple[float, Passage]], limit: int) -> list[tuple[float, Passage]]:
    """The best ``limit`` passages, none repeating another: not the same document part (a Section
    and its Chunk, a re-ingested copy) and not the same text, nor text inside a passage kept
    before it (a chunk of a section already given)."""
    kept: list[tuple[float, Passage]] = []
    parts: set[str] = set()
    texts: list[str] = []
    for cover, passage in ranked:
        text = normalised(passage.text)
        if not text or passage.part in parts or any(text in t or t in text for t in texts):
            continue
        kept.append((cover, passage))
        parts.add(passage.part)
        texts.append(text)
        if len(kept) == limit:
            break
    return kept


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def content_words(text: str) -> list[str]:
    seen: list[str] = []
    for w in _words(text):
        if w not in STOP_WORDS and len(w) > 1 and w not in seen:
            seen.append(w)
    return seen


SUFFIXES = ("ments", "ment", "ings", "ing", "ed", "es", "s", "e")


def stem(word: str) -> str:
    """The word without one common English ending (baking/bake, payment/pay), when three letters stay."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def same_word(a: str, b: str) -> bool:
    """Equal, or one inflection of the other (open/opening, cake/cakes, deliver/delivery, bake/baking)."""
    if a == b or stem(a) == stem(b):
        return True
    if min(len(a), len(b)) < 4:
        return False
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= max(4, min(len(a), len(b)) - 1)


def coverage(question: list[str], passage: str) -> float:
    """The share of the question's content words that the passage contains."""
    if not question:
        return 0.0
    words = set(_words(passage))
    hits = sum(1 for q in question if any(same_word(q, w) for w in words))
    return hits / len(question)


def sentences(text: str) -> list[str]:
    parts: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            parts.extend(s.strip() for s in SENTENCE_END.split(line) if s.strip())
    return parts


def trim(text: str, question: list[str], limit: int = MAX_REPLY_CHARS) -> str:
    """Whole sentences of the passage within ``limit``: all of them if they fit, else the best-matching ones in order."""
    parts = sentences(text)
    if sum(len(p) + 1 for p in parts) <= limit:
        return " ".join(parts)
    ranked = sorted(range(len(parts)), key=lambda i: (-coverage(question, parts[i]), i))
    keep: list[int] = []
    used = 0
    for i in ranked:
        if used + len(parts[i]) + 1 <= limit or not keep:
            keep.append(i)
            used += len(parts[i]) + 1
    return " ".join(parts[i] for i in sorted(keep))


def is_thanks(text: str) -> bool:
    """A message that only thanks or closes ("Thanks!", "thank you very much", "ok, bye")."""
    words = _words(text)
    return bool(words) and len(words) <= 6 and all(w in THANKS for w in words) and bool(THANKING & set(words))


def contact_in(text: str) -> str | None:
    """The email address or phone number a visitor left, if that is what the message is.

    An email anywhere counts; a phone number only in a short message (an order or invoice number
    inside a question is not a way to call someone back).
    """
    found = EMAIL.search(text)
    if found is not None:
        return found.group()
    found = PHONE.search(text)
    if found is None or len(content_words(PHONE.sub(" ", text))) > 4:
        return None
    digits = sum(c.isdigit() for c in found.group())
    return found.group().strip() if digits >= 9 or (found.group().startswith("+") and digits >= 7) else None


def is_greeting(text: str) -> bool:
    """A message that is only a greeting ("Hi", "Hello there!", "Good morning")."""
    words = _words(text)
    if not words or len(words) > 4 or words[0] not in GREETING_OPENERS or not all(w in GREETINGS for w in words):
        return False
    return words[0] != "good" or (len(words) > 1 and words[1] in {"morning", "afternoon", "evening", "day"})


def remembered_name(memory: list[str]) -> str | None:
    """The name a visitor told us in an earlier conversation (their memory's ``name:`` line)."""
    for line in memory:
        if line.startswith("name: ") and line[6:].strip():
            return line[6:].strip()[:60]
    return None


def _inputs(node: Node) -> JSONObject:
    """A Task's ``inputs`` (stored as JSON text) as a map."""
    if node is None:
        return {}
    raw = node.properties.get("inputs")
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return dict(data) if isinstance(data, Mapping) else {}


def asked_step(question: str, conversation: str | None) -> str:
    """The lead's step for a later question: what was asked, and in which conversation."""
    where = f" (in {conversation})" if conversation else ""
    return f"visitor asked{where}: {question[:400]}"


def fact_kind(question: str) -> str | None:
    """Which of the business's own facts a question asks for (its phone, email, address), if any."""
    raw = set(_words(question))
    words = set(content_words(question))
    if "name" in raw and raw & {"my", "i"}:
        return None
    for kind, vocabulary in FACT_WORDS.items():
        if words & vocabulary or (kind == "telephone" and words == {"number"}):
            if kind == "telephone" and ("me" in raw and words & {"call", "ring"}) and "your" not in raw:
                return None  # "can you call me back?" asks for a call, not for our number
            return kind
    if "where" in raw and words <= WHERE_FILLER | {"bakery", "shop"}:
        return "address"
    return None


def rank(question: str, found: list[Passage]) -> list[tuple[float, Passage]]:
    """Passages best first, each with its coverage of the question (the rule of :meth:`MemoryRunner.passages`)."""
    words = content_words(question)
    texts = [set(_words(f"{p.props.get('title', '')} {p.text}")) for p in found]
    specific = [q for q in words if q not in FILLER]
    unseen = [q for q in specific if not any(any(same_word(q, w) for w in t) for t in texts)]
    scored = []
    for p, text in zip(found, texts, strict=True):
        counted = specific or words  # filler words neither make nor break a match
        hits = sum(1 for q in counted if any(same_word(q, w) for w in text))
        cover = hits / len(counted) if counted else 0.0
        if unseen or (len(specific) >= 2 and hits < 2):
            cover = min(cover, 0.0 if unseen else cover / 2)
        scored.append(((cover, int("title" in p.props), p.score), p))
    scored.sort(key=lambda item: item[0], reverse=True)
    return [(key[0], p) for key, p in scored]


class MemoryRunner:
    """Replies from memory: the best passage in whole sentences and its source, or "I don't know"."""

    name = "memory"

    def __init__(self, host: Host) -> None:
        self.host = host
        self.min_match = AGENT_MIN_MATCH.read(host.env)
        self.product = product_name(host.env, host.plugins_dir)
        self.files = AgentFiles(host.home, host.principal.account)
        self.pending: OrderedDict[str, str] = OrderedDict()  # session -> its last unanswered question
        self.pending_lock = threading.Lock()

    def warm(self) -> None:
        """Load the embedding model before the first visitor asks."""
        embedder = self.host.embedder()
        if embedder is not None:
            embedder.embed(["hello"])

    async def run(self, session_id: str, turn: AgentTurn) -> str:
        question = (turn.text or turn.prompt).strip()
        reader = self.reader(turn)
        # what this visitor told us before (the pipeline's visitor memory), never on an owner's turn
        memory = list(turn.visitor_memory) if not turn.admin else []
        if is_greeting(question):
            name = remembered_name(memory)
            return (GREETING_AGAIN.format(name=name, product=self.product) if name
                    else GREETING.format(product=self.product))
        if is_thanks(question):
            return WELCOME
        contact = contact_in(question)
        if contact is not None:
            return await asyncio.to_thread(self.pass_on, session_id, question, contact, turn)
        if not turn.admin:
            personal = await asyncio.to_thread(self.about_them, question, memory, turn)
            if personal is not None:
                return personal
        reply = await asyncio.to_thread(self.answer, question, reader)
        with self.pending_lock:
            self.pending.pop(session_id, None)
        if reply == DONT_KNOW and not turn.admin:
            joined = await asyncio.to_thread(self.join_lead, question, turn)
            if joined is not None:
                return joined
        if reply == DONT_KNOW:
            with self.pending_lock:
                self.pending[session_id] = question
                while len(self.pending) > PENDING_MAX:
                    self.pending.popitem(last=False)
        return reply

    # ------------------------------------------------------------------ the visitor's own
    def about_them(self, question: str, memory: list[str], turn: AgentTurn) -> str | None:
        """A question about the visitor themself ("What is my name?", "Do you have my number?",
        "What did I order?"), answered from their own memory and their lead, else None."""
        words = set(_words(question))
        if not ({"my", "i", "me"} & words):
            return None
        if "name" in words and words & {"what", "whats", "s", "remember", "know", "is"}:
            name = remembered_name(memory)
            return YOUR_NAME.format(name=name) if name else NO_NAME
        if words & {"number", "phone", "email", "contact", "details", "address"} and words & {
                "have", "got", "know", "remember", "keep", "kept", "still"}:
            lead = self.lead_of(turn)
            contact = _inputs(lead).get("contact") if lead is not None else None
            return YOUR_CONTACT.format(contact=contact) if contact else NO_CONTACT
        if words & {"order", "ordered", "told", "said", "asked", "booked", "booking", "last"} and words & {
                "what", "did", "remember", "which", "when"}:
            if not memory:
                return NOTHING_TOLD
            wanted = [m for m in memory if not m.startswith("name: ")]
            return " ".join([YOU_TOLD_US, *(f"“{m}”" for m in wanted or memory)])[:MAX_REPLY_CHARS]
        return None

    def lead_of(self, turn: AgentTurn) -> Node | None:
        """This visitor's latest follow-up Task (their lead), by their visitor key, else by channel
        and sender; None when they never left a contact. Never another visitor's: the key is a hash
        of a token only their browser (or number) carries."""
        channel, sender, visitor = turn.channel, turn.sender, turn.visitor_key or ""
        if not (visitor or (channel and sender)):
            return None
        rows = self.host.store().find(guards=self.host.principal.guards, labels=["Task"],
                                      where={"kind": "follow-up"}, limit=LEAD_SCAN)
        mine = []
        for node in rows:
            inputs = _inputs(node)
            if not inputs.get("contact"):
                continue
            if (visitor and inputs.get("visitorKey") == visitor) or (
                    channel and sender and inputs.get("channel") == channel and inputs.get("sender") == sender):
                mine.append(node)
        mine.sort(key=lambda n: str(n.properties.get("startedAt") or ""))
        return mine[-1] if mine else None

    def join_lead(self, question: str, turn: AgentTurn) -> str | None:
        """A visitor whose contact the team has: the unanswered question joins their open lead (a
        step ``visitor asked …`` naming the conversation), or opens a new lead with that contact
        when the last one is done; the visitor is told where the team will answer. None when the
        team has no contact of theirs."""
        lead = self.lead_of(turn)
        if lead is None:
            return None
        inputs = _inputs(lead)
        contact = str(inputs["contact"])
        conversation = self.conversation_of(turn.channel, turn.sender)
        if str(lead.properties.get("status")) in ("done", "failed", "cancelled"):
            self.open_lead(question, contact, question, turn, conversation, outcome="joined-new")
        else:
            try:
                self.call_task_tool("work-update", {"taskId": lead.id, "step": asked_step(question, conversation)})
            except Exception as exc:  # the question must still reach a person: say so loudly
                log("channels", "op=follow-up-failed", reason=str(exc).splitlines()[0][:200] if str(exc) else
                    type(exc).__name__)
                raise RunnerError(f"follow-up-failed: {exc}") from None
            log("channels", "op=follow-up", outcome="joined", task=lead.id[5:13],
                conversation=(conversation or "")[5:13] or None)
        return JOINED.format(contact=contact)

    def call_task_tool(self, name: str, args: JSONObject) -> JSON:
        owners = [c.plugin for c in self.host.collect(hooks.TOOLS) if c.item.name == name]
        if not owners:
            raise RunnerError(f"not-configured: no plugin serves {name}")
        return self.host.call_tool(owners[0], name, args)

    def pass_on(self, session_id: str, message: str, contact: str, turn: AgentTurn) -> str:
        """The visitor left a way to reach them: the question they asked before goes to the team as a
        follow-up Task (``work-create``, admin scope) with the contact (and the visitor's key, so
        their later questions join it), linked to the visitor's Conversation (``conversationId``,
        ``RAISED_DURING``) so the team can read what was said; the visitor is told so. A visitor
        with an open lead already has their question and new contact added to it."""
        with self.pending_lock:
            question = self.pending.pop(session_id, None)
        conversation = self.conversation_of(turn.channel, turn.sender)
        lead = self.lead_of(turn)
        if lead is not None and str(lead.properties.get("status")) not in ("done", "failed", "cancelled"):
            try:
                if question:
                    self.call_task_tool("work-update", {"taskId": lead.id,
                                                        "step": asked_step(question, conversation)})
                self.call_task_tool("work-update", {"taskId": lead.id, "step": f"visitor left a contact: {contact}"})
            except Exception as exc:
                log("channels", "op=follow-up-failed", reason=str(exc).splitlines()[0][:200] if str(exc) else
                    type(exc).__name__)
                raise RunnerError(f"follow-up-failed: {exc}") from None
            log("channels", "op=follow-up", outcome="joined", task=lead.id[5:13],
                conversation=(conversation or "")[5:13] or None)
        else:
            self.open_lead(question, contact, message, turn, conversation,
                           outcome="passed-on" if question else "noted")
        return (PASSED_ON if question else NOTED).format(contact=contact)

    def open_lead(self, question: str | None, contact: str, message: str, turn: AgentTurn,
                  conversation: str | None, *, outcome: str) -> None:
        inputs = {"question": question or message, "contact": contact, "message": message,
                  "channel": turn.channel, "sender": turn.sender}
        if turn.visitor_key:
            inputs["visitorKey"] = turn.visitor_key
        try:
            args: JSONObject = {"kind": "follow-up", "title": f"Answer a visitor: {(question or message)[:120]}",
                                    "inputs": inputs}
            if conversation is not None:
                args["conversationId"] = conversation
            self.call_task_tool(FOLLOW_UP_TOOL, args)
        except Exception as exc:  # the visitor's contact must still reach a person: the log says it loudly
            log("channels", "op=follow-up-failed", reason=str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
            raise RunnerError(f"follow-up-failed: {exc}") from None
        log("channels", "op=follow-up", outcome=outcome, channel=inputs["channel"],
            conversation=(conversation or "")[5:13] or None)

    def conversation_of(self, channel: str, sender: str) -> str | None:
        """The stored Conversation of this channel and sender, or None (webchat stores it from the
        visitor's second message on; a turn run outside the gateway has none)."""
        account = self.host.principal.account
        if not (account and channel and sender):
            return None
        conv = resolve_conversation_id(self.host.store(), conversation_secret(self.host.home, account), account,
                                       channel, sender)
        return conv if self.host.store().get(conv, guards=self.host.principal.guards) is not None else None

    @staticmethod
    def reader(turn: AgentTurn) -> Principal:
        """Who reads the business's knowledge for ``turn``: an admin's turn its own principal (the
        whole account), a visitor's the account's public visitor (public memory only, confined to no
        conversation: an answer comes from knowledge, never from what a visitor said)."""
        return turn.principal if turn.admin else turn.principal.visitor()

    def answer(self, question: str, principal: Principal) -> str:
        """The reply to ``question`` from what ``principal`` may read (:meth:`reader`)."""
        words = content_words(question)
        if not principal.is_admin and words:
            curated = self.from_knowledge(question)
            if curated is not None:
                return curated
        kind = fact_kind(question)
        if kind is not None:
            fact = self.fact(kind, question, principal)
            if fact is not None:
                return fact
        ranked = self.passages(question, principal) if words else []
        match = ranked[0][0] if ranked else 0.0
        if not ranked or match < self.min_match:
            log("channels", "op=memory-answer", outcome="dont-know", match=round(match, 2))
            return DONT_KNOW
        chosen = ranked[0][1]
        log("channels", "op=memory-answer", outcome="answer", match=round(match, 2), source=chosen.node_id)
        return f"{trim(chosen.text, words)}\n{SOURCE.format(source=chosen.source)}"

    def fact(self, kind: str, question: str, principal: Principal) -> str | None:
        """The business's own phone, email or address: its entity's field (``telephone``, ``email``,
        ``address``), else the first stored sentence that holds one, as ``principal`` reads them;
        None when memory holds none."""
        store = self.host.store()
        for label in BUSINESS_LABELS:
            for node in store.find(guards=principal.guards, labels=[label], limit=5):
                value = node.properties.get(kind)
                if isinstance(value, Mapping):
                    value = ", ".join(str(v) for v in value.values() if v)
                if isinstance(value, str) and value.strip():
                    log("channels", "op=memory-answer", outcome="fact", kind=kind, source=node.id)
                    name = str(node.properties.get("name") or node.id)
                    return f"{FACT_LINES[kind].format(value=value.strip())}\n{SOURCE.format(source=name)}"
        pattern = {"telephone": PHONE, "email": EMAIL, "address": ADDRESS}[kind]
        probe = {"telephone": "phone telephone call", "email": "email", "address": "address street located"}[kind]
        for text in (question, probe):
            for hit in self.search(text, principal):
                p = Passage.of(hit)
                if set(p.labels) & NOT_KNOWLEDGE or not p.text:
                    continue
                for sentence in sentences(p.text):
                    if pattern.search(sentence) and (kind != "telephone" or contact_in(
                            pattern.search(sentence).group()) is not None):  # type: ignore[union-attr]
                        log("channels", "op=memory-answer", outcome="fact", kind=kind, source=p.node_id)
                        return f"{sentence}\n{SOURCE.format(source=p.source)}"
        return None

    def from_knowledge(self, question: str) -> str | None:
        """The best paragraph of the public agent's KNOWLEDGE.md, when it answers the question."""
        found = [Passage(("Knowledge",), f"KNOWLEDGE.md#{i}", 0.0,
                         {"title": f"{piece.title} {piece.heading}".strip(), "body": piece.text,
                          "path": json.dumps([piece.source])})
                 for i, piece in enumerate(self.files.knowledge())]
        ranked = rank(question, found)
        if not ranked or ranked[0][0] < self.min_match:
            return None
        cover, chosen = ranked[0]
        log("channels", "op=memory-answer", outcome="answer", match=round(cover, 2), source=chosen.node_id,
            **{"from": "knowledge"})
        return f"{trim(chosen.text, content_words(question))}\n{SOURCE.format(source=chosen.source)}"

    def passages(self, question: str, principal: Principal) -> list[tuple[float, Passage]]:
        """Knowledge passages for the question as ``principal`` reads them, best first, with their coverage.

        A passage answers only when it covers enough of the question's content words *and* is not a
        match on one incidental word: with two content words or more it holds at least two of them,
        and a specific word of the question that no candidate passage holds at all ("nut-free
        cakes" where memory knows no nuts) means memory does not know."""
        found = [p for p in map(Passage.of, self.search(question, principal))
                 if not set(p.labels) & NOT_KNOWLEDGE and p.text]
        return rank(question, found)

    def search(self, question: str, principal: Principal) -> list[MemoryHit]:
        """The question searched as ``principal`` (:meth:`reader`: the sender's)."""
        if not self.host.has_implementations(hooks.MEMORY_SEARCH):
            raise RunnerError("not-configured: no plugin searches memory (is the memory plugin disabled?)")
        return self.host.memory_search(question[:1000], principal, limit=SEARCH_LIMIT)
