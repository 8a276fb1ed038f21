"""The one packaging decision pyproject.toml cannot say: the checkout's `host/` installs as the
`plughost` package and `plugins/` as `plughost.plugins`, so the distribution claims no other
top-level name (docs/architecture.md#packaging). Every folder ships (schemas, brands, hook
scripts, agent and skill files, templates, the tokenizer) and is read through importlib.resources."""

import shutil

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

ROOTS = {"plughost": "host", "plughost.plugins": "plugins"}


def _packages(prefix: str, folder: str) -> list[str]:
    found = find_namespace_packages(folder, exclude=["*__pycache__*"])
    return [prefix, *(f"{prefix}.{name}" for name in found)]


class FreshBuild(build_py):
    """A wheel holds what the checkout holds now: setuptools reuses ``build/lib`` between builds,
    so a module moved or deleted since the last `pip wheel .` in this checkout would ship again."""

    def run(self) -> None:
        shutil.rmtree(self.build_lib, ignore_errors=True)
        super().run()


setup(
    cmdclass={"build_py": FreshBuild},
    package_dir=ROOTS,
    packages=[p for prefix, folder in ROOTS.items() for p in _packages(prefix, folder)],
    package_data={"": ["*"]},
    exclude_package_data={"": ["*.pyc", "*.pyo"]},
)
