"""Schemathesis against the inspection endpoint's own OpenAPI document.

Every operation gets generated requests (valid and invalid query strings); every response must
conform to the document, never be a 5xx, and bad input must be a 4xx with a message.
"""

from __future__ import annotations

from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings

from forecaster.app import build
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history


def ticked_daemon(models: Path) -> Daemon:
    config = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(models),
            "pools": [{"name": POOL, "max_prewarm_gpus": 32}],
        }
    )
    reconciler = build.build_reconciler(
        config, source=LiveSource(T0 - 2 * 86400, calm_history()), what_if=True
    )
    daemon = Daemon(reconciler=reconciler, pools=(POOL,))
    daemon.reconcile(T0)
    return daemon


schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(ticked_daemon(Path("/nonexistent-models")))
)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_conforms(case: schemathesis.Case) -> None:
    response = case.call()
    assert response.status_code < 500, response.text
    if 400 <= response.status_code < 500:
        assert response.json().get("detail"), response.text
    case.validate_response(response)
