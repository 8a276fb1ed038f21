"""CLI commands the channels plugin adds: ``record-turn``, ``channels``, ``schedule``."""

from __future__ import annotations

import argparse
import asyncio
import json

from plughost import CliCommand, Host, UserError
from plughost.plugins.channels.pipeline import Turn, dispatch_scheduled
from plughost.plugins.channels.turn_recorder import cli_run


def _configure_record_turn(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "Reads the Claude Code Stop-hook JSON on stdin; always exits 0."


def _run_record_turn(args: argparse.Namespace, host: Host) -> int:
    return cli_run(host)


def _configure_channels(parser: argparse.ArgumentParser) -> None:
    subs = parser.add_subparsers(dest="channels_command", metavar="ACTION")
    retry = subs.add_parser("retry", help="re-send failed replies; resume the turns a stopped process left")
    retry.add_argument("--limit", type=int, default=500, help="failed replies re-sent at most (default 500); "
                       "unfinished turns are all resumed, oldest first, in batches")
    retry.add_argument("--batch", type=int, default=None,
                       help="unfinished turns taken per batch (default PLUGHOST_RESUME_BATCH, else 100)")
    retry.add_argument("--json", action="store_true", help="print the outcome as JSON")
    retry.add_argument("--unanswered", action="store_true",
                       help="(the default now) run the turns of stored inbound messages never answered")
    retry.add_argument("--failed-only", action="store_true",
                       help="only re-send failed replies; leave unfinished turns to the next server start")
    serve = subs.add_parser("serve", help="serve the channel adapters' routes alone")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8710)


def _run_channels(args: argparse.Namespace, host: Host) -> int:
    if args.channels_command == "retry":
        from plughost.plugins.channels.delivery import retry_failed

        outcome = asyncio.run(retry_failed(host, limit=args.limit))
        if not args.failed_only:
            from plughost.plugins.channels.delivery import resume_unanswered

            outcome["unanswered"] = asyncio.run(resume_unanswered(host, batch=args.batch))
        if args.json:
            print(json.dumps(outcome, sort_keys=True))
        else:
            line = f"retried={outcome['retried']} sent={outcome['sent']} failed={outcome['failed']}"
            if not args.failed_only:
                un = outcome["unanswered"]
                line += f" resumed={un['resumed']} delivered={un['delivered']} busy={un['busy']}"
            print(line)
        return 0 if outcome["failed"] == 0 else 1
    if args.channels_command == "serve":
        import uvicorn

        from plughost.plugins.channels.server import build_app

        uvicorn.run(build_app(host), host=args.host, port=args.port, log_level="warning",
                    timeout_keep_alive=30, timeout_graceful_shutdown=30)
        return 0
    raise UserError("channels: expected an action: retry | serve")


def _configure_schedule(parser: argparse.ArgumentParser) -> None:
    subs = parser.add_subparsers(dest="schedule_command", metavar="ACTION")
    d = subs.add_parser("dispatch", help="run a scheduled turn for a sender (the only source of provenance)")
    d.add_argument("--channel", required=True, choices=["telegram", "whatsapp"])
    d.add_argument("--to", required=True, help="the sender id (Telegram user id, WhatsApp phone)")
    d.add_argument("--event", required=True, help="the scheduled event's name")
    d.add_argument("--text", required=True, help="the automation's instruction")
    d.add_argument("--owner", default=None, help="the owner userId the automation belongs to")
    d.add_argument("--chat-id", default=None, help="Telegram chat id (default: the sender id)")
    d.add_argument("--json", action="store_true")
    a = subs.add_parser("add", help="schedule a turn for a sender; `plughost serve` fires it at its time")
    a.add_argument("--channel", required=True, choices=["telegram", "whatsapp"])
    a.add_argument("--to", required=True, help="the sender id (Telegram user id, WhatsApp phone)")
    a.add_argument("--event", required=True, help="the scheduled event's name")
    a.add_argument("--text", required=True, help="the automation's instruction")
    a.add_argument("--owner", default=None, help="the owner userId the automation belongs to")
    a.add_argument("--chat-id", default=None, help="Telegram chat id (default: the sender id)")
    when = a.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", default=None, help="when, ISO 8601 (no zone means UTC)")
    when.add_argument("--in", dest="after", type=float, default=None, help="when, in seconds from now")
    a.add_argument("--json", action="store_true")
    ls = subs.add_parser("list", help="the account's scheduled dispatches and their status")
    ls.add_argument("--json", action="store_true")


def _run_schedule_store(args: argparse.Namespace, host: Host) -> int:
    from plughost.plugins.channels import scheduler

    account = host.principal.account_id
    if args.schedule_command == "add":
        entry = scheduler.add_entry(host.home, account, channel=args.channel, to=args.to, event=args.event,
                                    text=args.text, when=scheduler.parse_when(args.at, args.after),
                                    owner=args.owner, chat_id=args.chat_id)
        print(json.dumps(entry, ensure_ascii=False) if args.json else
              f"scheduled {entry['id']} at {entry['at']} (fires while `plughost serve` runs)")
        return 0
    entries = scheduler.read_entries(scheduler.schedule_path(host.home, account))
    if args.json:
        print(json.dumps(entries, ensure_ascii=False, indent=2))
    else:
        for e in entries:
            print(f"{e.get('id')} {e.get('at')} {e.get('status')} {e.get('channel')}:{e.get('to')} event={e.get('event')}")
        if not entries:
            print("no scheduled dispatches")
    return 0


def _run_schedule(args: argparse.Namespace, host: Host) -> int:
    if args.schedule_command in ("add", "list"):
        return _run_schedule_store(args, host)
    if args.schedule_command != "dispatch":
        raise UserError("schedule: expected an action: add | list | dispatch")
    from plughost.plugins.channels.delivery import drain
    target = {"chat_id": args.chat_id or args.to} if args.channel == "telegram" else {"to": args.to}

    async def go() -> Turn:
        try:
            return await dispatch_scheduled(host, channel=args.channel, sender=args.to, event=args.event,
                                            text=args.text, owner_user_id=args.owner, target=target)
        finally:
            await drain(host)

    turn = asyncio.run(go())
    delivered = bool(turn.delivery and turn.delivery.get("ok"))
    if args.json:
        print(json.dumps({"messageId": turn.message_id, "status": turn.status, "reply": turn.reply,
                          "delivered": delivered}, ensure_ascii=False))
    else:
        print(f"status={turn.status} delivered={'true' if delivered else 'false'} messageId={turn.message_id}")
    return 0 if turn.status == "answered" and delivered else 1


def cli_commands() -> list[CliCommand]:
    return [
        CliCommand("record-turn", "record the finished admin turn (Claude Code Stop hook)",
                   _configure_record_turn, _run_record_turn),
        CliCommand("channels", "channel adapters: retry failed replies, serve the channel routes",
                   _configure_channels, _run_channels),
        CliCommand("schedule", "scheduled automation: dispatch a platform-verified turn",
                   _configure_schedule, _run_schedule),
    ]
