"""Reading what Airflow's StatsD client sent to a UDP listener on loopback (see conftest)."""

from __future__ import annotations

import socket


def received(sock: socket.socket) -> list[str]:
    """Every line that arrived until the socket's timeout passes without a datagram."""
    lines = []
    while True:
        try:
            lines += sock.recv(65536).decode().splitlines()
        except TimeoutError:
            return lines


def gauges(lines: list[str], model: str) -> dict[str, float]:
    """``airflow.modelgate.<name>,model=<m>,version=<v>:<value>|g`` -> {name: value}."""
    out = {}
    for line in lines:
        head, _, rest = line.partition(":")
        name, *tags = head.split(",")
        if name.startswith("airflow.modelgate.") and f"model={model}" in tags and rest.endswith("|g"):
            out[name.removeprefix("airflow.")] = float(rest[:-2])
    return out
