"""Cost from the shared price table: the shared vectors, overrides, unknown models, where the table is read from."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import calltrace
from calltrace._pricing import EMPTY, Pricing, Usage, load_table, resolve, table_path

SHARED = Path(__file__).resolve().parents[2] / "pricing"
VECTORS = json.loads((SHARED / "vectors.json").read_text())
TABLE = load_table(SHARED / "models.json")


def test_the_table_read_is_the_shared_one_in_the_repo_or_its_copy_in_an_installed_package():
    path = table_path()
    if path != SHARED / "models.json":  # a wheel: the copy the build put inside the package
        assert path == Path(calltrace.__file__).with_name("models.json")
        assert path.read_bytes() == (SHARED / "models.json").read_bytes()
    assert calltrace._TABLE == TABLE


@pytest.mark.parametrize("vector", VECTORS["resolve"], ids=lambda v: f"{v['provider']}:{v['model']}")
def test_model_names_resolve_as_the_shared_vectors_say(vector):
    assert resolve(TABLE.get(vector["provider"], EMPTY), vector["model"]) == vector["expect"]


@pytest.mark.parametrize("vector", VECTORS["cost"], ids=lambda v: f"{v['provider']}:{v['model']}:{v['tokens_in']}")
def test_costs_are_bit_identical_to_the_shared_vectors(vector):
    pricing = Pricing(TABLE, None)
    usage = Usage(
        vector["tokens_in"],
        vector["tokens_out"],
        vector.get("tokens_cached_in", 0),
        vector.get("tokens_cache_write", 0),
        vector.get("tokens_cache_write_1h", 0),
        vector.get("tokens_audio_in", 0),
        vector.get("tokens_audio_out", 0),
        vector.get("web_search_requests", 0),
        vector.get("service_tier"),
    )
    cost = pricing.cost(vector["provider"], vector["model"], usage)
    assert cost == vector["expect_cost_usd"]


def test_every_model_in_the_table_has_cost_vectors():
    covered = {(v["provider"], v["model"]) for v in VECTORS["cost"]}
    assert {(p, m) for p, models in TABLE.items() for m in models.prices} <= covered


def test_cached_input_cache_writes_and_long_context_tiers_are_priced_by_the_total_input():
    tier = {"above_input_tokens": 200_000, "input": 6, "output": 22.5, "cached_input": 0.6, "cache_write": 7.5}
    pricing = Pricing({}, {"anthropic": {"m": {"input": 3, "output": 15, "cached_input": 0.3, "cache_write": 3.75, "tiers": [tier]}}})
    # 1M in (600k read, 300k written) is above the tier: 100k*6 + 600k*0.6 + 300k*7.5, plus 0 out.
    assert pricing.cost("anthropic", "m", Usage(1_000_000, 0, tokens_cached_in=600_000, tokens_cache_write=300_000)) == 3.21
    # 200k is not above 200k: the base rates.
    assert pricing.cost("anthropic", "m", Usage(200_000, 1_000_000, tokens_cached_in=200_000)) == 15.06


def test_user_prices_without_cache_rates_charge_cached_and_written_input_at_the_input_rate():
    pricing = Pricing({}, {"openai": {"ft:my-model": {"input": 1, "output": 2}}})
    assert pricing.cost("openai", "ft:my-model", Usage(1_000_000, 0, 500_000, 500_000)) == 1.0


@pytest.mark.parametrize(
    "price",
    [
        {"input": -1, "output": 1},
        {"input": 1, "output": float("nan")},
        {"input": 1},
        {"input": 1, "output": 1, "cached_input": -0.1},
        {"input": 1, "output": 1, "tiers": [{"above_input_tokens": 0, "input": 1, "output": 1}]},
    ],
)
def test_user_prices_are_checked(price):
    with pytest.raises(ValueError, match="calltrace: "):
        Pricing({}, {"gemini": {"x": price}})


def test_an_unknown_model_costs_zero_and_warns_once(caplog):
    pricing = Pricing(TABLE, None)
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        assert pricing.cost("openai", "gpt-99", Usage(10, 10)) == 0
        assert pricing.cost("openai", "gpt-99", Usage(10, 10)) == 0
        assert pricing.cost("gemini", "gpt-99", Usage(10, 10)) == 0
    assert [r.getMessage().count("gpt-99") for r in caplog.records] == [1, 1]


def test_user_prices_add_models_and_override_the_table_in_every_resolution_step():
    pricing = Pricing(TABLE, {"openai": {"My-FT-Model": {"input": 1, "output": 2}, "gpt-4o": {"input": 100, "output": 200}}})

    assert pricing.cost("openai", "my-ft-model-2025-01-01", Usage(1_000_000, 1_000_000)) == 3.0
    assert pricing.cost("openai", "gpt-4o-2024-08-06", Usage(1_000_000, 0)) == 100.0
    assert pricing.cost("openai", "gpt-4o-mini", Usage(1_000_000, 0)) == 0.15  # untouched entries stay


def test_a_call_that_used_nothing_costs_zero_without_a_warning(caplog):
    pricing = Pricing(TABLE, None)
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        assert pricing.cost("openai", "gpt-99", Usage(0, 0)) == 0
    assert caplog.records == []


def test_a_billing_mode_without_its_rate_is_unpriced_not_charged_another_rate(caplog):
    pricing = Pricing({}, {"anthropic": {"plain": {"input": 3, "output": 15}, "m": {"input": 3, "output": 15, "service_tiers": {"batch": {"input": 1.5, "output": 7.5}}}}})
    assert pricing.cost("anthropic", "m", Usage(1_000_000, 1_000_000, service_tier="batch")) == 9.0
    assert pricing.cost("anthropic", "m", Usage(1_000_000, 1_000_000, service_tier="standard")) == 18.0
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        assert pricing.cost("anthropic", "m", Usage(1000, 1000, service_tier="priority")) == 0
        assert pricing.cost("anthropic", "plain", Usage(1000, 1000, tokens_audio_in=10)) == 0
        assert pricing.cost("anthropic", "plain", Usage(1000, 1000, tokens_cache_write=10, tokens_cache_write_1h=10)) == 0
        assert pricing.cost("anthropic", "plain", Usage(1000, 1000, web_search_requests=1)) == 0
    assert len(caplog.records) == 2  # once per model


def test_a_table_of_an_unknown_schema_is_refused(tmp_path):
    odd = tmp_path / "models.json"
    odd.write_text(json.dumps({"schema": 1, "models": {}}))
    with pytest.raises(ValueError, match="schema"):
        load_table(odd)


def test_init_prices_apply_to_traces_and_do_not_outlive_the_next_init(provider, collector):
    from clients import openai_client
    from conftest import API_KEY

    client = openai_client(provider.url)
    try:
        calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, prices={"openai": {"gpt-4o": {"input": 1e6, "output": 0}}})
        with calltrace.attributes(session_id="before"):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        calltrace.init(api_key=API_KEY, endpoint=collector.endpoint)
        with calltrace.attributes(session_id="after"):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        collector.wait_for(2)
    finally:
        calltrace.shutdown(2)
    # The first init's sender may deliver after the second's: the traces are told apart by session, not by order.
    costs = {t["session_id"]: t["cost_usd"] for t in collector.traces()}
    assert costs == {"before": 1234.0, "after": (1234 * 2.5 + 567 * 10.0) / 1e6}
