"""Retrieval quality on real conversations: REALTALK, imported as a user imports a chat history,
asked through ``memory-search`` over stdio MCP.

    git clone https://github.com/danny911kr/REALTALK /somewhere/REALTALK   # the bench never downloads
    python bench/realtalk.py /somewhere/REALTALK [--half tune|held|both] [--ablations] [--work DIR]

REALTALK (Lee et al., 2025) is ten pairs of people chatting for 21 days: ``data/Chat_*.json``,
8,944 turns (``clean_text``, ``speaker``, ``date_time``, ``dia_id``) and 728 questions with the
turns that answer them (category 1 multi-hop, 2 temporal, 3 open-domain). Only ``data/Chat_*.json``
is read; nothing of the corpus is committed.

**Import.** Each chat is one account (``realtalk-<n>``: the pair's history is one user's memory,
and the same person talks in several chats, so a question is asked of its own chat), written as
a user writes a chat export: one ``Conversation`` per session and its turns as ``Message`` nodes
(``conversationId`` of the session, ``sentAt`` from ``date_time``, ``senderName`` the speaker,
``text`` the turn), through ``plughost memory import`` (the real command, in a subprocess: the
indexed form and the local embedder as shipped), with ``PLUGHOST_MEMORY_ENTITIES=1`` so the entity
path can be measured (Entity nodes change no other path's score). The imported home is kept in
``--work`` (default ``$TMPDIR/plughost-realtalk``) under a digest of the corpus and the import
settings, so a second run only searches.

**Questions.** Every question goes to ``memory-search`` (limit 10, ``expandHops`` 0) over a real
``python -m plughost.cli mcp serve memory`` per chat and configuration, read by the MCP SDK's
stdio client; the node ids come from the result text. Evidence ids are read as written, with the
corpus's slips repaired (``"D5:12;D5:16"``, ``"D12:3-D12:5"``, ``"D20:17."``, ``"D 2:18"``); an id
that names no turn of its chat is dropped, and a question left without evidence is not asked (the
counts are printed). R@k is the share of a question's evidence in the top k, nDCG@10 counts every
evidence turn relevant (bench/retrieval_quality.py's definitions).

**Halves.** Chosen once, by chat, fixed here: the odd chats tune (:data:`TUNE`), the even ones are
held out (:data:`HELD`). Ablations (``--ablations``) run on the tuning half only; a stage becomes
a default only if it helps there and does not lose on the held-out half (and on
bench/retrieval_quality.py's sets). Every run prints "before" (:data:`BEFORE`, the defaults this
bench was written against, spelled out) and the shipped defaults.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TUNE = (1, 3, 5, 7, 9)
"""The tuning half: chats with an odd index (fixed once; never change it to suit a result)."""
HELD = (2, 4, 6, 8, 10)
"""The held-out half: chats with an even index."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain"}
LIMIT = 10
IMPORT_ENV = ("PLUGHOST_MESSAGE_CONTEXT_TURNS", "PLUGHOST_MESSAGE_EMBED", "PLUGHOST_EMBEDDER")
BEFORE = {"PLUGHOST_GS_STEM": "1", "PLUGHOST_GS_STOPWORDS": "1", "PLUGHOST_GS_NORMALIZE": "1",
          "PLUGHOST_GS_VECTOR_WEIGHT": "0.5", "PLUGHOST_GS_CANDIDATES": "200", "PLUGHOST_GS_NEIGHBOURS": "0.3",
          "PLUGHOST_GS_NEIGHBOURS_BACK": "0", "PLUGHOST_GS_RRF": "0", "PLUGHOST_GS_ENTITIES": "0",
          "PLUGHOST_GS_CLASSIFY": "0", "PLUGHOST_GS_DATED": "0", "PLUGHOST_GS_SPEAKER": "0", "PLUGHOST_GS_SESSION": "0",
          "PLUGHOST_GS_DATES": "0", "PLUGHOST_GS_MESSAGE_WEIGHT": "1", "PLUGHOST_GS_FACTS": "0"}
"""The defaults before this bench existed, spelled out (so "before" stays "before" whatever ships)."""
DEFAULTS = "defaults (no PLUGHOST_GS_* set)"
UNDER_TEST: tuple[tuple[str, dict[str, str]], ...] = (("defaults, facts off", {"PLUGHOST_GS_FACTS": "0"}),)
"""Stages measured on both halves in every run, beside "before" and the defaults: the shipped
defaults with one stage changed, so its before / after stands in one run."""


@dataclass(frozen=True)
class Turn:
    id: str
    conversation: str
    speaker: str
    text: str
    at: str


@dataclass(frozen=True)
class Question:
    chat: int
    text: str
    category: str
    evidence: tuple[str, ...]


