"""`plughost memory work-time start|stop|adjust|show TASK`: time on tasks (plugins/memory/work/worktime.py).

The same operations as the ``work-time-*`` tools, under the process's principal (the owner).
``adjust`` takes ``--seconds N`` (the new total) or ``--delta ±N`` and a ``--reason``.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from plughost import UserError
from plughost.plugins.memory.commands.common import account, print_json
from plughost.plugins.memory.work.worktime import WorkTime

HELP = "time on tasks: start or stop a task's timer, adjust its logged seconds (with a reason), show them"
INTEGER = re.compile(r"^[+-]?\d{1,12}$")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("start", "stop", "adjust", "show"))
    parser.add_argument("task", metavar="TASK", help="the Task's id (task-...)")
    parser.add_argument("--seconds", metavar="N", help="adjust: the task's new total, whole seconds")
    parser.add_argument("--delta", metavar="N", help="adjust: seconds to add (negative to take off)")
    parser.add_argument("--reason", help="adjust: why the time is corrected (kept with the adjustment)")
    parser.add_argument("--json", action="store_true")


def _integer(text: str | None, option: str) -> int | None:
    if text is None:
        return None
    if not INTEGER.match(text.strip()):
        raise UserError(f"{option}: expected a whole number of seconds, got {text[:40]!r}")
    return int(text)


def run(args: argparse.Namespace, host: Any) -> int:
    account(host, "the id of the account whose tasks to log time on")
    if args.action != "adjust" and (args.seconds, args.delta, args.reason) != (None, None, None):
        raise UserError(f"work-time {args.action}: --seconds, --delta and --reason belong to adjust")
    work = WorkTime(host)
    if args.action == "adjust":
        result = work.adjust(taskId=args.task, reason=args.reason or "", seconds=_integer(args.seconds, "--seconds"),
                             delta=_integer(args.delta, "--delta"))
    else:
        result = getattr(work, args.action)(taskId=args.task)
    if args.json:
        print_json(result)
    elif args.action == "show":
        print(f"{result['taskId']}: {result['secondsLogged']} s logged"
              + (" (a timer is running)" if result["running"] else ""))
        for e in result["entries"]:
            print(f"  timer {e['startedAt']} -> {e['endedAt'] or 'running'} {e['seconds'] or 0} s by {e['by']}")
        for a in result["adjustments"]:
            print(f"  adjust {a['at']} {a['delta']:+d} s ({a['previousSeconds']} -> {a['newSeconds']}) by {a['by']}: "
                  f"{a['reason']}")
    elif args.action == "start":
        print(f"{result['taskId']}: timer started at {result['startedAt']} ({result['timeEntryId']})")
    elif args.action == "stop":
        print(f"{result['taskId']}: timer stopped after {result['seconds']} s; {result['secondsLogged']} s logged")
    else:
        print(f"{result['taskId']}: {result['previousSeconds']} -> {result['newSeconds']} s "
              f"({result['delta']:+d}); {result['adjustmentId']}")
    return 0
