"""The one packaging decision pyproject.toml cannot say: the checkout's `host/` installs as the
`plughost` package and `plugins/` as `plughost.plugins`, so the distribution claims no other
top-level name (docs/architecture.md#packaging). Every folder ships (schemas, brands, hook
scripts, agent and skill files, templates, the tokenizer) and is read through importlib.resources."""

from setuptools import find_namespace_packages, setup

ROOTS = {"plughost": "host", "plughost.plugins": "plugins"}


def _packages(prefix: str, folder: str) -> list[str]:
    found = find_namespace_packages(folder, exclude=["*__pycache__*"])
    return [prefix, *(f"{prefix}.{name}" for name in found)]


setup(
    package_dir=ROOTS,
    packages=[p for prefix, folder in ROOTS.items() for p in _packages(prefix, folder)],
    package_data={"": ["*"]},
    exclude_package_data={"": ["*.pyc", "*.pyo"]},
)
