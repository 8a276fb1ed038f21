"""The channels plugin's ``PLUGHOST_*`` settings (published through ``plughost_settings``).

Each is read through its object (``AGENT_TIMEOUT.read(host.env)``): see :mod:`plughost.util.settings`.
"""

from __future__ import annotations

from plughost import Setting
from plughost.api.settings import declared

AGENT: Setting[str | None] = Setting(
    "PLUGHOST_AGENT", "choice", None,
    "who answers the channels (unset: command when PLUGHOST_AGENT_COMMAND is set, else memory)",
    choices=("memory", "claude", "command"))
AGENT_COMMAND: Setting[str | None] = Setting(
    "PLUGHOST_AGENT_COMMAND", "str", None, "the command runner's command line: the payload JSON on stdin, the reply on stdout")
AGENT_TIMEOUT: Setting[float] = Setting(
    "PLUGHOST_AGENT_TIMEOUT", "float", 120.0, "seconds an agent runner has for one turn", above=0)
AGENT_CONCURRENCY: Setting[int] = Setting(
    "PLUGHOST_AGENT_CONCURRENCY", "int", 8, "agent runs at once in one process", minimum=1)
AGENT_MIN_MATCH: Setting[float] = Setting(
    "PLUGHOST_AGENT_MIN_MATCH", "float", 0.5,
    "the memory runner's answer threshold: the share of the question's content words a passage must contain "
    "(above 1: it never answers)", minimum=0)
CLAUDE_BIN: Setting[str] = Setting("PLUGHOST_CLAUDE_BIN", "str", "claude", "the claude runner's CLI")
CHANNELS_RESUME: Setting[bool] = Setting(
    "PLUGHOST_CHANNELS_RESUME", "bool", True, "resume the turns and replies a stopped server left when serve starts")
RESUME_BATCH: Setting[int] = Setting(
    "PLUGHOST_RESUME_BATCH", "int", 100, "unfinished turns taken per resume batch", minimum=1, maximum=10_000)
CHANNELS_MAX_QUEUED: Setting[int] = Setting(
    "PLUGHOST_CHANNELS_MAX_QUEUED", "int", 2_000, "webchat turns waiting in one process beyond which webchat answers 429",
    minimum=0)
WEBCHAT_MAX_TURNS: Setting[int] = Setting(
    "PLUGHOST_WEBCHAT_MAX_TURNS", "int", 8, "a webchat visitor's agent turns queued or running at once (then a fixed reply)",
    minimum=1)
RATE_WEBCHAT_VISITOR: Setting[str] = Setting(
    "PLUGHOST_RATE_WEBCHAT_VISITOR", "str", "30/20", "one webchat session's messages: PER_MINUTE/BURST, 0 off")
RATE_WEBCHAT_ADDRESS: Setting[str] = Setting(
    "PLUGHOST_RATE_WEBCHAT_ADDRESS", "str", "120/60", "every webchat session from one client address: PER_MINUTE/BURST, 0 off")
CHANNELS_HTTP_TIMEOUT: Setting[float] = Setting(
    "PLUGHOST_CHANNELS_HTTP_TIMEOUT", "float", 10.0, "seconds a reply to Telegram or WhatsApp may take (connect: 5 at most)",
    above=0)
CHANNELS_SEND_ATTEMPTS: Setting[int] = Setting(
    "PLUGHOST_CHANNELS_SEND_ATTEMPTS", "int", 4, "attempts to send one reply", minimum=1)
CHANNELS_MAX_RETRY_DELAY: Setting[float] = Setting(
    "PLUGHOST_CHANNELS_MAX_RETRY_DELAY", "float", 30.0, "seconds between two attempts to send a reply at most", minimum=0)
TELEGRAM_TOKEN: Setting[str | None] = Setting("PLUGHOST_TELEGRAM_TOKEN", "str", None, "the Telegram bot token")
TELEGRAM_SECRET: Setting[str | None] = Setting(
    "PLUGHOST_TELEGRAM_SECRET", "str", None, "the webhook secret Telegram sends (X-Telegram-Bot-Api-Secret-Token)")
TELEGRAM_API_BASE: Setting[str] = Setting(
    "PLUGHOST_TELEGRAM_API_BASE", "str", "https://api.telegram.org", "the Telegram Bot API")
WHATSAPP_TOKEN: Setting[str | None] = Setting("PLUGHOST_WHATSAPP_TOKEN", "str", None, "the WhatsApp Cloud API token")
WHATSAPP_PHONE_ID: Setting[str | None] = Setting("PLUGHOST_WHATSAPP_PHONE_ID", "str", None, "the WhatsApp phone number id")
WHATSAPP_APP_SECRET: Setting[str | None] = Setting(
    "PLUGHOST_WHATSAPP_APP_SECRET", "str", None, "the app secret the webhook's X-Hub-Signature-256 is checked with")
WHATSAPP_VERIFY_TOKEN: Setting[str | None] = Setting(
    "PLUGHOST_WHATSAPP_VERIFY_TOKEN", "str", None, "the hub.verify_token of the webhook subscription")
WHATSAPP_API_BASE: Setting[str] = Setting(
    "PLUGHOST_WHATSAPP_API_BASE", "str", "https://graph.facebook.com/v21.0", "the WhatsApp Cloud API")

ALL = declared(vars())
