"""`plughost memory write`: the memory-write tool from the command line (same checks, same outcome line)."""

from __future__ import annotations

import argparse
from typing import Any

from plughost.plugins.memory.commands.common import json_arg, print_json
from plughost.plugins.memory.writes.outcome import Call, run_with_outcome
from plughost.plugins.memory.writes.tools import perform

HELP = "write one node (labels, JSON properties, optional relationships) to ACCOUNT_ID's memory"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--labels", required=True, help="comma list of labels, e.g. Person")
    parser.add_argument("--properties", required=True, help='JSON object, e.g. \'{"name": "Ada"}\'')
    parser.add_argument("--relationships", help='JSON array of {type, targetId, direction?}')
    parser.add_argument("--produced-by-task-id", help="the Task that produced this write")
    parser.add_argument("--id", help="explicit node id (must not exist yet)")


def run(args: argparse.Namespace, host: Any) -> int:
    params: dict[str, Any] = {
        "labels": [x.strip() for x in args.labels.split(",") if x.strip()],
        "properties": json_arg(args.properties, "--properties"),
    }
    rels = json_arg(args.relationships, "--relationships", list)
    if rels is not None:
        params["relationships"] = rels
    if args.produced_by_task_id:
        params["producedByTaskId"] = args.produced_by_task_id
    if args.id:
        params["id"] = args.id
    result = run_with_outcome(Call("memory-write", host.env), lambda c: perform(host, c, "write", params))
    print_json(result)
    return 0
