"""The one outcome line every memory write tool logs per call (docs/memory.md#writes).

``[mcp:memory] <tool> account=<id|—> session=<id|—> labels=<csv|—> nameChars=<n|—> result=ok
elementId=<id> ms=<n>`` or ``... result=error reason=<slug> detail=<≤120 chars> ms=<n>``.
Reasons are an enumeration: nothing falls through to a generic "unknown". The line never carries
what was written: a node's name or title is a person's name as often as not, so it is counted
(``nameChars``), and an email address or phone number in a refusal's detail is masked
(``<email>``, ``<phone>``): erase cannot reach the log (docs/cli.md#erase-and-export).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from plughost import AccountMismatch, AccountUnset, PlughostError, UserError, log
from plughost.api.principals import resolve

REASONS = (
    "invalid-input", "schema-unknown-label", "schema-property-naming", "account-isolation",
    "producedby-task-not-found", "constraint-violation", "conflicting-element-id", "invalid-target-node-id",
    "gate-blocked", "store-error",
)
DETAIL_MAX = 120
T = TypeVar("T")


class WriteRejected(UserError):
    """A write refused for an enumerated reason; the message is what the agent sees."""

    def __init__(self, reason: str, detail: str) -> None:
        assert reason in REASONS, reason
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class Call:
    """What the outcome line says about one call; handlers fill in labels/name/elementId as they learn them."""

    tool: str
    env: Mapping[str, str]
    labels: Sequence[str] = ()
    name: str | None = None
    element_id: str | None = None
    started: float = field(default_factory=time.perf_counter)

    @property
    def account(self) -> str | None:
        return resolve(self.env).account

    @property
    def session(self) -> str | None:
        p = resolve(self.env)
        return p.session_node or p.session

    def _fields(self) -> dict[str, Any]:
        return {"account": self.account, "session": self.session,
                "labels": ",".join(self.labels) if self.labels else None,
                "nameChars": len(str(self.name)) if self.name else None}

    def ms(self) -> int:
        return round((time.perf_counter() - self.started) * 1000)

    def ok(self) -> str:
        return log("mcp:memory", self.tool, **self._fields(), result="ok", elementId=self.element_id, ms=self.ms())

    def error(self, reason: str, detail: str) -> str:
        return log("mcp:memory", self.tool, **self._fields(), result="error", reason=reason,
                   detail=_short(mask_contacts(detail), DETAIL_MAX), ms=self.ms())


EMAIL_IN = re.compile(r"[^\s@\"'<>(),;:]{1,64}@[^\s@\"'<>(),;:]{1,253}")
PHONE_IN = re.compile(r"\+?\d[\d ().\-/]{5,24}\d")


def mask_contacts(text: str) -> str:
    """``text`` with email addresses and phone-like digit runs (7 digits or more) masked."""
    text = EMAIL_IN.sub("<email>", text)
    return PHONE_IN.sub(lambda m: "<phone>" if sum(c.isdigit() for c in m.group()) >= 7 else m.group(), text)


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_with_outcome(call: Call, body: Callable[[Call], T]) -> T:
    """Run a write, log exactly one outcome line, and turn every failure into a one-line UserError."""
    try:
        result = body(call)
    except AccountUnset as exc:  # kept its kind: an MCP server adds the install's fix, as for every tool
        call.error("account-isolation", str(exc))
        raise AccountUnset(f"{call.tool}: {exc} (account-isolation)") from None
    except WriteRejected as exc:
        call.error(exc.reason, exc.detail)
        raise UserError(f"{call.tool}: {exc.detail} ({exc.reason})") from None
    except UserError as exc:  # the store's refusals: WriteDenied carries its reason, AccountMismatch is one
        reason = getattr(exc, "reason", None)
        if reason not in REASONS:
            reason = "account-isolation" if isinstance(exc, AccountMismatch) else "invalid-input"
        call.error(reason, str(exc))
        raise UserError(f"{call.tool}: {exc} ({reason})") from None
    except PlughostError as exc:  # a configuration refusal (e.g. embedder/store dimension mismatch)
        call.error("gate-blocked", str(exc))
        raise UserError(f"{call.tool}: {exc} (gate-blocked)") from None
    except Exception as exc:  # the store failed: say so in one line, never a traceback
        detail = f"{type(exc).__name__}: {exc}"
        call.error("store-error", detail)
        raise UserError(f"{call.tool}: store error: {_short(detail, 200)} (store-error)") from None
    call.ok()
    return result
