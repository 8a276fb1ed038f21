"""``plughost memory search QUERY [--full | --json]``: the same pipeline as the tool, from a shell.

A person reads two lines a result by default; ``--full`` prints the text the ``memory-search`` tool
returns (every property, the related nodes), ``--json`` the rows."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from plughost.api import settings
from plughost.plugins.memory.retrieval.pipeline import SearchRequest
from plughost.plugins.memory.retrieval.route import RETRIEVAL_CLASSES
from plughost.plugins.memory.retrieval.service import run_search

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

HELP = "search memory (hybrid vector + BM25, docs/retrieval.md)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="what to look for")
    parser.add_argument("--limit", type=int, default=10, help="results to return (1-100, default 10)")
    parser.add_argument("--labels", default=None, help="comma list of labels to search")
    parser.add_argument("--fields", default=None, help="comma list of property keys to return ('' for none)")
    parser.add_argument("--expand-hops", type=int, choices=(0, 1), default=1, help="attach related nodes (1) or not (0)")
    parser.add_argument("--retrieval-class", choices=RETRIEVAL_CLASSES, default=None, help="routing hint")
    parser.add_argument("--account", default=None, help="account id (default: $ACCOUNT_ID)")
    parser.add_argument("--full", action="store_true",
                        help="every property and the related nodes, as the memory-search tool returns them")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace, host: Host) -> int:
    principal = host.principal.for_account(args.account) if args.account else host.principal
    request = SearchRequest(args.query, args.limit, settings.csv_list(args.labels), settings.csv_list(args.fields),
                            args.expand_hops, args.retrieval_class)
    outcome = run_search(host, request, principal=principal)
    if args.json:
        json.dump(outcome.as_json(), sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    elif args.full:
        print(outcome.text)
    else:
        from plughost.plugins.memory.retrieval.format import brief_results

        print(brief_results(outcome.rows))
        if outcome.rows:
            print(f"({len(outcome.rows)} results; --full for every property and the related nodes, --json for the rows)")
    return 0
