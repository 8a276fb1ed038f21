"""Redaction: the secrets corpus in clear, false redactions of ordinary sentences, and the time per 2 KB.

    python bench/redaction.py [--rounds 5] [--write-results]

The corpus is ``tests/security/data/secret_forms.json`` (each form marks its secret; a ``text`` form
passes :func:`redact_text`, a ``value`` form :func:`redact_value` and is read back as JSON text); a
form is *in clear* when its secret string is still in the result. The ordinary sentences are
``tests/security/data/ordinary_sentences.txt``: order numbers, colours, commit ids, checksums, UUIDs,
URLs, product codes, image data URIs, and sentences that use the secret words (key, token,
password) without a secret; a sentence is *falsely redacted* when redaction changed it. Target:
0 in clear, a false-redaction rate < 1 %.

Time: the median over ``--rounds`` of the milliseconds per 2 KB text, for 2 KB chunks of the
ordinary sentences and 2 KB chunks of the secret forms' texts (one process, patterns compiled first).
Prints::

    corpus=N in_clear=0 ordinary=M false_redactions=K rate=0.00%
    ms-per-2KB ordinary=… secrets=… chunks=…
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DATA = REPO / "tests" / "security" / "data"


def load_forms() -> list[dict[str, Any]]:
    forms: list[dict[str, Any]] = json.loads((DATA / "secret_forms.json").read_text(encoding="utf-8"))
    return forms


def load_sentences() -> list[str]:
    lines = (DATA / "ordinary_sentences.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def in_clear(forms: list[dict[str, Any]]) -> list[str]:
    """The forms whose secret is still there after redaction."""
    from plughost.util.redact import redact_text, redact_value

    left = []
    for form in forms:
        out = redact_text(form["text"]) if "text" in form else json.dumps(redact_value(form["value"]))
        if form["secret"] in out or json.dumps(form["secret"])[1:-1] in out:
            left.append(form["form"])
    return left


def false_redactions(sentences: list[str]) -> list[str]:
    from plughost.util.redact import redact_text

    return [s for s in sentences if redact_text(s) != s]


def chunks(texts: list[str], size: int = 2048) -> list[str]:
    joined = "\n".join(texts)
    return [joined[i:i + size] for i in range(0, len(joined) - size + 1, size)]


def ms_per_text(texts: list[str], rounds: int) -> float:
    from plughost.util.redact import redact_text

    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for t in texts:
            redact_text(t)
        times.append((time.perf_counter() - started) * 1000 / len(texts))
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--show", type=int, default=10, help="how many in-clear forms and false redactions to list")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    from plughost.util.redact import redact_text

    forms, sentences = load_forms(), load_sentences()
    redact_text("password=warm-up-1 " + forms[0].get("text", ""))  # the patterns compile on the first call
    left = in_clear(forms)
    changed = false_redactions(sentences)
    rate = len(changed) / len(sentences)
    print(f"corpus={len(forms)} in_clear={len(left)} ordinary={len(sentences)} false_redactions={len(changed)} "
          f"rate={rate:.2%} target: in_clear=0, rate < 1%")
    for name in left[:args.show]:
        print(f"  in clear: {name}")
    for s in changed[:args.show]:
        print(f"  falsely redacted: {s[:140]}\n                 -> {redact_text(s)[:140]}")
    plain = chunks(sentences)
    secret = chunks([f["text"] for f in forms if "text" in f])
    print(f"ms-per-2KB ordinary={ms_per_text(plain, args.rounds):.3f} secrets={ms_per_text(secret, args.rounds):.3f} "
          f"chunks={len(plain)}+{len(secret)} rounds={args.rounds}")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("redaction", main))
