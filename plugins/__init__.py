"""The built-in plugins. Each is registered through the `plughost.plugins` entry-point group,
exactly as a third-party plugin would be, and never imports another plugin."""
