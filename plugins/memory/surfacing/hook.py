"""The hook process's first stage: hand Claude Code's hook input to ``plughost serve``, builtins only.

Every prompt pays for this process, so it imports nothing that is not already loaded at start
(``python -S -I``: ``sys``, ``posix``, ``time``) but the C halves of ``json`` and ``socket``
(``_json``, ``_socket``): no ``re``, ``enum``, ``dataclasses`` or ``pathlib`` import chain. It
reads the config dir's ``settings.json`` env under the process env, finds the server through
``<PLUGHOST_HOME>/run/surface.json`` (its ``pid`` must be alive, and the listener must answer a
random challenge with the token's HMAC before anything else is sent), and sends one line
``{"hook", "token", "env"}`` with the hook input as it came; the server decides and answers exactly as ``client.py`` would
(``server.answer_hook``) and sends back the log fields and what to print.

Anything off the warm path (no account here, no server listening, surfacing off, an odd home)
goes to ``client.py``, the full hook process with its cold fallback, with the input already read.
A server that accepted the connection but fails or times out gives nothing: the prompt goes on.
"""

import sys
import time

_STARTED = time.perf_counter()

import _json  # noqa: E402 - timed from the first line
import _socket  # noqa: E402
import posix  # noqa: E402

MAX_STDIN = 1 << 20
WARM_TIMEOUT_MS = 3000
"""``PLUGHOST_SURFACE_TIMEOUT_MS``' default, a copy: this stage imports builtins only (client.py takes
it from here); tests/host/test_settings.py pins it to the setting."""
SENT_KEYS = ("ACCOUNT_ID", "ALLOWED_SCOPES", "AGENT_SLUG", "PLUGHOST_SESSION_ROLE", "PLUGHOST_SESSION_ID",
             "SESSION_ID", "SESSION_NODE_ID", "PLUGHOST_HOME", "PLUGHOST_SURFACE_BUDGET", "PLUGHOST_SURFACE_LIMIT")
"""What ``context.from_merged`` reads: the server resolves the call's guards (and the hook's budget
and limit, which it honours) from these."""
_ACCOUNT_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ACCOUNT_REST = _ACCOUNT_FIRST | frozenset("._-")


class _Decoding:
    """What ``_json.make_scanner`` reads off ``json.JSONDecoder``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}.__getitem__
    memo: dict[str, str] = {}


_scan = _json.make_scanner(_Decoding())  # type: ignore[arg-type,unused-ignore]  # duck-typed: newer typeshed wants a JSONDecoder


class Slow(Exception):
    """Not the warm path: the full hook process (``client.py``) takes over."""


def loads(text: str) -> object:
    text = text.strip(" \t\n\r")
    try:
        value, end = _scan(text, 0)
    except Exception:  # noqa: BLE001 - StopIteration or json's error: not JSON
        raise Slow("json") from None
    if end != len(text):
        raise Slow("json")
    return value


def read(path: str) -> str:
    try:
        fd = posix.open(path, posix.O_RDONLY)
    except OSError:
        raise Slow("missing") from None
    try:
        chunks = []
        while chunk := posix.read(fd, 65536):
            chunks.append(chunk)
    finally:
        posix.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def expand(path: str, env: dict[str, str]) -> str:
    if path == "~" or path.startswith("~/"):
        home = env.get("HOME", "")
        if not home:
            raise Slow("home")
        return home.rstrip("/") + path[1:] if home != "/" else path[1:] or "/"
    if path.startswith("~"):
        raise Slow("home")  # ~user: os.path.expanduser's business
    return path


def merged_env(env: dict[str, str]) -> dict[str, str]:
    """``context.effective_env``: the config dir's settings.json env under the process env (an empty
    ``ALLOWED_SCOPES`` is a value: unscoped nodes only)."""
    explicit = env.get("CLAUDE_CONFIG_DIR", "").strip()
    config = expand(explicit, env) if explicit else expand("~/.claude", env)
    merged: dict[str, str] = {}
    try:
        data = loads(read(config + "/settings.json"))
    except Slow:
        data = None
    block = data.get("env") if isinstance(data, dict) else None
    if isinstance(block, dict):
        merged = {k: str(v) for k, v in block.items() if isinstance(k, str) and isinstance(v, (str, int, float))}
    settings = dict(merged)
    merged.update({k: v for k, v in env.items() if v.strip() or k not in merged or k == "ALLOWED_SCOPES"})
    return narrowest(settings, env, merged)


def narrowest(config: dict[str, str], env: dict[str, str], merged: dict[str, str]) -> dict[str, str]:
    """``context.narrowest``: the process env never widens the config dir's narrowing."""
    if "ALLOWED_SCOPES" in config and "ALLOWED_SCOPES" in env:
        mine = {s.strip() for s in env["ALLOWED_SCOPES"].split(",") if s.strip()}
        merged["ALLOWED_SCOPES"] = ",".join(s.strip() for s in config["ALLOWED_SCOPES"].split(",")
                                            if s.strip() and s.strip() in mine)
    roles = [r.strip().lower() for r in (config.get("PLUGHOST_SESSION_ROLE", ""), env.get("PLUGHOST_SESSION_ROLE", ""))]
    narrowed = [r for r in roles if r and r != "admin"]
    if narrowed:
        merged["PLUGHOST_SESSION_ROLE"] = narrowed[0]
    if config.get("AGENT_SLUG", "").strip():
        merged["AGENT_SLUG"] = config["AGENT_SLUG"]
    return merged


