"""Rule-based extraction of what a turn names: its speaker, names, places, dates, numbers, codes
and simple subject–predicate–object facts (docs/graph.md#entities).

What was chosen, and why: plain regular expressions and small word lists written here, no
statistical model. The maintained NLP libraries that find entities well (spaCy, Stanza, flair)
need model files of tens to hundreds of megabytes fetched at install or run time, which an offline
install cannot do and which would cost more per turn than the whole write; the packaged
gazetteers on PyPI (country and city lists) would add a dependency for one kind of entity that a
rule already catches in conversation ("in Lisbon", "to Kyoto", "from Oslo"). So:

* **speaker**: the turn's ``senderName`` / ``sender`` (never the bare role), kind ``person``;
* **names**: runs of capitalised words not at the start of a sentence (connectors such as
  "of", "de", "&" may join them), or at the start when they are a known speaker; a name right
  after ``in``/``to``/``from``/``at``/``near``/``visit(ed)`` is a ``place``, one equal to a known
  speaker a ``person``, any other a ``name``;
* **dates**: ISO dates, "4 March 2025", "March 4, 2025", "March 2025", "in March" (the turn's
  year), a bare year, and dates relative to the turn's time ("yesterday", "last week",
  "next month", "3 days ago", "last Friday"), normalised to ISO (``2025-03-04``, ``2025-03``,
  ``2025-W10``, ``2025``; a month without a known year is ``--03``);
* **numbers** with a unit or a currency ("42 km", "1,250 euros", "€30") and **codes**: letter
  and digit identifiers joined by hyphens (``ORD-2025-0042``), flight-style codes (``TP 1234``),
  versions (``3.12``) and digit codes ending in ``#``;
* **facts**: "<subject> <verb phrase> <object>" for a short list of verb phrases (lives in,
  moved to, works at, started, bought, adopted, named, likes / loves, got, "my <thing> is"),
  "I", "we", "me" and "my" resolved to the speaker; the object is the words up to the next
  punctuation or conjunction, at most six.

Every function is pure and bounded: the text is cut at :data:`MAX_TEXT` characters and a turn
yields at most :data:`MAX_MENTIONS` mentions and :data:`MAX_FACTS` facts, whatever it holds.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from plughost.plugins.memory.entities.states import ENDED, SINGLE_VALUED_PREDICATES, single_valued, states

MAX_TEXT = 20_000
MAX_MENTIONS = 40
MAX_FACTS = 8
MAX_NAME_WORDS = 5
MAX_KEY_CHARS = 120
KINDS = ("person", "place", "date", "number", "code", "name")

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH_ABBR = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"sept": 9}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_PLACE_WORDS = frozenset({"in", "to", "from", "at", "near", "visit", "visited", "visiting", "around", "across"})
_WORK_WORDS = frozenset({"work", "works", "worked", "working", "job", "employed", "intern", "interning"})
_CONNECTORS = frozenset({"of", "de", "da", "del", "van", "von", "la", "le", "&"})
_FUNCTION_WORDS = frozenset("""
a about after all also am an and any are as at be because been before being both but by can could did do does
each few for from had has have he her here hers him his how i i'd i'll i'm i've if in into is it it's its let's
me more most my no nor not of off on once only or other our out over own same she should so some such than that
the their them then there these they this those through to too under until up very was we we'd we'll we're
we've were what when where which while who whom why will with would you you'd you'll you're you've your
""".split())
"""Function words: capitalised at the start of a sentence, never a name."""
_NOT_NAMES = _FUNCTION_WORDS | frozenset(MONTHS) | frozenset(WEEKDAYS) | frozenset("""
yes no ok okay oh hey hi hello thanks thank sure well wow yeah yep nope haha lol great good nice cool
please sorry maybe honestly actually also anyway big just so what which who how when where why
today tomorrow yesterday tonight mr mrs ms dr
""".split())
_UNITS = {
    "km": "km", "kms": "km", "kilometre": "km", "kilometres": "km", "kilometer": "km", "kilometers": "km",
    "mile": "mile", "miles": "mile", "m": "m", "metre": "m", "metres": "m", "meter": "m", "meters": "m",
    "kg": "kg", "kilo": "kg", "kilos": "kg", "g": "g", "lb": "lb", "lbs": "lb", "pound": "lb", "pounds": "lb",
    "euro": "eur", "euros": "eur", "eur": "eur", "dollar": "usd", "dollars": "usd", "usd": "usd",
    "gbp": "gbp", "%": "%", "percent": "%", "hour": "hour", "hours": "hour", "minute": "minute",
    "minutes": "minute", "night": "night", "nights": "night", "day": "day", "days": "day", "week": "week",
    "weeks": "week", "month": "month", "months": "month", "year": "year", "years": "year",
    "people": "people", "guests": "people", "times": "times", "k": "k",
}
_CURRENCY = {"€": "eur", "$": "usd", "£": "gbp"}

_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n+")
_WORD = re.compile(r"[^\W_][\w'’\-]*|&")
_ISO = re.compile(r"\b(\d{4})-(\d{2})(?:-(\d{2}))?\b")
_MONTH_NAMES = "|".join([*MONTHS, *sorted(_MONTH_ABBR, key=len, reverse=True)])
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\.?(?:,?\s+(\d{{4}}))?\b", re.I)
_MONTH_DAY = re.compile(rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({'|'.join(MONTHS)})\s+(\d{{4}})\b", re.I)
_IN_MONTH = re.compile(rf"\b(?:in|since|until|by|last|next|this|early|late|mid|end of|of)\s+({'|'.join(MONTHS)})\b",
                       re.I)
_YEAR = re.compile(r"\b(?:in|since|until|by|of|from)\s+((?:19|20)\d{2})\b", re.I)
_RELATIVE = re.compile(r"\b(yesterday|today|tonight|tomorrow|this morning|this evening|"
                       r"(?:last|next|this) (?:week|month|year|weekend)|"
                       rf"(?:last|next|this) ({'|'.join(WEEKDAYS)})|"
                       r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten) (day|week|month|year)s? ago)\b",
                       re.I)
_NUMBER_UNIT = re.compile(r"(?<![\w.-])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s?(%|[A-Za-z]+)\b")
_CURRENCY_NUMBER = re.compile(r"([€$£])\s?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)")
_CODE_HYPHEN = re.compile(r"(?<![\w/-])(?=[A-Za-z0-9-]{0,60}[A-Za-z])(?=[A-Za-z0-9-]{0,60}\d)"
                          r"[A-Za-z0-9]{1,20}(?:[-/][A-Za-z0-9]{1,20}){1,5}(?![\w/-])")
_CODE_FLIGHT = re.compile(r"\b([A-Z]{2})\s?(\d{2,4})\b")
_CODE_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)*)(?![\w.]*\d)\b")
_CODE_HASH = re.compile(r"(?<!\w)(\d{3,})#")
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10}

_BREAK = (r"\s(?:and|but|because|so|which|who|when|while|after|before|since|though|then|with|at|on|from|in|for|near|"
          r"yesterday|today|tonight|tomorrow|last|next|this|every|ago|again|too|now|already|soon|anymore)\b")
_SUBJECT = r"(?P<subj>I|I'm|I've|we|We|we're|we've|[A-Z][\w'’\-]{1,30}(?:\s[A-Z][\w'’\-]{1,30})?)(?![\w'’\-])"
_PREDICATES: tuple[tuple[str, str], ...] = (
    (r"(?:live|lives|lived|living|am living|are living)\s+in", "livesIn"),
    (r"(?:moved|moving|am moving|are moving|relocated|relocating|move)\s+to", "livesIn"),
    (r"(?:work|works|worked|working|am working)\s+(?:at|for)", "worksAt"),
    (r"(?:joined|joining|started at|start at|starts at)", "joined"),
    (r"(?:started|start|starts|began|begin)", "started"),
    (r"(?:bought|buy|purchased|ordered)", "bought"),
    (r"(?:adopted|adopt)", "adopted"),
    (r"(?:named|called)\s+(?:him|her|it|them|the\s+\w+)?", "named"),
    (r"(?:like|likes|liked|love|loves|loved|enjoy|enjoys|adore)", "likes"),
    (r"(?:got|get|received)", "got"),
)
_FACT = re.compile(rf"(?<![\w'’\-]){_SUBJECT}\s+(?:(?:really|just|finally|also|recently|have|has|had|will|'ve|just)\s+)*"
                   rf"(?P<pred>{'|'.join(f'(?P<p{i}>{p})' for i, (p, _) in enumerate(_PREDICATES))})\s+"
                   rf"(?P<obj>(?:(?!{_BREAK})[^.,;:!?\n]){{1,120}})")
_CONTINUED = re.compile(rf"(?:\band|,)\s+(?:(?:then|later|also|finally|eventually)\s+)?"
                        rf"(?P<pred>{'|'.join(f'(?P<p{i}>{p})' for i, (p, _) in enumerate(_PREDICATES))})\s+"
                        rf"(?P<obj>(?:(?!{_BREAK})[^.,;:!?\n]){{1,120}})")
_MY_IS = re.compile(r"(?<![\w'’])[Mm]y\s+(?P<thing>(?:favou?rite\s+)?[a-z]+)\s+(?:is|was)\s+(?P<obj>[^.,;:!?\n]{1,120})")
_OBJ_STOP = re.compile(_BREAK, re.I)
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+|www\.\S+")
_ARTICLE = re.compile(r"^(?:(?:as|a|an|the|my|our|his|her|their|some|new)\s+)+", re.I)
SINGLE_VALUED = SINGLE_VALUED_PREDICATES
"""Predicates a subject holds one object of at a time: a new object closes the old fact (validTo);
every ``favourite...`` too (:func:`~.states.single_valued`)."""
_SPEAKER_WORDS = frozenset({"i", "i'm", "i've", "we", "we're", "we've", "me", "my"})


@dataclass(frozen=True)
class Mention:
    """One thing a text names: its ``kind``, its surface ``name`` and its normalised ``key``."""

    kind: str
    name: str
    key: str


@dataclass(frozen=True)
class Triple:
    """A subject–predicate–object fact, with the subject's and object's keys."""

    subject: str
    predicate: str
    object: str
    subject_key: str
    object_key: str

    @property
    def single_valued(self) -> bool:
        return single_valued(self.predicate)


@dataclass
class Extraction:
    mentions: list[Mention] = field(default_factory=list)
    facts: list[Triple] = field(default_factory=list)

    def add(self, kind: str, name: str, key: str | None = None) -> None:
        key = normalise(name) if key is None else key
        if not key or len(self.mentions) >= MAX_MENTIONS:
            return
        if any(m.key == key and m.kind == kind for m in self.mentions):
            return
        self.mentions.append(Mention(kind, name.strip()[:MAX_KEY_CHARS], key))


def normalise(text: str) -> str:
    """The key a name is matched by: NFKC, casefolded, possessive and edge punctuation stripped,
    a leading "the" dropped, whitespace collapsed, at most :data:`MAX_KEY_CHARS` characters."""
    s = unicodedata.normalize("NFKC", str(text)).replace("’", "'").casefold()
    s = " ".join(s.split())
    s = re.sub(r"'s\b|(?<=s)'(?=\s|$)", "", s)
    s = re.sub(r"^[\W_]+|[\W_]+$", "", s)
    s = re.sub(r"^the\s+", "", s)
    return s[:MAX_KEY_CHARS]


def _cap(word: str) -> bool:
    return word[:1].isupper() and not word.isdigit()


def _name_word(word: str) -> bool:
    """A capitalised word that is no common capitalised word (``_NOT_NAMES``)."""
    return _cap(word) and normalise(word) not in _NOT_NAMES


def _run_end(sentence: str, words: list[tuple[str, int]], ends: list[int], i: int) -> int:
    """The index of the last word of the name starting at word ``i``: capitalised words joined by
    nothing but spaces, or by a connector ("of", "de") between two of them."""
    def joined(j: int) -> bool:  # no comma, dash or other mark between word j and the next: one name
        return not sentence[ends[j]:words[j + 1][1]].strip()
    j, size = i, 1
    while j + 1 < len(words) and size < MAX_NAME_WORDS and joined(j):
        nxt = words[j + 1][0]
        if _name_word(nxt):
            j, size = j + 1, size + 1
        elif nxt.casefold() in _CONNECTORS and j + 2 < len(words) and joined(j + 1) and _name_word(words[j + 2][0]):
            j, size = j + 2, size + 2
        else:
            break
    return j


def _name_kind(words: list[tuple[str, int]], i: int, key: str, known: frozenset[str]) -> str:
    """person (a known name), place (after "in", "from"...) or name, by the words before word ``i``."""
    prev = words[i - 1][0].casefold() if i > 0 else ""
    if prev == "the" and i > 1:
        prev = words[i - 2][0].casefold()
    before = words[i - 2][0].casefold() if i > 1 else ""
    at_work = prev in ("at", "for") and before in _WORK_WORDS  # "works at Google": an employer, not a place
    return "person" if key in known else "place" if prev in _PLACE_WORDS and not at_work else "name"


def _names(sentence: str, known: frozenset[str], out: Extraction, *, at_start: bool) -> None:
    words = [(m.group(), m.start()) for m in _WORD.finditer(sentence)]
    ends = [m.end() for m in _WORD.finditer(sentence)]
    i = 0
    while i < len(words) and len(out.mentions) < MAX_MENTIONS:
        word, _ = words[i]
        if not _cap(word) or (normalise(word) in _NOT_NAMES and normalise(word) not in known):
            i += 1
            continue
        j = _run_end(sentence, words, ends, i)
        name = " ".join(w for w, _ in words[i:j + 1])
        key = normalise(name)
        if i == 0 and not at_start and key not in known and j == i:
            i = j + 1
            continue  # a capitalised first word of a sentence is most often just a word
        out.add(_name_kind(words, i, key, known), name, key)
        i = j + 1


def _month_key(month: int, year: int | None) -> str:
    return f"{year:04d}-{month:02d}" if year else f"--{month:02d}"


def _month_of(name: str) -> int:
    low = name.casefold().rstrip(".")
    return MONTHS.index(low) + 1 if low in MONTHS else _MONTH_ABBR.get(low[:4] if low == "sept" else low[:3], 0)


def _week_key(day: datetime) -> str:
    year, week, _ = day.isocalendar()
    return f"{year:04d}-W{week:02d}"


def _add_months(at: datetime, delta: int) -> tuple[int, int]:
    index = at.year * 12 + at.month - 1 + delta
    return index // 12, index % 12 + 1


def _day_key(m: re.Match[str], month_group: int, day_group: int, when: datetime | None) -> str | None:
    """A day-and-month match's key (``YYYY-MM-DD``, or ``--MM-DD`` with no year known), None when no date."""
    month, day = _month_of(m.group(month_group)), int(m.group(day_group))
    year = int(m.group(3)) if m.group(3) else (when.year if when else None)
    if not month or not 1 <= day <= 31:
        return None
    return f"{year:04d}-{month:02d}-{day:02d}" if year else f"--{month:02d}-{day:02d}"


