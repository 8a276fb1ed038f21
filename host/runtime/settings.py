"""Every declared setting, the host's and its plugins' (``plughost_settings``), as one table.

:func:`table` feeds ``plughost settings [--json|--markdown]`` and the configuration table in
``docs/configuration.md`` (``python -m plughost.runtime.settings`` writes it between its markers; a
test checks it is current). :func:`warn_unknown` tells, once per process, about a ``PLUGHOST_*``
variable that no one declares (a typo is otherwise silently ignored), with a did-you-mean; it is
a warning, never fatal. The declarations and the reading are :mod:`plughost.util.settings`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost.runtime import hooktable
from plughost.util import settings
from plughost.util.config import builtin_plugins_dir, checkout_root
from plughost.util.errors import DuplicateNameError
from plughost.util.log import log
from plughost.util.settings import Setting

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host

HOST = "host"
START, END = "<!-- settings:start -->", "<!-- settings:end -->"
DOC = Path("docs") / "configuration.md"
INTRO = """# Configuration

plughost reads its configuration from `PLUGHOST_*` environment variables (the environment over
`<PLUGHOST_HOME>/.env`, which `plughost install` writes). Every variable is declared once, with
its type, default and a one-line doc: the host's in `host/util/settings.py`, each plugin's in
`plugins/<name>/settings.py` (published through the `plughost_settings` hook). A value that is
not what its type expects is a one-line error naming the variable; a `PLUGHOST_*` variable no one
declares is warned about (`[settings] op=unknown ... suggestion=...`). `plughost settings`
(`--json`, `--markdown`) lists the settings of the plugins installed; the table below lists the
built-in ones.

"""


@dataclass(frozen=True)
class Declared:
    """A setting and who declares it (``host`` or a plugin's name)."""

    plugin: str
    setting: Setting[Any]

    def row(self) -> dict[str, Any]:
        s = self.setting
        out: dict[str, Any] = {"name": s.name, "type": s.type, "default": s.shown_default(), "plugin": self.plugin,
                               "doc": s.doc}
        if s.choices:
            out["choices"] = list(s.choices)
        for key in ("minimum", "maximum", "above"):
            if getattr(s, key) is not None:
                out[key] = getattr(s, key)
        return out


def table(host: Host, builtin_only: bool = False) -> list[Declared]:
    """The host's settings, then each plugin's (``plughost_settings``), by plugin and name; a name
    declared twice is a DuplicateNameError naming both. ``builtin_only``: the built-in plugins'."""
    out = [Declared(HOST, s) for s in settings.HOST]
    seen = {s.name: HOST for s in settings.HOST}
    for contribution in host.collect(hooktable.SETTINGS):
        record = host.records.get(contribution.plugin)
        if builtin_only and not (record and record.builtin):
            continue
        name = contribution.item.name
        if name in seen:
            raise DuplicateNameError(f"{hooktable.SETTINGS.name}: '{name}' is declared twice: by "
                                     f"'{seen[name]}' and by plugin '{contribution.plugin}'")
        seen[name] = contribution.plugin
        out.append(Declared(contribution.plugin, contribution.item))
    host_rows, plugin_rows = out[:len(settings.HOST)], out[len(settings.HOST):]
    return sorted(host_rows, key=lambda d: d.setting.name) + sorted(plugin_rows, key=lambda d: (d.plugin, d.setting.name))


# ---------------------------------------------------------------------- unknown variables
_warned: set[str] = set()
_lock = threading.Lock()


def suggestion(name: str, known: list[str]) -> str | None:
    """The declared name closest to ``name`` (compared without the common ``PLUGHOST_`` prefix)."""
    import difflib

    tails = {k.removeprefix(settings.PREFIX): k for k in known}
    close = difflib.get_close_matches(name.removeprefix(settings.PREFIX), list(tails), n=1, cutoff=0.6)
    return tails[close[0]] if close else None


def unknown(env: Mapping[str, str], known: set[str]) -> list[tuple[str, str | None]]:
    """(name, closest declared name) of each ``PLUGHOST_*`` variable in ``env`` nobody declares."""
    listed = sorted(known)
    return [(name, suggestion(name, listed)) for name in sorted(env)
            if name.startswith(settings.PREFIX) and name not in known and name not in settings.NOT_SETTINGS]


def warn_unknown(host: Host) -> list[str]:
    """One ``[settings] op=unknown name=... suggestion=...`` line per undeclared ``PLUGHOST_*``
    variable of ``host.env``, once per process; never raises (a plugin's broken declarations are
    that plugin's hook error). The lines written."""
    own = {s.name for s in settings.HOST}
    if not any(n.startswith(settings.PREFIX) and n not in own and n not in settings.NOT_SETTINGS and n not in _warned
               for n in host.env):
        return []  # nothing to judge: the plugins' declarations are not even asked for
    try:
        known = {d.setting.name for d in table(host)}
    except Exception:  # noqa: BLE001 - a warning must never stop a command
        return []
    lines = []
    for name, close in unknown(host.env, known):
        with _lock:
            if name in _warned:
                continue
            _warned.add(name)
        fields = {"name": name, **({"suggestion": close} if close else {})}
        lines.append(log("settings", "op=unknown", **fields))
    return lines


def check_values(host: Host) -> None:
    """A UserError naming the first declared setting set to a value its type refuses: ``serve`` and
    ``boot`` check every one before they start, so a bad value read only later (a resume batch, a
    route's limit) stops the start instead of switching something off in a log line."""
    for declared in table(host):
        if not declared.setting.fallback and (host.env.get(declared.setting.name) or "").strip():
            declared.setting.read(host.env)


# ---------------------------------------------------------------------- rendering
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "\\<").replace("\n", " ")


def kind(s: Setting[Any]) -> str:
    """The type with its values: ``int 1..10000``, ``float > 0``, ``choice: memory, claude, command``."""
    if s.type == "choice":
        return "choice: " + ", ".join(s.choices)
    if s.minimum is not None and s.maximum is not None:
        return f"{s.type} {s.minimum:g}..{s.maximum:g}"
    bounds = [f"{op} {v:g}" for op, v in ((">", s.above), (">=", s.minimum), ("<=", s.maximum)) if v is not None]
    return f"{s.type} {', '.join(bounds)}" if bounds else s.type


def markdown(rows: list[Declared]) -> str:
    """The configuration table: variable, type, default, plugin, doc."""
    out = ["| variable | type | default | plugin | meaning |", "|---|---|---|---|---|"]
    for d in rows:
        s = d.setting
        default = f"`{s.shown_default()}`" if s.shown_default() else ""
        out.append(f"| `{s.name}` | {_cell(kind(s))} | {_cell(default)} | {d.plugin} | {_cell(s.doc)} |")
    return "\n".join(out) + "\n"


def update_doc(text: str, rows: list[Declared]) -> str:
    """``text`` with the table between the markers replaced (the intro and the markers added when absent)."""
    if START not in text or END not in text:
        text = (text.rstrip() + "\n\n" if text.strip() else INTRO) + f"{START}\n{END}\n"
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{markdown(rows)}{END}{tail}"


def doc_rows() -> list[Declared]:
    """The built-in table the docs show: a host with nothing but the built-in plugins, whatever
    this process's environment says."""
    from plughost.runtime.host import Host
    return table(Host(plugins_dir=builtin_plugins_dir(), env={}).load(), builtin_only=True)


def main() -> None:
    path = checkout_root() / DOC
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    path.write_text(update_doc(text, doc_rows()), encoding="utf-8")


if __name__ == "__main__":
    main()
