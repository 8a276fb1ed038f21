"""`plughost demo`: seed a demo account and a small knowledge graph through the memory tools,
then run a sample search — the main job on the embedded defaults, no servers to install.

Everything goes through hooks (the memory plugin's tools), so the host imports no plugin.
Re-running is idempotent: documents are re-ingested under stable attachment ids and entities are
written under fixed ids only when missing.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from plughost.ports.principal import resolve, set_account
from plughost.runtime.accounts import account_dir, create_account
from plughost.runtime.tooltable import call_tool
from plughost.util import config
from plughost.util.errors import UserError

DEMO_ACCOUNT = "demo"

# The demo is a shop's public knowledge: every document and entity says ``scope: public`` (a write
# without a scope is stored admin, private to the owner), so the webchat's visitors are answered.
DOCUMENTS: list[dict[str, Any]] = [
    {
        "attachmentId": "demo-handbook",
        "title": "Harbour Street Bakery handbook",
        "keywords": ["handbook", "bakery"],
        "scope": "public",
        "content": """# Harbour Street Bakery handbook

Harbour Street Bakery is a neighbourhood bakery and café at 12 Harbour Street.

## Opening hours

We are open Tuesday to Saturday from 7:00 to 16:00 and on Sunday from 8:00 to 13:00.
The bakery is closed on Mondays and on public holidays.

## Wedding and celebration cakes

