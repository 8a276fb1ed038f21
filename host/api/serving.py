"""For plugins that run work inside ``plughost serve``: what the serving app publishes on the
host's state (its runtime, the boot gates' summary), the stop signal a long task watches, and
the leases several servers on one store share work by (docs/channels.md#several-servers-on-one-store)."""

from plughost.ports.lease import Lease, Leases
from plughost.runtime.leases import leases
from plughost.runtime.state import GATES, RUNTIME, ServingRuntime
from plughost.serve.stopping import Stop, stop_of

__all__ = ["RUNTIME", "GATES", "ServingRuntime", "Stop", "stop_of", "Lease", "Leases", "leases"]
