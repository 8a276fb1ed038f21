"""Inbound screening (docs/channels.md#screening): verdict, injection flag, intent, language, complexity.

A provider (an LLM, through ``plughost_screen_message``) may classify the message; it gets
:data:`PROVIDER_TIMEOUT` seconds and any failure falls through with the message unmodified.
The local check against the shared injection vocabulary always runs, including on messages
under five words (which skip the provider), so a short payload cannot slip past screening. The
language is detected locally (:mod:`plughost.plugins.channels.language`; a provider's ``lang`` wins).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field

from plughost import Host, log
from plughost.api import hooks
from plughost.plugins.channels import language
from plughost.plugins.channels.wire import JSONObject

PROVIDER_TIMEOUT = 3.0
SHORT_MESSAGE_WORDS = 5
VERDICTS = ("CLEAN", "SUSPICIOUS", "DISCARD")
INTENTS = ("question", "instruction", "complaint", "greeting", "follow-up")

INJECTION_VOCABULARY: tuple[str, ...] = (
    r"ignore (?:all |any |the )?(?:previous|prior|above|earlier) (?:instructions?|prompts?|rules?|messages?)",
    r"disregard (?:all |any |the )?(?:previous|prior|above|earlier|your) (?:instructions?|prompts?|rules?)",
    r"forget (?:all |everything|your) (?:previous |prior )?(?:instructions?|rules?|you were told)",
    r"(?:reveal|print|show|repeat|leak) (?:me )?(?:your|the) (?:system |hidden |initial )?(?:prompt|instructions)",
    r"system prompt",
    r"you are now (?:a|an|in|the|admin|root)\b",
    r"\bjailbreak\b",
    r"\bdeveloper mode\b",
    r"\bDAN mode\b",
    r"act as (?:an? )?(?:admin|administrator|root|developer|the platform)",
    r"new (?:system )?instructions?:",
    r"(?:^|\n)\s*#{1,3} ?(?:scheduled automation|standing rules|system)\b",
    r"platform[- ]verified",
    r"</?(?:system|instructions?|assistant)>",
    r"override (?:your |the )?(?:rules|instructions|safety)",
    r"\bsudo\b",
)
"""Shared prompt-injection vocabulary (case-insensitive regular expressions)."""

_VOCAB = re.compile("|".join(f"(?:{p})" for p in INJECTION_VOCABULARY), re.I)
_GREETING = re.compile(r"^\s*(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening)|hola|bonjour|ciao|yo)\b", re.I)
_QUESTION = re.compile(r"\?\s*$|^\s*(?:who|what|when|where|why|how|which|can|could|do|does|is|are|will|would|should)\b", re.I)
_COMPLAINT = re.compile(r"\b(?:not working|broken|refund|complain|complaint|terrible|awful|disappointed|unacceptable|still waiting)\b", re.I)
_FOLLOWUP = re.compile(r"^\s*(?:and|also|what about|thanks|thank you|ok|okay|yes|no|sure)\b", re.I)


@dataclass
class Screening:
    verdict: str = "CLEAN"
    injection: bool = False
    intent: str = "instruction"
    lang: str = "und"
    complexity: str = "simple"
    fallthrough: bool = False
    provider: bool = False
    matches: list[str] = field(default_factory=list)
    ms: int = 0

    def as_dict(self) -> JSONObject:
        return {"verdict": self.verdict, "injection": self.injection, "intent": self.intent,
                "lang": self.lang, "complexity": self.complexity, "fallthrough": self.fallthrough}


def word_count(text: str) -> int:
    return len(text.split())


def local_injection(text: str) -> list[str]:
    """The vocabulary phrases found in ``text`` (empty when clean)."""
    return [m.group(0) for m in _VOCAB.finditer(text)]


def local_intent(text: str) -> str:
    if _COMPLAINT.search(text):
        return "complaint"
    if _GREETING.search(text) and word_count(text) <= 6:
        return "greeting"
    if _QUESTION.search(text):
        return "question"
    if _FOLLOWUP.search(text):
        return "follow-up"
    return "instruction"


def local_screen(text: str) -> Screening:
    """The deterministic check that always runs."""
    matches = local_injection(text)
    return Screening(
        verdict="DISCARD" if matches else "CLEAN",
        injection=bool(matches),
        intent=local_intent(text),
        lang=language.detect(text),
        complexity="complex" if word_count(text) > 40 or text.count("\n") > 4 else "simple",
        matches=matches,
    )


def _merge(local: Screening, answer: JSONObject) -> Screening:
    """Provider fields win, except a provider can never clear a local injection match."""
    out = Screening(**{**local.__dict__})
    out.provider = True
    verdict = str(answer.get("verdict", "")).upper()
    if verdict in VERDICTS and VERDICTS.index(verdict) > VERDICTS.index(out.verdict):
        out.verdict = verdict
    out.injection = out.injection or bool(answer.get("injection") or answer.get("promptInjection"))
    if answer.get("intent") in INTENTS:
        out.intent = answer["intent"]
    if isinstance(answer.get("lang"), str) and answer["lang"]:
        out.lang = answer["lang"][:8]
    if answer.get("complexity") in ("simple", "complex"):
        out.complexity = answer["complexity"]
    return out


def _call_provider(host: Host, message: JSONObject, timeout: float) -> tuple[JSONObject | None, bool]:
    """Run the provider hook in a daemon thread; (answer, fell_through)."""
    box: JSONObject = {}

    def target() -> None:
        try:
            box["answer"] = host.first(hooks.SCREEN_MESSAGE, message=message)
        except BaseException as exc:  # noqa: BLE001 - any provider failure falls through
            box["error"] = exc

    worker = threading.Thread(target=target, name="screen-provider", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive() or "error" in box:
        return None, True
    answer = box.get("answer")
    if answer is None:
        return None, False
    if not isinstance(answer, dict):
        return None, True
    return answer, False


def has_provider(host: Host) -> bool:
    try:
        return bool(host.has_implementations(hooks.SCREEN_MESSAGE))
    except AttributeError:
        return False


def screen(host: Host, *, channel: str, text: str, sender: str, role: str,
           timeout: float = PROVIDER_TIMEOUT) -> Screening:
    """Screen one message and log the ``[inbound-gateway]`` line."""
    t0 = time.perf_counter()
    result = local_screen(text)
    if word_count(text) >= SHORT_MESSAGE_WORDS and host is not None and has_provider(host):
        answer, fell = _call_provider(host, {"channel": channel, "text": text, "sender": sender, "role": role},
                                      timeout)
        if answer is not None:
            result = _merge(result, answer)
        result.fallthrough = fell
    result.ms = int((time.perf_counter() - t0) * 1000)
    log("inbound-gateway", channel=channel, verdict=result.verdict, intent=result.intent, lang=result.lang,
        complexity=result.complexity, ms=result.ms, fallthrough=result.fallthrough, role=role,
        injection=result.injection)
    return result
