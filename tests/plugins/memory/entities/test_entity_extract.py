"""The rule-based extractor: what a turn names, normalised; hostile input bounded."""

from __future__ import annotations

from datetime import datetime

import pytest

from plughost.plugins.memory.entities.extract import MAX_FACTS, MAX_MENTIONS, extract, normalise

WHEN = datetime(2025, 3, 12, 10, 0)  # a Wednesday


def kinds(text: str, **kw) -> set[tuple[str, str]]:
    return {(m.kind, m.key) for m in extract(text, when=WHEN, **kw).mentions}


def facts(text: str, speaker: str = "Maya") -> set[tuple[str, str, str]]:
    return {(f.subject, f.predicate, f.object) for f in extract(text, speaker=speaker, when=WHEN).facts}


def test_the_speaker_is_a_person_and_i_resolves_to_them() -> None:
    assert ("person", "maya") in kinds("hello there", speaker="Maya")
    assert facts("I live in Oslo and I work at Bluefin.") == {("Maya", "livesIn", "Oslo"), ("Maya", "worksAt", "Bluefin")}


def test_names_places_and_known_speakers() -> None:
    found = kinds("You're back from Lisbon! I met Mary Jane Watson and Tom at the Museum of Modern Art.", known=["Tom"])
    assert {("place", "lisbon"), ("name", "mary jane watson"), ("person", "tom"),
            ("place", "museum of modern art")} <= found
    assert not any(key in ("you're", "i") for _, key in found)
    assert ("person", "tom") in kinds("Tom said hi.", known=["Tom"])  # a known speaker at the start of a sentence
    assert not any(k == "great" for _, k in kinds("Great, see you there."))
    assert ("name", "maya") in kinds("Where did Maya go?", at_start=False)
    assert ("name", "maya") in kinds("Maya's trip: how long?", at_start=True)


@pytest.mark.parametrize(("text", "key"), [
    ("on 2025-02-03 we left", "2025-02-03"), ("on 4 March 2024", "2024-03-04"), ("March 4, 2024 it was", "2024-03-04"),
    ("back in June 2024", "2024-06"), ("I start in March", "2025-03"), ("yesterday", "2025-03-11"),
    ("tomorrow", "2025-03-13"), ("last week", "2025-W10"), ("next month", "2025-04"), ("3 days ago", "2025-03-09"),
    ("two months ago", "2025-01"), ("last Friday", "2025-03-07"), ("since 2019", "2019"), ("last year", "2024"),
])
def test_dates_are_iso_relative_to_the_turn(text: str, key: str) -> None:
    assert ("date", key) in kinds(text)


def test_a_month_without_a_known_year() -> None:
    assert ("date", "--03") in {(m.kind, m.key) for m in extract("in March").mentions}


def test_numbers_and_codes() -> None:
    found = kinds("Order ORD-2025-0042 shipped; flight TP 1234; Python 3.12; gate 4821#; 42 kilometres; "
                  "12,500 euros and €30.")
    assert {("code", "ord-2025-0042"), ("code", "tp1234"), ("code", "3.12"), ("code", "4821#"),
            ("number", "42 km"), ("number", "12500 eur"), ("number", "30 eur")} <= found
    assert not any(kind == "name" and "ord" in key for kind, key in found)  # a code is no name


def test_facts_and_objects() -> None:
    assert facts("Big news: we adopted a puppy from the shelter, we named him Biscuit.") == {
        ("Maya", "adopted", "puppy"), ("Maya", "named", "Biscuit")}
    assert ("Maya", "livesIn", "Kyoto") in facts("We're moving to Kyoto at the end of June.")
    assert ("Maya", "favouriteSeason", "autumn") in facts("My favourite season is autumn, honestly.")
    assert ("Tom", "bought", "used Volvo estate") in facts("Tom bought a used Volvo estate.")
    assert facts("I live in Oslo.", speaker=None) == set()  # "I" with no speaker names nobody


def test_normalise() -> None:
    assert normalise("  Maya’s ") == "maya"
    assert normalise("The  Blue Heron") == "blue heron"
    assert normalise("JAMES'") == "james"
    assert normalise("Ｍａｙａ") == "maya"  # NFKC


@pytest.mark.parametrize("text", [
    "x" * 200_000, "A " * 50_000, "Lisbon " * 20_000, "I live in " * 5_000, "\x00\u202e\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
    "😀" * 10_000, "Ünïcödé Ärger in Zürich und São Paulo", "1" * 10_000, "-".join(["AB1"] * 5000), "", "   ",
    "I " + "really " * 5000 + "love cake",
])
@pytest.mark.timeout(120)  # a hang guard only: the time per input, against a floor, is bench/text_costs.py's
def test_hostile_input_is_bounded_and_never_raises(text: str) -> None:
    out = extract(text, speaker="Maya", when=WHEN, known=["Tom"] * 1000)
    assert len(out.mentions) <= MAX_MENTIONS and len(out.facts) <= MAX_FACTS
    assert all(len(m.key) <= 120 and len(m.name) <= 120 for m in out.mentions)


def test_non_strings() -> None:
    assert extract(None).mentions == []  # type: ignore[arg-type]
    assert extract("x", speaker="   ").mentions == []


def test_names_split_at_commas_employers_are_not_places_and_a_second_fact_keeps_its_subject():
    from plughost.plugins.memory.entities.extract import extract

    names = extract("I met Alan Smith, Beth Jones and Carla yesterday.", speaker="Tom")
    assert [m.name for m in names.mentions if m.kind == "name"] == ["Alan Smith", "Beth Jones", "Carla"]
    work = extract("Ben works at Google now.", speaker="Tom")
    assert [(m.kind, m.name) for m in work.mentions if m.name == "Google"] == [("name", "Google")]
    moves = extract("I moved to Berlin in 2019 and then moved to Munich in 2021.", speaker="Tom")
    assert [(f.subject, f.predicate, f.object) for f in moves.facts] == [
        ("Tom", "livesIn", "Berlin"), ("Tom", "livesIn", "Munich")]
    wide = extract("We met \uff30\uff52\uff49\uff59\uff41 at the market.", speaker="Tom")  # full-width letters
    assert "priya" in {m.key for m in wide.mentions}


def test_an_address_is_kept_whole_in_a_my_thing_is_fact() -> None:
    """'my email is ana.silva@example.com': the address's dots are not the sentence's end."""
    from plughost.plugins.memory.entities.extract import extract

    got = {(f.predicate, f.object) for text in ("My email is ana.silva@example.com", "my email is bob@example.com.",
                                                "My website is www.ana.example.org, thanks")
           for f in extract(text, speaker="visitor").facts}
    assert got == {("email", "ana.silva@example.com"), ("email", "bob@example.com"),
                   ("website", "www.ana.example.org")}
