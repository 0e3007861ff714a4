"""Fixtures of the end-to-end tests: a cluster (local etcd + kube-apiserver, or KUBECONFIG's).

The tests run when they can: with `KUBECONFIG` set, against that cluster; otherwise when
`e2e/cluster/build.sh` has built the binaries. Without either they are skipped, unless
`TJC_E2E=1`, which makes a missing prerequisite a failure (CI sets it). `TJC_E2E=0` skips them.

The CRDs come from `TJC_E2E_CRDS` (files or dirs, separated by the path separator), by default
the project's own generated copies: `deploy/crds/` (Trainer) and `tests/e2e/crds/` (JobSet).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.e2e import cluster as cl


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("TJC_E2E") == "1":
        pytest.fail(f"TJC_E2E=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def e2e_crd_paths() -> list[Path]:
    """Where the Trainer and JobSet CRDs are; skips (or fails, TJC_E2E=1) when nowhere."""
    configured = os.environ.get("TJC_E2E_CRDS")
    if configured:
        paths = [Path(p) for p in configured.split(os.pathsep) if p]
    else:
        paths = [cl.REPO_ROOT / "deploy" / "crds", cl.REPO_ROOT / "tests" / "e2e" / "crds"]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        _unavailable(f"CRDs not found at {', '.join(missing)} (set TJC_E2E_CRDS)")
    return paths


@pytest.fixture(scope="session")
def e2e_cluster(e2e_crd_paths: list[Path]) -> Iterator[cl.Cluster]:
    """The cluster for the whole session, stopped (if local) at its end.

    Asks for the CRD paths only to skip before starting anything when there are none.
    """
    if os.environ.get("TJC_E2E") == "0":
        pytest.skip("TJC_E2E=0")
    binaries = None
    if not os.environ.get("KUBECONFIG"):
        binaries = cl.find_binaries()
        if binaries is None:
            _unavailable(
                f"no etcd/kube-apiserver in {cl.binary_dir()}: run e2e/cluster/build.sh "
                "or set KUBECONFIG"
            )
    with cl.cluster(binaries) as running:
        yield running


@pytest.fixture(scope="session")
def e2e_api(e2e_crd_paths: list[Path], e2e_cluster: cl.Cluster) -> Iterator[Any]:
    """An admin `kubernetes.client.ApiClient`, with the Trainer and JobSet CRDs installed."""
    api = e2e_cluster.api_client()
    try:
        cl.install_crds(api, e2e_crd_paths)
        yield api
    finally:
        api.close()
