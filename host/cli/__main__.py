"""``python -m host.cli``: the ``plughost`` command without its console script."""

from host.cli.main import main

raise SystemExit(main())
