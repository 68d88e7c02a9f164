"""Debian's redis-server on a free loopback port, no persistence, for the class store's tests and
benchmark. `pause()` / `resume()` make it unreachable and back (SIGSTOP / SIGCONT: clients time
out, nothing stored is lost), `stop()` ends exactly this process."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

from tests.e2e.harness import free_port, stop_process


def redis_server_path() -> str | None:
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None
    )


class RedisServer:
    def __init__(self, binary: str | None = None, timeout: float = 10.0) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        command = [
            binary or redis_server_path() or "redis-server",
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def pause(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def flush(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            sock.recv(16)

    def stop(self) -> None:
        self.resume()  # a stopped process cannot act on SIGTERM
        stop_process(self.process)
