"""The plugin runtime: the host façade, discovery, hook calls and isolation, the hook table and specs, tools, gates."""
