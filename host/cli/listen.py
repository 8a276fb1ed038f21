"""The port a command listens on (``serve --port``, ``mcp serve --http``): one clear line naming the
flag, exit 2, for a number out of range or a port that is busy; never a uvicorn traceback."""

from __future__ import annotations

import argparse
import socket

from plughost.util.errors import UserError


def port_number(text: str) -> int:
    """argparse ``type`` of a port option: 0-65535 (a usage error naming the option otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535 (got {text!r})") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535 (got {value})")
    return value


def check_port(bind: str, port: int, *, flag: str = "--port", bind_flag: str = "--host") -> int:
    """The port to serve on: a busy port is one clear line naming ``flag``, not a uvicorn traceback;
    0 picks a free one.

    The socket is only probed and closed; uvicorn binds its own (serving on a socket handed in
    from outside measured several times slower under wrk here).
    """
    try:
        infos = socket.getaddrinfo(bind, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"{bind_flag}: cannot resolve {bind!r} ({exc.strerror})") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
            sock.listen(1)
        except OSError as exc:
            raise UserError(f"{flag}: cannot listen on {bind}:{port} ({exc.strerror})") from None
        return int(sock.getsockname()[1])


def bind_port(bind: str, port: int, *, flag: str = "--port", bind_flag: str = "--host") -> int:
    """The port to hand uvicorn, after :func:`check_port`. ``0`` stays 0 when the address is one
    socket: the system picks the port at uvicorn's bind, so no other process can take it in between
    (a probed port, closed and bound later, could be). A name that resolves to several addresses
    (``localhost``: 127.0.0.1 and ::1) gets the probed port instead: bound at 0, each socket would
    get a port of its own."""
    probed = check_port(bind, port, flag=flag, bind_flag=bind_flag)
    if port:
        return port
    addresses = {info[4][0] for info in socket.getaddrinfo(bind, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)}
    return 0 if len(addresses) == 1 else probed
