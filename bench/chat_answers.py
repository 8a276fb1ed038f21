"""Does the chat answer what the business knows, and only that? Customer questions over two
businesses, through the default (memory) runner as a webchat visitor would ask them.

Two businesses: the demo bakery (`plughost demo`'s documents and entities) and a bike repair shop
written here (two documents, a LocalBusiness with phone, email and address, services, prices).
Each question expects a substring of the right answer, or is ``UNANSWERABLE`` (nothing stored holds
it). A reply is **right** when it holds the expected text (for an unanswerable question: when it
is "I don't know"), **don't-know** when the runner said it does not know an answerable one, and
**wrong** when it quoted something that does not answer (a wrong passage; the target is 0).
Questions marked held-out were written with the others but never used to tune the runner; their
figures are printed separately.

    .venv/bin/python bench/chat_answers.py              # both businesses, every question
    .venv/bin/python bench/chat_answers.py --quiet      # totals only
    .venv/bin/python bench/chat_answers.py --business bikes

Runs on the embedded store with ``PLUGHOST_EMBEDDER=none`` (full-text ranking) unless
``--embedder`` names another; a temporary data root, nothing of yours is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

UNANSWERABLE = None


@dataclass(frozen=True)
class Question:
    text: str
    expected: str | None  # a substring of the right answer; None: nothing stored answers it
    held_out: bool = False


def q(text: str, expected: str | None, held_out: bool = False) -> Question:
    return Question(text, expected, held_out)


PHONE_BAKERY = "+44 20 7946 0000"
BAKERY: list[Question] = [
    q("What are your opening hours?", "7:00 to 16:00"),
    q("When do you open on Sunday?", "8:00 to 13:00"),
    q("Are you open on Mondays?", "closed on Mondays"),
    q("What's your address?", "12 Harbour Street"),
    q("Where are you located?", "12 Harbour Street"),
    q("Do you have a phone number?", PHONE_BAKERY),
    q("What is your phone number?", PHONE_BAKERY),
    q("How much does cake delivery cost?", "8 euros"),
    q("Is delivery free for big orders?", "60 euros"),
    q("How far do you deliver?", "5 km"),
    q("Can I pay by card?", "cards"),
    q("Do you accept contactless payment?", "contactless"),
    q("Is there parking nearby?", "Quay Road"),
    q("How much notice do you need for a wedding cake?", "six weeks"),
    q("What deposit do you need for a wedding cake?", "30%"),
    q("Do you bake gluten-free bread?", "Thursdays"),
    q("Can I order bread for an event?", "three days"),
    q("Where can I find allergen information?", "allergen"),
    q("Do you make celebration cakes?", "made to order"),
    q("Is the first hour of parking free?", "first hour is free"),
    q("Do you have nut-free cakes?", UNANSWERABLE),
    q("Do you sell vegan croissants?", UNANSWERABLE),
    q("Do you have wifi in the café?", UNANSWERABLE),
    q("Can I bring my dog inside?", UNANSWERABLE),
    q("Do you sell gift cards?", UNANSWERABLE),
    q("Do you offer catering for offices?", UNANSWERABLE),
    q("Who is the head baker?", UNANSWERABLE),
    q("Do you have an email address?", UNANSWERABLE),
    # held out: written with the rest, never used to tune the runner
    q("What time do you close on Saturday?", "16:00", True),
    q("Are you open on public holidays?", "public holidays", True),
    q("How can I call you?", PHONE_BAKERY, True),
    q("Can I pay with cash?", "cash", True),
    q("Where do I park my car?", "Quay Road", True),
    q("Do you deliver cakes?", "deliver cakes", True),
    q("Is your bread gluten free?", "gluten-free", True),
    q("Does a wedding cake need a tasting?", "tasting", True),
    q("What's the delivery fee?", "8 euros", True),
    q("Where's the bakery?", "12 Harbour Street", True),
    q("Do you do pastry platters?", "platters", True),
    q("Is there a separate oven for gluten-free baking?", "separate oven", True),
    q("Do you sell sourdough starter?", UNANSWERABLE, True),
    q("Do you have outdoor seating?", UNANSWERABLE, True),
    q("Do you ship abroad?", UNANSWERABLE, True),
    q("Are your eggs free-range?", UNANSWERABLE, True),
]

BIKE_DOCUMENTS: list[dict[str, Any]] = [
    {"attachmentId": "bikes-handbook", "title": "Spoke & Chain Cycles handbook", "scope": "public",
     "content": """# Spoke & Chain Cycles handbook

Spoke & Chain Cycles is a bicycle repair workshop and shop at 48 Mill Lane, Manchester.

## Opening hours

The workshop is open Monday to Friday from 9:00 to 18:00 and on Saturday from 10:00 to 16:00.
We are closed on Sundays.

