"""The staging worker process: ``python -P -m plugins.graph.import_worker FILE ACCOUNT BATCH [--no-lookup]``.

Loads the compiled accelerator when one was built for exactly this source
(:mod:`plugins.graph.accel`), then streams the staged batches (:func:`plugins.graph.staging.main`).
"""

from __future__ import annotations

import sys

from plugins.graph import accel

if __name__ == "__main__":
    accel.activate()  # before the first import of a module it compiles
    from plugins.graph.staging import main

    raise SystemExit(main(sys.argv[1:]))
