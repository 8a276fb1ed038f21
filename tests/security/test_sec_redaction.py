"""Secrets are never stored or logged: a corpus of secret forms through the real PostToolUse hook
(cold and warm, as Claude Code runs it) and over ``/mcp`` of a real ``plughost serve``; then the
store file, server.log and the server's stderr (what run.log holds) are read raw.

Prints ``[redaction] forms=N leaks=K`` and the false-redaction rate over sentences of text
installed with the environment (package descriptions, the standard library's docstrings).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import sqlite3
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from audit_support import DATA as AUDIT_DATA
from audit_support import recorded
from serve_helpers import start_serve, stop_process
from surfacing_support import config_dir, run_hook

from plughost.util.redact import MARKER, redact_schema, redact_text, redact_value, secret_name

FORMS: list[dict[str, Any]] = json.loads((Path(__file__).parent / "data" / "secret_forms.json").read_text())
TEXTS = [f for f in FORMS if "text" in f]
VALUES = [f for f in FORMS if "value" in f]
ACCOUNT = "acct-redact"
BIG = {"PLUGHOST_AUDIT_INPUT_CHARS": "400000", "PLUGHOST_AUDIT_OUTPUT_CHARS": "400000"}
"""Nothing clipped away: a form must be redacted, not cut off."""


def report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    with capsys.disabled():
        print(f"\n{line}")


def leaked(home: Path) -> list[str]:
    """The forms whose secret is in any file under ``home`` (store, WAL, logs, the server's stderr)."""
    blobs = [p.read_bytes() for p in home.rglob("*") if p.is_file()]
    out = []
    for form in FORMS:
        needles = {form["secret"].encode(), json.dumps(form["secret"])[1:-1].encode()}
        if any(n in blob for n in needles for blob in blobs):
            out.append(form["form"])
    return out


def tool_call_inputs(home: Path) -> list[str]:
    con = sqlite3.connect(home / "graph.sqlite")
    try:
        return [r[0] for r in con.execute("SELECT json_extract(properties, '$.input') FROM nodes "
                                          "WHERE labels LIKE '%ToolCall%'")]
    finally:
        con.close()


def hook_payloads(transcript: Path, tag: str) -> list[bytes]:
    """A Bash call holding every text form (its command lines and output), a Read of a file holding
    them, and a plughost ``work-create`` whose inputs hold every value form."""
    joined = "\n".join(f["text"] for f in TEXTS)
    bash = json.loads(recorded("post_tool_use_bash", transcript))
    bash.update(tool_use_id=f"toolu_bash_{tag}", tool_input={"command": joined, "forms": [f["text"] for f in TEXTS]},
                tool_response={"stdout": joined, "stderr": "", "interrupted": False, "isImage": False})
    read = json.loads(recorded("post_tool_use_bash", transcript))
    read.update(tool_name="Read", tool_use_id=f"toolu_read_{tag}", tool_input={"file_path": "/srv/app/config.txt"},
                tool_response={"type": "text", "file": {"filePath": "/srv/app/config.txt", "content": joined}})
    mcp = json.loads(recorded("post_tool_use_mcp", transcript))
    mcp.update(tool_name="mcp__plugin_memory_memory__work-create", tool_use_id=f"toolu_work_{tag}",
               tool_input={"kind": "probe", "inputs": {"forms": [f["value"] for f in VALUES]}},
               tool_response=[{"type": "text", "text": json.dumps([f["value"] for f in VALUES])}])
    return [json.dumps(p).encode() for p in (bash, read, mcp)]


async def mcp_calls(url: str, token: str) -> list[bool]:
    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    transport = streamable_http_client(url, http_client=create_mcp_http_client(
        headers={"Authorization": f"Bearer {token}"}))
    errors = []
    async with Client(transport) as client:
        for form in TEXTS:
            errors.append(bool((await client.call_tool("memory-search", {"query": form["text"]})).is_error))
        for form in VALUES:
            result = await client.call_tool("work-create", {"kind": "probe", "inputs": form["value"]})
            errors.append(bool(result.is_error))
        result = await client.call_tool("work-create", {"kind": "probe", "title": TEXTS[12]["text"]})
        errors.append(bool(result.is_error))
    return errors


def test_no_secret_form_reaches_the_store_or_the_logs(tmp_path: Path, plughost_home: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from plughost.runtime.accounts import create_account

    home = plughost_home
    create_account(ACCOUNT, home)
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(home), PLUGHOST_EMBEDDER="none", **BIG)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text((AUDIT_DATA / "transcript.jsonl").read_text())

    for payload in hook_payloads(transcript, "cold"):  # no server: the hook runs the host itself
        run = run_hook(payload, cfg, cwd, PLUGHOST_SURFACE_COLD_TIMEOUT_MS="90000")
        assert "path=cold event=PostToolUse result=ok recorded=true" in run.line("hook"), run.stderr
    cold = leaked(home)

    env = {k: v for k, v in os.environ.items() if k != "CLAUDECODE"}
    env.update(PLUGHOST_HOME=str(home), ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none", PLUGHOST_AUDIT_MCP="1", **BIG)
    served = start_serve(env=env)
    try:
        deadline = time.monotonic() + 60
        discovery = home / "run" / "surface.json"
        while not (discovery.exists() and json.loads(discovery.read_text() or "{}").get("pid") == served.proc.pid):
            assert time.monotonic() < deadline, "the surfacing listener did not start"
            time.sleep(0.05)
        for payload in hook_payloads(transcript, "warm"):
            run = run_hook(payload, cfg, cwd, PLUGHOST_SURFACE_COLD="0")
            assert "path=warm event=PostToolUse result=ok recorded=true" in run.line("hook"), run.stderr
        warm = sorted(set(leaked(home)) - set(cold))
        token = (home / "accounts" / ACCOUNT / "credentials" / "http-token").read_text().strip()
        errors = anyio.run(mcp_calls, f"{served.base}/mcp/memory", token)
        assert not any(errors[len(TEXTS):]), errors  # the work-creates succeed (the searches may find nothing)
    finally:
        stop_process(served.proc, 30)
    over_mcp = sorted(set(leaked(home)) - set(cold) - set(warm))

    leaks = len(cold) + len(warm) + len(over_mcp)
    report(capsys, f"[redaction] forms={len(FORMS)} leaks={leaks} hook-cold={len(cold)} hook-warm={len(warm)} "
                   f"mcp={len(over_mcp)}")
    assert (cold, warm, over_mcp) == ([], [], [])
    inputs = tool_call_inputs(home)
    assert len(inputs) == 6 + len(FORMS) + 1  # 3 cold, 3 warm, one per /mcp call
    assert sum(inp.count(MARKER) for inp in inputs) >= 3 * len(FORMS)  # the forms are there, redacted
    logs = (home / "logs" / "server.log").read_text()
    assert "[persist] tool-call persisted tool=mcp__memory__memory-search" in logs
    assert "[persist] tool-call persisted tool=Bash" in logs and "[task] action-start" in logs
    stderr = served.stderr_path.read_text()
    assert "[persist] tool-call persisted" in stderr  # the lines run.log gets


def test_work_create_keeps_no_secret_in_title_inputs_or_schema(make_host, plughost_home: Path) -> None:
    from plughost.ports.graph import Guards
    from plughost.runtime.accounts import create_account
    from plughost.runtime.tooltable import call_tool

    create_account(ACCOUNT, plughost_home)
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")
    title = "rotate password=TitlePw-9921 for the billing db"
    out = call_tool(host, "memory", "work-create", {
        "kind": "migration", "title": title,
        "inputs": {"source": {"kind": "postgres", "dsn": "postgresql://etl:NestedDsnPw-4471@db.internal/app"},
                   "batch": 500, "apiKey": "InputApiKey-7712"},
        "inputSchema": {"type": "object", "properties": {
            "apiKey": {"type": "string", "default": "SchemaDefaultKey-3310"},
            "token": {"type": "string", "secret": True, "examples": ["SchemaExampleTok-5520"]},
            "dsn": {"type": "string", "default": "mysql://root:SchemaDsnPw-8830@db/x"},
            "batch": {"type": "integer", "default": 500}}}})
    host.close()
    raw = (plughost_home / "graph.sqlite").read_bytes()
    for secret in ("TitlePw-9921", "NestedDsnPw-4471", "InputApiKey-7712", "SchemaDefaultKey-3310",
                   "SchemaExampleTok-5520", "SchemaDsnPw-8830"):
        assert secret.encode() not in raw, secret
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")
    task = host.store().get(out["taskId"], guards=Guards(ACCOUNT)).properties
    assert task["title"] == "rotate password=[redacted] for the billing db"
    assert json.loads(task["inputs"])["source"]["dsn"] == "postgresql://etl:[redacted]@db.internal/app"
    schema = json.loads(task["inputSchema"])
    assert schema["properties"]["apiKey"]["default"] == MARKER and schema["properties"]["batch"]["default"] == 500
    assert schema["properties"]["token"] == {"type": "string", "secret": True, "examples": MARKER}


def test_a_secret_in_a_log_value_is_redacted_in_server_log(plughost_home: Path) -> None:
    from plughost.util.log import emit, log

    line = log("graph-write", "ok", name="password=LogValuePw-6610", password="LogFieldPw-2231",
               detail="curl -u ada:LogCurlPw-1187 https://x", count=3, session="s-1", tokens=12)
    emit("[ingest] op=line url=postgres://u:LogIngestPw-5544@h/db")
    written = (plughost_home / "logs" / "server.log").read_text()
    for secret in ("LogValuePw-6610", "LogFieldPw-2231", "LogCurlPw-1187", "LogIngestPw-5544"):
        assert secret not in written and secret not in line
    assert "name=password=[redacted] password=[redacted]" in written
    assert "count=3 session=s-1 tokens=12" in written  # not secrets: names alone never hide a count or id


@pytest.fixture(scope="module")
def corpus() -> tuple[str, ...]:
    """:func:`sentences`, gathered once for the module's tests: parsing the standard library takes seconds."""
    return sentences()


def sentences() -> tuple[str, ...]:
    """Ordinary sentences of text nobody here wrote: the installed packages' descriptions and the
    standard library's docstrings (plughost's own README left out)."""
    split = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
    seen: set[str] = set()
    found: list[str] = []

    def take(text: str) -> None:
        for para in re.split(r"\n\s*\n", text):
            for s in split.split(" ".join(para.split())):
                if 40 <= len(s) <= 400 and s[0].isupper() and s[-1] in ".!?" and s not in seen \
                        and sum(c.isalpha() or c == " " for c in s) >= 0.8 * len(s):
                    seen.add(s)
                    found.append(s)

    for dist in sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        if (dist.metadata["Name"] or "").lower() != "plughost":
            take(str(dist.metadata.get_payload() or ""))
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                take(ast.get_docstring(node) or "")
    return tuple(found)


def test_ordinary_sentences_are_left_alone(corpus: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert len(corpus) >= 1000, len(corpus)
    changed = [s for s in corpus if redact_text(s) != s]
    rate = len(changed) / len(corpus)
    report(capsys, f"[redaction] sentences={len(corpus)} falsely-redacted={len(changed)} rate={rate:.4%}"
                   + "".join(f"\n  {s[:160]}" for s in changed[:5]))
    assert rate < 0.01


ORDINARY = [line for line in (Path(__file__).parent / "data" / "ordinary_sentences.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("form", FORMS, ids=[f["form"] for f in FORMS])
def test_every_secret_form_is_redacted(form: dict[str, Any]) -> None:
    out = redact_text(form["text"]) if "text" in form else json.dumps(redact_value(form["value"]))
    assert form["secret"] not in out and MARKER in out, out


def test_ordinary_look_alike_sentences_are_left_alone() -> None:
    """Order numbers, colours, commit ids, checksums, UUIDs, URLs, image data URIs, and the secret
    words used in prose (bench/redaction.py prints the rate): at most 5 of 1,200 changed."""
    assert len(ORDINARY) >= 1000 and len(FORMS) >= 90
    changed = [s for s in ORDINARY if redact_text(s) != s]
    assert len(changed) <= 5, changed[:5]


def test_first_redaction_in_a_fresh_process_does_not_import_detect_secrets(tmp_path: Path) -> None:
    import subprocess

    code = ("import sys, time; from plughost.util.redact import redact_text; t = time.perf_counter(); "
            "out = redact_text('key ghp_' + 'a' * 36 + ' and AKIA' + 'B' * 16); "
            "print(out, 'detect_secrets' in sys.modules, round((time.perf_counter() - t) * 1000, 1))")
    env = {**os.environ, "PLUGHOST_HOME": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert first.stdout.split()[:5] == ["key", MARKER, "and", MARKER, "True"]  # built the cache
    assert again.stdout.split()[:5] == ["key", MARKER, "and", MARKER, "False"]  # read it
    assert (tmp_path / "cache" / "redact-patterns.json").is_file()


@pytest.mark.parametrize(("pattern", "gates"), [
    (r"\bAKIA[0-9A-Z]{16}", ("AKIA",)), (r"\bya29\.[0-9A-Za-z_\-]{20,}", ("ya29.",)),
    (r"(ghp|gho)_[A-Za-z0-9_]{36}", ("ghp_", "gho_")), (r"\b(?:sk|rk)_(?:live|test)_x", ("sk_", "rk_")),
    (r"\bkey-[0-9a-f]{32}\b", ("key-",)), (r"AB?C", ()), (r"(ab|cd)?x", ()), (r"abc|def", ()),
    (r"x(a|b)|cd", ()), (r"\d{8,10}:[0-9A-Za-z_-]{35}", ()), (r"[MNO][a-z]{23}", ()), (r"(?i)abc", ()),
    (r"\bgh[pousr]_[A-Za-z0-9]{30,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (r"\bdo[por]_v1_[a-f0-9]{64}", ("dop_v1_", "doo_v1_", "dor_v1_")), (r"ab[cd]?e", ("ab",)),
    (r"ab[cd]+e", ("ab",)), (r"ab[cd]{2}e", ("ab",)), (r"a[bc][de]f", ("abdf", "abef", "acdf", "acef")),
    (r"xy[abcdefgh][abc]", ("xya", "xyb", "xyc", "xyd", "xye", "xyf", "xyg", "xyh")),
])
def test_vendor_gates_are_substrings_every_match_holds(pattern: str, gates: tuple[str, ...]) -> None:
    from plughost.util.redact import literal_gates

    assert literal_gates(pattern) == gates
    assert literal_gates(pattern, re.IGNORECASE) == ()


def test_every_vendor_match_holds_one_of_its_gates() -> None:
    from plughost.util.redact import vendor_formats

    samples = [f["text"] for f in FORMS if "text" in f] + [json.dumps(f["value"]) for f in FORMS if "value" in f]
    for pattern, gates in vendor_formats():
        for text in samples:
            for m in pattern.finditer(text):
                assert not gates or any(g in text for g in gates), (pattern.pattern, m.group(0))


def test_every_private_key_header_detect_secrets_knows_is_a_redacted_block() -> None:
    from plughost.util.redact import detect_secrets_patterns

    headers = [p for plugin, p, _ in detect_secrets_patterns() if plugin == "private_key" and p.startswith("BEGIN ")]
    assert len(headers) >= 6
    for header in headers:
        kind = header[len("BEGIN "):]
        text = f"-----{header}-----\nQmFzZTY0Qm9keUxpbmVPbmU0Mg\n-----END {kind}-----"
        assert "QmFzZTY0Qm9keUxpbmVPbmU0Mg" not in redact_text(text), header


@pytest.mark.parametrize("name", ["password", "PGPASSWORD", "db_pass", "pwd", "auth", "Authorization",
                                  "X-Api-Key", "apiKey", "client_secret", "session_token", "sessionKey",
                                  "Cookie", "set-cookie", "credentials", "private_key", "GITHUB_TOKEN", "pin"])
def test_secret_names(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize("name", ["author", "max_tokens", "tokens", "token_url", "sessionId", "session",
                                  "secretary", "password_file", "keywords", "key", "sort_key", "passes",
                                  "auth_type", "no-password", "tokenizer", "GetPassWarning"])
def test_not_secret_names(name: str) -> None:
    assert not secret_name(name)


def test_values_keep_their_shape() -> None:
    value = {"user": "ada", "password": "ValuePw-1", "empty": {"token": ""}, "flag": {"auth": True},
             "list": ["x", "postgres://u:ListPw-2@h/db"], "n": 3, "headers": [{"name": "Accept", "value": "*/*"}]}
    assert redact_value(value) == {"user": "ada", "password": MARKER, "empty": {"token": ""}, "flag": {"auth": True},
                                   "list": ["x", f"postgres://u:{MARKER}@h/db"], "n": 3,
                                   "headers": [{"name": "Accept", "value": "*/*"}]}
    assert redact_value({"label": "vip"}, {"properties": {"label": {"type": "string", "writeOnly": True}}}) \
        == {"label": MARKER}
    schema = {"type": "object", "properties": {"password": {"type": "string", "minLength": 8, "default": "Pw-3"}}}
    assert redact_schema(schema) == {"type": "object", "properties": {"password": {
        "type": "string", "minLength": 8, "default": MARKER}}}


def test_code_types_and_placeholders_are_not_secrets() -> None:
    for text in ("def login(password: str, token: Optional[str] = None) -> bool:",
                 "password = os.environ['DB_PASSWORD']", "TOKEN=${GITHUB_TOKEN}", "password: ********",
                 "mysqldump --password=<password> db", "mkdir -pv /tmp/x && ssh -p 22 host",
                 "docker run -u 1000:1000 image", "https://example.com:8443/a?b=1", "git@github.com:o/r.git",
                 "Basic Authentication is enabled.", "The bearer of this note."):
        assert redact_text(text) == text, text


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a dev extra
    given = None

if given is not None:
    SAFE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
    NAMES = st.sampled_from(["password", "PGPASSWORD", "api_key", "client_secret", "X-Auth-Token", "pwd", "auth"])
    SEPARATORS = st.sampled_from(["=", ": ", " = ", '": "'])
    SECRETS = st.from_regex(r"[A-Za-z0-9!#%+/@^~]{6,40}", fullmatch=True).filter(
        lambda s: s.lower() not in {"string", "secret", "password", "integer", "boolean", "optional"}
        and set(s) != {"x"})

    @settings(max_examples=200, deadline=None)
    @given(SAFE_TEXT)
    def test_any_text_is_redacted_without_an_error(text: str) -> None:
        out = redact_text(text)
        assert isinstance(out, str)
        assert redact_value({"a": [text, {"password": text}]})["a"][1]["password"] in (MARKER, "")

    @settings(max_examples=200, deadline=None)
    @given(SAFE_TEXT, NAMES, SEPARATORS, SECRETS, SAFE_TEXT)
    def test_a_named_secret_is_gone_whatever_surrounds_it(before: str, name: str, sep: str, secret: str,
                                                          after: str) -> None:
        quote = '"' if sep == '": "' else ""
        text = f"{before}\n{quote}{name}{sep}{secret}{quote}\n{after}"
        assert f"{name}{sep}{secret}" not in redact_text(text)


HOSTILE_400KB = {"colons": "a:" * 200000, "pairs": "password=" * 45000, "mysql": "mysql " * 70000,
                 "curl": "curl -u " * 50000, "userinfo": "http://" + "u:p" * 130000, "quotes": '"' * 400000,
                 "akia": ("AKIA" + "A" * 16) * 20000, "begin": "-----BEGIN RSA PRIVATE KEY-----" * 13000,
                 "pairlists": '{"name": "x", "value": "y"}, ' * 14000}
"""Texts that make a backtracking pattern quadratic; bench/text_costs.py times them against a floor."""


@pytest.mark.timeout(120)  # a hang guard: ~0.1-0.6 s each on the 2-core machine, quadratic would be many minutes
@pytest.mark.parametrize("name", list(HOSTILE_400KB))
def test_a_hostile_400kb_text_is_redacted(name: str) -> None:
    text = HOSTILE_400KB[name]
    out = redact_text(text)
    assert isinstance(out, str) and out
    assert "AKIA" + "A" * 16 not in out  # the one real key shape among them is gone
