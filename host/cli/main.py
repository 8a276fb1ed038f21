"""`plughost` command line (docs/cli.md). Exit codes: 0 ok, 1 gate/fatal failure, 2 usage or bad input.

Core commands live in ``host/cli/commands/<name>.py`` (each has ``configure(parser)`` and ``run(args,
ctx) -> int``; its one-line help is in :data:`CORE_COMMANDS`) and are imported only when used. Plugins add top-level commands
through the ``plughost_cli_commands`` hook; those are looked up only when the command is not a
core one, so ``plughost --version`` and core commands never pay for loading plugins they skip.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost import __version__
from plughost.ports.principal import resolve
from plughost.runtime import hooktable
from plughost.util import config, settings
from plughost.util.errors import PlughostError, UserError
from plughost.util.log import log

CORE_COMMANDS: dict[str, tuple[str, str]] = {
    "plugins": ("plughost.cli.commands.plugins",
                "list plugins: name, source, version, surface, tools, what each provides and needs, load status and reason"),
    "plugin": ("plughost.cli.commands.plugin",
               "scaffold a plugin: `plugin new NAME` (a folder for --plugins-dir) or `--package` (its own "
               "distribution)"),
    "manifests": ("plughost.cli.commands.manifests",
                  "validate PLUGIN.md files (check) and generate Claude Code manifests (generate)"),
    "mcp": ("plughost.cli.commands.mcp",
            "serve a plugin's MCP tools (stdio by default, streamable HTTP with --http PORT)"),
    "bundle": ("plughost.cli.commands.bundle",
               "assemble a brand's payload (platform plugins minus exclusions, allowlisted premium bundles)"
               " and generate its manifests"),
    "install": ("plughost.cli.commands.install",
                "make a payload live for a Claude Code config dir and an account (marketplaces, plugins, "
                "agents, .env)"),
    "boot": ("plughost.cli.commands.boot",
             "run every boot gate (exit 1 when a fatal gate fails); --check stops after the gates"),
    "account": ("plughost.cli.commands.account",
                "create and list accounts (account.json + users.json under PLUGHOST_HOME/accounts/)"),
    "serve": ("plughost.cli.commands.serve",
              "run the boot gates, then serve plugin routes, /mcp/<plugin> and /healthz over HTTP"),
    "demo": ("plughost.cli.commands.demo",
             "seed a demo account and knowledge graph through the memory tools and run a sample search"),
    "doctor": ("plughost.cli.commands.doctor",
               "start every installed MCP server exactly as Claude Code would; compare initialize + "
               "tools/list with the declared tools (one line per finding, exit 1 on any)"),
    "settings": ("plughost.cli.commands.settings",
                 "list the PLUGHOST_* settings: name, type, default, plugin and what each does"),
}
"""The one table of core commands: name → (module, one-line help). The module has ``configure(parser)``
and ``run(args, ctx) -> int`` and is imported only when its command runs: ``plughost --help`` lists
the commands from this table alone."""

ACCOUNT_FREE = frozenset({"plugins", "plugin", "manifests", "mcp", "bundle", "install", "account", "demo", "record-turn",
                          "settings"})
"""Commands that run without an existing account: the rest refuse a ``ACCOUNT_ID`` / ``--account``
that names no account under ``PLUGHOST_HOME`` (exit 2, nothing created). ``demo`` and ``account``
create one; ``install`` writes the stub it reconciles; ``mcp`` servers are checked by the
``account-id-env`` boot gate; ``record-turn`` is a Claude Code Stop hook and always exits 0."""


@dataclass
class Context:
    """What a command needs: global options and a lazily built host."""

    plugins_dir: Path | None = None
    premium_dir: Path | None = None
    env: dict[str, str] = field(default_factory=lambda: config.load_env(os.environ))
    _host: Any = None

    def host(self) -> Any:
        if self._host is None:
            from plughost.runtime.host import Host

            self._host = Host(plugins_dir=self.plugins_dir, premium_dir=self.premium_dir, env=self.env).load()
            self._host.check_plugin_lists()  # a misspelt block/allow list: exit 2, not a silent host
            self._host.check_provider_choices()
            from plughost.runtime.settings import warn_unknown

            warn_unknown(self._host)  # a misspelt PLUGHOST_* variable: one line, never fatal
        return self._host


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line with exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _folder(value: str) -> Path:
    """A folder option's value; an empty one is refused (``Path("")`` would be the current folder)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty value")
    return Path(value)


