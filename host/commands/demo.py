"""`plughost demo`: seed a demo account and a small knowledge graph through the memory tools,
then run a sample search — the main job on the embedded defaults, no servers to install.

Everything goes through hooks (the memory plugin's tools), so the host imports no plugin.
Re-running is idempotent: documents are re-ingested under stable attachment ids and entities are
written under fixed ids only when missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from host.errors import UserError

HELP = "seed a demo account and knowledge graph through the memory tools and run a sample search"

DEMO_ACCOUNT = "demo"

DOCUMENTS: list[dict[str, Any]] = [
    {
        "attachmentId": "demo-handbook",
        "title": "Harbour Street Bakery handbook",
        "keywords": ["handbook", "bakery"],
        "content": """# Harbour Street Bakery handbook

Harbour Street Bakery is a neighbourhood bakery and café at 12 Harbour Street.

## Opening hours

We are open Tuesday to Saturday from 7:00 to 16:00 and on Sunday from 8:00 to 13:00.
The bakery is closed on Mondays and on public holidays.

## Wedding and celebration cakes

Celebration cakes are made to order. Wedding cakes need at least six weeks' notice and a
tasting appointment; a deposit of 30% confirms the date. Order code format: CAKE-2025-0042.

## Allergens

Every product lists its allergens on the shelf label. We bake gluten-free bread on Thursdays in a
separate oven, but traces of wheat flour cannot be excluded. Ask the staff for the allergen sheet.

## Delivery

We deliver cakes within 5 km for a flat fee of 8 euros; orders above 60 euros are delivered free.
""",
    },
    {
        "attachmentId": "demo-faq",
        "title": "Frequently asked questions",
        "keywords": ["faq"],
        "content": """# Frequently asked questions

## Can I pay by card?

Yes: cards, contactless and cash are all accepted.

## Do you take bread orders for events?

Yes, bread and pastry platters for events can be ordered three days in advance.

## Is there parking?

There is a public car park 200 metres away on Quay Road; the first hour is free.
""",
    },
]

ENTITIES: list[dict[str, Any]] = [
    {"id": "demo-bakery", "labels": ["LocalBusiness"],
     "properties": {"name": "Harbour Street Bakery", "description": "Neighbourhood bakery and café",
                    "telephone": "+44 20 7946 0000", "keywords": ["bakery", "cafe"]}},
    {"id": "demo-service-cakes", "labels": ["Service"],
     "properties": {"name": "Wedding cakes", "description": "Made-to-order wedding and celebration cakes"},
     "relationships": [{"type": "OFFERED_BY", "targetId": "demo-bakery"}]},
    {"id": "demo-price-delivery", "labels": ["PriceSpecification"],
     "properties": {"name": "Cake delivery", "price": 8, "priceCurrency": "EUR",
                    "description": "Flat delivery fee within 5 km; free above 60 euros"},
     "relationships": [{"type": "PRICE_OF", "targetId": "demo-service-cakes"}]},
]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--account", default=None, help=f"account id (default: $ACCOUNT_ID or '{DEMO_ACCOUNT}')")
    parser.add_argument("--query", default="opening hours", help="the sample search (default: 'opening hours')")
    parser.add_argument("--limit", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print a machine-readable summary")


def _ensure_account(account: str) -> None:
    from host.accounts import account_dir, create_account

    folder = account_dir(account)
    if not (folder / "users.json").exists():
        create_account(account, admin_phones=["+15550100"])


def run(args: argparse.Namespace, ctx: Any) -> int:
    from host.tooltable import call_tool

    account = args.account or ctx.env.get("ACCOUNT_ID") or DEMO_ACCOUNT
    ctx.env["ACCOUNT_ID"] = account
    os.environ["ACCOUNT_ID"] = account
    _ensure_account(account)
    host = ctx.host()
    if "memory" not in {r.name for r in host.loaded()}:
        raise UserError("demo: the memory plugin is not loaded (check PLUGHOST_DISABLE_PLUGINS / PLUGHOST_LOAD_PLUGINS)")
    store = host.store()
    from host.graph import Guards

    guards = Guards.from_env(host.env)
    written = ingested = 0
    for doc in DOCUMENTS:
        call_tool(host, "memory", "memory-ingest", doc)
        ingested += 1
    for entity in ENTITIES:
        if store.get(entity["id"], guards=guards, include_deleted=True) is None:
            call_tool(host, "memory", "memory-write", entity)
            written += 1
    result = call_tool(host, "memory", "memory-search", {"query": args.query, "limit": args.limit})
    embedder = host.embedder()
    summary = {"account": account, "documents": ingested, "entitiesWritten": written,
               "embedder": getattr(embedder, "name", "none"), "query": args.query, "result": result}
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(f"demo account '{account}': {ingested} documents ingested, {written} entities written "
              f"(embedder: {summary['embedder']})")
        print(f"memory-search \"{args.query}\":")
        print(result if isinstance(result, str) else json.dumps(result, indent=2, default=str))
    sys.stdout.flush()
    return 0
