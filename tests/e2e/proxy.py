"""Replicas of the app behind Debian's nginx on loopback, as deploy/nginx describes.

Shared by the nginx test (tests/e2e/test_nginx.py) and the class-load benchmark
(tests/bench/class_load.py). `Nginx(ports, workdir)` runs nginx in the foreground with the site
configuration of deploy/nginx/encoder-explorer.conf, its replica and listen ports filled in,
inside a main configuration that keeps pid, logs and temporary files in `workdir` and logs, per
request, the route cookie and the replica (upstream address) that served it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from tests.e2e.harness import REPO, StreamlitServer, free_port, stop_process, wait_serving

SITE = REPO / "deploy" / "nginx" / "encoder-explorer.conf"
# the upstream's `server 127.0.0.1:PORT[ options];` lines: their indent, the first one's options
REPLICA_LINES = re.compile(
    r"^( *)server 127\.0\.0\.1:\d+((?: [^;\n]*)?);\n(?: *server 127\.0\.0\.1:\d+[^;\n]*;\n)*", re.M
)
LISTEN = re.compile(r"^( *)listen \d+;$", re.M)
# one access-log line: the route (cookie or new), the status, the request line, and every replica
# nginx tried for it ("a, b" where it went on to a second)
LOG_FORMAT = '$ee_route $status "$request" "$upstream_addr"'
LOG_LINE = re.compile(r'^(\S+) (\d+) "(\S+) (\S+)[^"]*" "([^"]*)"$')

MAIN_CONFIG = """\
worker_processes 1;
{user}
pid {dir}/nginx.pid;
error_log {dir}/error.log;
worker_shutdown_timeout 1s;  # a reload closes open websockets after a second
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    include {dir}/encoder-explorer.conf;
    log_format routes '{log_format}';  # (no single quote inside)
    access_log {dir}/access.log routes;
}}
"""


def nginx_path() -> str | None:
    found = shutil.which("nginx") or "/usr/sbin/nginx"
    return found if os.access(found, os.X_OK) else None


def site_config(template: str, replica_ports: list[int], listen_port: int) -> str:
    """The site configuration with these replicas, listening on loopback at `listen_port`."""
    replicas = REPLICA_LINES.search(template)
    if replicas is None or len(LISTEN.findall(template)) != 1:
        raise ValueError(
            "the template needs one block of `server 127.0.0.1:PORT;` lines and one `listen PORT;`"
        )
    indent, options = replicas.groups()
    lines = "".join(f"{indent}server 127.0.0.1:{port}{options};\n" for port in replica_ports)
    filled = template[: replicas.start()] + lines + template[replicas.end() :]
    return LISTEN.sub(lambda m: f"{m.group(1)}listen 127.0.0.1:{listen_port};", filled)


@dataclass(frozen=True)
class Request:
    route: str  # the ee_route cookie the request carried, or the one it was given
    replica: str  # host:port of the replica that answered ("a, b" if nginx tried two)
    status: int
    method: str
    path: str


class Nginx:
    """nginx in the foreground on a free loopback port, in front of replicas at these ports."""

    def __init__(self, replica_ports: list[int], workdir: Path, timeout: float = 30.0) -> None:
        binary = nginx_path()
        if binary is None:
            raise FileNotFoundError("nginx is not installed")
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        site = site_config(SITE.read_text(encoding="utf-8"), replica_ports, self.port)
        (self.dir / "encoder-explorer.conf").write_text(site)
        # as root, nginx's workers would run as `nobody`, which cannot write here
        user = "user root;" if os.geteuid() == 0 else ""
        main = MAIN_CONFIG.format(user=user, dir=self.dir, log_format=LOG_FORMAT)
        (self.dir / "nginx.conf").write_text(main)
        self.process = subprocess.Popen(
            [binary, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"),
             "-e", str(self.dir / "error.log"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_serving(self.process, f"{self.url}/_stcore/health", timeout, "nginx", self.errors)

    def page_url(self, **params: object) -> str:
        return f"{self.url}/?{urlencode(params)}" if params else f"{self.url}/"

    def reload(self) -> None:
        """Re-read the configuration: new workers take new connections, and the old ones close
        theirs (websockets included) after worker_shutdown_timeout."""
        self.process.send_signal(signal.SIGHUP)

    def requests(self) -> list[Request]:
        """Every request logged so far (a websocket is logged once it has closed)."""
        path = self.dir / "access.log"
        found = [LOG_LINE.match(line) for line in path.read_text().splitlines()]
        return [Request(m[1], m[5], int(m[2]), m[3], m[4]) for m in found if m]

    def errors(self) -> str:
        path = self.dir / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        stop_process(self.process)


def start_replicas(count: int, env: dict[str, str] | None = None) -> list[StreamlitServer]:
    """`count` servers of the app at once (each imports torch: starting them together saves
    time), with `env` (e.g. a class store's Redis); if one fails to start, those started are
    stopped."""
    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(StreamlitServer, env=env) for _ in range(count)]
    started = [future.result() for future in futures if future.exception() is None]
    if len(started) < count:
        for server in started:
            server.stop()
        raise next(future.exception() for future in futures if future.exception() is not None)
    return started


@contextmanager
def replicas_behind_nginx(
    count: int, workdir: Path, env: dict[str, str] | None = None
) -> Iterator[tuple[Nginx, list[StreamlitServer]]]:
    """`count` replicas of the app (with `env`) and nginx in front of them; all stopped on
    leaving."""
    replicas = start_replicas(count, env)
    try:
        proxy = Nginx([server.port for server in replicas], workdir)
        try:
            yield proxy, replicas
        finally:
            proxy.stop()
    finally:
        for server in replicas:
            server.stop()
