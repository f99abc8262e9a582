"""Settings: one home for each setting. The values derived from settings (a source's options,
the API's share, the crawler's) are read where they are declared, and checked when applied."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harvestman.crawl.crawler
from harvestman.api.settings import ApiSettings
from harvestman.config import Settings, load_settings, with_values
from harvestman.errors import ConfigError


def test_values_applied_to_settings_are_checked_as_a_whole() -> None:
    settings = Settings(crawl_name="base")

    derived = with_values(settings, {"store_text": True, "frontier_ingest_rate": 5})

    assert (derived.store_text, derived.frontier_ingest_rate, derived.crawl_name) == (
        True, 5, "base"
    )  # fmt: skip
    assert (settings.store_text, settings.frontier_ingest_rate) == (False, 0)
    with pytest.raises(ConfigError) as refused:
        with_values(settings, {"frontier_ingest_rate": -1})
    assert str(refused.value) == (
        "invalid settings:\n  frontier_ingest_rate: Input should be greater than or equal to 0"
        " (got -1)"
    )
    with pytest.raises(ConfigError, match=r"url_trailing_slash: Input should be 'keep'"):
        with_values(settings, {"url_trailing_slash": "sometimes"})
    with pytest.raises(ConfigError, match="longer than pattern_max_length"):  # across groups
        with_values(settings, {"crawl_include": ["a" * 30], "pattern_max_length": 20})


def test_values_applied_read_no_source_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = Settings(crawl_name="base")
    monkeypatch.setenv("HARVESTMAN_CRAWL_NAME", "from-the-environment")
    monkeypatch.setenv("HARVESTMAN_CONFIG", str(tmp_path / "gone.toml"))

    derived = with_values(settings, {"store_text": True})

    assert (derived.crawl_name, derived.store_text) == ("base", True)
    assert derived == settings.model_copy(update={"store_text": True})
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings()


def test_the_api_settings_are_the_settings_defaults_and_values() -> None:
    defaults = ApiSettings.from_settings(Settings())

    assert ApiSettings() == defaults
    custom = ApiSettings.from_settings(
        Settings(api_rate_user=7, network_allow=["10.0.0.0/8"], crawl_name="c"), dev=True
    )
    assert (custom.rate_user, custom.allow_networks, custom.crawl_name, custom.dev) == (
        7, ["10.0.0.0/8"], "c", True
    )  # fmt: skip
    assert ApiSettings().allow_networks is not ApiSettings().allow_networks
    assert "jwt_secret" not in repr(ApiSettings(jwt_secret="s3cret"))


def test_the_crawler_reads_no_setting_itself() -> None:
    # The crawler takes what crawl/wiring.py built from the settings (its one reader).
    tree = ast.parse(Path(harvestman.crawl.crawler.__file__).read_text(encoding="utf-8"))
    reads = [
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "settings"
    ]

    assert reads == []