## Repairs and servicing

A puncture repair costs 12 euros and is usually done while you wait.
A basic service costs 45 euros; a full service, with the drivetrain stripped and cleaned, costs 90 euros.
Wheel truing costs 20 euros per wheel.
Services are booked by appointment and are normally ready within two working days.

## Electric bikes

We service e-bikes with Bosch and Shimano motors; battery diagnostics cost 25 euros.

## Bike hire

City bikes can be hired for 15 euros a day, helmet and lock included. A passport or driving licence is
needed as a deposit.

## Warranty

All our repairs carry a three-month warranty on labour.
""",
     },
    {"attachmentId": "bikes-faq", "title": "Questions we are asked", "scope": "public",
     "content": """# Questions we are asked

## Do I need an appointment for a puncture?

No: punctures are fixed without an appointment, first come first served.

## How can I pay?

We take debit and credit cards, contactless and cash; we do not take cheques.

## Do you buy used bikes?

We do not buy used bikes, but we sell refurbished bikes with a six-month warranty.

## Can I store my bike with you over the winter?

Yes, winter storage costs 10 euros a month and includes a check-up in spring.
""",
     },
]

BIKE_ENTITIES: list[dict[str, Any]] = [
    {"id": "bikes-shop", "labels": ["LocalBusiness"],
     "properties": {"name": "Spoke & Chain Cycles", "description": "Bicycle repair workshop and shop",
                    "telephone": "+44 161 496 0123", "email": "hello@spokeandchain.example",
                    "address": "48 Mill Lane, Manchester M1 2AB", "scope": "public"}},
    {"id": "bikes-service", "labels": ["Service"],
     "properties": {"name": "Full service", "description": "Drivetrain stripped and cleaned, brakes and gears set",
                    "scope": "public"}, "relationships": [{"type": "OFFERED_BY", "targetId": "bikes-shop"}]},
    {"id": "bikes-price-puncture", "labels": ["PriceSpecification"],
     "properties": {"name": "Puncture repair", "price": 12, "priceCurrency": "EUR",
                    "description": "Puncture repair while you wait", "scope": "public"}},
]

PHONE_BIKES = "+44 161 496 0123"
BIKES: list[Question] = [
    q("When are you open?", "9:00 to 18:00"),
    q("Are you open on Sunday?", "closed on Sundays"),
    q("What are your Saturday hours?", "10:00 to 16:00"),
    q("What's your address?", "48 Mill Lane"),
    q("Where is the workshop?", "48 Mill Lane"),
    q("What is your phone number?", PHONE_BIKES),
    q("Can I ring you?", PHONE_BIKES),
    q("What's your email?", "hello@spokeandchain.example"),
    q("How much is a puncture repair?", "12 euros"),
    q("What does a basic service cost?", "45 euros"),
    q("How much is a full service?", "90 euros"),
    q("How much do you charge for wheel truing?", "20 euros"),
    q("How long does a service take?", "two working days"),
    q("Do you repair electric bikes?", "Bosch"),
    q("Can I hire a bike?", "15 euros a day"),
    q("Is a helmet included with bike hire?", "helmet"),
    q("Do you give a warranty on repairs?", "three-month warranty"),
    q("Do I need an appointment for a flat tyre puncture?", "without an appointment"),
    q("Do you take credit cards?", "credit cards"),
    q("Do you buy used bikes?", "do not buy used bikes"),
    q("Can you store my bike over the winter?", "10 euros a month"),
    q("Do you sell kids' balance bikes?", UNANSWERABLE),
    q("Do you fix scooters?", UNANSWERABLE),
    q("Do you offer bike fitting?", UNANSWERABLE),
    q("Can you collect my bike from home?", UNANSWERABLE),
    q("Do you sell tyres online?", UNANSWERABLE),
    q("Who owns the shop?", UNANSWERABLE),
    # held out: written with the rest, never used to tune the runner
    q("What time do you close on weekdays?", "18:00", True),
    q("Where can I find you?", "48 Mill Lane", True),
    q("Do you have a telephone number?", PHONE_BIKES, True),
    q("How do I email you?", "hello@spokeandchain.example", True),
    q("What's the price of battery diagnostics?", "25 euros", True),
    q("Do you take cheques?", "cheques", True),
    q("Can I pay with cash?", "cash", True),
    q("Do you sell refurbished bikes?", "refurbished", True),
    q("What do I need as a deposit to hire a bike?", "passport", True),
    q("Is the puncture done while I wait?", "while you wait", True),
    q("Do you service Shimano e-bike motors?", "Shimano", True),
    q("Do you sell bike insurance?", UNANSWERABLE, True),
    q("Do you run cycling lessons?", UNANSWERABLE, True),
    q("Are dogs allowed in the shop?", UNANSWERABLE, True),
    q("Do you repair carbon frames?", UNANSWERABLE, True),
]


def businesses() -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], list[Question]]]:
    from plughost.cli.commands.demo import DOCUMENTS, ENTITIES

    return {"bakery": (DOCUMENTS, ENTITIES, BAKERY), "bikes": (BIKE_DOCUMENTS, BIKE_ENTITIES, BIKES)}


def seeded_host(home: Path, documents: list[dict[str, Any]], entities: list[dict[str, Any]],
                embedder: str = "none") -> Any:
    """A fresh account under ``home`` holding the business's documents and entities."""
    from plughost.runtime.accounts import create_account
    from plughost.runtime.host import Host
    from plughost.runtime.tooltable import call_tool

    create_account("bench", home, admin_phones=["+15550100"])
    env = {**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": "bench", "PLUGHOST_AGENT": "memory",
           "PLUGHOST_EMBEDDER": embedder}
    host = Host(env=env).load()
    for doc in documents:
        call_tool(host, "memory", "memory-ingest", doc)
    for entity in entities:
        call_tool(host, "memory", "memory-write", entity)
    return host