Celebration cakes are made to order. Wedding cakes need at least six weeks' notice and a
tasting appointment; a deposit of 30% confirms the date, and the confirmation gives your order number.

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
        "scope": "public",
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
                    "telephone": "+44 20 7946 0000", "keywords": ["bakery", "cafe"], "scope": "public"}},
    {"id": "demo-service-cakes", "labels": ["Service"],
     "properties": {"name": "Wedding cakes", "description": "Made-to-order wedding and celebration cakes",
                    "scope": "public"},
     "relationships": [{"type": "OFFERED_BY", "targetId": "demo-bakery"}]},
    {"id": "demo-price-delivery", "labels": ["PriceSpecification"],
     "properties": {"name": "Cake delivery", "price": 8, "priceCurrency": "EUR",
                    "description": "Flat delivery fee within 5 km; free above 60 euros", "scope": "public"},
     "relationships": [{"type": "PRICE_OF", "targetId": "demo-service-cakes"}]},
]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--account", default=None, help=f"account id (default: $ACCOUNT_ID or '{DEMO_ACCOUNT}')")
    parser.add_argument("--query", default="opening hours", help="the sample search (default: 'opening hours')")
    parser.add_argument("--limit", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print a machine-readable summary")
    parser.add_argument("--full", action="store_true", help="print the sample search's whole result")


def _ensure_account(account: str, home: Path) -> bool:
    """Create the demo account when missing; True when it was created (its owner is then seeded)."""
    folder = account_dir(account, home)
    if not (folder / "users.json").exists():
        create_account(account, home, admin_phones=["+15550100"])
        return True
    return False


def run(args: argparse.Namespace, ctx: Any) -> int:
    account = args.account or resolve(ctx.env).account or DEMO_ACCOUNT
    set_account(ctx.env, account)  # the command's call context; the process environment is left alone
    created = _ensure_account(account, config.home(ctx.env))
    host = ctx.host()
    if created:  # the owner's AdminUser + UserProfile, as `plughost account create` writes them
        from plughost.cli.commands.account import bootstrap
        from plughost.runtime.accounts import load_users

        bootstrap(ctx, account, load_users(account, config.home(ctx.env)))
    if "memory" not in {r.name for r in host.loaded()}:
        raise UserError("demo: the memory plugin is not loaded (check PLUGHOST_DISABLE_PLUGINS / PLUGHOST_LOAD_PLUGINS)")
    store = host.store()
    guards = host.principal.guards
    written = ingested = 0
    stamp = host.home / "accounts" / account / "demo-seed.json"
    seed = seed_hash(getattr(host.embedder(), "name", "none"))
    seeded = _read_stamp(stamp) == seed and all(
        store.find(guards=guards, labels=["KnowledgeDocument"], where={"attachmentId": d["attachmentId"]}, limit=1)
        for d in DOCUMENTS)
    for doc in [] if seeded else DOCUMENTS:  # unchanged documents are not re-embedded (a warm start stays fast)
        call_tool(host, "memory", "memory-ingest", doc)
        ingested += 1
    for entity in ENTITIES:
        if store.get(entity["id"], guards=guards, include_deleted=True) is None:
            call_tool(host, "memory", "memory-write", entity)
            written += 1
    if not seeded:
        stamp.write_text(json.dumps({"seed": seed}), encoding="utf-8")
    result = call_tool(host, "memory", "memory-search", {"query": args.query, "limit": args.limit})
    embedder = host.embedder()
    site = publish_site(host.home)
    summary = {"account": account, "documents": ingested, "entitiesWritten": written,
               "embedder": getattr(embedder, "name", "none"), "query": args.query, "result": result,
               "site": str(site) if site else None}
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        what = "already seeded" if seeded else f"{ingested} documents ingested, {written} entities written"
        print(f"demo account '{account}': {what} (embedder: {summary['embedder']})")
        if site is None:
            print(f"brand site: /sites/ (left alone: {host.home / 'sites' / 'index.html'} is not the demo's own page "
                  "(edited, or yours); the demo writes it only when absent or unedited)")
        else:
            print(f"brand site: /sites/ ({site})")
        text = result if isinstance(result, str) else json.dumps(result, indent=2, default=str)
        if args.full:
            print(f"memory-search \"{args.query}\":")
            print(text)
        else:
            print(f"memory-search \"{args.query}\": {best_result(text)}")
    sys.stdout.flush()
    return 0


def seed_hash(embedder: str) -> str:
    """What the seeded data depends on: the documents, the entities and the embedder that indexed them."""
    blob = json.dumps([DOCUMENTS, ENTITIES, embedder], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _read_stamp(path: Path) -> str | None:
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("seed"))
    except (OSError, ValueError, AttributeError):
        return None


def best_result(text: str) -> str:
    """The top titled result of a memory-search text in two lines: title and score, first body line."""
    blocks = [b.strip().splitlines() for b in text.split("\n---\n") if b.strip()]
    blocks = [b for b in blocks if b[0].startswith("[")]
    if not blocks:
        return text.strip().splitlines()[0] if text.strip() else "No results."
    parsed = []
    for block in blocks:
        fields: dict[str, str] = {}
        for line in block[1:]:
            key, sep, value = line.partition(": ")
            if sep and key.isidentifier() and key not in fields:
                fields[key] = value
        parsed.append((block[0], fields))
    head, fields = next((p for p in parsed[:3] if p[1].get("title") or p[1].get("name")), parsed[0])
    score = head.rsplit("(score: ", 1)[-1].rstrip(")") if "(score: " in head else "?"
    title = fields.get("title") or fields.get("name") or head.split("]", 1)[0].strip("[")
    body = fields.get("body") or fields.get("content") or fields.get("description") or ""
    return f"best: {title} (score {score})\n  {body[:160]}"


SITE_MARK = "<!-- written by plughost demo; once you edit this page, the demo leaves it alone -->"
SITE_SEAL = re.compile(r"<!-- plughost demo page sha256=([0-9a-f]{64}) -->\n")
"""The demo's page names the hash of the rest of itself: a page whose text no longer matches it
was edited by its owner, and the demo never writes over it (docs/cli.md)."""


def _sealed(page: str) -> str:
    return f"<!-- plughost demo page sha256={hashlib.sha256(page.encode()).hexdigest()} -->\n{page}"


def demo_wrote(current: str) -> bool:
    """Is this exactly a page the demo wrote (its seal matches the text), so it may be replaced?"""
    found = SITE_SEAL.match(current)
    return found is not None and hashlib.sha256(current[found.end():].encode()).hexdigest() == found.group(1)


def site_html() -> str:
    """The demo business's one-page site, made from the demo documents (escaped), linking to the chat."""
    parts: list[str] = []
    for doc in DOCUMENTS:
        for block in doc["content"].split("\n\n"):
            block = block.strip()
            if block.startswith("# "):
                parts.append(f"<h2>{html.escape(block[2:])}</h2>")
            elif block.startswith("## "):
                parts.append(f"<h3>{html.escape(block[3:])}</h3>")
            elif block:
                parts.append(f"<p>{html.escape(' '.join(block.split()))}</p>")
    name = html.escape(ENTITIES[0]["properties"]["name"])
    phone = html.escape(ENTITIES[0]["properties"]["telephone"])
    body = "\n".join(parts)
    return f"""<!doctype html>
{SITE_MARK}
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{name}</title>
<style>
  body {{ font: 17px/1.5 system-ui, sans-serif; margin: 0; color: #2d2a26; background: #fbf7f1; }}
  header {{ background: #7a4a24; color: #fff; padding: 2rem 1rem; text-align: center; }}
  header h1 {{ margin: 0 0 .3rem; }}
  main {{ max-width: 42rem; margin: 0 auto; padding: 1rem; }}
  a.chat {{ display: inline-block; margin-top: .8rem; padding: .6rem 1.1rem; border-radius: 2rem;
           background: #fff; color: #7a4a24; font-weight: 600; text-decoration: none; }}
  h2 {{ border-bottom: 2px solid #e6d8c6; padding-bottom: .2rem; }}
  footer {{ text-align: center; color: #7d7368; padding: 2rem 1rem; font-size: .9rem; }}
</style>
</head>
<body>
<header>
  <h1>{name}</h1>
  <div>{html.escape(ENTITIES[0]["properties"]["description"])} · {phone}</div>
  <a class="chat" href="/channels/webchat">Chat with us</a>
</header>
<main>
{body}
</main>
<footer>Questions? <a href="/channels/webchat">Ask in the chat</a>; it answers from this page.</footer>
</body>
</html>
"""


def publish_site(home: Path) -> Path | None:
    """Write ``<home>/sites/index.html`` unless someone else's page is there; the path written (or kept)."""
    target = home / "sites" / "index.html"
    page = _sealed(site_html())
    try:
        current = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError):
        return None
    if current is not None and current != page and not demo_wrote(current):
        return None  # the owner's own or edited site: never overwritten
    if current != page:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{hashlib.sha256(page.encode()).hexdigest()[:8]}.tmp")
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, target)
    return target
