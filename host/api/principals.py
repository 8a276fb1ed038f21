"""Resolving who a call runs as from an environment, and handing a narrower principal to a child
process (docs/roles.md). For plugins that start processes or read a hook process's environment;
a hook's own principal is ``host.principal``. Standard library only: cheap enough for a hook process."""

from plughost.ports.principal import SET_WHEN_EMPTY, child_env, narrowest, resolve

__all__ = ["resolve", "child_env", "narrowest", "SET_WHEN_EMPTY"]