def _weekday_key(phrase: str, weekday: str, when: datetime) -> str:
    """"last/next/this <weekday>": the day it names, seen from ``when``."""
    target = WEEKDAYS.index(weekday.casefold())
    if phrase.startswith("last"):
        return (when - timedelta(days=(when.weekday() - target) % 7 or 7)).date().isoformat()
    return (when + timedelta(days=(target - when.weekday()) % 7 or 7)).date().isoformat()


def _ago_key(count: str, unit: str, when: datetime) -> str:
    """"N units ago": the day, week, month or year it names."""
    n = int(count) if count.isdigit() else _WORD_NUMBERS[count.casefold()]
    unit = unit.casefold()
    if unit == "day":
        return (when - timedelta(days=n)).date().isoformat()
    if unit == "week":
        return _week_key(when - timedelta(weeks=n))
    if unit == "month":
        return _month_key(*reversed(_add_months(when, -n)))
    return f"{when.year - n:04d}"


def _step_key(phrase: str, when: datetime) -> str:
    """"last/next/this week|weekend|month|year": the week, month or year it names."""
    rel, unit = phrase.split()
    step = {"last": -1, "next": 1, "this": 0}[rel]
    if unit in ("week", "weekend"):
        return _week_key(when + timedelta(weeks=step))
    if unit == "month":
        return _month_key(*reversed(_add_months(when, step)))
    return f"{when.year + step:04d}"


