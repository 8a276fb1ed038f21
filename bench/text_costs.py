"""What the per-text paths cost: screening, entity extraction and redaction, ordinary and hostile text.

    .venv/bin/python bench/text_costs.py [--sentences 400] [--repeat 3]

The tests keep the behaviour (the languages detected, the bounded mentions, the secrets gone, no
exception, a hang guard); these are the figures the tests used to bound with a wall-clock assert:

1. ``local_screen`` per visitor message (language included); it was bounded at 20 ms.
2. ``redact_text`` per 2 KB of ordinary prose and per 2 KB dense with secrets; bounded at 5 ms.
3. ``extract`` (entities) on each hostile input of tests/plugins/memory/entities; bounded at 5 s.
4. ``redact_text`` on each hostile 400 KB text of tests/security (a quadratic pattern would take
   minutes); bounded at 5 s.

The floor, measured in the same run on the same text, is one linear regex pass over it
(``re.findall(r"\\w+", text)``): every ratio says how many such passes the path costs, so a
loaded machine moves the figure and the floor together. Each figure is the best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import sysconfig
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import results as bench_results  # bench/RESULTS.md, with --write-results

WORD = re.compile(r"\w+")
ENTITY_HOSTILE = {
    "x*200k": "x" * 200_000, "A*50k": "A " * 50_000, "Lisbon*20k": "Lisbon " * 20_000,
    "I live in*5k": "I live in " * 5_000, "emoji*10k": "😀" * 10_000, "digits*10k": "1" * 10_000,
    "AB1-chain": "-".join(["AB1"] * 5000), "really*5k": "I " + "really " * 5000 + "love cake",
}
REDACT_HOSTILE = {
    "colons": "a:" * 200000, "pairs": "password=" * 45000, "mysql": "mysql " * 70000, "curl": "curl -u " * 50000,
    "userinfo": "http://" + "u:p" * 130000, "quotes": '"' * 400000, "akia": ("AKIA" + "A" * 16) * 20000,
    "begin": "-----BEGIN RSA PRIVATE KEY-----" * 13000, "pairlists": '{"name": "x", "value": "y"}, ' * 14000,
}
SECRETS_2KB = ("api_key=sk_live_" + "a1B2" * 6 + "\npassword: hunter2-correct-horse\n"
               "export AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" + "\n"
               "curl -u admin:s3cr3tpass https://example.com\nghp_" + "a" * 36 + "\n") * 12


def best(fn: Callable[[], object], repeat: int) -> float:
    """The best of ``repeat`` runs of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def prose(n: int) -> list[str]:
    """Ordinary sentences nobody here wrote: the standard library's docstrings."""
    found: list[str] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
                for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", " ".join((ast.get_docstring(node) or "").split())):
                    if 40 <= len(s) <= 300:
                        found.append(s)
        if len(found) >= n:
            break
    return found[:n]


def row(name: str, figure_s: float, floor_s: float, unit: str = "ms", per: int = 1) -> None:
    scale = 1000 if unit == "ms" else 1
    print(f"  {name:<26} {figure_s * scale / per:9.3f} {unit}   floor {floor_s * scale / per:8.3f} {unit}   "
          f"x{figure_s / floor_s if floor_s else float('inf'):8.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor('one linear regex pass over the same text (re.findall(r"\\w+", text)), measured in the same run')

    from plughost.plugins.channels import language
    from plughost.plugins.channels.screening import local_screen
    from plughost.plugins.memory.entities.extract import extract
    from plughost.util.redact import redact_text

    sentences = prose(args.sentences)
    language.detect("warm up the model")
    redact_text(SECRETS_2KB)  # the patterns are compiled on the first call

    def each(fn: Callable[[str], object], texts: list[str]) -> Callable[[], None]:
        return lambda: [fn(t) for t in texts] and None

    print(f"1. screening: local_screen per message, {len(sentences)} messages")
    row("per message", best(each(local_screen, sentences), args.repeat),
        best(each(WORD.findall, sentences), args.repeat), per=len(sentences))

    chunks = [(" ".join(sentences[i:i + 15]) * 3)[:2048] for i in range(0, len(sentences), 15)]
    chunks = [c for c in chunks if len(c) == 2048]
    print(f"2. redaction per 2 KB: {len(chunks)} prose texts, 1 text dense with secrets x 50")
    row("prose", best(each(redact_text, chunks), args.repeat), best(each(WORD.findall, chunks), args.repeat),
        per=len(chunks))
    row("secrets", best(each(redact_text, [SECRETS_2KB[:2048]] * 50), args.repeat),
        best(each(WORD.findall, [SECRETS_2KB[:2048]] * 50), args.repeat), per=50)

    when = datetime(2025, 3, 12, 10, 0)
    print("3. entity extraction on hostile input (known=1000 names)")
    for name, text in ENTITY_HOSTILE.items():
        row(name, best(lambda t=text: extract(t, speaker="Maya", when=when, known=["Tom"] * 1000), args.repeat),
            best(lambda t=text: WORD.findall(t), args.repeat))

    print("4. redaction of a hostile 400 KB text")
    for name, text in REDACT_HOSTILE.items():
        row(name, best(lambda t=text: redact_text(t), args.repeat), best(lambda t=text: WORD.findall(t), args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("text_costs", main))
