"""Facts that change over time: the rule-based statements of a single-valued state (docs/graph.md#facts-over-time).

Where someone lives, works, who they are married to, what they drive, their phone number and
favourites, who owns or manages a place, what a thing costs: each subject holds one value at a
time, so a later statement of a new value closes the old one (:func:`single_valued`; the closing
itself is :mod:`.graph`'s). This module only reads statements, per clause of a sentence:

* **subject first**: "I live in Lisbon", "Kenji has relocated to Sapporo", "I now work at Blue
  Harbor Labs", "I've been living in Valencia", "I'm driving a Volvo now"; a clause without a
  subject of its own ("..., and joined Globex") carries the sentence's;
* **possessives**: "my (new) phone number is ...", "Eva's favourite food is now tacos",
  "Lucia's husband is Marco";
* **places and things**: "Marta Silva now owns Casa Mar", "the Blue Door bakery is owned by ...",
  "Felix is the new manager of the Harbour Hotel", "Rita took over as manager of the support
  team", "the espresso now costs €1.80", "the price of the monthly pass went up to €45";
* **endings**: "I no longer work at Initech", "I left Acme Corp", "moved out of Lisbon", "divorced
  Arjun": an ended fact (object :data:`ENDED`) closes the current one without a new value, and is
  dropped when the same turn states a new value of the same subject and predicate.

"I", "we", "me" and "my" are the speaker. Pure and bounded like :mod:`.extract`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ENDED = "(ended)"
"""The object of a fact that only ends the current one ("I no longer live in Seville")."""
SINGLE_VALUED_PREDICATES = frozenset({"livesIn", "worksAt", "marriedTo", "drives", "phoneNumber", "email", "address",
                                      "ownedBy", "managedBy", "price", "name"})
MAX_STATES = 8

_SPEAKER = frozenset({"i", "i'm", "i've", "we", "we're", "we've", "me", "my"})
_ADVERBS = r"(?:(?:now|currently|just|finally|recently|also|still|officially|actually|have|has|had|'ve|been|will|then)\s+)*"
_NAME = r"(?:[A-Z][\w'’\-]{0,30}(?:\s+[A-Z][\w'’\-]{0,30}){0,2})"
_SUBJECT = re.compile(rf"^\s*(?:(?:then|so|also|now|and)\s+)?(?P<subj>I'm|I've|I|we're|we've|[Ww]e|{_NAME})\s+")
_NOT_SUBJECT = frozenset("""the a an this that these those it there here they he she you what who where when why how after
before then so but and or if because big good great well oh yes no ok sorry thanks news""".split())

# predicate, pattern at the start of a clause (after its subject and adverbs), whether it only ends the current value
_VERB_PHRASES: tuple[tuple[str, str, bool], ...] = (
    ("livesIn", r"(?:no longer|don't|doesn't|do not|does not) (?:live|lives) in", True),
    ("livesIn", r"moved (?:out of|away from)", True),
    ("livesIn", r"(?:live|lives|living|reside|resides|residing|'m living|am living|is living|are living|'re living)"
                r" in", False),
    ("livesIn", r"(?:moved|moving|relocated|relocating|'m moving|am moving|is moving) (?:back )?to", False),
    ("livesIn", r"(?:(?:'m|am|is|are|'re) )?(?:now )?(?:based|settled) in", False),
    ("livesIn", r"settled (?:down )?in", False),
    ("worksAt", r"(?:no longer|don't|doesn't|do not|does not) (?:work|works) (?:at|for)", True),
    ("worksAt", r"(?:left|quit) (?:my job at |her job at |his job at |their job at )?(?=[A-Z])", True),
    ("worksAt", r"(?:work|works|working|'m working|am working|is working|'re working) (?:at|for)", False),
    ("worksAt", r"(?:joined|joining|'ve joined|has joined)", False),
    ("worksAt", r"started (?:working |a new job )?at", False),
    ("worksAt", r"(?:got|took|accepted|landed|started) a (?:new )?job (?:at|with)", False),
    ("worksAt", r"(?:is|am|'m|are|'re) (?:now )?employed (?:by|at)", False),
    ("marriedTo", r"divorced", True),
    ("marriedTo", r"(?:(?:'m|am|is|are|'re|got|get|getting) )?(?:now )?married to", False),
    ("marriedTo", r"married", False),
    ("drives", r"(?:drive|drives|driving|'m driving|am driving|is driving|are driving) (?:a|an|the)", False),
    ("drives", r"sold (?:my|his|her|their|our) car", True),
)
_VERB = re.compile(_ADVERBS + "(?:" + "|".join(f"(?P<v{i}>{p})" for i, (_, p, _) in enumerate(_VERB_PHRASES)) + r")\s*"
                   r"(?P<obj>[^,;:!?\n]*)")
_BOUGHT_CAR = re.compile(_ADVERBS + r"(?:bought|got) (?:a|an) (?:new )?(?:car, (?:a|an) )?(?P<obj>[^,;:!?\n]*)")
_CAR = re.compile(r"\bcar\b", re.I)

_THINGS = {"wife": "marriedTo", "husband": "marriedTo", "spouse": "marriedTo", "phone number": "phoneNumber",
           "mobile number": "phoneNumber", "number": "phoneNumber", "phone": "phoneNumber", "car": "drives",
           "email": "email", "email address": "email", "address": "address", "name": "name"}
_POSSESSIVE = re.compile(r"(?:(?<![\w'’])(?P<my>[Mm]y)|(?P<owner>[A-Z][\w\-]{0,30})(?:'s|’s))\s+(?:new\s+|current\s+)?"
                         r"(?P<thing>favou?rite\s+[a-z]+|phone number|mobile number|email address|number|phone|wife|"
                         r"husband|spouse|car|email|address|name)\s+is\s+(?:now\s+)?(?P<obj>[^,;!?\n]{1,80})")
_WHO = r"(?P<who>(?:the\s+)?[A-Z][\w'’\-]{0,30}(?:\s+[A-Z][\w'’\-]{0,30}){0,2})"
_ITEM = (r"(?:[Tt]he\s+|[Oo]ur\s+|[Mm]y\s+)?(?P<item>(?:(?!(?:now|is|are|was|were|costs?|went|has|had|the)\b)"
         r"[A-Za-z][\w'’\-]{0,40}\s+){0,3}(?!(?:now|is|are|was|were|costs?|the)\b)[A-Za-z][\w'’\-]{0,40})")
_MONEY = r"(?P<money>[€$£]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:euros?|dollars?|pounds?|EUR|USD|GBP)\b)"
_ROLE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((p, re.compile(r)) for p, r in (
    ("ownedBy", rf"{_WHO}\s+(?:now\s+)?owns\s+{_ITEM}"),
    ("ownedBy", rf"{_ITEM}\s+is\s+(?:now\s+)?owned\s+by\s+{_WHO}"),
    ("ownedBy", rf"\b(?:the\s+)?(?:new\s+)?owner\s+of\s+{_ITEM}\s+is\s+(?:now\s+)?{_WHO}"),
    ("ownedBy", rf"{_WHO}\s+is\s+(?:now\s+)?the\s+(?:new\s+)?owner\s+of\s+{_ITEM}"),
    ("managedBy", rf"{_WHO}\s+(?:now\s+)?(?:manages|runs)\s+{_ITEM}"),
    ("managedBy", rf"{_ITEM}\s+is\s+(?:now\s+)?(?:managed|run)\s+by\s+{_WHO}"),
    ("managedBy", rf"\b(?:the\s+)?(?:new\s+)?manager\s+of\s+{_ITEM}\s+is\s+(?:now\s+)?{_WHO}"),
    ("managedBy", rf"{_WHO}\s+(?:is\s+(?:now\s+)?the\s+(?:new\s+)?|took\s+over\s+as\s+(?:the\s+)?(?:new\s+)?|"
                  rf"became\s+(?:the\s+)?(?:new\s+)?)manager\s+of\s+{_ITEM}"),
    ("price", rf"\bprice\s+of\s+{_ITEM}\s+(?:is\s+(?:now\s+)?|went\s+up\s+to\s+|rose\s+to\s+|dropped\s+to\s+|"
              rf"fell\s+to\s+|went\s+down\s+to\s+|increased\s+to\s+|is\s+up\s+to\s+){_MONEY}"),
    ("price", rf"{_ITEM}\s+(?:now\s+)?costs?\s+(?:now\s+)?{_MONEY}"),
    ("price", rf"{_ITEM}\s+(?:is|are)\s+now\s+{_MONEY}"),
))
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n+")
_CLAUSE = re.compile(r",\s*|;\s*|\s+(?:and|but|so)\s+")
_OBJ_END = re.compile(r"\s(?:and|but|because|so|which|who|when|while|after|before|since|though|then|with|at|on|from|"
                      r"in|for|near|to|as|where|there|yesterday|today|tonight|tomorrow|last|next|this|every|ago|again|"
                      r"too|now|already|soon|anymore|for good|these days)\b", re.I)
_ARTICLE = re.compile(r"^(?:(?:a|an|the|my|our|his|her|their|new|brand new)\s+)+", re.I)


@dataclass(frozen=True)
class State:
    """One statement of a state: ``subject`` (already resolved from "I" / "we"), ``predicate``,
    ``object`` (:data:`ENDED` for an ending)."""

    subject: str
    predicate: str
    object: str


def single_valued(predicate: str) -> bool:
    """Whether a subject holds one object of ``predicate`` at a time (a new one closes the old)."""
    return predicate in SINGLE_VALUED_PREDICATES or predicate.startswith("favourite")


def thing_predicate(thing: str) -> str:
    """``favourite colour`` → ``favouriteColour``, ``phone number`` → ``phoneNumber``, ``wife`` → ``marriedTo``."""
    thing = " ".join(thing.casefold().replace("favorite", "favourite").split())
    if thing in _THINGS:
        return _THINGS[thing]
    words = thing.split()
    return words[0] + "".join(w.capitalize() for w in words[1:])


def clean_object(raw: str) -> str:
    """The object's words: cut at the next conjunction, preposition or time word, articles dropped, at most six."""
    raw = _OBJ_END.split(" " + raw.strip() + " ", maxsplit=1)[0].strip()
    raw = _ARTICLE.sub("", raw)
    return " ".join(raw.split()[:6]).strip(" '\"’.")


