"""The owner's search on the demo after 60 chat messages: do the business's documents still come first?

    python bench/owner_search.py [--work DIR] [--weights 1,0.8,0.6,0.5]

Seeds the demo account (``plughost demo``: the bakery's handbook and FAQ, three entities) in a
fresh home, then writes 60 chat messages through the memory tools (``conversation-append``, as
the channels' turn recorder stores them, embedded as they are written): ten webchat visitors,
each asking about the bakery in their own words with the assistant answering, so the chat says
the same words the documents do (opening hours, cakes, delivery, parking, cards). Then asks the
owner's questions through ``memory-search`` (the tool, in process, as the owner) with the
defaults before this round (bench/realtalk.py's ``BEFORE``) and with the shipped defaults at each
``PLUGHOST_GS_MESSAGE_WEIGHT``, and prints, per configuration: how many of the questions have a document
(KnowledgeDocument, Section or Chunk holding the expected words) in the top 1 and the top 3, the
mean rank of the first such document, and how many chat messages rank above it. The same
questions with the chat messages' own answers (what a visitor was told) are in REALTALK's figures
(bench/realtalk.py), where every result is a message and the weight changes no order.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ACCOUNT = "demo"
VISITORS = [
    ("What time do you open on Saturday?", "We are open on Saturday from 7:00 to 16:00."),
    ("Are you open on Mondays? I wanted to come by for bread.", "Sorry, we are closed on Mondays."),
    ("Can I order a wedding cake for June?", "Yes, wedding cakes need six weeks' notice and a tasting."),
    ("Do you deliver cakes to the harbour area?", "We deliver within 5 km for a flat fee of 8 euros."),
    ("Is your gluten-free bread safe for coeliacs?", "It is baked on Thursdays in a separate oven; traces cannot be excluded."),
    ("Where can I park near the bakery?", "There is a public car park on Quay Road, 200 metres away."),
    ("Can I pay by card or only cash?", "Cards, contactless and cash are all accepted."),
    ("Do you do platters for an office event?", "Yes, platters can be ordered three days in advance."),
    ("What are your opening hours on Sunday?", "On Sunday we are open from 8:00 to 13:00."),
    ("How much is delivery for a big cake order?", "Orders above 60 euros are delivered free."),
]
"""Ten visitors, each a question and the reply; every conversation has three such exchanges (60 messages)."""
FOLLOW_UPS = [
    ("Thanks! And the opening hours on public holidays?", "We are closed on public holidays."),
    ("Great, thank you. Do you have allergen information?", "Every product lists its allergens; ask for the allergen sheet."),
]
QUESTIONS = [
    ("opening hours", "7:00 to 16:00"),
    ("wedding cake notice", "six weeks"),
    ("allergens", "allergen sheet"),
    ("delivery fee", "flat fee of 8 euros"),
    ("pay by card", "contactless"),
    ("bread orders for events", "three days in advance"),
    ("parking", "Quay Road"),
    ("gluten-free bread", "separate oven"),
]
"""The owner's questions and words the document passage that answers it holds."""
DOC_LABELS = {"KnowledgeDocument", "Section", "Chunk"}
_BLOCK = re.compile(r"^\[([^\]]*)\] \(id: ([^)]+)\)", re.M)


def results(text: str) -> list[tuple[set[str], str]]:
    """(labels, block text) per result of a memory-search text, in rank order."""
    blocks = [b for b in text.split("\n---\n") if b.strip()]
    out = []
    for block in blocks:
        m = _BLOCK.search(block)
        if m:
            out.append(({x.strip() for x in m.group(1).split(",")}, block))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--weights", type=lambda s: s.split(","), default=["1", "0.8", "0.6", "0.5"])
    bench_results.add_flag(ap)
    args = ap.parse_args()
    home = args.work or Path(tempfile.mkdtemp(prefix="plughost-owner-search-"))
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLUGHOST_GS_", "CLAUDE"))}
    env.update(PLUGHOST_HOME=str(home), PLUGHOST_LOG_FILE="0", ACCOUNT_ID=ACCOUNT)
    env.setdefault("PLUGHOST_EMBEDDER", "local")
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "plughost.cli", "demo"], env=env, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        print(f"plughost demo failed: {(out.stdout + out.stderr)[-600:]}", file=sys.stderr)
        return 1
    os.environ.clear()
    os.environ.update(env)
    from plughost.runtime.host import Host

    host = Host(env=dict(os.environ)).load()
    written = 0
    for i, (question, answer) in enumerate(VISITORS):
        conversation = {"channel": "webchat", "sender": f"visitor-{i + 1}"}
        turns = [(question, answer), *FOLLOW_UPS]
        for j, (asked, told) in enumerate(turns):
            for k, (role, content) in enumerate((("user", asked), ("assistant", told))):
                stamp = f"2026-12-0{1 + i % 5}T1{j}:{10 + i:02d}:{k}0Z"
                host.call_tool("memory", "conversation-append", {**conversation, "role": role, "content": content,
                                                                 "timestamp": stamp})
                written += 1
    print(f"demo home {home}: the demo's documents, then {written} chat messages in {len(VISITORS)} webchat "
          f"conversations (conversation-append); embedder {os.environ['PLUGHOST_EMBEDDER']}; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    from realtalk import BEFORE

    print("\n| configuration | questions | document first | document in top 3 | mean rank of the document | messages above it |")
    print("|---|---|---|---|---|---|")
    base = dict(host.env)
    runs = [("before (the defaults before bench/realtalk.py)", BEFORE)]
    runs += [(f"defaults, PLUGHOST_GS_MESSAGE_WEIGHT={w}", {"PLUGHOST_GS_MESSAGE_WEIGHT": w}) for w in args.weights]
    for name, changes in runs:
        host.env.clear()
        host.env.update({**base, **changes})  # read per call (SearchFlags.from_env(host.env))
        first = top3 = above = 0
        ranks = []
        for query, words in QUESTIONS:
            text = host.call_tool("memory", "memory-search", {"query": query, "limit": 10, "expandHops": 0})
            text = text if isinstance(text, str) else str(text)
            rows = results(text)
            rank = next((i for i, (labels, block) in enumerate(rows, 1) if labels & DOC_LABELS and words in block), 11)
            ranks.append(rank)
            first += rank == 1
            top3 += rank <= 3
            above += sum(1 for labels, _ in rows[:rank - 1] if "Message" in labels)
        print(f"| {name} | {len(QUESTIONS)} | {first} | {top3} | {sum(ranks) / len(ranks):.2f} | {above} |")
    host.close()
    print(f"\n{time.perf_counter() - started:.0f} s; a rank of 11 is 'not in the top 10'")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("owner_search", main))
