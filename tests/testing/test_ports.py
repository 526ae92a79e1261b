"""Test ports come from below the kernel's ephemeral range, a block per xdist worker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from herald.testing.ports import FIRST_PORT, PORTS_PER_PROCESS, free_port


def ephemeral_floor() -> int:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ranges:
        return int(ranges.read().split()[0])


def test_ports_are_outside_the_ephemeral_range_and_skip_ones_in_use() -> None:
    first = free_port()
    assert FIRST_PORT <= first < ephemeral_floor()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", first + 1))  # the next in line is busy
        taken.listen()
        second = free_port()
    assert second not in (first, first + 1)
    assert FIRST_PORT <= second < ephemeral_floor()


def test_each_worker_has_a_block_of_its_own() -> None:
    def port_of(worker: str) -> int:
        script = "from herald.testing import free_port; print(free_port())"
        env = {**os.environ, "PYTEST_XDIST_WORKER": worker}
        return int(
            subprocess.run(
                [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
            ).stdout
        )

    blocks = {worker: (port_of(worker) - FIRST_PORT) // PORTS_PER_PROCESS for worker in ("gw0", "gw1", "gw3")}
    assert blocks == {"gw0": 0, "gw1": 1, "gw3": 3}
