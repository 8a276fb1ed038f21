"""The port ``serve`` and ``mcp serve --http`` hand uvicorn (host/cli/listen.py): 0 stays 0 for one
address, so the system picks it at the bind; a name with several addresses gets one probed port."""

from __future__ import annotations

import socket

import pytest

from plughost.cli import listen
from plughost.util.errors import UserError


def test_port_zero_stays_zero_for_one_address() -> None:
    assert listen.bind_port("127.0.0.1", 0) == 0


def test_a_given_port_is_kept() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    assert listen.bind_port("127.0.0.1", free) == free


def test_a_name_with_two_addresses_gets_one_probed_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """``localhost`` as 127.0.0.1 and ::1: bound at 0, each socket would get a port of its own."""
    real = socket.getaddrinfo

    def dual(host, port, *args, **kwargs):  # noqa: ANN001, ANN202
        if host == "localhost":
            v4 = real("127.0.0.1", port, *args, **kwargs)
            v6 = [(socket.AF_INET6, v4[0][1], v4[0][2], "", ("::1", v4[0][4][1], 0, 0))]
            return v4 + v6
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(listen.socket, "getaddrinfo", dual)
    port = listen.bind_port("localhost", 0)
    assert port > 0


def test_a_busy_port_is_one_line_naming_the_flag() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(UserError, match=r"--http: cannot listen on 127\.0\.0\.1:\d+"):
            listen.bind_port("127.0.0.1", busy.getsockname()[1], flag="--http", bind_flag="--bind")