def _base_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="plughost", description="plughost: a plugin host for AI-agent platforms.")
    parser.add_argument("--version", action="version", version=f"plughost {__version__}")
    parser.add_argument("--plugins-dir", type=_folder, default=None,
                        help="a folder of more platform plugins, added to the built-ins (default: $PLUGHOST_PLUGINS_DIR)")
    parser.add_argument("--premium-dir", type=_folder, default=None,
                        help="premium bundles folder (default: $PLUGHOST_PREMIUM_DIR)")
    return parser


def _command_name(argv: list[str]) -> str | None:
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--plugins-dir", "--premium-dir"):
            skip = True
            continue
        if arg.startswith("-"):
            continue
        return arg
    return None


def build_parser(argv: list[str], ctx: Context) -> argparse.ArgumentParser:
    """The parser for ``argv``: only the command it names is configured (its module imported, its
    options added); every other command is its name and help, enough for ``--help`` and for argparse
    to name the choices. Plugins load only for a plugin command or for the listing."""
    parser = _base_parser()
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    wanted = _command_name(argv)
    for name, (module_name, help_text) in CORE_COMMANDS.items():
        sub = subs.add_parser(name, help=help_text, description=help_text)
        if name == wanted:
            module = importlib.import_module(module_name)
            module.configure(sub)
            sub.set_defaults(_run=module.run)
    listing = wanted is None and "--version" not in argv  # `plughost --help` lists plugin commands too
    if listing or (wanted is not None and wanted not in CORE_COMMANDS):
        for contribution in ctx.host().collect(hooktable.CLI_COMMANDS):
            cmd = contribution.item
            if cmd.name in CORE_COMMANDS:
                log("plugins", "op=hook-error", plugin=contribution.plugin, hook=hooktable.CLI_COMMANDS.name,
                    reason=f"command '{cmd.name}' would shadow a core command; ignored")
                continue
            sub = subs.add_parser(cmd.name, help=cmd.help, description=cmd.help)
            if cmd.name == wanted:
                cmd.configure(sub)
                sub.set_defaults(_run=lambda args, c, _cmd=cmd: _cmd.run(args, c.host()))
    return parser


def _require_account(args: argparse.Namespace, ctx: Context) -> None:
    """Refuse a command aimed at an account that does not exist (see :data:`ACCOUNT_FREE`)."""
    if args.command in ACCOUNT_FREE:
        return
    option = getattr(args, "account", None)
    account = option if isinstance(option, str) and option else resolve(ctx.env).account
    if account:
        from plughost.runtime.accounts import read_account_json, require_existing

        folder = require_existing(account, ctx.env, "--account" if option else "ACCOUNT_ID")
        read_account_json(folder / "account.json")  # a broken file is exit 2 from every command, one line


def _require_folders(pre: argparse.Namespace, env: Mapping[str, str]) -> None:
    """A global folder option (or its variable, as typed in the environment) names an existing folder: a
    typo is one line naming the flag or variable (exit 2), not a run that silently loads none of its
    plugins. The folders ``plughost install`` recorded are the boot gates' to check: a moved payload is
    reported there, and doctor and boot must still run to say so."""
    for flag, folder, setting in (("--plugins-dir", pre.plugins_dir, settings.PLUGINS_DIR),
                                  ("--premium-dir", pre.premium_dir, settings.PREMIUM_DIR)):
        if folder is None and (env.get(setting.name) or "").strip():
            flag, folder = setting.name, Path(env[setting.name].strip()).expanduser()
        if folder is not None and not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            raise UserError(f"{flag}: '{folder}' {what}")


def os_problem(exc: OSError) -> str:
    """One line for a file-system error: the path, what went wrong, and the data root's rule when
    the path is under it."""
    path = exc.filename or ""
    what = exc.strerror or type(exc).__name__
    line = f"{path}: {what}" if path else what
    home = str(config.home())
    if path and str(path).startswith(home):
        line += f" (PLUGHOST_HOME '{home}' must be a folder this user can write)"
    return line


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ctx = Context()
    try:
        pre, _ = _base_parser().parse_known_args([a for a in argv if a not in ("-h", "--help", "--version")])
        ctx.plugins_dir, ctx.premium_dir = pre.plugins_dir, pre.premium_dir
        _require_folders(pre, os.environ)
        parser = build_parser(argv, ctx)
        args = parser.parse_args(argv)
        if not getattr(args, "_run", None):
            parser.print_help(sys.stderr)
            return 2
        _require_account(args, ctx)
        code = args._run(args, ctx)
        return int(code or 0)
    except PlughostError as exc:
        print(f"plughost: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file system the command cannot use: one line naming the path, never a traceback
        print(f"plughost: {os_problem(exc)}", file=sys.stderr)
        return 2
    finally:
        if ctx._host is not None:
            try:
                ctx._host.close()
            except Exception:
                pass


if __name__ == "__main__":
    raise SystemExit(main())
