"""The one redaction: what plughost stores (ToolCall, Task, Briefing) or logs never holds a secret in clear.

:func:`redact_text` for a string, :func:`redact_value` for JSON-like data (with the tool's input
schema's hints), :func:`redact_schema` for a JSON schema kept as data (its ``default``/``examples``
of secret properties). A secret becomes :data:`MARKER`; its name, quotes and scheme stay, so
``password=[redacted]`` still says what was there.

Rules, in order: private key blocks (PEM, OpenSSH, PGP, PuTTY); passwords in URLs; command-line
passwords (``mysql -p…``, ``curl -u user:pw``, ``sshpass -p``, ``redis-cli -a``, ``--password=…``
and other secret-named flags); ``Cookie:`` headers; ``name: value`` / ``NAME=value`` /
``"name": "value"`` pairs whose name looks secret (:func:`secret_name`); name/value pair objects
(``{"name": "Authorization", "value": …}``); ``Bearer …`` and ``Basic <base64 user:pw>``; and the
vendor key formats of ``detect-secrets`` (its plugins' regexes: AWS, Stripe, GitHub, GitLab,
Slack, Twilio, JWT, SendGrid ...) plus the few it lacks (``github_pat_``, Google ``AIza``/``ya29.``,
OpenAI/Anthropic ``sk-…``, Hugging Face, npm, Shopify ...); last, random-looking strings
(:func:`_high_entropy`): base64/base64url/hex of high entropy beside a word that names a secret
(``invalid token X``, ``my key is X``), long ones alone (a bare 64-hex, 40+ base64), and base64
blobs whose decoded text holds a secret (a PEM key, a service-account JSON). Space-separated command
lines (``aws configure set aws_secret_access_key …``, ``export API_KEY …``, ``echo … | … --password-stdin``)
and JSON arrays/objects under a secret key at any depth of JSON in JSON are the pair rules'.

Importing ``detect_secrets`` costs ~50 ms (it pulls ``requests``), and every process that logs a
line redacts it: the patterns' sources are read from the package once and kept in
``<PLUGHOST_HOME>/cache/redact-patterns.json`` (keyed by its version and files), compiled on the
first redaction; a missing or broken package leaves the built-in formats.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import importlib.util
import inspect
import json
import math
import os
import pkgutil
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any, cast

from plughost.util import config

MARKER = "[redacted]"


class _Lazy:
    """A regex compiled on its first use. The module's ~80 patterns (its rules and the vendor
    formats) cost ~10 ms to compile, every process that logs imports this module, and a line meets
    only the few rules its literal gates let through (a boot's lines: four or five)."""

    __slots__ = ("_source", "_compiled")

    def __init__(self, pattern: str, flags: int = 0, never_on_error: bool = False) -> None:
        self._source: tuple[str, int, bool] | None = (pattern, flags, never_on_error)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        compiled = self._compiled
        if compiled is None:
            pattern, flags, never = self._source  # type: ignore[misc]
            try:
                compiled = re.compile(pattern, flags)
            except re.error:
                if not never:
                    raise
                compiled = re.compile(r"(?!)")  # a pattern Python's re cannot compile matches nothing
            self._compiled = compiled
        return getattr(compiled, name)


def _lazy(pattern: str, flags: int = 0, never_on_error: bool = False) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, compiled on the first use (:class:`_Lazy`)."""
    return cast("re.Pattern[str]", _Lazy(pattern, flags, never_on_error))

# names --------------------------------------------------------------------------------------
_STRONG = ("password", "passwd", "passphrase", "passcode", "secret", "credential", "apikey", "privatekey",
           "accesskey", "secretkey", "authtoken", "accesstoken", "refreshtoken", "sessiontoken", "clientsecret")
"""Substrings of a lower-cased, separator-free name (``PGPASSWORD``, ``clientSecret``, ``x-api-key``)."""
_WORDS = {"pwd", "pw", "pass", "token", "auth", "authorization", "cookie", "cookies", "credentials", "creds",
          "secrets", "pin", "otp", "totp", "bearer", "jwt", "sid"}
_KEY_QUALIFIERS = {"api", "private", "secret", "access", "signing", "encryption", "master", "client", "app",
                   "license", "ssh", "gpg", "auth", "session", "shared", "service", "account", "storage",
                   "subscription", "deploy", "webhook", "hmac", "aes", "rsa", "jwt", "consumer"}
_SESSION_SECRETS = {"key", "token", "secret", "cookie"}
_NOT_SECRET_TAIL = {"count", "counts", "limit", "limits", "max", "min", "type", "types", "kind", "length", "len",
                    "size", "budget", "url", "uri", "urls", "endpoint", "path", "file", "dir", "name", "names",
                    "id", "ids", "method", "methods", "mode", "enabled", "required", "policy", "expiry", "expires",
                    "expiration", "ttl", "usage", "used", "total", "format", "field", "fields", "prompt", "hint",
                    "label", "schema", "env", "var", "stdin", "hash", "algorithm", "provider", "scheme", "header",
                    "version", "source", "status", "strategy", "reset", "changed", "set", "warning", "error",
                    "exception", "manager", "helper"}
_PASS_FLAGS = {"storepass", "keypass", "srcstorepass", "deststorepass", "srckeypass", "destkeypass", "passin",
               "passout", "storepassword", "keypassword"}
"""Password flags of keytool, jarsigner and openssl (``-storepass …``, ``-passout pass:…``)."""
_WORD_SPLIT = _lazy(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a key, header, flag or variable name says its value is a secret.

    ``password``, ``PGPASSWORD``, ``api_key``, ``X-Auth-Token``, ``Authorization``, ``client_secret``,
    ``session_token``, ``pwd``, ``auth`` are; ``author``, ``max_tokens``, ``token_url``, ``sessionId``,
    ``secretary`` and ``password_file`` are not.
    """
    words = [w.lower() for w in _WORD_SPLIT.findall(name)]
    if not words or words[0] == "no" or words[-1] in _NOT_SECRET_TAIL:
        return False
    flat = "".join(words)
    if flat in _PASS_FLAGS:
        return True
    if any(s in flat for s in _STRONG) and "secretar" not in flat:
        return True
    if any(w in _WORDS for w in words) or flat.endswith("token"):
        return True
    if words[-1] in ("key", "keys"):
        return len(words) > 1 and words[-2] in _KEY_QUALIFIERS
    return len(words) > 1 and words[-2] == "session" and words[-1] in _SESSION_SECRETS


# the text rules ------------------------------------------------------------------------------
_PRIVATE_BLOCK = _lazy(r"(-----BEGIN (?P<kind>[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?)-----)"
                            r"(?P<body>.*?)(?:(?P<end>-----END (?P=kind)-----)|\Z)", re.DOTALL)
_PUTTY = _lazy(r"(Private-Lines: *\d+)((?:\r?\n|\\n)[A-Za-z0-9+/=]+)+|(Private-MAC: *)[0-9a-fA-F]+")
_URL_PASSWORD = _lazy(r"(\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/@'\"<>]*:)([^\s/'\"<>]+)(?=@)")
_MYSQL = _lazy(r"(\b(?:mysql\w*|mariadb[\w-]*)\b[^\n|;&]{0,400}?\s-p)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_CURL_USER = _lazy(r"(\b(?:curl|wget)\b[^\n|;&]{0,400}?\s(?:-u|--user|--proxy-user|--http-user)(?:\s*|=)['\"]?"
                        r"[^\s:'\"]*:)([^\s'\"]+)")
_PASS_TOOLS = _lazy(r"(\b(?:sshpass\s+-p|redis-cli\b[^\n|;&]{0,400}?\s-a)\s*)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_LOGIN_P = _lazy(r"(\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oc|az|cf|argocd|crane|oras|regctl|apptainer|singularity)\b[^\n|;&]{0,200}?\blogin\b[^\n|;&]{0,200}?"
                      r"\s-p\s*)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_HTPASSWD = _lazy(r"(\bhtpasswd\b(?:\s+-[A-Za-z]+)*?\s+-[A-Za-z]*b[A-Za-z]*(?:\s+-[A-Za-z]+)*"
                       r"(?:\s+(?:'[^']*'|\"[^\"]*\"|[^\s'\"]+)){2}\s+)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_NETRC = _lazy(r"(\bmachine\s+\S+(?:\s+login\s+\S+)?\s+password\s+)(\S+)")
_CAPITAL_P = _lazy(r"(\b(?:sqlcmd|bcp|osql|isql|zip|unzip|zipcloak)\b[^\n|;&]{0,300}?\s-P\s*)"
                        r"('[^']*'|\"[^\"]*\"|[^\s'\"]+)")
"""``sqlcmd -P …``, ``zip -P …``: the capital ``-P`` of these tools is the password."""
_ATTACHED_P = _lazy(r"(\b(?:7z|7za|7zr|rar|unrar)\b[^\n|;&]{0,300}?\s-p)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_SMB_USER = _lazy(r"(\b(?:smbclient|smbmap|rpcclient|net)\b[^\n|;&]{0,300}?\s(?:-U|--user)(?:\s+|=)['\"]?[^\s%'\"]+%)"
                       r"([^\s'\"]+)")
_HTTPIE = _lazy(r"((?<![\w/.:-])(?:https?|xh)(?:\s[^\n|;&]{0,300}?)?\s(?:-a|--auth)(?:\s+|=)['\"]?[^\s:'\"]*:)([^\s'\"]+)")
_CLI_SET = _lazy(
    r"((?<![\w-])(?:export|setenv|(?:config|configure)(?:\s+--?[\w-]+)*(?:\s+set)?|config:set|secrets?\s+set)"
    r"[ \t]+(?P<name>[^\s=\"'`]{1,160})[ \t]+)(?P<val>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"=][^\s'\"]*)")
"""``aws configure set aws_secret_access_key …``, ``export API_KEY …``, ``setenv DB_PASSWORD …``,
``npm config set //registry/:_authToken …``, ``git config --global hub.oauthtoken …``."""
_STDIN = _lazy(r"(\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?)('[^'\n]*'|\"[^\"\n]*\"|[^\s|'\";&]+)"
                    r"(?=[ \t]*\|[^\n|]{0,300}?(?:--password-stdin|--with-token|--token-stdin|--stdin\b|\bchpasswd\b))")
"""``echo '…' | docker login --password-stdin``, ``echo … | gh auth login --with-token``."""
_HERE = _lazy(r"((?:--password-stdin|--with-token|--token-stdin|--stdin)\b[^\n|;&]{0,200}?<<<[ \t]*)"
                   r"('[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)")
"""``gh auth login --with-token <<< '…'`` (a here-string)."""
_XML = _lazy(r"(?i)(<(?P<tag>[\w:.-]{0,40}?(?:password|passwd|passphrase|secret|token|apikey|api_key|pwd)"
                  r"[\w:.-]{0,40})(?:\s[^>]{0,200})?>)([^<]{1,500})(</(?P=tag)\s*>)")
_PROSE = _lazy(r"(?i)(\b(?:password|passcode|passphrase|passwd|pwd|pin code)\s+(?:is|was)\s*:?\s*)"
                    r"([^\s,;]{4,}?)(?=[.,;!?]?(?:\s|$))")
_FLAG = _lazy(r"((?<!\S)--?(?P<flag>[A-Za-z][\w-]{0,40})(?:=|\s+))(?P<val>'[^']*'|\"[^\"]*\"|[^\s'\"\-][^\s'\"]*)")
_COOKIE = _lazy(r"(?i)((?<![\w-])(?:set-)?cookie\\?[\"']?[ \t]*:[ \t]*\\?[\"']?)([^\n\"'\\]+)")
_KEY = _lazy(
    r"(?<![\w.\-])(?P<q>\\*[\"']|)"
    r"(?=[\w.\-]{0,127}?(?i:pass|pw|secret|token|key|auth|cred|cookie|pin|otp|bearer|jwt|sid))"
    r"(?P<key>[A-Za-z_][\w.\-]{0,127})(?P=q)(?P<sep>[ \t]*(?:=>|:=|=|:)[ \t]*)"
    r"(?P<scheme>(?i:bearer|basic|token|digest|bot|apikey|sso-key)[ \t]+)?")
"""``name<sep>``, for a name holding a fragment of a secret name (the value is read after it, so a
pair inside another's value, ``name=password=…``, is found too)."""
_VALUE = _lazy(r"\\\"(?:[^\"\\]|\\[^\"])*\\\"|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s\"'`,;&<>(){}\[\]\\]+")
_PAIR = _lazy(
    r"(?P<q>\\?\")(?:name|key|header)(?P=q)\s*:\s*(?P=q)(?P<name>[^\"\\]{1,80})(?P=q)\s*,\s*"
    r"(?P=q)value(?P=q)\s*:\s*(?P=q)(?P<val>(?:[^\"\\]|\\[^\"])*)(?P=q)")
_YAML_PAIR = _lazy(
    r"(?m)^(?P<indent>[ \t]*)-[ \t]+name:[ \t]*(?P<nq>[\"']?)(?P<name>[\w.\-]{1,128})(?P=nq)[ \t]*\r?\n"
    r"(?P=indent)[ \t]+value:[ \t]*(?P<val>[^\r\n]+)")
"""A YAML list item naming a variable and giving its value on the next line (a Kubernetes or
compose ``env:`` entry: ``- name: DB_PASSWORD`` / ``value: …``)."""
_LINE_GAP = _lazy(r"\s*")
_PAIR_REVERSED = _lazy(
    r"(?P<q>\\?\")value(?P=q)\s*:\s*(?P=q)(?P<val>(?:[^\"\\]|\\[^\"])*)(?P=q)\s*,\s*"
    r"(?P=q)(?:name|key|header)(?P=q)\s*:\s*(?P=q)(?P<name>[^\"\\]{1,80})(?P=q)")
_BEARER = _lazy(r"(?i)(?<![\w-])(bearer[ \t]+)([A-Za-z0-9._~+/\-]{12,}=*)")
_BASIC = _lazy(r"(?<![\w-])([Bb]asic[ \t]+)([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])")
_NOT_VALUES = {"str", "int", "bool", "bytes", "none", "null", "nil", "true", "false", "string", "optional",
               "any", "undefined", "required", "redacted", "secret", "password", "self", "object", "number",
               "boolean", "integer", "float", "list", "dict"}
_REFERENCE = _lazy(r"\$\{?[A-Za-z_][\w.]*\}?|%\([\w]+\)s|\{\{[^}]*\}\}|<[^>]*>|\*+|x{3,}|\.{3}|…")

_EXTRA_FORMATS = (
    r"github_pat_[A-Za-z0-9_]{22,}",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"\bya29\.[0-9A-Za-z_\-]{20,}",
    r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
    r"\b(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,}",
    r"\bwhsec_[A-Za-z0-9]{24,}",
    r"\bxox[abposre]-[A-Za-z0-9-]{10,}",
    r"\bxapp-\d-[A-Za-z0-9-]{20,}",
    r"\bhf_[A-Za-z0-9]{30,}",
    r"\bnpm_[A-Za-z0-9]{36}",
    r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    r"\bdo[por]_v1_[a-f0-9]{64}",
    r"\bkey-[0-9a-f]{32}\b",
    r"\bAKIA[0-9A-Z]{16}",
    r"\bhv[sbr]\.[A-Za-z0-9_\-]{20,}",
    r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{4,}",
)
"""Formats ``detect-secrets`` 1.5 lacks (and the old built-ins, kept when it is missing)."""
_SKIPPED_PLUGINS = {
    "private_key": "the block rule takes the whole key, not only its header",
    "basic_auth": "the URL rule",
    "ip_public": "an address is not a secret",
    "cloudant": "its name=value forms are the pair rule's",
    "ibm_cloud_iam": "its name=value forms are the pair rule's",
    "ibm_cos_hmac": "its name=value forms are the pair rule's",
    "softlayer": "its name=value forms are the pair rule's",
}
"""detect-secrets plugins whose regexes are not used as they are, and why."""
_GATES = {"artifactory": ("AKC", "AP"), "mailchimp": ("-us",), "telegram_token": (":",), "discord": (".",),
          "stripe": ("k_live_",), "slack": ("xox", "hooks.slack"), "aws": ("A",), "twilio": ("AC", "SK"),
          "npm": ("_authToken",)}
"""Cheap substring tests before a detect-secrets regex without a literal prefix runs over a text."""
_LITERAL = _lazy(r"(?:[A-Za-z0-9_\-]|\\[.\-/])+")
"""A run of literal characters at a pattern's start (``\\.``, ``\\-`` and ``\\/`` as the characters)."""


def _top_level_bar(pattern: str) -> bool:
    """Whether ``pattern`` has an alternation outside every group (``abc|def``)."""
    depth, i, in_class = 0, 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 1 if pattern[i + 1:i + 2] != "]" else 2
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return True
        i += 1
    return False
_OPTIONAL = ("?", "*", "{0", "{,")
_CLASS = _lazy(r"\[([A-Za-z0-9_]{1,8})\]")
"""A class of literal characters, read through by :func:`literal_gates` (``gh[pousr]_`` → ``ghp_`` … ``ghr_``)."""
MAX_GATES = 16


def literal_gates(pattern: str, flags: int = 0) -> tuple[str, ...]:
    """Substrings one of which every match of ``pattern`` holds, read off its start: a leading
    literal (``\\bAKIA…`` → ``AKIA``) or a group of literal alternatives (``(ghp|gho)_…`` → ``ghp_``,
    ``gho_``); none when the start is anything else. A pattern Python's ``re`` cannot search by its
    prefix (a ``\\b`` first) costs a scan of the text; ``in`` over the gates costs next to nothing."""
    if flags & re.IGNORECASE or _top_level_bar(pattern):
        return ()
    rest = pattern[2:] if pattern.startswith("\\b") else pattern
    heads = [""]
    group = re.match(r"\((?:\?:)?((?:[A-Za-z0-9_]+\|)*[A-Za-z0-9_]+)\)", rest)
    if group:
        if rest[group.end():].startswith(_OPTIONAL):
            return ()
        heads, rest = group.group(1).split("|"), rest[group.end():]
    gates = tuple(heads)
    while True:  # a literal run, then (once it ends on a small class of literal characters) the run after it
        run = _LITERAL.match(rest)
        tail = run.group(0).replace("\\", "") if run else ""
        rest = rest[run.end():] if run else rest
        if tail and rest.startswith(_OPTIONAL):
            gates = tuple(gate + tail[:-1] for gate in gates)
            break
        gates = tuple(gate + tail for gate in gates)
        chars = _CLASS.match(rest)
        if chars is None or rest[chars.end():chars.end() + 1] in ("?", "*", "+", "{") \
                or len(gates) * len(chars.group(1)) > MAX_GATES:
            break
        gates = tuple(gate + ch for gate in gates for ch in dict.fromkeys(chars.group(1)))
        rest = rest[chars.end():]
    return gates if min(len(g) for g in gates) >= 2 else ()


_TOKEN_TAIL = _lazy(r"[A-Za-z0-9_\-+/=.]*")
"""What a vendor match extends over: the rest of its token (a JWT's signature, a longer Stripe key)."""
_TRIM = " \t\r\n=:\"'"
_CACHE_VERSION = 1


def _detect_secrets_key() -> str | None:
    """The installed detect-secrets' identity (its version and plugin files), without importing it."""
    try:
        spec = importlib.util.find_spec("detect_secrets")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = list(spec.submodule_search_locations)[0]
    try:
        with open(os.path.join(root, "__version__.py"), encoding="utf-8") as fh:
            version = fh.read().strip()
        plugins = os.path.join(root, "plugins")
        stamp = sorted((n, os.stat(os.path.join(plugins, n)).st_mtime_ns) for n in os.listdir(plugins)
                       if n.endswith(".py"))
    except OSError:
        return None
    return json.dumps([_CACHE_VERSION, root, version, stamp])


def detect_secrets_patterns() -> list[tuple[str, str, int]]:
    """``(plugin, pattern, flags)`` of every regex-based detect-secrets plugin (imports the package)."""
    # detect-secrets' logger turns on logging.captureWarnings(True) when imported, which would hide
    # every later warning of this process (a plugin's DeprecationWarning among them): put it back
    shown = warnings.showwarning
    try:
        import detect_secrets.plugins as plugins
        from detect_secrets.plugins.base import RegexBasedDetector

        found: list[tuple[str, str, int]] = []
        for info in pkgutil.iter_modules(plugins.__path__):
            module = importlib.import_module(f"detect_secrets.plugins.{info.name}")
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == module.__name__ and issubclass(cls, RegexBasedDetector) \
                        and not inspect.isabstract(cls):
                    found.extend((info.name, p.pattern, p.flags) for p in getattr(cls, "denylist", ()))
    finally:
        warnings.showwarning = shown
    return found


def _cached_patterns() -> list[tuple[str, str, int]]:
    """The detect-secrets patterns from the cache file, refreshed when the package changed."""
    key = _detect_secrets_key()
    if key is None:
        return []
    path = config.home() / "cache" / "redact-patterns.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") == key:
            return [(str(n), str(p), int(f)) for n, p, f in data["patterns"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        patterns = detect_secrets_patterns()
    except Exception:  # noqa: BLE001 - a broken install leaves the built-in formats
        return []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "patterns": patterns}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
    return patterns


Formats = list[tuple[re.Pattern[str], tuple[str, ...]]]
_formats: Formats | None = None
_formats_lock = threading.Lock()


def vendor_formats() -> Formats:
    """The vendor key formats (each compiled on its first use) and their substring gates (built once
    per process)."""
    global _formats
    if _formats is None:
        with _formats_lock:
            if _formats is None:
                built: Formats = []
                for plugin, pattern, flags in _cached_patterns():
                    if plugin not in _SKIPPED_PLUGINS:
                        built.append((_lazy(pattern, flags, never_on_error=True),
                                      _GATES.get(plugin) or literal_gates(pattern, flags)))
                built.extend((_lazy(p), literal_gates(p)) for p in _EXTRA_FORMATS)
                _formats = built
    return _formats


def _splice(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each (merged) span replaced by :data:`MARKER`."""
    if not spans:
        return text
    spans.sort()
    out, last = [], 0
    for start, end in spans:
        if start < last:
            last = max(last, end)
            continue
        out.append(text[last:start])
        out.append(MARKER)
        last = end
    out.append(text[last:])
    return "".join(out)


def _vendor(text: str) -> str:
    spans: list[tuple[int, int]] = []
    for pattern, gates in vendor_formats():
        if gates and not any(g in text for g in gates):
            continue
        reach = 0
        for m in pattern.finditer(text):
            start, end = m.span()
            if start < reach:
                continue
            group = next((i for i in range(pattern.groups, 0, -1) if m.group(i) and len(m.group(i)) >= 4), 0)
            if group and m.start(group) > start:
                start, end = m.span(group)
            else:
                while start < end and text[start] in _TRIM:
                    start += 1
                while end > start and text[end - 1] in _TRIM:
                    end -= 1
                end = _TOKEN_TAIL.match(text, end).end()  # type: ignore[union-attr]  # matches ""
            if end > start:
                spans.append((start, end))
                reach = end
    return _splice(text, spans)


def _quoted(value: str) -> tuple[str, str, str]:
    """``(open, inner, close)`` of a value as written (quotes kept, so JSON stays JSON)."""
    for q in ('\\"', '"', "'"):
        if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
            return q, value[len(q):-len(q)], q
    return "", value, ""


def _plain_value(inner: str) -> bool:
    """A value that is a type, placeholder or reference, not a secret (``str``, ``${TOKEN}``, ``***``)."""
    return inner.lower() in _NOT_VALUES or bool(_REFERENCE.fullmatch(inner)) or inner == MARKER


_BLOCK_SCALAR = {"|", ">", "|-", ">-", "|+", ">+"}
_BLOCK_START = _lazy(r"[|>][-+]?[ \t]*(?:\r?\n|$)")
_YAML_ITEM = _lazy(r"[ \t]*-[ \t]+(?P<v>\S.*?)[ \t]*$|[ \t]*[\w.\-\"']{1,80}[ \t]*:[ \t]+(?P<w>\S.*?)[ \t]*$")
_deep_values: dict[str, re.Pattern[str]] = {}


def _deep_value(q: str) -> re.Pattern[str]:
    """A string value quoted as ``q`` (``\\\\\\"``: JSON in JSON in JSON, any depth)."""
    found = _deep_values.get(q)
    if found is None:
        e = re.escape(q)
        found = _deep_values[q] = re.compile(rf"{e}(?:(?!{e})[^\n]){{0,4000}}{e}")
    return found


def _bracket_end(text: str, start: int) -> int | None:
    """The end of the ``[…]`` / ``{…}`` opened at ``start`` (brackets counted; at most 20,000 characters)."""
    depth = 0
    for i in range(start, min(len(text), start + 20000)):
        ch = text[i]
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _leaves(text: str, start: int, end: int, q: str) -> list[tuple[int, int]]:
    """Every string and number value inside a JSON array or object (keys kept), as spans of ``text``."""
    spans = []
    literal = re.compile(r'"(?:[^"\\\n]|\\.)*"') if q == '"' else _deep_value(q)
    for m in literal.finditer(text, start, end):
        after = text[m.end():m.end() + 3].lstrip()
        if after.startswith(":") or m.end() - m.start() == 2 * len(q):
            continue
        inner = text[m.start() + len(q):m.end() - len(q)]
        if not _plain_value(inner):
            spans.append((m.start() + len(q), m.end() - len(q)))
    for m in re.finditer(r"(?<=[\[,:])[ \t]*(-?\d[\d.]*)(?=[ \t]*[,\]}\n])", text[start:end]):
        spans.append((start + m.start(1), start + m.end(1)))
    return spans


def _yaml_children(text: str, key_start: int, pos: int, block: bool) -> list[tuple[int, int]]:
    """The values under a secret-named YAML key with nothing after its colon: the lines of a block
    scalar (``key: |``), or the items and values of the more-indented lines (``passwords:`` then ``- …``)."""
    line_start = text.rfind("\n", 0, key_start) + 1
    head = text[line_start:key_start]
    indent = len(head) - len(head.lstrip(" \t-"))
    spans: list[tuple[int, int]] = []
    nl = text.find("\n", pos)
    for _ in range(200):
        if nl < 0:
            break
        begin = nl + 1
        nl = text.find("\n", begin)
        line = text[begin:nl if nl >= 0 else len(text)]
        if not line.strip():
            continue
        if len(line) - len(line.lstrip(" \t")) <= indent:
            break
        if block:
            offset = len(line) - len(line.lstrip(" \t"))
            spans.append((begin + offset, begin + len(line.rstrip())))
            continue
        item = _YAML_ITEM.match(line)
        if item is None:
            break
        group = "v" if item.group("v") is not None else "w"
        opened, inner, closed = _quoted(item.group(group))
        if inner and not _plain_value(inner) and item.group(group) not in _BLOCK_SCALAR:
            spans.append((begin + item.start(group) + len(opened), begin + item.end(group) - len(closed)))
    return spans


_Found = tuple[list[tuple[int, int]], int]  # the value spans found after one key, and where they end


def _kv_nested(text: str, pos: int, q: str) -> _Found:
    """An array or object after the key: every leaf of it (quoted key), or its whole inside."""
    close = _bracket_end(text, pos)
    if close is None:
        return [], 0
    return (_leaves(text, pos, close, q) if q else [(pos + 1, close - 1)]), close


def _kv_yaml(text: str, start: int, pos: int, block: bool) -> _Found:
    """A YAML key whose value is the indented lines below it (a mapping, a list, a block scalar)."""
    children = _yaml_children(text, start, pos, block)
    return children, (children[-1][1] if children else 0)


def _kv_escaped(text: str, pos: int, q: str) -> _Found:
    """A value quoted with escaped quotes (JSON inside a JSON string, at any depth)."""
    deep = _deep_value(q).match(text, pos)
    if deep is None:
        return [], 0
    inner = deep.group(0)[len(q):-len(q)]
    if inner and not _plain_value(inner):
        return [(pos + len(q), deep.end() - len(q))], deep.end()
    return [], 0


def _kv_scalar(text: str, key: str, pos: int, sep: str) -> _Found:
    """A plain or quoted scalar, unless it is code, a type, a placeholder, the key again or prose."""
    found = _VALUE.match(text, pos)
    if found is None:
        return [], 0
    val = found.group(0)
    opened, inner, closed = _quoted(val)
    end = pos + len(val)
    if not inner or _plain_value(inner) or inner.lower() == key.lower():
        return [], 0
    if not opened and text[end:end + 1] in ("(", "[", "{"):
        return [], 0
    if "=" not in sep and inner.isalpha() and text[end:end + 1] == " " \
            and text[end + 1:end + 2].isalpha():
        return [], 0  # prose: "password: The password for ..."
    return [(pos + len(opened), end - len(closed))], end


def _kv_value(text: str, m: re.Match[str]) -> _Found:
    """The spans of the value after one secret-named key, by the value's shape."""
    q, sep, pos = m.group("q"), m.group("sep"), m.end()
    if q and text[pos:pos + 1] in ("\n", "\r"):  # pretty-printed JSON: the value on the next line
        pos = _LINE_GAP.match(text, pos).end()  # type: ignore[union-attr]
    nxt = text[pos:pos + 1]
    if nxt in ("[", "{") and (q or ":" in sep):
        return _kv_nested(text, pos, q)
    block = _BLOCK_START.match(text, pos) is not None
    if not q and ":" in sep and "=" not in sep and (nxt in ("\n", "\r", "") or block):
        return _kv_yaml(text, m.start(), pos, block)
    if len(q) > 2 and q.startswith("\\\\"):
        return _kv_escaped(text, pos, q)
    return _kv_scalar(text, m.group("key"), pos, sep)


_SEPARATOR = re.compile(r"[:=]")
_NAME_CHAR = re.compile(r"[\w.\-]")


def _name_before(text: str, sep: int) -> int | None:
    """Where the name that a separator at ``sep`` follows starts (past its spaces and closing
    quote), or None: no name there, or one longer than a ``_KEY`` key (128)."""
    j = sep
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j > 0 and text[j - 1] in "\"'":
        j -= 1
        while j > 0 and text[j - 1] == "\\":
            j -= 1
    end = j
    while j > 0 and end - j <= 128 and _NAME_CHAR.match(text, j - 1):
        j -= 1
    return j if 0 < end - j <= 128 else None


def _key_matches(text: str) -> Iterator[re.Match[str]]:
    """``_KEY.finditer(text)``, the same matches, found from the text's separators instead of
    trying ``_KEY``'s look-ahead at every word (a 6 KB tool result: several times faster).

    A match's key is a whole run of name characters (``[\\w.\\-]``, at most 128) followed by
    its closing quote, spaces and a separator (``:`` or ``=`` first), so a match starts at the run
    a separator follows or at the quote (and the backslashes) just before that run; those starts
    are tried in order, as ``finditer`` tries them, and one before the end of the last match is
    skipped, as ``finditer`` skips it.
    """
    last = 0
    tried = -1
    for sep in _SEPARATOR.finditer(text):
        start = _name_before(text, sep.start())
        if start is None or start <= tried:
            continue
        tried = start
        starts = [start]
        if start > 0 and text[start - 1] in "\"'":
            b = start - 1
            while b > 0 and text[b - 1] == "\\":
                b -= 1
            starts = [*range(b, start), start]
        for p in starts:
            if p < last:
                continue
            m = _KEY.match(text, p)
            if m is not None:
                yield m
                last = m.end()
                break


def _kv(text: str) -> str:
    """Every secret-named pair's value replaced (quotes kept): a string, a number, every value of an
    array or object (JSON, at any depth of JSON in JSON), the lines of a YAML block; code
    (``os.environ[...]``), types and placeholders (``str``, ``${TOKEN}``, ``***``) stay."""
    spans: list[tuple[int, int]] = []
    last = named = 0  # where the last pair ends, and where its redacted value ends (before a closing quote)
    for m in _key_matches(text):
        # a pair inside the last value is part of it; one whose name was the last value is not
        # ("token: aws_secret_key = '…'": the name was redacted as token's value, the key is still due)
        if m.start() < last and m.end("key") < named or not secret_name(m.group("key")):
            continue
        found, end = _kv_value(text, m)
        spans.extend(found)
        if end:
            last, named = end, max((e for _, e in found), default=end)
    return _splice(text, spans)


def _pair(m: re.Match[str]) -> str:
    if not secret_name(m.group("name").strip()) or not m.group("val"):
        return m.group(0)
    s, e = m.start("val") - m.start(), m.end("val") - m.start()
    return m.group(0)[:s] + MARKER + m.group(0)[e:]


def _yaml_pair(m: re.Match[str]) -> str:
    if not secret_name(m.group("name")):
        return m.group(0)
    opened, inner, closed = _quoted(m.group("val").rstrip())
    if not inner or _plain_value(inner):
        return m.group(0)
    return m.group(0)[:m.start("val") - m.start()] + opened + MARKER + closed


def _flag(m: re.Match[str]) -> str:
    if not secret_name(m.group("flag")):
        return m.group(0)
    opened, inner, closed = _quoted(m.group("val"))
    if _plain_value(inner) or inner.startswith(("env:", "file:", "fd:")) or inner == "stdin":
        return m.group(0)  # openssl's -passin env:VAR names where the password is
    return m.group(1) + opened + MARKER + closed


def _second(m: re.Match[str]) -> str:
    opened, inner, closed = _quoted(m.group(2))
    return m.group(1) + opened + MARKER + closed if inner and inner != MARKER else m.group(0)


def _xml(m: re.Match[str]) -> str:
    value = m.group(3).strip()
    if not value or _REFERENCE.fullmatch(value) or value.startswith(MARKER):
        return m.group(0)
    return m.group(1) + MARKER + m.group(4)


def _prose(m: re.Match[str]) -> str:
    """"the password is X" names a secret only when X looks like one (a digit or a symbol in it):
    "the password is required" stays as written."""
    value = m.group(2)
    if not any(ch.isdigit() or not ch.isalnum() for ch in value) or value.startswith(MARKER):
        return m.group(0)
    return m.group(1) + MARKER


def _private_block(m: re.Match[str]) -> str:
    return f"{m.group(1)}{MARKER}{m.group('end') or ''}"


def _putty(m: re.Match[str]) -> str:
    return f"{m.group(1)} {MARKER}" if m.group(1) else f"{m.group(3)}{MARKER}"


def _basic(m: re.Match[str]) -> str:
    try:
        decoded = base64.b64decode(m.group(2), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    return m.group(1) + MARKER if b":" in decoded else m.group(0)


def _bearer(m: re.Match[str]) -> str:
    token = m.group(2)
    if not any(ch.isdigit() or ch in "._~+/-" for ch in token) or token.startswith(MARKER):
        return m.group(0)
    return m.group(1) + MARKER


def _looks_secret(inner: str) -> bool:
    """A value that could be a password or key: not a type or placeholder, 6+ characters, and a digit or
    a symbol in it (``store``, ``inherit`` and other words stay)."""
    return len(inner) >= 6 and not _plain_value(inner) and not inner.startswith(MARKER) \
        and any(ch.isdigit() or not ch.isalnum() for ch in inner)


def _cli_set(m: re.Match[str]) -> str:
    name = re.split(r"[:/.]", m.group("name"))[-1] or m.group("name")
    opened, inner, closed = _quoted(m.group("val"))
    if not secret_name(name) or not _looks_secret(inner):
        return m.group(0)
    return m.group(1) + opened + MARKER + closed


def _stdin(m: re.Match[str]) -> str:
    opened, inner, closed = _quoted(m.group(2))
    if not inner or _plain_value(inner) or inner.startswith("$"):
        return m.group(0)
    return m.group(1) + opened + MARKER + closed


# high-entropy strings and base64-wrapped key material ------------------------------------------
_CANDIDATE = _lazy(r"(?<![\w+/=.\-\\])[A-Za-z0-9+/_\-]{20,}+={0,2}(?![\w+/=\-])")
"""A run that could be a key: base64, base64url or hex, 20+ characters (candidates are few in prose)."""
_WRAPPED = _lazy(r"(?:(?:\r?\n|\\n)[ \t]*[A-Za-z0-9+/]{4,}+={0,2})+")
"""The further lines of a wrapped base64 blob (76-column ``base64`` output, a Kubernetes secret)."""
_SECRET_WORD = _lazy(
    r"(?i)(?:^|[^\w-])(?:api[-_ ]?keys?|access[-_ ]?keys?|private[-_ ]?keys?|signing[-_ ]?keys?|secret[-_ ]?keys?|"
    r"client[-_ ]?secrets?|keys?|tokens?|secrets?|passwords?|passwd|pwd|pass(?:phrase|code)?|apikey|credentials?|"
    r"creds|auth|bearer|otp)"
    r"(?:[\s:=\"'`(\[,]+|\b(?:is|was|are|were|of|for|set|to|as|now|value|string|here|reads?|be|the|new|my|your|"
    r"our|this|that|a|an)\b)*$")
"""A word naming a secret just before a candidate, with only small words between (``invalid token X``,
``my key is X``, ``the secret: X``); ``key id X``, ``key fingerprint X``, ``token count X`` do not match."""
_HASH_CONTEXT = _lazy(r"(?i)sha|md5|blake|digest|checksum|hash|integrity|fingerprint|commit|revision|\brev\b")
"""Words before a bare hex or base64 string that say it is a digest or a commit id, not a key."""
_DATA_URI = _lazy(r"(?i)data:(?:image|font|audio|video)/[\w.+-]+;base64,$")
_HEX = frozenset("0123456789abcdefABCDEF")


def _entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_like(core: str, near_word: bool) -> bool:
    """Whether a base64/base64url/hex string looks random (a key), not an identifier or a word.

    Hex: 32+ characters beside a secret word, 64+ alone. Otherwise upper case, lower case and digits
    (or two of them from 32 characters), Shannon entropy at least 0.8 of log2(length) (random base64
    of 20-64 characters is above it 99 % of the time), and short camelCase pieces on average (an
    identifier or a path has long ones); 20+ characters beside a secret word, 40+ alone.
    """
    n = len(core)
    if all(ch in _HEX for ch in core):
        has_digit, has_alpha = any(ch.isdigit() for ch in core), any(ch.isalpha() for ch in core)
        return has_digit and has_alpha and n >= (32 if near_word else 64)
    if n < (20 if near_word else 40):
        return False
    classes = any(ch.isupper() for ch in core) + any(ch.islower() for ch in core) + any(ch.isdigit() for ch in core)
    if classes < 2 or classes == 2 and n < 32:
        return False
    if _entropy(core) < 0.8 * math.log2(min(n, 64)):
        return False
    parts = _WORD_SPLIT.findall(core)
    return bool(parts) and sum(len(p) for p in parts) / len(parts) <= 3.3


def _b64_text(blob: str) -> str | None:
    """``blob`` decoded from base64 (or base64url) when it is text, else None."""
    raw = re.sub(r"\\n|\s", "", blob).rstrip("=")
    raw = raw[:len(raw) - len(raw) % 4] if len(raw) % 4 == 1 else raw
    try:
        data = base64.b64decode(raw + "=" * (-len(raw) % 4), altchars=b"-_" if ("-" in raw or "_" in raw) else None)
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(ch.isprintable() or ch in "\r\n\t" for ch in text)
    return text if text and printable >= 0.95 * len(text) else None


def _wraps_secret(blob: str, depth: int) -> bool:
    """Whether a base64 blob decodes to text holding a secret (a PEM key, a service-account JSON, a .env)."""
    if depth > 1 or len(blob) < 40:
        return False
    text = _b64_text(blob)
    if text is None:
        return False
    return "PRIVATE KEY" in text or _redact(text, depth + 1) != text


def _in_url(text: str, start: int) -> bool:
    """Whether ``start`` is inside a URL or a path (a document id in a link, a file name)."""
    if start and text[start - 1] in "/=?&#@:":
        return True
    head = text[max(0, start - 300):start]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"), head.rfind('"'), head.rfind("'"))
    return "://" in head[cut + 1:]


def _high_entropy(text: str, depth: int = 0) -> str:
    """Random-looking strings beside a word that names a secret, long ones alone, and base64 blobs that
    wrap key material (:func:`_random_like`, :func:`_wraps_secret`)."""
    spans: list[tuple[int, int]] = []
    reach = 0
    for m in _CANDIDATE.finditer(text):
        start, end = m.span()
        if start < reach:
            continue
        token = m.group(0)
        wrapped = _WRAPPED.match(text, end) if len(token) >= 40 else None
        if wrapped and wrapped.end() > end:
            end = wrapped.end()
        blob = text[start:end]
        core = token.rstrip("=")
        before = text[max(0, start - 60):start]
        if _DATA_URI.search(before):
            if _wraps_secret(blob, depth):
                spans.append((start, end))
                reach = end
            continue
        if core.lower().startswith(("sha1-", "sha256-", "sha384-", "sha512-")):
            continue
        decoded = _b64_text(blob) if len(blob) >= 40 and not all(ch in _HEX for ch in core) else None
        if decoded is None and not _random_like(core, True):
            continue  # not random even beside a secret word: no need to look for one
        near_word = bool(_SECRET_WORD.search(before))
        if decoded is not None:
            secret = "PRIVATE KEY" in decoded or depth < 1 and _redact(decoded, depth + 1) != decoded or near_word
        elif not _random_like(core, near_word):
            secret = False
        elif near_word:
            secret = True
        else:
            secret = not _in_url(text, start) and not _HASH_CONTEXT.search(before[-40:]) \
                and not (all(ch in _HEX for ch in core) and text[end:end + 2] == "  ")  # sha256sum's output
        if secret:
            spans.append((start, end))
            reach = end
    return _splice(text, spans)


def _sub(pattern: re.Pattern[str], fix: Callable[[re.Match[str]], str]) -> Callable[[str], str]:
    return lambda text: pattern.sub(fix, text)


_RULES: tuple[tuple[tuple[str, ...], Callable[[str], str]], ...] = (
    (("PRIVATE KEY",), _sub(_PRIVATE_BLOCK, _private_block)),
    (("Private-",), _sub(_PUTTY, _putty)),
    (("://",), _sub(_URL_PASSWORD, _second)),
    (("mysql", "mariadb"), _sub(_MYSQL, _second)),
    (("curl", "wget"), _sub(_CURL_USER, _second)),
    (("sshpass", "redis-cli"), _sub(_PASS_TOOLS, _second)),
    (("login",), _sub(_LOGIN_P, _second)),
    (("<<<",), _sub(_HERE, _stdin)),
    (("-stdin", "with-token", "chpasswd"), _sub(_STDIN, _stdin)),
    (("-P",), _sub(_CAPITAL_P, _second)),
    (("7z", "rar"), _sub(_ATTACHED_P, _second)),
    (("%",), _sub(_SMB_USER, _second)),
    ((" -a", "--auth"), _sub(_HTTPIE, _second)),
    (("export", "setenv", "config", "set"), _sub(_CLI_SET, _cli_set)),
    (("htpasswd",), _sub(_HTPASSWD, _second)),
    (("machine",), _sub(_NETRC, _second)),
    (("</",), _sub(_XML, _xml)),
    (("assword", "ASSWORD", "asscode", "assphrase", "pwd", "PWD", "pin code", "PIN code"), _sub(_PROSE, _prose)),
    (("-",), _sub(_FLAG, _flag)),
    (("ookie", "OOKIE"), _sub(_COOKIE, _second)),
    (("value",), _sub(_PAIR, _pair)),
    (("value:",), _sub(_YAML_PAIR, _yaml_pair)),
    (("value",), _sub(_PAIR_REVERSED, _pair)),
    ((":", "="), _kv),
    (("earer", "EARER"), _sub(_BEARER, _bearer)),
    (("asic",), _sub(_BASIC, _basic)),
    ((), _vendor),
)
"""``(gates, rule)``: a rule runs only on a text holding one of its gates (none: always)."""


def _redact(text: str, depth: int) -> str:
    for gates, rule in _RULES:
        if not gates or any(g in text for g in gates):
            text = rule(text)
    return _high_entropy(text, depth)


def redact_text(text: str) -> str:
    """``text`` with every secret it holds replaced by :data:`MARKER` (the rules in the module doc)."""
    if not isinstance(text, str) or len(text) < 8:
        return text
    return _redact(text, 0)


# values ----------------------------------------------------------------------------------------
def _marks_secret(sub: Any) -> bool:
    return isinstance(sub, Mapping) and (sub.get("secret") is True or sub.get("writeOnly") is True
                                         or sub.get("format") == "password")


def schema_secret_keys(schema: Mapping[str, Any] | None) -> set[str]:
    """Property names a JSON schema marks secret, at any depth (``secret``/``writeOnly``/``format: password``)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            props = node.get("properties")
            if isinstance(props, Mapping):
                found.update(str(name) for name, sub in props.items() if _marks_secret(sub))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return found


def _hidden(value: Any) -> bool:
    """Whether a secret-named value is hidden: empty values and flags say nothing and stay."""
    return value not in (None, "") and not isinstance(value, bool)


def redact_value(value: Any, schema: Mapping[str, Any] | None = None, _keys: set[str] | None = None) -> Any:
    """``value`` (JSON-like) with every secret replaced: a new value, the input is not changed.

    Keys ``schema`` marks secret and keys :func:`secret_name` flags lose their value; a
    ``{"name": <secret name>, "value": …}`` pair loses its value; every string passes
    :func:`redact_text`.
    """
    keys = schema_secret_keys(schema) if _keys is None else _keys
    if isinstance(value, Mapping):
        label = value.get("name", value.get("key", value.get("header")))
        pair = isinstance(label, str) and secret_name(label)
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = str(k)
            if (name in keys or secret_name(name) or pair and name in ("value", "values")) and _hidden(v):
                out[name] = MARKER
            else:
                out[name] = redact_value(v, None, keys)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_value(v, None, keys) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


_SCHEMA_VALUES = ("default", "examples", "example", "const", "enum")


def redact_schema(schema: Any, _secret: bool = False) -> Any:
    """A JSON schema kept as data: the structure stays, the ``default``/``examples``/``const``/``enum``
    of a property that is marked or named secret go, and every other string passes :func:`redact_text`."""
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {}
        secret = _secret or _marks_secret(schema)
        for k, v in schema.items():
            name = str(k)
            if name in ("properties", "patternProperties") and isinstance(v, Mapping):
                out[name] = {str(p): redact_schema(sub, secret_name(str(p))) for p, sub in v.items()}
            elif secret and name in _SCHEMA_VALUES and v not in (None, ""):
                out[name] = MARKER
            else:
                out[name] = redact_schema(v, False) if isinstance(v, (Mapping, list)) else redact_value(v)
        return out
    if isinstance(schema, list):
        return [redact_schema(v, _secret) for v in schema]
    return redact_value(schema)
