"""Small utilities with no knowledge of plugins: errors, logs and redaction, settings, files, times."""
