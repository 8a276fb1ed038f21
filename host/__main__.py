"""``python -m plughost``: the ``plughost`` command without its console script."""

from plughost.cli.main import main

raise SystemExit(main())
