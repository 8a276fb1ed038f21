"""For plugins that answer HTTP routes (``plughost_routes``): one JSON error shape, bounded body
reading and parsing (a JSON object's in one call), integer query parameters, the loopback check, who a request runs as, and the
per-address flood throttle (docs/http.md)."""

from plughost.web.http import (
           cookie_post_refusal,
           int_param,
           json_error,
           loopback_refusal,
           parse_json,
           read_body,
           read_json_object,
           same_origin,
)
from plughost.web.http_guard import request_principal
from plughost.web.throttle import check as throttle_check
from plughost.web.throttle import client_address, per_address

__all__ = ["json_error", "parse_json", "read_body", "read_json_object", "int_param", "loopback_refusal", "request_principal",
           "throttle_check", "client_address", "per_address", "cookie_post_refusal",
           "same_origin"]