def valid_account(account: str) -> bool:
    return 0 < len(account) <= 128 and account[0] in _ACCOUNT_FIRST and all(ch in _ACCOUNT_REST for ch in account)


def names_an_account(env: dict[str, str]) -> bool:
    """Whether ``env`` names a well-formed account: the hooks' cheap first test (the forwarder is the
    one hook module that reads the principal's variables; the server resolves them)."""
    return valid_account(env.get("ACCOUNT_ID", "").strip())


def log(home: str, env: dict[str, str], fields: str) -> None:
    line = f"[surface] op=hook {fields} ms={(time.perf_counter() - _STARTED) * 1000:.1f}\n".encode("utf-8", "replace")
    try:
        posix.write(2, line)
    except OSError:
        pass
    if env.get("PLUGHOST_LOG_FILE", "1") == "0":
        return
    flags = posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT
    try:
        try:
            fd = posix.open(home + "/logs/server.log", flags, 0o600)
        except FileNotFoundError:
            posix.mkdir(home + "/logs", 0o700)
            fd = posix.open(home + "/logs/server.log", flags, 0o600)
        try:
            posix.write(fd, line)
        finally:
            posix.close(fd)
    except OSError:
        pass


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[posix.write(fd, view):]
    except OSError:
        pass


def timeout(env: dict[str, str]) -> float:
    try:
        return max(50, int(env.get("PLUGHOST_SURFACE_TIMEOUT_MS", "") or WARM_TIMEOUT_MS)) / 1000
    except ValueError:
        return WARM_TIMEOUT_MS / 1000


def alive(pid: int) -> bool:
    try:
        posix.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0
    return pid > 0


def read_line(sock: "_socket.socket") -> bytes:
    """One reply line (the proof), at most 400 bytes."""
    got = b""
    while not got.endswith(b"\n") and len(got) < 400:
        chunk = sock.recv(400 - len(got))
        if not chunk:
            break
        got += chunk
    return got


def _digest(data: bytes) -> bytes:
    """SHA-256 without OpenSSL: the small C module (``_sha256`` on 3.11, ``_sha2`` from 3.12),
    else :mod:`hashlib` (always right, only slower to load)."""
    try:
        import _sha256 as c  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415
    except ImportError:
        try:
            import _sha2 as c  # type: ignore[import-not-found,no-redef,unused-ignore]  # noqa: PLC0415
        except ImportError:
            import hashlib as c  # type: ignore[no-redef,unused-ignore]  # noqa: PLC0415
    return bytes(c.sha256(data).digest())


def hmac_sha256(key: bytes, message: bytes) -> str:
    """RFC 2104 over a C SHA-256 (``_hashlib`` loads OpenSSL, ~6 ms of every prompt); the test
    pins it to :func:`hmac.new`."""
    if len(key) > 64:
        key = _digest(key)
    key = key + b"\0" * (64 - len(key))
    inner = _digest(bytes(k ^ 0x36 for k in key) + message)
    return _digest(bytes(k ^ 0x5C for k in key) + inner).hex()