def _subject(raw: str, speaker: str | None) -> str | None:
    low = raw.casefold().replace("’", "'")
    if low in _SPEAKER:
        return speaker
    if low.split()[0] in _NOT_SUBJECT:
        return None
    return raw


def _clause_states(clause: str, sentence: str, carried: str | None, speaker: str | None) -> tuple[list[State], str | None]:
    out: list[State] = []
    for predicate, rule in _ROLE_RULES:
        m = rule.search(clause)
        if m:
            obj = m.group("money") if predicate == "price" else clean_object(m.group("who"))
            item = _ARTICLE.sub("", m.group("item"))
            if obj and item:
                out.append(State(item, predicate, obj))
            return out, carried
    subject = carried
    rest = clause
    s = _SUBJECT.match(clause)
    if s:
        named = _subject(s.group("subj"), speaker)
        if named is not None or s.group("subj").casefold().split()[0] in _NOT_SUBJECT:
            subject, rest = named, clause[s.end():]
    if subject:
        v = _VERB.match(rest)
        if v:
            i = next(i for i in range(len(_VERB_PHRASES)) if v.group(f"v{i}") is not None)
            predicate, pattern, ended = _VERB_PHRASES[i]
            obj = ENDED if ended else clean_object(v.group("obj"))
            if predicate == "worksAt" and obj != ENDED and not obj[:1].isupper() and pattern.startswith("(?:joined"):
                obj = ""  # "joined the gym": a job only when it names an employer
            if obj:
                out.append(State(subject, predicate, obj))
        elif _CAR.search(sentence):
            b = _BOUGHT_CAR.match(rest)
            if b and (obj := clean_object(b.group("obj"))):
                out.append(State(subject, "drives", obj))
    return out, subject


def _possessives(text: str, speaker: str | None) -> list[State]:
    out: list[State] = []
    for m in _POSSESSIVE.finditer(text):
        subject = speaker if m.group("my") else m.group("owner")
        obj = clean_object(m.group("obj"))
        if subject and obj and not re.match(r"(?:on|in|at|the same|still)\b", obj, re.I):
            out.append(State(subject, thing_predicate(m.group("thing")), obj))
    return out


def states(text: str, speaker: str | None = None) -> list[State]:
    """The state statements of ``text``, at most :data:`MAX_STATES`; an ending is left out when the
    same text states a new value for that subject and predicate."""
    found: list[State] = []
    for sentence in _SENTENCE.split(text):
        found += _possessives(sentence, speaker)
        carried: str | None = None
        for clause in _CLAUSE.split(sentence):
            if clause.strip():
                got, carried = _clause_states(clause, sentence, carried, speaker)
                found += got
    valued = {(s.subject.casefold(), s.predicate) for s in found if s.object != ENDED}
    out: list[State] = []
    for s in found:
        if s.object == ENDED and (s.subject.casefold(), s.predicate) in valued:
            continue
        if s not in out:
            out.append(s)
    return out[:MAX_STATES]
