"""The owner console at ``/admin`` (docs/console.md): server-rendered pages behind the admin session."""
