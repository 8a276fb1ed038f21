"""Runner lanes: S senders × M messages at once through the command runner.

Prints the wall time next to the slowest sender's own time and the sequential sum (the raw
baseline: the same turns one after another), and checks every sender's replies came in order.

    .venv/bin/python bench/channels_runner.py                  # 20 senders x 10 messages, 0.2 s agent
    .venv/bin/python bench/channels_runner.py --senders 50 --messages 4 --delay 0.5
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import results as bench_results  # bench/RESULTS.md, with --write-results

from plughost import AgentTurn  # noqa: E402
from plughost.api.principals import resolve  # noqa: E402
from plughost.plugins.channels.runner import CommandRunner, KeyedSerializer, session_id_for  # noqa: E402

AGENT = """IFS= read -r line || true
sleep "$AGENT_DELAY"
printf '%s\\n' "$line" | sed -E 's/.*"messageId": "([0-9]+)".*/\\1/'
"""


def turn(sender: str, n: int) -> AgentTurn:
    """The n-th turn of ``sender`` (the agent script answers its messageId)."""
    return AgentTurn.from_dict({"sessionId": sender, "sender": sender, "messageId": str(n), "role": "public"},
                               resolve({"ACCOUNT_ID": "bench"}))


async def run(senders: int, messages: int, runner: CommandRunner) -> tuple[float, dict[str, float], bool]:
    lanes = KeyedSerializer()
    replies: dict[str, list[int]] = {f"s{i}": [] for i in range(senders)}
    spans: dict[str, list[float]] = {s: [] for s in replies}

    def job(sender: str, n: int):
        async def go() -> None:
            t0 = time.perf_counter()
            out = await runner.run(session_id_for("bench", sender), turn(sender, n))
            spans[sender].append(time.perf_counter() - t0)
            replies[sender].append(int(out))
        return go

    t0 = time.perf_counter()
    await asyncio.gather(*(lanes.submit(s, job(s, n)) for n in range(messages) for s in replies))
    wall = time.perf_counter() - t0
    ordered = all(v == list(range(messages)) for v in replies.values())
    return wall, {s: sum(v) for s, v in spans.items()}, ordered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--senders", type=int, default=20)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds each agent turn takes")
    bench_results.add_flag(parser)
    args = parser.parse_args()
    script = Path(tempfile.mkdtemp(prefix="plughost-runner-bench-")) / "agent.sh"
    script.write_text(AGENT)
    runner = CommandRunner(["sh", str(script)], env={"AGENT_DELAY": str(args.delay), "PATH": "/usr/bin:/bin"})

    # raw baseline: the same turns strictly one after another
    t0 = time.perf_counter()
    for n in range(min(args.messages, 5)):
        asyncio.run(runner.run("baseline", turn("b", n)))
    per_turn = (time.perf_counter() - t0) / min(args.messages, 5)
    sequential = per_turn * args.senders * args.messages

    wall, per_sender, ordered = asyncio.run(run(args.senders, args.messages, runner))
    slowest = max(per_sender.values())
    print(f"runner lanes: {args.senders} senders x {args.messages} messages, agent turn {args.delay:.2f}s "
          f"(measured {per_turn * 1000:.0f} ms with spawn)")
    print(f"  wall={wall:.2f}s slowest-sender={slowest:.2f}s sequential-estimate={sequential:.1f}s "
          f"wall/slowest={wall / slowest:.2f} sequential/wall={sequential / wall:.1f}x order-ok={ordered}")
    return 0 if ordered else 1


if __name__ == "__main__":
    raise SystemExit(bench_results.run("channels_runner", main))
