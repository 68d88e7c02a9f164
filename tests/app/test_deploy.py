"""deploy/: the Dockerfile read statically (no Docker engine here), the Kubernetes manifests
validated against Kubernetes' own schemas (kubernetes-validate bundles them: no network), and
the numbers the hosting files share kept equal: memory = idle + budget, the upload limit, the
port, the health endpoint."""

from __future__ import annotations

import copy
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest

from app.memory import BUDGET_ENV, parse_bytes
from tests.e2e.harness import (
    DEPLOY,
    REPO,
    StreamlitServer,
    app_settings,
    idle_allowance,
    kubernetes_manifests,
    quantity_bytes,
)

KUBERNETES_VERSION = "1.30"
HEALTH = "/_stcore/health"
PORT = 8501


def upload_limit_mb() -> int:
    return app_settings()["server"]["maxUploadSize"]


# --- Dockerfile ----------------------------------------------------------------------------


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments left out."""
    joined = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))
    lines = [line.strip() for line in joined.splitlines()]
    kept = [line for line in lines if line and not line.startswith("#")]
    return [
        (word.upper(), rest.strip()) for word, _, rest in (line.partition(" ") for line in kept)
    ]


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return instructions(DEPLOY / "Dockerfile")


def arguments(dockerfile, instruction: str) -> list[str]:
    return [rest for word, rest in dockerfile if word == instruction]


def test_the_image_installs_cpu_torch_at_readmes_pin_then_the_package(dockerfile):
    (base,) = arguments(dockerfile, "FROM")
    assert re.fullmatch(r"python:3\.1[1-9]-slim", base)
    runs = arguments(dockerfile, "RUN")
    torch_at = next(i for i, run in enumerate(runs) if "torch==" in run)
    package_at = next(i for i, run in enumerate(runs) if re.search(r"pip install \.( |$)", run))
    assert torch_at < package_at  # else pip would fetch the CUDA build as a dependency
    assert "--index-url https://download.pytorch.org/whl/cpu" in runs[torch_at]
    (pin,) = [arg for arg in arguments(dockerfile, "ARG") if arg.startswith("TORCH_VERSION=")]
    readme_pin = re.search(r"pip install torch==(\S+) &&", (REPO / "README.md").read_text())
    assert pin == f"TORCH_VERSION={readme_pin[1]}"
    for copied in arguments(dockerfile, "COPY"):
        *sources, _ = copied.split()
        assert all((REPO / source).exists() for source in sources), copied


def test_the_image_runs_the_page_as_a_user_without_privileges(dockerfile):
    users = [i for i, (word, _) in enumerate(dockerfile) if word == "USER"]
    assert users and dockerfile[users[-1]][1].split(":")[0] not in ("root", "0")
    last_run = max(i for i, (word, _) in enumerate(dockerfile) if word == "RUN")
    assert users[-1] > last_run  # nothing after it runs as root, nor does the server
    (cmd,) = arguments(dockerfile, "CMD")
    command = json.loads(cmd)
    assert command[0] == "encoder-explorer"
    options = dict(zip(command[1::2], command[2::2], strict=True))
    assert options["--server.port"] == str(PORT) and options["--server.address"] == "0.0.0.0"
    assert options["--server.headless"] == "true"
    assert arguments(dockerfile, "EXPOSE") == [str(PORT)]
    (budget,) = [env for env in arguments(dockerfile, "ENV") if env.startswith(BUDGET_ENV)]
    assert parse_bytes(budget.split("=", 1)[1]) > 0


def test_the_images_health_check_asks_streamlits_health_endpoint():
    """The HEALTHCHECK's own command, run against the app (its port swapped in): 0 while the
    server answers, non-zero once it is gone."""
    (check,) = [rest for word, rest in instructions(DEPLOY / "Dockerfile") if word == "HEALTHCHECK"]
    options, _, command = check.partition(" CMD ")
    assert "--start-period" in options
    argv = json.loads(command) if command.startswith("[") else shlex.split(command)
    url = f"http://localhost:{PORT}{HEALTH}"
    assert argv[0] == "python" and url in " ".join(argv)
    server = StreamlitServer()
    try:
        here = [sys.executable, *(arg.replace(url, f"{server.url}{HEALTH}") for arg in argv[1:])]
        assert subprocess.run(here, timeout=30).returncode == 0
    finally:
        server.stop()
    assert subprocess.run(here, capture_output=True, timeout=30).returncode != 0


# --- Kubernetes ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def manifests() -> dict[str, dict]:
    return kubernetes_manifests()


def test_every_manifest_is_valid_against_the_kubernetes_schemas(manifests):
    assert set(manifests) == {"Deployment", "Service", "Ingress"}
    for manifest in manifests.values():
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    misspelt = copy.deepcopy(manifests["Deployment"])
    misspelt["spec"]["replica"] = misspelt["spec"].pop("replicas")
    with pytest.raises(kubernetes_validate.ValidationError):  # the validator does reject
        kubernetes_validate.validate(misspelt, KUBERNETES_VERSION, strict=True)


def test_redis_is_valid_and_the_apps_replicas_all_name_its_service(manifests):
    redis = kubernetes_manifests(redis=True)
    assert set(redis) == {"Deployment", "Service"}
    for manifest in redis.values():
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    env = {item["name"]: item["value"] for item in container(manifests)["env"]}
    service = redis["Service"]
    (port,) = service["spec"]["ports"]
    url = f"redis://{service['metadata']['name']}:{port['port']}/0"
    assert env["ENCODER_EXPLORER_REDIS_URL"] == url
    pod = redis["Deployment"]["spec"]["template"]["spec"]
    assert service["spec"]["selector"] == redis["Deployment"]["spec"]["selector"]["matchLabels"]
    (server,) = pod["containers"]
    args = server["args"]
    limit = quantity_bytes(server["resources"]["limits"]["memory"])
    assert quantity_bytes(args[args.index("--maxmemory") + 1].replace("mb", "M")) < limit
    assert args[args.index("--maxmemory-policy") + 1] == "noeviction"  # refuse, never drop
    assert pod["securityContext"]["runAsNonRoot"] is True


def container(manifests) -> dict:
    (only,) = manifests["Deployment"]["spec"]["template"]["spec"]["containers"]
    return only


def test_each_replica_gets_its_idle_size_plus_the_memory_budget(manifests):
    idle = idle_allowance(manifests)
    env = {item["name"]: item["value"] for item in container(manifests)["env"]}
    budget = parse_bytes(env[BUDGET_ENV])
    resources = container(manifests)["resources"]
    assert quantity_bytes(resources["requests"]["memory"]) == idle + budget
    assert quantity_bytes(resources["limits"]["memory"]) == idle + budget
    comment = (DEPLOY / "kubernetes" / "deployment.yaml").read_text()  # the arithmetic, written
    written = {
        name: quantity_bytes(re.search(rf"#\s+{name}\s+(\d+M)\s", comment)[1])
        for name in ("idle", "budget", "total")
    }
    assert written == {"idle": idle, "budget": budget, "total": idle + budget}


def test_replicas_are_probed_on_the_health_endpoint_and_reached_by_name(manifests):
    deployment, service = manifests["Deployment"], manifests["Service"]
    assert deployment["spec"]["replicas"] >= 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = container(manifests)["ports"]
    assert port["containerPort"] == PORT
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container(manifests)[probe]["httpGet"] == {"path": HEALTH, "port": port["name"]}
    (service_port,) = service["spec"]["ports"]
    assert service_port["targetPort"] == port["name"]
    pod_security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True and pod_security["runAsUser"] != 0


def test_the_ingress_pins_each_browser_to_a_replica_by_cookie(manifests):
    ingress, service = manifests["Ingress"], manifests["Service"]
    notes = ingress["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert notes[prefix + "affinity"] == "cookie"
    assert notes[prefix + "session-cookie-name"]
    assert int(notes[prefix + "session-cookie-max-age"]) >= 3600
    assert notes[prefix + "proxy-next-upstream"] == "off"
    assert int(notes[prefix + "proxy-read-timeout"]) >= 3600  # websockets idle for long
    assert notes[prefix + "proxy-body-size"] == f"{upload_limit_mb()}m"
    (rule,) = ingress["spec"]["rules"]
    (path,) = rule["http"]["paths"]
    backend = path["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]
    assert backend["port"]["name"] == service["spec"]["ports"][0]["name"]


# --- nginx ---------------------------------------------------------------------------------


def test_local_nginx_takes_uploads_as_large_as_the_page_does():
    site = (DEPLOY / "nginx" / "encoder-explorer.conf").read_text()
    assert re.findall(r"client_max_body_size (\S+);", site) == [f"{upload_limit_mb()}m"]