def verdict(question: Question, reply: str) -> str:
    from plughost.plugins.channels.memory_runner import DONT_KNOW

    dont_know = reply == DONT_KNOW
    if question.expected is None:
        return "right" if dont_know else "wrong"
    if question.expected.casefold() in reply.casefold():
        return "right"
    return "dont-know" if dont_know else "wrong"


def ask_all(host: Any, questions: list[Question]) -> list[tuple[Question, str, str]]:
    from plughost import AgentTurn
    from plughost.api.hooks import run_agent
    from plughost.plugins.channels.runner_choice import get_runner

    runner = get_runner(host)
    out = []
    for i, question in enumerate(questions):
        session = f"bench-{i}"  # every question from a new visitor: no lead, no memory carried over
        turn = AgentTurn.from_dict({"sessionId": session, "agentSession": session, "text": question.text,
                                    "role": "public", "channel": "webchat", "sender": session,
                                    "messageId": f"{session}-1", "payload": question.text}, host.principal)
        reply = asyncio.run(run_agent(runner, session, turn))
        out.append((question, reply, verdict(question, reply)))
    return out


def totals(rows: list[tuple[Question, str, str]]) -> dict[str, int]:
    answerable = [r for r in rows if r[0].expected is not None]
    unanswerable = [r for r in rows if r[0].expected is None]
    return {"questions": len(rows), "answerable": len(answerable),
            "right": sum(r[2] == "right" for r in answerable),
            "dont_know": sum(r[2] == "dont-know" for r in answerable),
            "wrong": sum(r[2] == "wrong" for r in rows),
            "unanswerable": len(unanswerable),
            "unanswerable_right": sum(r[2] == "right" for r in unanswerable)}


def line(name: str, t: dict[str, int]) -> str:
    share = t["right"] / t["answerable"] if t["answerable"] else 1.0
    return (f"{name}: questions={t['questions']} answerable={t['answerable']} right={t['right']} ({share:.0%}) "
            f"dont-know={t['dont_know']} wrong={t['wrong']} unanswerable-said-dont-know="
            f"{t['unanswerable_right']}/{t['unanswerable']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--business", choices=("bakery", "bikes", "all"), default="all")
    parser.add_argument("--embedder", default="none", help="PLUGHOST_EMBEDDER for the run (default: none)")
    parser.add_argument("--quiet", action="store_true", help="totals only")
    parser.add_argument("--json", action="store_true", help="the totals as JSON")
    args = parser.parse_args()
    summary: dict[str, Any] = {}
    for name, (documents, entities, questions) in businesses().items():
        if args.business not in ("all", name):
            continue
        with tempfile.TemporaryDirectory(prefix=f"plughost-chat-{name}-") as tmp:
            host = seeded_host(Path(tmp), documents, entities, args.embedder)
            rows = ask_all(host, questions)
        if not args.quiet and not args.json:
            for question, reply, said in rows:
                tag = " [held-out]" if question.held_out else ""
                first = reply.splitlines()[0][:90] if reply else ""
                print(f"{name} {said:9} {question.text}{tag}\n    -> {first}")
        tuned = totals([r for r in rows if not r[0].held_out])
        held = totals([r for r in rows if r[0].held_out])
        summary[name] = {"tuned": tuned, "heldOut": held, "all": totals(rows)}
        if not args.json:
            print(line(f"{name} (tuned on)", tuned))
            print(line(f"{name} (held out)", held))
            print(line(f"{name} (all)", totals(rows)))
    if args.json:
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
