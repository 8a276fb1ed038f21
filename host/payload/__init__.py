"""The Claude Code payload: manifests generated, brands bundled, installed, launched and checked (doctor, self-test)."""
