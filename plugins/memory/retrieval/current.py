"""CURRENT FACTS: a question about a state prefers the turn that states its current value
(``PLUGHOST_GS_FACTS``, docs/retrieval.md#current-facts).

"Where does Maya live now?" is matched by every turn about Maya and Lisbon, most of all by the
old "I live in Lisbon" (it shares "live"); the answer is "I moved to Porto", whose ``Fact``
(``PLUGHOST_MEMORY_ENTITIES=1``, :mod:`plughost.plugins.memory.entities.states`) closed the Lisbon
one. For a question that names a single-valued predicate ("live", "work", "married", "drive",
"phone", "favourite X", "own", "manage", "cost") and whose words contain a fact's subject:

* **now** (no date named, not asked in the past: "now", "currently", "these days", "still", or
  the present tense): the current fact is the one without ``validTo``;
* **as of a date** ("as of 1 July 2025", "Where did Maya live in March 2024?": "as of", "back in"
  or a past question naming a date): the fact with ``validFrom <= date < validTo``; a date in
  a present question ("In May, which car does Tom drive now?") leaves the question alone;
* a past or future question without a date ("Where did Maya live before?", "Which city will
  Maya live in after the move?") is left alone.

The turns that state the chosen fact (``STATES`` edges, under the caller's guards) score
``best × (1 + bump)``, ``best`` the pool's best score: first; one missing from the pool joins it.
The turns that state only its other values (superseded, or later for an "as of") are halved.
:func:`question` is pure; :func:`apply` costs one ``find`` per predicate named and one ``linked``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from plughost import GraphStore, Guards, Node
from plughost.plugins.memory.embedding.indexed_form import is_message
from plughost.plugins.memory.entities.extract import extract, normalise
from plughost.plugins.memory.entities.graph import FACT_LABEL, STATES
from plughost.plugins.memory.entities.states import single_valued, thing_predicate
from plughost.plugins.memory.retrieval.rows import Row

DEMOTE = 0.5
"""The factor of a turn that states only another (superseded) value."""
FACTS_PER_PREDICATE = 1000
_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((p, re.compile(r, re.I)) for p, r in (
    # not "see/saw/watch ... live", "the lives of", "based on", "live with" (who, not where), "live a life"
    ("livesIn", r"(?<!see )(?<!saw )(?<!seen )(?<!watch )(?<!hear )\b(?:live(?! with\b| an? \b)|lives(?! of\b| with\b)"
                r"|living(?! with\b)|based(?! on\b)|reside|resides|residing)\b"),
    # not "the work", "art work", "works of art"
    ("worksAt", r"(?<!the )(?<!art )\b(?:work(?! of art\b)|works(?! of art\b)|working|job|employer|employed|company)\b"),
    # not "with his wife" (a companion in another question: "What did Akib watch with his wife?")
    ("marriedTo", r"\b(?:married|(?<!with his )(?<!with her )(?<!with their )(?:wife|husband)|spouse)\b"),
    ("drives", r"\b(?:drive|drives|driving|car)\b"),
    ("phoneNumber", r"\b(?:phone|number|mobile)\b"),
    ("ownedBy", r"\b(?:own|owns|owned|owner)\b"),
    ("managedBy", r"\b(?:manage|manages|managed|manager|runs)\b"),
    ("price", r"\b(?:price|cost|costs|how much)\b"),
))
_FAVOURITE = re.compile(r"\bfavou?rite\s+([a-z]+)", re.I)
_SEVERAL = re.compile(r"\b(?:(?:what|who|which) (?:are|were)\b.*\bfavou?rite|same favou?rite)\b", re.I)
_PAST = re.compile(r"\b(?:did|was|were|used to|before|previously|formerly|originally|at first|first|old|earlier)\b",
                   re.I)
_FUTURE = re.compile(r"\b(?:will|going to|gonna|after the|next|plan|plans|planning|soon)\b", re.I)
_AS_OF = re.compile(r"\b(?:as of|as at|back in|at the time of)\b", re.I)
_ME = re.compile(r"\b(?:I|my|me)\b")
_SELF_KEYS = ("user", "owner", "me")


@dataclass(frozen=True)
class Question:
    """What a state question asks: the predicates, the date ("" = now) and the question's normalised words."""

    predicates: tuple[str, ...]
    as_of: str
    words: str
    me: bool