@dataclass
class Chat:
    index: int
    name: str
    sessions: dict[str, list[Turn]]
    questions: list[Question]
    dropped: int = 0
    unanswerable: int = 0

    @property
    def account(self) -> str:
        return f"realtalk-{self.index}"


def _iso(date_time: str) -> str:
    """``"29.12.2023, 22:42:04"`` → ``"2023-12-29T22:42:04Z"``."""
    m = re.fullmatch(r"\s*(\d{1,2})\.(\d{1,2})\.(\d{4}),?\s+(\d{1,2}):(\d{2}):(\d{2})\s*", date_time)
    if not m:
        raise ValueError(f"unreadable date_time {date_time!r}")
    d, mo, y, h, mi, s = m.groups()
    return f"{y}-{int(mo):02d}-{int(d):02d}T{int(h):02d}:{mi}:{s}Z"


def evidence_ids(raw: list[str]) -> list[str]:
    """The corpus's evidence strings as dia ids: lists split, ranges in one session expanded,
    stray spaces and full stops dropped."""
    out: list[str] = []
    for item in raw:
        for part in re.split(r"[;,]", str(item)):
            part = part.replace(" ", "").rstrip(".")
            rng = re.fullmatch(r"D(\d+):(\d+)-D?(\d+):(\d+)", part)
            if rng and rng.group(1) == rng.group(3):
                out += [f"D{rng.group(1)}:{n}" for n in range(int(rng.group(2)), int(rng.group(4)) + 1)]
            elif re.fullmatch(r"D\d+:\d+", part):
                out.append(part)
    return list(dict.fromkeys(out))


