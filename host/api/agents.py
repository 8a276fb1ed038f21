"""For plugins that read or write a public agent's files (``accounts/<id>/agents/<slug>/``:
IDENTITY.md, SOUL.md, KNOWLEDGE.md): the one locator, the subscribed keywords, the assembled part
of KNOWLEDGE.md and the reachability audit (docs/agents.md)."""

from plughost.runtime.agent_files import (
    FILES,
    IDENTITY,
    KNOWLEDGE,
    SOUL,
    Reach,
    agent_dir,
    agent_slugs,
    assembled_part,
    audit,
    check_slug,
    front_matter,
    knowledge,
    public_agent,
    reach,
    read_text,
    subscriptions,
    system_prompt,
    write_file,
    write_knowledge,
)

__all__ = ["FILES", "IDENTITY", "KNOWLEDGE", "SOUL", "Reach", "agent_dir", "agent_slugs", "assembled_part", "audit",
           "check_slug", "front_matter", "knowledge", "public_agent", "reach", "read_text", "subscriptions",
           "system_prompt", "write_file", "write_knowledge"]
