"""`plughost memory import-archive`: chat and mail archives an owner already has, as Conversations.

:mod:`.model` is the parsed shape (a thread of turns), :mod:`.chats` reads Claude and ChatGPT
exports, :mod:`.whatsapp` a WhatsApp chat export, :mod:`.mail` an mbox or a folder of ``.eml``,
:mod:`.sources` finds and sniffs them (a file, a folder or a ``.zip``), and :mod:`.write` stores
them the way the channels store a conversation (docs/memory.md#importing-archives).
"""