def load(root: Path) -> list[Chat]:
    folder = root / "data" if (root / "data").is_dir() else root
    files = sorted(folder.glob("Chat_*.json"), key=lambda p: int(p.name.split("_")[1]))
    if not files:
        raise SystemExit(f"realtalk: no data/Chat_*.json under {root} (clone github.com/danny911kr/REALTALK)")
    chats = []
    for path in files:
        index = int(path.name.split("_")[1])
        data = json.loads(path.read_text(encoding="utf-8"))
        sessions: dict[str, list[Turn]] = {}
        keys = sorted((k for k in data if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        for key in keys:
            cid = f"rt{index}-s{key.split('_')[1]}"
            sessions[cid] = [Turn(f"rt{index}:{t['dia_id']}", cid, str(t["speaker"]), t["clean_text"], _iso(t["date_time"]))
                             for t in data[key] if str(t.get("clean_text") or "").strip()]
        known = {t.id for turns in sessions.values() for t in turns}
        chat = Chat(index, path.stem, sessions, [])
        for q in data.get("qa", []):
            ids = [f"rt{index}:{e}" for e in evidence_ids(q.get("evidence") or [])]
            kept = [e for e in ids if e in known]
            chat.dropped += len(ids) - len(kept)
            if not kept or q.get("category") not in CATEGORIES:
                chat.unanswerable += 1
                continue
            chat.questions.append(Question(index, q["question"], CATEGORIES[q["category"]], tuple(kept)))
        chats.append(chat)
    return chats


def jsonl(chat: Chat) -> str:
    """The chat as a user's export in memory import's line format."""
    lines = []
    for cid, turns in chat.sessions.items():
        for t in turns:
            lines.append(json.dumps({"id": t.id, "labels": ["Message"], "properties": {
                "role": "user", "senderName": t.speaker, "text": t.text, "conversationId": cid, "sentAt": t.at}}))
        lines.append(json.dumps({"id": cid, "labels": ["Conversation"],
                                 "properties": {"title": f"{chat.name} {cid}", "startedAt": turns[0].at if turns else None},
                                 "edges": [{"type": "HAS_MESSAGE", "to": t.id} for t in turns]}))
    return "\n".join(lines) + "\n"


def base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLUGHOST_GS_", "CLAUDE"))}
    for key in ("PLUGHOST_STORE", "SESSION_ID", "PLUGHOST_SESSION_ID", "ALLOWED_SCOPES", "AGENT_SLUG", "NEO4J_URI"):
        env.pop(key, None)
    env.update(PLUGHOST_HOME=str(home), PLUGHOST_LOG_FILE="0", PLUGHOST_AUDIT_MCP="0")
    env.setdefault("PLUGHOST_EMBEDDER", "local")
    return env


def imported(chats: list[Chat], work: Path) -> tuple[Path, float]:
    """The home every chat was imported into (made once per corpus and import settings)."""
    files = {c.account: jsonl(c) for c in chats}
    settings = {k: os.environ.get(k, "") for k in IMPORT_ENV}
    digest = hashlib.sha256(json.dumps([files, settings], sort_keys=True).encode()).hexdigest()[:12]
    home = work / f"home-{digest}"
    done = home / "realtalk-imported.json"
    if done.is_file():
        return home, 0.0
    home.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for account, text in files.items():
        path = home / f"{account}.jsonl"
        path.write_text(text, encoding="utf-8")
        env = {**base_env(home), "ACCOUNT_ID": account, "PLUGHOST_MEMORY_ENTITIES": "1"}
        t = time.perf_counter()
        if not (home / "accounts" / account).is_dir():
            subprocess.run([sys.executable, "-m", "plughost.cli", "account", "create", account],
                           env=env, capture_output=True, text=True, check=True)
        out = subprocess.run([sys.executable, "-m", "plughost.cli", "memory", "import", str(path), "--no-progress"],
                             env=env, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"realtalk: memory import of {account} failed ({out.returncode}): "
                             f"{(out.stdout + out.stderr).strip()[-600:]}")
        summary = next((x for x in out.stdout.splitlines() if x.startswith("import:")), "")
        print(f"  {account}: {summary} ({time.perf_counter() - t:.0f} s)", flush=True)
        path.unlink()
    seconds = time.perf_counter() - started
    done.write_text(json.dumps({"settings": settings, "seconds": seconds}), encoding="utf-8")
    return home, seconds


_ID = re.compile(r"\(id: ([^)]+)\)")


def ask(home: Path, chat: Chat, env: dict[str, str]) -> tuple[list[list[str]], list[float]]:
    """Every question of ``chat`` through memory-search over one stdio MCP server: the result ids
    and the client-side milliseconds per call."""
    import anyio
    from mcp import Client, StdioServerParameters

    server_env = {**base_env(home), "ACCOUNT_ID": chat.account, **env}
    params = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"],
                                   env=server_env)

    async def go() -> tuple[list[list[str]], list[float]]:
        ids, times = [], []
        async with Client(params) as client:
            for q in chat.questions:
                t = time.perf_counter()
                result = await client.call_tool("memory-search", {"query": q.text, "limit": LIMIT, "expandHops": 0})
                times.append((time.perf_counter() - t) * 1000)
                text = "".join(getattr(c, "text", "") for c in result.content)
                if result.is_error:
                    raise SystemExit(f"memory-search failed over MCP ({chat.account}): {text[:300]}")
                ids.append(_ID.findall(text))
        return ids, times

    return anyio.run(go)


def evaluate(home: Path, chats: list[Chat], env: dict[str, str]) -> tuple[dict[str, tuple[int, dict]], list[float], float]:
    """{category or "all": (questions, metrics)}, the call times, the wall seconds."""
    from retrieval_quality import metrics, ranks_of

    started = time.perf_counter()
    ranked: dict[str, list] = {}
    times: list[float] = []
    for chat in chats:
        ids, ms = ask(home, chat, env)
        times += ms
        for q, got in zip(chat.questions, ids, strict=True):
            r = ranks_of(got, q.evidence)
            ranked.setdefault(q.category, []).append(r)
            ranked.setdefault("all", []).append(r)
    order = [*CATEGORIES.values(), "all"]
    return ({c: (len(ranked[c]), metrics(ranked[c])) for c in order if c in ranked}, times,
            time.perf_counter() - started)


def table_rows(name: str, half: str, per: dict[str, tuple[int, dict]]) -> list[str]:
    return [f"| {name} | {half} | {c} | {n} | {m['R@5']:.3f} | {m['R@10']:.3f} | {m['nDCG@10']:.3f} |"
            for c, (n, m) in per.items()]


HEADER = ["| configuration | half | category | questions | R@5 | R@10 | nDCG@10 |", "|---|---|---|---|---|---|---|"]


def ablations() -> list[tuple[str, dict[str, str]]]:
    """Each stage alone over :data:`BEFORE`, then each of the shipped defaults' stages taken out
    of them (leave one out), on the tuning half only."""
    b = BEFORE
    out = [
        ("BM25 only (stemmed, stop words)", {**b, "PLUGHOST_GS_PATHS": "bm25", "PLUGHOST_GS_NEIGHBOURS": "0"}),
        ("vector only", {**b, "PLUGHOST_GS_PATHS": "vector", "PLUGHOST_GS_NEIGHBOURS": "0"}),
        ("before + RRF k=60", {**b, "PLUGHOST_GS_RRF": "1"}),
    ]
    out += [(f"before, vector weight {w}", {**b, "PLUGHOST_GS_VECTOR_WEIGHT": w}) for w in ("0.3", "0.4", "0.6")]
    out += [
        ("before, neighbours 0", {**b, "PLUGHOST_GS_NEIGHBOURS": "0"}),
        ("before + neighbours back 0.15", {**b, "PLUGHOST_GS_NEIGHBOURS_BACK": "0.15"}),
        ("before + session 0.3", {**b, "PLUGHOST_GS_SESSION": "0.3"}),
        ("before + speaker 1", {**b, "PLUGHOST_GS_SPEAKER": "1"}),
        ("before + dates 1", {**b, "PLUGHOST_GS_DATES": "1"}),
        ("before + entities (weight 0.3)", {**b, "PLUGHOST_GS_ENTITIES": "1"}),
        ("before + classify, dated 0.3", {**b, "PLUGHOST_GS_CLASSIFY": "1", "PLUGHOST_GS_DATED": "0.3"}),
        ("before + compound", {**b, "PLUGHOST_GS_COMPOUND": "1"}),
        ("defaults without speaker", {"PLUGHOST_GS_SPEAKER": "0"}),
        ("defaults without session", {"PLUGHOST_GS_SESSION": "0"}),
        ("defaults without dates", {"PLUGHOST_GS_DATES": "0"}),
        ("defaults, neighbours 0.3 forward, 0 back (before's)", {"PLUGHOST_GS_NEIGHBOURS": "0.3",
                                                               "PLUGHOST_GS_NEIGHBOURS_BACK": "0"}),
        ("defaults, vector weight 0.4", {"PLUGHOST_GS_VECTOR_WEIGHT": "0.4"}),
        ("defaults + entities, weight 0.15", {"PLUGHOST_GS_ENTITIES": "1", "PLUGHOST_GS_ENTITY_WEIGHT": "0.15"}),
        ("defaults, candidate pool 100", {"PLUGHOST_GS_CANDIDATES": "100"}),  # the pool's price in recall
        ("defaults, candidate pool 50", {"PLUGHOST_GS_CANDIDATES": "50"}),  # (bench/diy_hybrid.py: its speed)
    ]
    extra = os.environ.get("REALTALK_ABLATIONS")  # more, as JSON {"name": {"VAR": "value"}} over the defaults
    if extra:
        out += list(json.loads(extra).items())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="a REALTALK clone (or its data/ folder): data/Chat_*.json is read")
    ap.add_argument("--work", type=Path, default=None, help="keep the imported home here between runs")
    ap.add_argument("--half", choices=("tune", "held", "both"), default="both")
    ap.add_argument("--ablations", action="store_true", help="also each stage alone over 'before', tuning half only")
    ap.add_argument("--only-ablations", action="store_true", help="the ablations alone (no before / defaults)")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    from plughost.plugins.memory.retrieval.flags import SHIPPED

    work = args.work or Path(tempfile.gettempdir()) / "plughost-realtalk"
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    chats = load(args.root)
    halves = {"tune": [c for c in chats if c.index in TUNE], "held": [c for c in chats if c.index in HELD]}
    turns = sum(len(t) for c in chats for t in c.sessions.values())
    asked = sum(len(c.questions) for c in chats)
    print(f"realtalk: {len(chats)} chats, {sum(len(c.sessions) for c in chats)} sessions, {turns} turns, "
          f"{asked} questions asked ({sum(c.unanswerable for c in chats)} left without evidence, "
          f"{sum(c.dropped for c in chats)} evidence ids naming no turn dropped); tuning half chats "
          f"{','.join(map(str, TUNE))} ({sum(len(c.questions) for c in halves['tune'])} questions), held out "
          f"{','.join(map(str, HELD))} ({sum(len(c.questions) for c in halves['held'])})")
    print(f"embedder: PLUGHOST_EMBEDDER={os.environ.get('PLUGHOST_EMBEDDER', 'local')}; Message form: "
          + ", ".join(f"{k}={os.environ.get(k, '(default)')}" for k in IMPORT_ENV[:2])
          + f"; shipped defaults over the baseline: {', '.join(f'{k}={v}' for k, v in SHIPPED.items())}")
    print(f"load average at start: {' / '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores",
          flush=True)
    home, seconds = imported(chats, work)
    print(f"imported home: {home} ({f'imported in {seconds:.0f} s' if seconds else 'cached'})", flush=True)

    configs: list[tuple[str, dict[str, str], tuple[str, ...]]] = []
    wanted = ("tune", "held") if args.half == "both" else (args.half,)
    if not args.only_ablations:
        configs += [("before", BEFORE, wanted), *[(name, env, wanted) for name, env in UNDER_TEST], (DEFAULTS, {}, wanted)]
    if args.ablations or args.only_ablations:
        configs += [(name, env, ("tune",)) for name, env in ablations()]
    lines = []
    for name, env, parts in configs:
        for half in parts:
            per, times, wall = evaluate(home, halves[half], env)
            times.sort()
            rows = table_rows(name, half, per)
            lines += rows
            print("\n".join(rows), file=sys.stderr, flush=True)
            print(f"  {name} / {half}: {len(times)} calls in {wall:.0f} s, call p50 {times[len(times) // 2]:.0f} ms "
                  f"over MCP", file=sys.stderr, flush=True)
    print("\n" + "\n".join(HEADER + lines))
    print(f"\nload average at end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("realtalk", main))
