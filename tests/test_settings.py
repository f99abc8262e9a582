"""Settings: one home for each setting. The groups Settings is split into keep every field as it
was; the values derived from settings (a source's options, the API's share, the crawler's) are
read where they are declared, and checked when they are applied."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

import pytest

import harvestman.crawl.crawler
from harvestman.api.settings import ApiSettings
from harvestman.config import GROUPS, Settings, load_settings, with_values
from harvestman.errors import ConfigError

CATALOGUE = Path(__file__).parent / "fixtures" / "settings_catalogue.json"


def catalogue_entry(name: str) -> list[Any]:
    """A field as tests/fixtures/settings_catalogue.json records it: type, default,
    constraints, description and whether repr shows it."""
    info = Settings.model_fields[name]
    if name == "parse_processes":  # the machine's: 1 with two cores or more, else 0
        default = "<cpu count>"
    elif info.default_factory is not None:
        default = repr(info.get_default(call_default_factory=True))
    else:
        default = repr(info.default)
    described = [repr(item) for item in info.metadata]
    return [repr(info.annotation), default, described, info.description, info.repr]


def groups() -> list[type]:
    return [base for base in Settings.__mro__[1:] if base.__name__.endswith("Settings")
            and base.__module__ == Settings.__module__]  # fmt: skip


def test_every_setting_recorded_before_the_split_is_as_it_was() -> None:
    # Written from Settings as one class, before its fields moved into groups: a setting added
    # later need not be recorded; one recorded changes only with this file.
    recorded = json.loads(CATALOGUE.read_text(encoding="utf-8"))

    assert len(recorded) == 160
    changed = {name for name, entry in recorded.items() if catalogue_entry(name) != entry}
    assert changed == set()
    assert recorded["parse_processes"][1] == "<cpu count>"
    assert Settings().parse_processes == (1 if (os.cpu_count() or 1) >= 2 else 0)


def test_each_setting_lives_in_exactly_one_group() -> None:
    found = groups()
    owned = [name for group in found for name in group.__annotations__ if name != "model_config"]

    assert len(found) >= 10
    assert len(owned) == len(set(owned))
    assert set(owned) == set(Settings.model_fields)
    assert "model_config" not in Settings.model_fields


@pytest.mark.parametrize(
    ("field", "text", "value"),
    [
        ("store_batch_size", "7", 7),  # StoreSettings
        ("broker_prefetch", "3", 3),  # CoordinationSettings
        ("crawl_max_depth", "2", 2),  # CrawlSettings
        ("frontier_delay", "0.5", 0.5),  # FrontierSettings
        ("fetch_timeout", "9", 9.0),  # FetchSettings
        ("network_allow", "10.0.0.0/8, ::1", ["10.0.0.0/8", "::1"]),  # FetchSettings, a list
        ("sitemap_max_depth", "1", 1),  # DiscoverySettings
        ("render_timeout", "5", 5.0),  # PageSettings
        ("breaker_open_seconds", "6", 6.0),  # ResilienceSettings
        ("fetch_cookies", "false", False),  # SessionSettings
        ("store_text_max_chars", "10", 10),  # OutputSettings
        ("backup_dir", "b", "b"),  # LifecycleSettings
        ("jobs_progress_samples", "20", 20),  # ServiceSettings
        ("api_rate_user", "3", 3),  # HttpApiSettings
        ("url_max_length", "100", 100),  # UrlSettings
    ],
)
def test_a_setting_of_each_group_comes_from_the_environment_and_the_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, field: str, text: str, value: Any
) -> None:
    group, _, key = field.partition("_")
    toml = f"[{group}]\n{key}" if group in GROUPS else field  # broker_*: no [broker] table
    config = tmp_path / "harvestman.toml"
    config.write_text(f"{toml} = {json.dumps(value)}\n", encoding="utf-8")
    monkeypatch.setenv("HARVESTMAN_CONFIG", str(config))

    assert getattr(load_settings(), field) == value
    monkeypatch.delenv("HARVESTMAN_CONFIG")
    monkeypatch.setenv(f"HARVESTMAN_{field.upper()}", text)
    assert getattr(load_settings(), field) == value


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
