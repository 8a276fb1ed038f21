"""`plughost bundle BRAND --out DIR`: assemble a brand's payload and generate its manifests (docs/payload.md#brands)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plughost.payload.bundler import bundle


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("brand", metavar="BRAND", help="a shipped brand's name (bakery, default, studio) or a path to a brand JSON file")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the payload folder to build")
    parser.add_argument("--premium-dir", dest="bundle_premium_dir", type=Path, default=None, metavar="DIR",
                        help="premium bundles folder (default: --premium-dir before the command, "
                             "$PLUGHOST_PREMIUM_DIR, or premium-plugins/ of the install)")


def run(args: argparse.Namespace, ctx: Any) -> int:
    report = bundle(args.brand, args.out, plugins_dir=ctx.plugins_dir,
                    premium_dir=args.bundle_premium_dir or ctx.premium_dir, env=ctx.env)
    state = "built" if report.changed else "unchanged"
    print(f"{state}: {report.out} brand={report.brand} platform={len(report.platform)} "
          f"excluded=[{','.join(report.excluded)}] premium=[{','.join(report.shipped)}] "
          f"entry-points=[{','.join(report.entry_points)}] files={report.files}")
    if report.left_out:  # entry-point plugins the payload does not ship: Claude Code will not get them
        print("left out: " + "; ".join(f"{name} ({why})" for name, why in sorted(report.left_out.items())))
    return 0
