"""Scheduled dispatches: ``plughost schedule add`` writes one, ``plughost serve`` fires it at its time.

The schedule of an account is ``<home>/accounts/<id>/schedule.json`` (a list of entries, written
atomically under a lock file, so the CLI and a running server can both change it). The server's
loop (:func:`run_scheduler`, started by the channels plugin's startup hook) wakes at least once a
second, claims each due entry (``status: dispatching``, written before the turn runs) and hands
it to :func:`plughost.plugins.channels.pipeline.dispatch_scheduled`, the only code that stamps the
provenance marker; the turn runs in the sender's own session. The message id is derived from
the entry id, so an entry claimed twice (a crash between claim and done, two servers) maps onto
one stored message and one turn: each entry fires once, across restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import math
import os
import secrets
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

from plughost import Host, StateKey, UserError, log
from plughost.api.accounts import account_dir
from plughost.api.serving import stop_of
from plughost.api.util import parse_time
from plughost.plugins.channels.pipeline import dispatch_scheduled
from plughost.plugins.channels.wire import JSON, JSONObject

T = TypeVar("T")

CHANNELS = ("telegram", "whatsapp")
POLL_S = 1.0
HELD_RETRY_S = 2.0  # a held turn is asked again this often (its entry stays pending meanwhile)
PENDING, DISPATCHING, DONE, FAILED = "pending", "dispatching", "done", "failed"


def schedule_path(home: Path, account: str) -> Path:
    return account_dir(account, home) / "schedule.json"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_entries(path: Path) -> list[JSONObject]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: unreadable schedule ({exc}); expected a JSON list of entries") from None
    if not isinstance(data, list):
        raise UserError(f"{path}: (top level): expected a list of schedule entries")
    return [e for e in data if isinstance(e, dict)]


def _write(path: Path, entries: list[JSONObject]) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def update(path: Path, change: Callable[[list[JSONObject]], T]) -> T:
    """Read, change and write the schedule under its lock; returns what ``change`` returns."""
    with _locked(path):
        entries = read_entries(path)
        result = change(entries)
        _write(path, entries)
        return result


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


PAST_GRACE = timedelta(minutes=1)
MAX_AHEAD = timedelta(days=3653)


def parse_when(at: str | None, after: float | None, now: datetime | None = None) -> datetime:
    """``--at`` (ISO 8601; no zone means UTC) or ``--in`` seconds from now."""
    now = now or datetime.now(UTC)
    if (at is None) == (after is None):
        raise UserError("schedule add: give exactly one of --at ISO-8601-TIME or --in SECONDS")
    if after is not None:
        if not math.isfinite(after) or not 0 <= after <= MAX_AHEAD.total_seconds():
            raise UserError(f"--in: expected a number of seconds from 0 to {MAX_AHEAD.total_seconds():.0f}"
                            f" (10 years) (got {after:g})")
        return now + timedelta(seconds=after)
    moment = parse_time(at, "--at")
    # A time already past would fire at once: most often a typo in the date, so say so instead.
    if moment < now - PAST_GRACE:
        raise UserError(f"--at: {iso(moment)} is in the past (now {iso(now)}); use --in 0 to send now")
    if moment > now + MAX_AHEAD:
        raise UserError(f"--at: {iso(moment)} is more than 10 years ahead; expected a time before {iso(now + MAX_AHEAD)}")
    return moment


def add_entry(home: Path, account: str, *, channel: str, to: str, event: str, text: str, when: datetime,
              owner: str | None = None, chat_id: str | None = None) -> JSONObject:
    if channel not in CHANNELS:
        raise UserError(f"--channel: expected one of {', '.join(CHANNELS)} (got {channel!r})")
    entry = {"id": f"sch-{secrets.token_hex(8)}", "channel": channel, "to": to, "event": event, "text": text,
             "owner": owner, "chatId": chat_id, "at": iso(when), "status": PENDING, "createdAt": iso(datetime.now(UTC))}
    update(schedule_path(home, account), lambda entries: entries.append(entry))
    log("schedule", "op=added", id=entry["id"], event=event, channel=channel, at=entry["at"])
    return entry


def _due(entry: JSONObject, now: datetime) -> bool:
    if entry.get("status") != PENDING:
        return False
    try:
        return parse_when(str(entry.get("at")), None) <= now
    except UserError:
        return False


def claim_due(path: Path, now: datetime) -> list[JSONObject]:
    """Mark every due pending entry ``dispatching`` (durably, before any turn runs) and return them."""

    def change(entries: list[JSONObject]) -> list[JSONObject]:
        claimed = []
        for entry in entries:
            if _due(entry, now):
                entry["status"] = DISPATCHING
                entry["claimedAt"] = iso(now)
                claimed.append(dict(entry))
        return claimed

    if not path.exists():
        return []
    return update(path, change)


def reclaim_interrupted(path: Path) -> int:
    """Entries a stopped server claimed but never finished go back to pending (their message id dedups)."""

    def change(entries: list[JSONObject]) -> int:
        n = 0
        for entry in entries:
            if entry.get("status") == DISPATCHING:
                entry["status"] = PENDING
                n += 1
        return n

    return update(path, change) if path.exists() else 0


def finish(path: Path, entry_id: str, **fields: JSON) -> None:
    def change(entries: list[JSONObject]) -> None:
        for entry in entries:
            if entry.get("id") == entry_id:
                entry.update({k: v for k, v in fields.items() if v is not None})

    update(path, change)


async def fire(host: Host, path: Path, entry: JSONObject) -> None:
    """One entry's turn; its outcome is written back to the schedule."""
    target = {"chat_id": entry.get("chatId") or entry["to"]} if entry["channel"] == "telegram" else {"to": entry["to"]}
    try:
        turn = await dispatch_scheduled(host, channel=entry["channel"], sender=str(entry["to"]),
                                        event=str(entry["event"]), text=str(entry["text"]),
                                        owner_user_id=entry.get("owner"), target=target,
                                        platform_id=f"schedule:{entry['id']}")
    except Exception as exc:  # the loop keeps running; the entry says why
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        log("schedule", "op=failed", id=entry["id"], reason=reason)
        await asyncio.to_thread(finish, path, entry["id"], status=FAILED, error=reason)
        return
    if turn.status == "interrupted":  # the server is stopping: the entry fires again at the next start
        log("schedule", "op=interrupted", id=entry["id"], messageId=turn.message_id)
        await asyncio.to_thread(finish, path, entry["id"], status=PENDING)
        return
    if turn.status == "held":  # unanswered and held elsewhere: fire again once its holder's lease expires
        if not entry.get("waitingSince"):
            log("schedule", "op=waiting", id=entry["id"], messageId=turn.message_id, reason="held")
        await asyncio.sleep(HELD_RETRY_S)  # still ``dispatching`` meanwhile: no second task picks it up
        await asyncio.to_thread(finish, path, entry["id"], status=PENDING,
                                waitingSince=entry.get("waitingSince") or iso(datetime.now(UTC)))
        return
    if turn.status == "duplicate":  # claimed before a stop, its message already stored: not a second turn
        log("schedule", "op=already-dispatched", id=entry["id"], messageId=turn.message_id)
        await asyncio.to_thread(finish, path, entry["id"], status=DONE, messageId=turn.message_id)
        return
    delivered = bool(turn.delivery and turn.delivery.get("ok"))
    log("schedule", "op=fired", id=entry["id"], event=entry["event"], status=turn.status,
        delivered="true" if delivered else "false", messageId=turn.message_id)
    await asyncio.to_thread(finish, path, entry["id"], status=DONE, firedAt=iso(datetime.now(UTC)),
                            messageId=turn.message_id, turnStatus=turn.status, delivered=delivered)


