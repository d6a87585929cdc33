"""`free_port` picks ports outside the kernel's ephemeral range, so a server that binds its
port again later (a restarted broker, an emulator back after an outage drill) cannot find it
taken by the local end of some process's outgoing connection."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from firestore_outbox.testing import emulator
from firestore_outbox.testing.emulator import ephemeral_ports, free_port


def test_the_ports_are_outside_the_kernels_ephemeral_range() -> None:
    low, high = ephemeral_ports()
    ports = {free_port() for _ in range(200)}
    assert not [port for port in ports if low <= port <= high]
    assert len(ports) > 100  # chosen at random, not one port over and over


def test_the_port_is_free_to_listen_on() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", free_port()))
        server.listen()


def kernel_setting(directory: Path, monkeypatch: pytest.MonkeyPatch, text: str | None) -> None:
    """`ip_local_port_range` reads `text` (absent when None)."""
    setting = directory / "ip_local_port_range"
    if text is not None:
        setting.write_text(text)
    monkeypatch.setattr(emulator, "_EPHEMERAL_RANGE_FILE", setting)


def test_the_range_is_read_from_the_kernels_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel_setting(tmp_path, monkeypatch, "20000\t65535\n")
    assert ephemeral_ports() == (20000, 65535)
    assert all(free_port() < 20000 for _ in range(50))


def test_without_the_setting_the_range_is_ianas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel_setting(tmp_path, monkeypatch, None)
    assert ephemeral_ports() == (49152, 65535)
    assert all(free_port() < 49152 for _ in range(50))


def test_with_no_port_outside_the_range_any_free_port_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel_setting(tmp_path, monkeypatch, "1024 65535\n")
    with socket.socket() as server:
        server.bind(("127.0.0.1", free_port()))