def _relative_key(m: re.Match[str], when: datetime) -> str | None:
    """The date key a relative phrase (today, last Monday, 3 weeks ago, next month) names."""
    phrase = m.group(1).casefold()
    if phrase in ("today", "tonight", "this morning", "this evening"):
        return when.date().isoformat()
    if phrase == "yesterday":
        return (when - timedelta(days=1)).date().isoformat()
    if phrase == "tomorrow":
        return (when + timedelta(days=1)).date().isoformat()
    if m.group(2):  # last / next / this <weekday>
        return _weekday_key(phrase, m.group(2), when)
    if m.group(3):  # N units ago
        return _ago_key(m.group(3), m.group(4), when)
    return _step_key(phrase, when)


def _dates(text: str, when: datetime | None, out: Extraction) -> None:
    spans: list[tuple[int, int]] = []

    def taken(m: re.Match[str]) -> bool:
        if any(a < m.end() and m.start() < b for a, b in spans):
            return True
        spans.append((m.start(), m.end()))
        return False

    for m in _ISO.finditer(text):
        if not taken(m) and 1 <= int(m.group(2)) <= 12:
            out.add("date", m.group(), m.group())
    for regex, month_group, day_group in ((_DAY_MONTH, 2, 1), (_MONTH_DAY, 1, 2)):
        for m in regex.finditer(text):
            key = _day_key(m, month_group, day_group, when)
            if key and not taken(m):
                out.add("date", m.group(), key)
    for m in _MONTH_YEAR.finditer(text):
        if not taken(m):
            out.add("date", m.group(), _month_key(_month_of(m.group(1)), int(m.group(2))))
    for m in _IN_MONTH.finditer(text):
        if not taken(m):
            out.add("date", m.group(1), _month_key(_month_of(m.group(1)), when.year if when else None))
    for m in _YEAR.finditer(text):
        if not taken(m):
            out.add("date", m.group(1), m.group(1))
    if when is None:
        return
    for m in _RELATIVE.finditer(text):
        if taken(m):
            continue
        key = _relative_key(m, when)
        if key:
            out.add("date", m.group(), key)


