"""The staging worker process: ``python -P -m plughost.plugins.graph.import_worker FILE ACCOUNT BATCH [--no-lookup]``.

Streams the staged batches (:func:`plughost.plugins.graph.staging.main`) on stdout.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    from plughost.plugins.graph.staging import main

    raise SystemExit(main(sys.argv[1:]))
