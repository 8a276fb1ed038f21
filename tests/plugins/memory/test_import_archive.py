"""`plughost memory import-archive`: Claude, ChatGPT, WhatsApp, mbox and .eml archives as Conversations.

Each sample in data/archives is in its format's documented shape (unicode, multi-line messages,
an attachment, a reply thread). Each imports, a second run writes nothing, and a question is
answered from it through `plughost memory search` (docs/memory.md#importing-archives).
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from memory_support import ACCOUNT, cli

from plughost.ports.graph import Guards

DATA = Path(__file__).parent / "data" / "archives"
ENV = {"PLUGHOST_EMBEDDER": "none"}

CASES = [
    # sample, format, conversations, messages, question, words the answer holds
    ("claude", "claude", 2, 4, "Roggenbrot price", "6,50 €"),
    ("chatgpt", "chatgpt", 1, 4, "invoice total Müller Mühle", "1.312,00 €"),
    ("WhatsApp Chat - Lena Vogel", "whatsapp", 1, 5, "Brezeln pick-up side door", "Pick-up at the side door"),
    ("whatsapp-android/WhatsApp Chat with Ofen Service.txt", "whatsapp", 1, 4, "oven technician January",
     "between 6 and 8 am"),
    ("bakery.mbox", "mbox", 2, 4, "rye flour per kg agreed", "0,79 € per kg"),
    ("eml", "eml", 1, 2, "Streuselkuchen Blech", "18 € pro Blech"),
]


def summary(stdout: str) -> dict[str, str]:
    line = next(x for x in stdout.splitlines() if x.startswith("[import-archive] format="))
    return dict(re.findall(r"(\w+)=(\S+)", line))


def messages(home: Path) -> list:
    from plughost.runtime.host import Host

    host = Host(env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(home), "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        return host.store().find(guards=Guards(ACCOUNT), labels=["Message"], limit=1000)
    finally:
        host.close()


@pytest.mark.parametrize(("sample", "fmt", "convs", "msgs", "question", "answer"), CASES,
                         ids=[c[0].split("/")[0] for c in CASES])
def test_archive_imports_once_and_answers(plughost_home, sample, fmt, convs, msgs, question, answer) -> None:
    path = str(DATA / sample)
    first = cli("memory", "import-archive", path, **ENV)
    assert first.returncode == 0, first.stderr
    got = summary(first.stdout)
    assert (got["format"], got["conversations"], got["messages"]) == (fmt, str(convs), str(msgs))
    assert (got["new"], got["unchanged"], got["skipped"]) == (str(msgs), "0", "0")
    again = cli("memory", "import-archive", path, "--format", fmt, **ENV)
    assert again.returncode == 0, again.stderr
    assert (summary(again.stdout)["new"], summary(again.stdout)["updated"], summary(again.stdout)["unchanged"]) == (
        "0", "0", str(msgs))
    stored = messages(plughost_home)
    assert len(stored) == msgs
    assert {m.properties["scope"] for m in stored} == {"admin"}  # private by default
    assert all(m.properties["conversationId"].startswith("conv-") and m.properties["sentAt"] for m in stored)
    found = cli("memory", "search", question, "--json", "--labels", "Message", **ENV)
    assert found.returncode == 0, found.stderr
    rows = json.loads(found.stdout)["results"]
    texts = [(r.get("properties") or {}).get("text", "") for r in rows[:3]]
    assert any(answer in t for t in texts), texts  # the turn that says it, among the first three


def test_archive_shapes(plughost_home) -> None:
    """What is kept: the ChatGPT branch in use, attachments listed, quoted mail and system lines left out."""
    for sample in ("chatgpt", "bakery.mbox", "WhatsApp Chat - Lena Vogel"):
        assert cli("memory", "import-archive", str(DATA / sample), **ENV).returncode == 0
    stored = messages(plughost_home)
    texts = "\n".join(m.properties["text"] for m in stored)
    assert "zebra" not in texts  # a regenerated answer off the kept branch
    assert "end-to-end encrypted" not in texts
    assert "> our offer" not in texts and "From the register: 312 receipts." in texts
    assert "Yes 👍 40 Brezeln, ready at 7:30.\nPick-up at the side door" in texts
    by_text = {m.properties["text"]: m.properties for m in stored}
    photo = next(p for t, p in by_text.items() if "00000007-PHOTO" in t)
    assert photo["attachments"] == ["00000007-PHOTO-2024-03-02-09-21-10.jpg"]
    offer = next(p for t, p in by_text.items() if "angebot_2024-03.pdf" in t)
    assert offer["sender"] == "Müller Mühle" and offer["senderAddress"] == "mueller@muehle.example"
    reply = next(p for t, p in by_text.items() if "0,78 €" in t)
    assert reply["conversationId"] == offer["conversationId"]  # the reply thread is one conversation
    assert by_text["Paid the deposit by PayPal, ref FAIR-2024-16."]["sentAt"] == "2024-03-15T18:02:55"  # day first


def test_new_message_appends_and_zip_and_public_scope(plughost_home, tmp_path) -> None:
    chat = tmp_path / "WhatsApp Chat with Ofen Service.txt"
    shutil.copy(DATA / "whatsapp-android" / chat.name, chat)
    assert summary(cli("memory", "import-archive", str(chat), "--scope", "public", **ENV).stdout)["new"] == "4"
    chat.write_text(chat.read_text() + "1/4/24, 7:45 AM - Tom: Oven is fixed, new thermostat fitted.\n")
    got = summary(cli("memory", "import-archive", str(chat), **ENV).stdout)
    assert (got["new"], got["unchanged"]) == ("1", "4")
    stored = messages(plughost_home)
    assert len({m.properties["conversationId"] for m in stored}) == 1
    assert {m.properties["scope"] for m in stored} == {"public"}  # the conversation keeps its scope
    export = tmp_path / "claude-export.zip"
    with zipfile.ZipFile(export, "w") as z:
        z.write(DATA / "claude" / "conversations.json", "conversations.json")
    dry = cli("memory", "import-archive", str(export), "--dry-run", **ENV)
    assert summary(dry.stdout)["new"] == "4" and "dry-run=1" in dry.stdout
    assert len(messages(plughost_home)) == 5
    assert summary(cli("memory", "import-archive", str(export), **ENV).stdout)["new"] == "4"


def test_secrets_are_redacted(plughost_home, tmp_path) -> None:
    chat = tmp_path / "_chat.txt"
    chat.write_text("[01/02/2024, 10:00:00] Ada: the shop wifi password=Sup3rS3cretWifi!\n"
                    "[01/02/2024, 10:01:00] Tom: thanks\n")
    assert cli("memory", "import-archive", str(chat), **ENV).returncode == 0
    texts = [m.properties["text"] for m in messages(plughost_home)]
    assert "password=[redacted]" in texts[0] + texts[1] and "Sup3rS3cretWifi" not in "".join(texts)


MALFORMED = [
    ("conversations.json", "claude", '[{"uuid": "a", "chat_messages": [\n  {"sender": "human", "text": "hi"',
     r"conversations\.json:2:\d+: invalid JSON"),
    ("conversations.json", "claude", '[{"uuid": "a", "chat_messages": [{"sender": "robot", "text": "hi"}]}]',
     r"\[import-archive\] skip where=\S*conversations\.json reason=\"\[0\]\.chat_messages\[0\]\.sender: "
     r"expected 'human' or 'assistant'"),
    ("conversations.json", "chatgpt", '[{"title": "t", "current_node": "x", "mapping": {}}]',
     r"skip where=\S*conversations\.json reason=\"\[0\]\.mapping\.x: no such node"),
    ("_chat.txt", "whatsapp", "Hello there\n[01/02/2024, 10:00:00] Ada: hi\n",
     r"_chat\.txt:1: not a WhatsApp chat line"),
    ("inbox.mbox", "mbox", "Subject: no envelope\n\nbody\n", r"inbox\.mbox:1: not an mbox"),
    ("a.eml", "eml", "From: Ada <a@example.org>\nDate: sometime soon\nSubject: x\n\nbody\n",
     r"skip where=\S*a\.eml reason=\"Date: not a date"),
]


@pytest.mark.parametrize(("name", "fmt", "content", "expected"), MALFORMED,
                         ids=[f"{m[1]}-{i}" for i, m in enumerate(MALFORMED)])
def test_malformed_archive_is_one_line_exit_2(plughost_home, tmp_path, name, fmt, content, expected) -> None:
    path = tmp_path / name
    path.write_text(content)
    done = cli("memory", "import-archive", str(path), "--format", fmt, **ENV)
    assert done.returncode == 2, (done.stdout, done.stderr)
    out = done.stdout + done.stderr
    assert re.search(expected, out), out
    assert "Traceback" not in out
    if "skip where=" in out:  # a conversation or mail that does not parse: the import's skip line, once
        assert out.count("skip where=") == 1 and "skipped=1 errors=1" in out, out


def test_edited_message_updates_and_whatsapp_zip(plughost_home, tmp_path) -> None:
    conv = json.loads((DATA / "claude" / "conversations.json").read_text())
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(conv[:1]))
    assert summary(cli("memory", "import-archive", str(path), **ENV).stdout)["new"] == "2"
    conv[0]["chat_messages"][1]["text"] = "Move the Roggenbrot to 6,40 € instead."
    path.write_text(json.dumps(conv[:1]))
    got = summary(cli("memory", "import-archive", str(path), **ENV).stdout)
    assert (got["new"], got["updated"], got["unchanged"]) == ("0", "1", "1")
    assert any("6,40 €" in m.properties["text"] for m in messages(plughost_home))
    export = tmp_path / "WhatsApp Chat - Lena Vogel.zip"  # as iOS shares it: the chat and its media
    with zipfile.ZipFile(export, "w") as z:
        z.write(DATA / "WhatsApp Chat - Lena Vogel" / "_chat.txt", "_chat.txt")
        z.writestr("00000007-PHOTO-2024-03-02-09-21-10.jpg", b"\xff\xd8\xff\xe0 not really a photo")
    first = cli("memory", "import-archive", str(export), **ENV)
    assert summary(first.stdout)["format"] == "whatsapp" and summary(first.stdout)["new"] == "5", first.stdout
    # the zip and the unpacked folder are the same chat ("Lena Vogel"): nothing new
    assert summary(cli("memory", "import-archive", str(DATA / "WhatsApp Chat - Lena Vogel"), **ENV).stdout)[
        "new"] == "0"


def test_import_embeds_messages(plughost_home, fake_ollama) -> None:
    fake_ollama.dims = 8
    done = cli("memory", "import-archive", str(DATA / "eml"), PLUGHOST_EMBEDDER="ollama", OLLAMA_URL=fake_ollama.url,
               EMBED_SUBBATCH_COOLDOWN_MS="0")
    assert done.returncode == 0, done.stderr
    assert summary(done.stdout)["embedded"] == "2"
    sent = [t for r in fake_ollama.requests for t in r.body["input"]]
    assert any(t.startswith("Hallo Lena,") and "[attached: Rechnung_0342.pdf (18 B)]" in t for t in sent), sent


def test_owner_is_recognised_and_erase_takes_one_correspondent(plughost_home) -> None:
    """The owner's own turns are the business's side (sender ``owner``), so erasing a correspondent
    takes their threads and never, through the owner, every other conversation."""
    for sample, me in (("eml", ["--me", "ada@baeckerei.example"]), ("bakery.mbox", []),
                     ("WhatsApp Chat - Lena Vogel", [])):
        done = cli("memory", "import-archive", str(DATA / sample), *me, **ENV)  # the mbox and the 1:1 chat say who
        assert done.returncode == 0 and "note:" not in done.stdout, done.stdout
    stored = messages(plughost_home)
    ada = [m.properties for m in stored if m.properties["senderName"] == "Ada"]
    assert ada and {(p["role"], p["sender"]) for p in ada} == {("assistant", "owner")}
    assert {(m.properties["role"], m.properties["sender"]) for m in stored
            if m.properties["senderName"] == "Ada Bäckerei"} == {("assistant", "owner")}  # the 1:1 chat's other side
    lena = [m.properties for m in stored if m.properties["senderName"] == "Lena Vogel"]
    assert {(p["role"], p["sender"]) for p in lena} == {("user", "Lena Vogel")}
    erased = cli("erase", "--contact", "lena@schule.example", "--json", **ENV)
    assert erased.returncode == 0, erased.stderr
    left = [m.properties for m in messages(plughost_home)]
    # her mail thread and (the same sender, Lena Vogel) her WhatsApp chat go; the supplier's mail stays whole
    assert len(left) == 4 and {p["channel"] for p in left} == {"email"}
    assert not any("Streuselkuchen" in p["text"] for p in left)


def test_group_chat_needs_me_and_keeps_it(plughost_home, tmp_path) -> None:
    chat = tmp_path / "WhatsApp Chat with Bakery team.txt"
    chat.write_text("3/1/24, 6:00 - Ada: Oven 2 is down today\n3/1/24, 6:05 - Ben: I'll bake the rolls in oven 1\n"
                    "3/1/24, 6:06 - Cem: ok\n")
    first = cli("memory", "import-archive", str(chat), **ENV)
    assert "note: which messages are yours was not recognised" in first.stdout
    again = cli("memory", "import-archive", str(chat), "--me", "Ada", **ENV)
    got = summary(again.stdout)
    assert (got["updated"], got["unchanged"]) == ("1", "2") and "note:" not in again.stdout
    # a newer export imported without --me keeps Ada's turns hers and changes only what is new
    chat.write_text(chat.read_text() + "3/1/24, 7:00 - Ada: Oven 2 is fixed\n")
    newer = summary(cli("memory", "import-archive", str(chat), **ENV).stdout)
    assert (newer["new"], newer["updated"], newer["unchanged"]) == ("1", "0", "3"), newer
    ada = {(m.properties["text"], m.properties["sender"]) for m in messages(plughost_home)
           if m.properties["senderName"] == "Ada"}
    assert ("Oven 2 is down today", "owner") in ada, ada


def test_import_runs_through_the_import_session(plughost_home) -> None:
    """The archive is written by the one import pipeline: its done line, and entities with the stage on."""
    done = cli("memory", "import-archive", str(DATA / "bakery.mbox"), PLUGHOST_MEMORY_ENTITIES="1", **ENV)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("[import-archive] done "))
    got = dict(re.findall(r"(\w+)=(\S+)", line))
    # two Conversations and their four Messages, one HAS_MESSAGE edge a message, in one batch
    assert (got["file"], got["nodes"], got["edges"], got["batches"], got["errors"]) == ("bakery.mbox", "6", "4", "1", "0")
    assert (got["format"], got["new"]) == ("mbox", "4")
    assert "extract-failed" not in done.stderr, done.stderr
    stored = {label for m in all_nodes(plughost_home) for label in m.labels}
    assert "Entity" in stored, stored
    again = cli("memory", "import-archive", str(DATA / "bakery.mbox"), PLUGHOST_MEMORY_ENTITIES="1", **ENV)
    line = next(x for x in again.stderr.splitlines() if x.startswith("[import-archive] done "))
    assert "nodes=0 edges=0" in line and "unchanged=4" in line, line


def all_nodes(home: Path) -> list:
    from plughost.runtime.host import Host

    host = Host(env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(home), "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        return host.store().find(guards=Guards(ACCOUNT), limit=1000)
    finally:
        host.close()


def test_batches_carry_threads_in_order() -> None:
    """The session's batches: each thread's Conversation row then its Messages, a long thread
    running on into the next batch; the reader's skipped items with the first batch; progress
    counted in messages."""
    from plughost.plugins.memory.archives.model import Parsed, Thread, Turn
    from plughost.plugins.memory.archives.write import batches

    def thread(key: str, n: int) -> Thread:
        return Thread(key, key, [Turn(None, "Ada", "user", f"2024-03-0{i + 1}T10:00:00", f"{key} {i}")
                                 for i in range(n)])

    parsed = Parsed([thread("a", 3), thread("b", 2), thread("c", 4)], ["x.mbox: message 2: Date: not a date"])
    got = list(batches(ACCOUNT, "whatsapp", parsed, "admin", batch_size=4))
    c, m = "Conversation", "Message"
    assert [[r.row["labels"][0] for r in b.rows] for b in got] == [[c, m, m, m, c, m], [m, c, m, m, m], [m]]
    assert [b.done_bytes for b in got] == [4, 8, 9] and [b.lines for b in got] == [6, 11, 12]
    assert got[0].skips == [("x.mbox", "message 2: Date: not a date")] and got[1].skips == []
    convs = [r.row["id"] for b in got for r in b.rows if r.row["labels"] == ["Conversation"]]
    assert all(r.row["properties"]["conversationId"] in convs for b in got for r in b.rows
               if r.row["labels"] == ["Message"])
    assert list(batches(ACCOUNT, "whatsapp", Parsed(), "admin")) == []


@pytest.mark.parametrize(("sample", "said"), [
    ("claude", "a Claude export"), ("chatgpt/conversations.json", "a ChatGPT export"),
    ("WhatsApp Chat - Lena Vogel/_chat.txt", "a WhatsApp chat export"), ("bakery.mbox", "an mbox"),
    ("eml", "mail (.eml)")], ids=["claude", "chatgpt", "whatsapp", "mbox", "eml"])
def test_memory_import_points_an_archive_to_import_archive(plughost_home, sample, said) -> None:
    """`memory import` reads JSON lines; given an archive it says which command reads it, in one line."""
    done = cli("memory", "import", str(DATA / sample), **ENV)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [x for x in done.stderr.splitlines() if not x.startswith("[embed]")]
    assert len(lines) == 1 and f"{said}, not JSON lines" in lines[0], done.stderr
    assert "plughost memory import-archive" in lines[0] and str(DATA / sample) in lines[0]
    assert messages(plughost_home) == []


def test_mail_headers_are_decoded_once_each() -> None:
    """Headers as mail clients write them: encoded words in two charsets, folded lines, 8-bit UTF-8,
    a charset Python does not know; each read as text (without the policy's slow structured parse)."""
    from plughost.plugins.memory.archives.mail import read_message

    raw = (b"From: =?utf-8?q?M=C3=BCller_M=C3=BChle?= <Mueller@Muehle.example>\nTo: ada@b.example,\n\tBen <ben@b.example>\n"
           b"Cc: =?bogus-charset?q?Cem?= <cem@b.example>\n"
           b"Subject: =?iso-8859-1?q?Angebot_f=FCr?= =?iso-8859-1?q?_M=E4rz?=\n und April\n"
           b"Message-ID: <e1@x>\nReferences: <e0@x>\n <e00@x>\nDate: Mon, 4 Mar 2024 10:00:00 +0100\n\nhello\n")
    got = read_message("a.eml", raw)
    assert not isinstance(got, str), got
    ids, turn = got
    assert ids == ["<e1@x>", "<e0@x>", "<e00@x>"]
    assert (turn.sender, turn.extra["senderAddress"], turn.sent_at) == (
        "Müller Mühle", "mueller@muehle.example", "2024-03-04T09:00:00.000Z")
    assert turn.extra["subject"] == "Angebot für März und April"
    assert turn.participants == ("ada@b.example", "ben@b.example", "cem@b.example", "mueller@muehle.example")
    eight_bit = read_message("b.eml", "From: Jürgen Bäcker <j@b.example>\nDate: Mon, 4 Mar 2024 11:00:00 +0100\n\n"
                                      "body\n".encode())
    assert not isinstance(eight_bit, str) and eight_bit[1].sender == "Jürgen Bäcker", eight_bit


def test_reading_mail_shows_a_count() -> None:
    """Mail is read whole before it is written (threads need every message): the terminal counts it."""
    import io

    from plughost.plugins.memory.archives.sources import load

    shown = io.StringIO()
    fmt, parsed = load(DATA / "bakery.mbox", progress=True, stream=shown)
    assert fmt == "mbox" and len(parsed.threads) == 2
    assert "4 mails read" in shown.getvalue() and shown.getvalue().endswith("\n"), shown.getvalue()
    quiet = io.StringIO()
    load(DATA / "eml", stream=quiet)
    assert quiet.getvalue() == ""


def test_a_long_chat_is_written_over_several_batches(plughost_home, tmp_path, monkeypatch) -> None:
    """A chat longer than a batch: every message once, one Conversation (its first and last times),
    each turn's indexed form from the turns before it (across the batch edge); a second run writes nothing."""
    import plughost.plugins.memory.commands.import_archive as command

    monkeypatch.setattr(command, "BATCH_MESSAGES", 3)
    chat = tmp_path / "WhatsApp Chat with Ofen Service.txt"
    chat.write_text("".join(f"1/{d}/24, 7:0{d} AM - {'Tom' if d % 2 else 'Ada'}: visit {d} of the oven man\n"
                            for d in range(1, 9)))
    first = cli("memory", "import-archive", str(chat), **ENV)
    assert summary(first.stdout)["new"] == "8" and "batches=3" in first.stderr, first.stderr
    stored = all_nodes(plughost_home)
    turns = sorted((m.properties for m in stored if "Message" in m.labels), key=lambda p: p["sentAt"])
    convs = [m.properties for m in stored if "Conversation" in m.labels]
    assert len(turns) == 8 and len(convs) == 1
    assert (convs[0]["startedAt"], convs[0]["lastMessageAt"]) == (turns[0]["sentAt"], turns[-1]["sentAt"])
    assert "visit 3" in turns[3]["searchContext"]  # the turn before it, written in the batch before
    again = summary(cli("memory", "import-archive", str(chat), **ENV).stdout)
    assert (again["new"], again["updated"], again["unchanged"]) == ("0", "0", "8")


def one_line_refusal(done, expected: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [x for x in done.stderr.splitlines() if not x.startswith("[embed]")]
    assert len(lines) == 1 and re.search(expected, lines[0]), done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_only_a_regular_file_or_a_folder_is_read(plughost_home) -> None:
    one_line_refusal(cli("memory", "import-archive", "/dev/null", **ENV), r"/dev/null: not a regular file or a folder")


def test_a_file_or_zip_over_the_limit_is_refused_unread(plughost_home, tmp_path) -> None:
    """PLUGHOST_IMPORT_MAX_BYTES bounds one file, one zip entry and a zip in all; nothing is written."""
    chat = tmp_path / "_chat.txt"
    chat.write_text("".join(f"1/{d}/24, 7:0{d} AM - Tom: visit {d} of the oven man\n" for d in range(1, 9)))
    small = {**ENV, "PLUGHOST_IMPORT_MAX_BYTES": "100"}
    one_line_refusal(cli("memory", "import-archive", str(chat), **small),
                     r"_chat\.txt: larger than PLUGHOST_IMPORT_MAX_BYTES=100 bytes")
    packed = tmp_path / "export.zip"
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(DATA / "claude" / "conversations.json", "conversations.json")
    size = zipfile.ZipFile(packed).infolist()[0].file_size
    one_line_refusal(cli("memory", "import-archive", str(packed), **{**ENV, "PLUGHOST_IMPORT_MAX_BYTES": "100"}),
                     rf"export\.zip: its files hold {size} bytes uncompressed, more than PLUGHOST_IMPORT_MAX_BYTES=100")
    assert messages(plughost_home) == []
    done = cli("memory", "import-archive", str(packed), **{**ENV, "PLUGHOST_IMPORT_MAX_BYTES": str(size)})
    assert done.returncode == 0, done.stderr


def test_an_entry_longer_than_its_header_says_stops_at_the_limit() -> None:
    from plughost.plugins.memory.archives.model import ArchiveError
    from plughost.plugins.memory.archives.sources import Entry, _read

    asked: list[int] = []
    endless = Entry("x.zip:conversations.json", 10, lambda n: asked.append(n) or b"[" * n)  # as /dev/zero would
    with pytest.raises(ArchiveError, match=r"x\.zip:conversations\.json: larger than PLUGHOST_IMPORT_MAX_BYTES=100"):
        _read(endless, 100)
    assert asked == [101]


def test_json_that_is_no_export_asks_for_the_format(plughost_home, tmp_path) -> None:
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"hello":"world"}')
    one_line_refusal(cli("memory", "import-archive", str(wrong), **ENV),
                     r"wrong\.json: cannot tell the format .*give --format")


def test_a_folder_of_an_export_and_mail_asks_which(plughost_home, tmp_path) -> None:
    """Both a chat export and mail in one folder: refused, naming both; --format imports the one named."""
    mixed = tmp_path / "mixed"
    shutil.copytree(DATA / "eml", mixed)
    shutil.copy(DATA / "claude" / "conversations.json", mixed)
    one_line_refusal(cli("memory", "import-archive", str(mixed), **ENV),
                     r"mixed: holds a conversations\.json and \.eml files; give --format")
    assert messages(plughost_home) == []
    done = cli("memory", "import-archive", str(mixed), "--format", "eml", **ENV)
    assert done.returncode == 0 and summary(done.stdout)["format"] == "eml", done.stderr