def _numbers_and_codes(text: str, out: Extraction) -> str:
    """Adds the numbers and codes; returns ``text`` with the codes blanked (they are no names)."""
    masked = list(text)

    def blank(m: re.Match[str]) -> None:
        masked[m.start():m.end()] = " " * (m.end() - m.start())

    for m in _CODE_HYPHEN.finditer(text):
        blank(m)
        out.add("code", m.group(), normalise(m.group()))
    for m in _CODE_FLIGHT.finditer(text):
        blank(m)
        out.add("code", m.group(), f"{m.group(1)}{m.group(2)}".casefold())
    for m in _CODE_HASH.finditer(text):
        out.add("code", m.group(), m.group().casefold())
    for m in _CODE_VERSION.finditer(text):
        out.add("code", m.group(), m.group(1))
    for m in _CURRENCY_NUMBER.finditer(text):
        out.add("number", m.group(), f"{m.group(2).replace(',', '')} {_CURRENCY[m.group(1)]}")
    for m in _NUMBER_UNIT.finditer(text):
        unit = _UNITS.get(m.group(2).casefold())
        if unit:
            out.add("number", m.group(), f"{m.group(1).replace(',', '')} {unit}")
    return "".join(masked)


def _object(raw: str) -> str:
    raw = _OBJ_STOP.split(" " + raw + " ", maxsplit=1)[0].strip()
    raw = _ARTICLE.sub("", raw)
    words = raw.split()[:6]
    return " ".join(words).strip(" '\"’")