def proven(line: bytes, token: str, challenge: str) -> bool:
    """``server.proof``: HMAC-SHA256 of the challenge under the token."""
    want = hmac_sha256(token.encode(), ("plughost-surface-proof:" + challenge).encode())
    try:
        got = loads(line.decode("utf-8", "replace"))
    except Slow:
        return False
    return isinstance(got, dict) and got.get("proof") == want


def _discover(merged: dict[str, str], env: dict[str, str]) -> tuple[str, dict[str, object], str]:
    """The home, the serve's ``surface.json`` and the surface token; :class:`Slow` when no live serve."""
    home = merged.get("PLUGHOST_HOME", "").strip()
    home = expand(home, env) if home else expand("~/.plughost", env)
    where = loads(read(home + "/run/surface.json"))
    token = read(home + "/credentials/surface-token").strip()
    if not isinstance(where, dict) or not isinstance(where.get("host"), str) or not isinstance(where.get("port"), int) \
            or not isinstance(where.get("pid"), int):
        raise Slow("discovery")
    if not alive(where["pid"]):
        raise Slow("stale")  # serve died without removing surface.json: its port may be anyone's now
    return home, where, token


def _exchange(sock: _socket.socket, token: str, line: bytes) -> bytes:
    """Prove the serve, send the request line, read the reply (the fields line and the output)."""
    sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
    challenge = posix.urandom(16).hex()
    sock.sendall(b'{"challenge":"' + challenge.encode() + b'"}\n')
    if not proven(read_line(sock), token, challenge):
        raise Slow("unverified")  # not the serve that wrote surface.json: it learns nothing
    sock.sendall(line)
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
        if chunk.endswith(b"\n") and b"".join(chunks).count(b"\n") >= 2:
            break
    return b"".join(chunks)


def _socket_error(exc: OSError) -> str:
    return "path=warm result=error reason=" + ("timeout" if isinstance(exc, TimeoutError) else type(exc).__name__)


def warm(raw: bytes) -> None:
    """One round trip, or :class:`Slow` before anything was sent."""
    env = {k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape")
           for k, v in posix.environ.items()}
    if env.get("PLUGHOST_SURFACE", "1").strip() == "0" or len(raw) > MAX_STDIN:
        raise Slow("off")
    if not isinstance(loads(raw.decode("utf-8", "replace")), dict):  # C-parsed; the full process says why not
        raise Slow("input")
    merged = merged_env(env)
    if not valid_account(merged.get("ACCOUNT_ID", "").strip()):
        raise Slow("account")
    home, where, token = _discover(merged, env)
    enc = _json.encode_basestring_ascii
    sent = ",".join(f"{enc(k)}:{enc(merged[k])}" for k in SENT_KEYS if k in merged)
    hook = raw.decode("utf-8", "replace").replace("\r", " ").replace("\n", " ")  # whitespace outside strings
    # the input goes first: a key it smuggled in is overridden by the real token and env (last wins)
    line = f'{{"hook":{hook.strip() or "null"},"token":{enc(token)},"env":{{{sent}}}}}\n'.encode()
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout(merged))
        try:
            sock.connect((where["host"], where["port"]))
        except ConnectionRefusedError:
            raise Slow("refused") from None
        except OSError as exc:
            log(home, merged, _socket_error(exc))
            return
        try:
            reply = _exchange(sock, token, line)
        except OSError as exc:
            log(home, merged, _socket_error(exc))
            return
    finally:
        sock.close()
    fields, _, out = reply.partition(b"\n")
    if not fields.startswith(b"path=") or not out.endswith(b"\n"):
        log(home, merged, "path=warm result=error reason=bad-reply")
        return
    if out.strip():
        write_all(1, out.rstrip(b"\n"))
    log(home, merged, fields.decode("utf-8", "replace"))


def main() -> None:
    raw = b""
    try:
        if not posix.isatty(0):
            chunks = []
            size = 0
            while size <= MAX_STDIN and (chunk := posix.read(0, 1 << 16)):
                chunks.append(chunk)
                size += len(chunk)
            raw = b"".join(chunks)
    except OSError:
        pass
    try:
        warm(raw)
    except Slow:
        here = __file__.rpartition("/")[0] or "."
        sys.path.insert(0, here)
        import client  # type: ignore[import-not-found]  # noqa: PLC0415 - only off the warm path

        client.entry(raw)
    except BaseException:  # noqa: BLE001 - a hook must never fail the prompt
        pass
    posix._exit(0)


if __name__ == "__main__":
    main()
