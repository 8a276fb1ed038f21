"""Token buckets (host.throttle): the burst, the refill, the Retry-After, bounded keys, settings."""

from __future__ import annotations

from plughost.web.throttle import Buckets, Rate, rate_setting


def test_a_bucket_admits_its_burst_then_refills_at_its_rate() -> None:
    buckets = Buckets("t", Rate(per_minute=60, burst=3))
    assert [buckets.take("a", now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = buckets.take("a", now=0.0)
    assert 0.99 < wait <= 1.0  # one token a second
    assert buckets.take("b", now=0.0) == 0.0  # another key has its own bucket
    assert buckets.take("a", now=1.0) == 0.0 and buckets.take("a", now=1.0) > 0


def test_refused_requests_do_not_spend_tokens_and_keys_are_bounded() -> None:
    buckets = Buckets("t", Rate(per_minute=60, burst=1), max_keys=100)
    buckets.take("a", now=0.0)
    for _ in range(50):
        buckets.take("a", now=0.5)  # a flood while empty does not push the refill further away
    assert buckets.take("a", now=1.0) == 0.0
    for i in range(1_000):
        buckets.take(f"k{i}", now=2.0)
    assert len(buckets._buckets) == 100


def test_rate_settings(capfd) -> None:
    from plughost.util.settings import Setting
    from plughost.web.throttle import bucket_name

    visitor = Setting("PLUGHOST_RATE_WEBCHAT_VISITOR", "str", "30/20", "one session's messages")
    default = Rate(30, 20)
    assert bucket_name(visitor) == "webchat-visitor"
    assert rate_setting({}, visitor) == default
    assert rate_setting({"PLUGHOST_RATE_WEBCHAT_VISITOR": "600/100"}, visitor) == Rate(600, 100)
    assert rate_setting({"PLUGHOST_RATE_WEBCHAT_VISITOR": "0"}, visitor) is None
    assert rate_setting({"PLUGHOST_RATE_WEBCHAT_VISITOR": "lots"}, visitor) == default
    assert "[http] op=bad-setting name=PLUGHOST_RATE_WEBCHAT_VISITOR" in capfd.readouterr().err


def test_only_the_proxys_x_forwarded_for_names_a_client() -> None:
    """A client behind a local proxy cannot pick its bucket with a header of its own."""
    from types import SimpleNamespace

    from starlette.datastructures import Headers

    from plughost.web.throttle import client_address

    def req(peer: str, **headers: str) -> object:
        raw = [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
        return SimpleNamespace(client=SimpleNamespace(host=peer), headers=Headers(raw=raw))

    assert client_address(req("127.0.0.1", x_forwarded_for="1.2.3.4, 9.9.9.8")) == "9.9.9.8"
    for spoof in ({"x_real_ip": "10.3.0.7"}, {"forwarded": "for=10.3.0.8"}):
        assert client_address(req("127.0.0.1", x_forwarded_for="9.9.9.8", **spoof)) == "9.9.9.8"
        assert client_address(req("127.0.0.1", **spoof)) == "127.0.0.1"
    assert client_address(req("203.0.113.5", x_forwarded_for="9.9.9.8")) == "203.0.113.5"