def _subject(raw: str, speaker: str | None) -> str | None:
    if raw.casefold() in _SPEAKER_WORDS:
        return speaker
    return None if normalise(raw) in _NOT_NAMES else raw


def _facts(text: str, speaker: str | None, out: Extraction) -> None:
    """The state statements first (:mod:`.states`: what changes over time), then the other verb
    phrases; a subject and single-valued predicate a state statement gave are not read twice."""
    for s in states(text, speaker):
        out.facts.append(Triple(s.subject, s.predicate, s.object, normalise(s.subject),
                                "ended" if s.object == ENDED else normalise(s.object)))
    stated = {(f.subject_key, f.predicate) for f in out.facts}
    first = len(out.facts)
    _verb_facts(text, speaker, out)
    out.facts[:] = [f for i, f in enumerate(out.facts)
                    if not (i >= first and (f.subject_key, f.predicate) in stated and f.single_valued)
                    and f not in out.facts[:i]][:MAX_FACTS]


def _verb_facts(text: str, speaker: str | None, out: Extraction) -> None:
    for m in _FACT.finditer(text):
        if len(out.facts) >= MAX_FACTS:
            return
        subject = _subject(m.group("subj"), speaker)
        predicate = next(name for i, (_, name) in enumerate(_PREDICATES) if m.group(f"p{i}"))
        obj = _object(m.group("obj"))
        if subject and obj and normalise(obj) not in _NOT_NAMES:
            out.facts.append(Triple(subject, predicate, obj, normalise(subject), normalise(obj)))
        if subject:  # "... and then moved to Munich": the same subject, another fact
            rest = _SENTENCE.split(text[m.end():m.end() + 240], maxsplit=1)[0]
            for c in _CONTINUED.finditer(rest):
                if len(out.facts) >= MAX_FACTS:
                    return
                predicate = next(name for i, (_, name) in enumerate(_PREDICATES) if c.group(f"p{i}"))
                obj = _object(c.group("obj"))
                if obj and normalise(obj) not in _NOT_NAMES:
                    out.facts.append(Triple(subject, predicate, obj, normalise(subject), normalise(obj)))
    for m in _MY_IS.finditer(text):
        if len(out.facts) >= MAX_FACTS or not speaker:
            return
        thing = m.group("thing").split()
        predicate = thing[0] + "".join(w.capitalize() for w in thing[1:]) if len(thing) > 1 else thing[0]
        predicate = predicate.replace("favorite", "favourite")
        whole = _ADDRESS.match(text, m.start("obj"))  # an address's dots are not the sentence's end
        obj = whole.group().rstrip(".,;:!?)") if whole else _object(m.group("obj"))
        if obj:
            out.facts.append(Triple(speaker, predicate, obj, normalise(speaker), normalise(obj)))