async def run_scheduler(host: Host, stop: asyncio.Event) -> None:
    """Fire due entries until ``stop`` is set (checked at least every :data:`POLL_S` seconds)."""
    account = host.principal.account
    if not account:
        return
    path = schedule_path(host.home, account)
    try:
        reclaimed = await asyncio.to_thread(reclaim_interrupted, path)
    except UserError as exc:
        reclaimed = 0
        log("schedule", "op=unreadable", reason=str(exc)[:200])
    log("schedule", "op=started", account=account[:8], reclaimed=reclaimed)
    running: set[asyncio.Task[None]] = set()
    stopping = stop_of(host)
    while not stop.is_set():
        try:
            for entry in [] if stopping.is_set else await asyncio.to_thread(claim_due, path, datetime.now(UTC)):
                task = asyncio.ensure_future(fire(host, path, entry))
                running.add(task)
                task.add_done_callback(running.discard)
        except UserError as exc:
            log("schedule", "op=unreadable", reason=str(exc)[:200])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), POLL_S)
    if running:
        await asyncio.wait(running, timeout=30)
    log("schedule", "op=stopped")



SCHEDULER: StateKey[tuple[asyncio.AbstractEventLoop, asyncio.Event, asyncio.Future[None]]] = StateKey(
    "channels.scheduler")
"""(loop, stop event, task) of the running scheduler."""

def start(host: Host) -> None:
    """From the startup hook (a worker thread of the server's loop): run the scheduler on that loop."""
    import anyio.from_thread

    try:
        loop = anyio.from_thread.run_sync(asyncio.get_running_loop)
    except RuntimeError:
        return  # not called from a server's worker thread (a plain Host.call_each)

    async def begin() -> None:
        stop = asyncio.Event()
        host.state.set(SCHEDULER, (loop, stop, asyncio.ensure_future(run_scheduler(host, stop))))

    asyncio.run_coroutine_threadsafe(begin(), loop).result(10)


def stop(host: Host) -> None:
    """From the shutdown hook: let the loop finish the turns it started, then return."""
    started = host.state.pop(SCHEDULER)
    if started is None:
        return
    loop, event, task = started

    async def end() -> None:
        event.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(task), 35)

    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(end(), loop).result(40)
