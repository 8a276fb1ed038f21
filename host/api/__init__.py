"""Public submodules of the plugin API for one kind of plugin each (docs/plugin-api.md).

``import plughost`` is what every plugin needs; a module here serves one kind of plugin only (a
store provider, a plugin with HTTP routes, ...). Each re-exports, under a stable name, what lives
in the host's rooms, which may change in any release; these names follow semantic versioning.
This package imports nothing itself, so ``import plughost.api.principals`` stays as cheap as the
room it re-exports.
"""