def known_keys(names: Iterable[str]) -> frozenset[str]:
    """The keys of speakers' names, for :func:`extract`'s ``known`` (computed once per batch)."""
    return frozenset(k for k in (normalise(n) for n in names if n) if k)


def extract(text: str, *, speaker: str | None = None, when: datetime | None = None,
            known: Iterable[str] = (), at_start: bool = False) -> Extraction:
    """Everything :mod:`this module <plughost.plugins.memory.entities.extract>` finds in ``text``.

    ``speaker`` is the turn's sender (a ``person`` mention, and what "I" / "my" resolve to);
    ``when`` the turn's time (relative dates are resolved against it); ``known`` the names of the
    conversation's speakers, or a frozenset of their keys (:func:`known_keys`; a capitalised first
    word of a sentence counts only when it is one);
    ``at_start`` takes capitalised first words of sentences too (for questions, whose names are
    often their first word).
    """
    out = Extraction()
    text = unicodedata.normalize("NFKC", str(text or "")[:MAX_TEXT])
    keys = known if isinstance(known, frozenset) else known_keys(known)  # a frozenset: keys already
    if speaker and normalise(speaker):
        keys = keys | {normalise(speaker)}
        out.add("person", speaker, normalise(speaker))
    _dates(text, when, out)
    for sentence in _SENTENCE.split(_numbers_and_codes(text, out)):
        if len(out.mentions) >= MAX_MENTIONS:
            break
        _names(sentence, keys, out, at_start=at_start)
    _facts(text, speaker, out)
    return out
