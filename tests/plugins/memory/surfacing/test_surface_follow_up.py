"""Follow-ups keep their own topic, and a session is not shown the same words twice under another
id (a Document, then its Section), through the real hook process."""

from __future__ import annotations

import json
import re
from pathlib import Path

from surfacing_support import ACCOUNT, config_dir, hook_input, run_hook, seed

TEXT = "The koala feeding rota changes every Tuesday; the keeper signs the eucalyptus log at noon"
NOTES = [
    ("bandicoot", ["KnowledgeDocument"], {"title": "Bandicoot watcher edit",
     "summary": "The bandicoot watcher edit fixed the night camera trigger in the east enclosure"}),
    ("wombat", ["KnowledgeDocument"], {"title": "Wombat burrow survey",
     "summary": "The wombat burrow survey counted eleven active burrows along the creek"}),
    ("koala-doc", ["KnowledgeDocument"], {"title": "Koala feeding rota", "summary": TEXT}),
    ("koala-sec", ["Section"], {"title": "Rota", "text": TEXT}),
    ("koala-chunk", ["Chunk"], {"title": "Rota (part)", "text": TEXT[:60]}),
]


def _ids(text: str) -> list[str]:
    return re.findall(r"\(id: ([^,)]+)", text)


def test_follow_up_keeps_its_new_topic_and_content_repeats_are_dropped(tmp_path: Path, plughost_home: Path) -> None:
    seed(plughost_home, notes=NOTES)
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none")
    first = run_hook(hook_input("Tell me about the bandicoot watcher edit", "s-f"), cfg, tmp_path)
    assert _ids(first.context) == ["bandicoot"], first.stderr
    follow = run_hook(hook_input("what about wombat", "s-f"), cfg, tmp_path)
    assert "folded=true" in follow.line("surfaced") and _ids(follow.context) == ["wombat"], follow.stderr
    records = [json.loads(x) for x in (plughost_home / "surfacing" / ACCOUNT / "s-f.jsonl").read_text().splitlines()]
    assert records[-1]["base"] == "what about wombat"  # the next follow-up folds into the new topic

    doc = run_hook(hook_input("koala feeding rota eucalyptus keeper", "s-k"), cfg, tmp_path)
    shown = _ids(doc.context)
    assert len(shown) == 1 and shown[0].startswith("koala"), doc.stderr  # one of the three, not all
    again = run_hook(hook_input("koala feeding rota eucalyptus keeper Tuesday", "s-k"), cfg, tmp_path)
    assert not {"koala-doc", "koala-sec", "koala-chunk"} & set(_ids(again.context)), again.context
