"""The Kubernetes Deployment's allowance for a replica's idle size holds a fresh server's."""

from __future__ import annotations

import pytest

from tests.bench.idle_memory import idle_rss_mb
from tests.e2e.harness import idle_allowance, kubernetes_manifests

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


def test_the_deployments_idle_allowance_holds_a_fresh_server_with_one_page(browser):
    measured = idle_rss_mb(browser) * 2**20  # bytes
    assert 100 * 2**20 < measured <= idle_allowance(kubernetes_manifests())