def question(query: str) -> Question | None:
    """The state the question asks about, or None (no single-valued predicate, or a past question without a date)."""
    # "What are X's favourite shows?" and "the same favourite style" ask for a set or a comparison, not one value
    predicates = [] if _SEVERAL.search(query) else [thing_predicate("favourite " + m.group(1))
                                                    for m in _FAVOURITE.finditer(query)]
    if not predicates:
        predicates = [p for p, cue in _CUES if cue.search(query)]
    predicates = [p for p in dict.fromkeys(predicates) if single_valued(p)]
    if not predicates:
        return None
    dates = [m.key for m in extract(query).mentions if m.kind == "date" and not m.key.startswith("-")]
    as_of = dates[0] if dates and (_AS_OF.search(query) or _PAST.search(query)) else ""
    if not as_of and (dates or _PAST.search(query) or _FUTURE.search(query)):
        return None  # a past or future question, or a date that is not an "as of" ("In May, ...")
    words = " " + " ".join(re.findall(r"[\w']+", normalise(query).replace("'s ", " "))) + " "
    return Question(tuple(predicates), as_of, words, bool(_ME.search(query)))


def _holds(valid_from: str, valid_to: str, day: str) -> bool:
    """Whether a fact valid from ``valid_from`` to ``valid_to`` ("" = open) holds on ``day`` (a date key's prefix)."""
    return valid_from[:len(day)] <= day and (not valid_to or valid_to[:len(day)] > day)


def chosen(facts: Sequence[Node], asked: Question) -> tuple[set[str], set[str]]:
    """Of the facts of the question's predicates, the ids of those it asks for and of their other
    values (same subject and predicate); pure."""
    groups: dict[tuple[str, str], list[Node]] = {}
    for fact in facts:
        key = str(fact.properties.get("subjectKey") or "")
        if not key or not (f" {key} " in asked.words or (asked.me and key in _SELF_KEYS)):
            continue
        groups.setdefault((key, str(fact.properties.get("predicate"))), []).append(fact)
    wanted: set[str] = set()
    others: set[str] = set()
    for group in groups.values():
        for fact in group:
            valid_to = str(fact.properties.get("validTo") or "")
            valid_from = str(fact.properties.get("validFrom") or "")
            now = not valid_to and not fact.properties.get("supersededBy")
            if now if not asked.as_of else _holds(valid_from, valid_to, asked.as_of):
                wanted.add(fact.id)
            else:
                others.add(fact.id)
    return wanted, others


def apply(rows: list[Row], store: GraphStore, query: str, guards: Guards, bump: float, *,
          visible: Callable[[Node], bool] | None = None, labels: Sequence[str] | None = None) -> int:
    """Lift the turns stating the asked value over the pool's best and halve those stating only
    another; turns missing from the pool join it. In place; returns how many rows moved."""
    asked = question(query) if bump > 0 else None
    if asked is None:
        return 0
    facts: list[Node] = []
    for predicate in asked.predicates:
        facts += store.find(guards=guards, labels=[FACT_LABEL], where={"predicate": predicate},
                            limit=FACTS_PER_PREDICATE)
    wanted, others = chosen(facts, asked)
    if not wanted:
        return 0
    sources = store.linked(sorted(wanted | others), STATES, guards=guards)
    allowed = set(labels) if labels else None

    def turns(ids: set[str]) -> dict[str, Node]:
        return {n.id: n for fid in ids for n in sources.get(fid, [])
                if is_message(n.labels) and (visible is None or visible(n))
                and (allowed is None or allowed.intersection(n.labels))}

    current, stale = turns(wanted), turns(others)
    if not current:
        return 0
    best = max((r.score for r in rows), default=1.0) or 1.0
    by_id = {r.id: r for r in rows}
    moved = 0
    for nid, node in current.items():
        row = by_id.get(nid)
        if row is None:
            row = Row(node)
            rows.append(row)
        row.score = max(row.score, best * (1 + bump))
        moved += 1
    for nid in stale.keys() - current.keys():
        if nid in by_id:
            by_id[nid].score *= DEMOTE
            moved += 1
    return moved
