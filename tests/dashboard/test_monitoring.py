"""deploy/: the Prometheus alert rules and the Grafana dashboard only use metric names that
``GET /metrics`` exposes, and the rules do what they say (promtool's unit tests)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from apiclient import running_api
from conftest import SettingsFactory

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
GRAFANA = DEPLOY / "grafana" / "harvestman.json"
METRIC = re.compile(r"\bharvestman_[a-z_]+\b")


async def _exposed(make_settings: SettingsFactory) -> set[str]:
    """The series names a scrape of a real app returns (counters with their _total)."""
    async with running_api(make_settings(), scheduler=True) as api:
        response = await api.get("/metrics")
    assert response.status_code == 200
    return {
        family.name + ("_total" if family.type == "counter" else "")
        for family in text_string_to_metric_families(response.text)
    }


def _rules() -> dict[str, dict[str, object]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"]}


def _grafana_exprs() -> list[str]:
    panels = json.loads(GRAFANA.read_text())["panels"]
    return [t["expr"] for p in panels for t in p.get("targets", [])]


async def test_alerts_and_dashboard_use_exposed_metrics(make_settings: SettingsFactory) -> None:
    exposed = await _exposed(make_settings)
    used_by_alerts = {m for rule in _rules().values() for m in METRIC.findall(str(rule["expr"]))}
    used_by_grafana = {m for expr in _grafana_exprs() for m in METRIC.findall(expr)}
    assert used_by_alerts == {
        "harvestman_http_status_total",
        "harvestman_frontier_size",
        "harvestman_active_workers",
        "harvestman_backup_failures_total",
        "harvestman_backup_last_success_timestamp",
    }
    assert used_by_alerts <= exposed
    assert used_by_grafana <= exposed, used_by_grafana - exposed
    assert len(used_by_grafana) >= 10


def test_the_three_alerts_have_their_thresholds() -> None:
    rules = _rules()
    errors, frontier, workers = (
        rules["HarvestmanHighErrorRate"],
        rules["HarvestmanFrontierGrowing"],
        rules["HarvestmanNoWorkerHeartbeat"],
    )
    assert (errors["for"], frontier["for"], workers["for"]) == ("5m", "5m", "2m")
    assert "> 0.20" in str(errors["expr"])
    assert "1.10 * max(harvestman_frontier_size offset 1m)" in str(frontier["expr"])
    assert "max(harvestman_active_workers) == 0" in str(workers["expr"])


@pytest.mark.parametrize(
    "args", [["check", "rules", "alerts.yml"], ["test", "rules", "alerts_test.yml"]]
)
def test_promtool_accepts_the_rules_and_their_unit_tests(args: list[str]) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    done = subprocess.run(
        [promtool, *args], cwd=ALERTS.parent, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
