"""Billing modes and embeddings: read from each provider's real client response, sent, and priced at their own rates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.genai import types

from calltrace.providers.gemini import grounding_searches
from clients import anthropic_client, gemini_client, openai_client
from fakes.provider import EMBEDDING_TOKENS, GEMINI_SEARCH_QUERIES
from shapes import MESSAGES
from test_call_shapes import only_trace

SHARED = Path(__file__).resolve().parents[2] / "pricing"
TABLE = json.loads((SHARED / "models.json").read_text())["models"]
GROUNDING_VECTORS = json.loads((SHARED / "grounding-vectors.json").read_text())


def test_openai_service_tier_is_sent_and_priced_at_its_rates(provider, tracing):
    provider.tokens = (10_000, 1_000)
    openai_client(provider.url).chat.completions.create(model="gpt-5.4", messages=MESSAGES, service_tier="priority")
    trace = only_trace(tracing)
    priority = TABLE["openai"]["gpt-5.4"]["service_tiers"]["priority"]
    assert trace["service_tier"] == "priority"
    assert trace["cost_usd"] == (10_000 * priority["input"] + 1_000 * priority["output"]) / 1e6


def test_openai_default_tier_is_standard_and_not_sent(provider, tracing):
    openai_client(provider.url).chat.completions.create(model="gpt-4o", messages=MESSAGES)
    trace = only_trace(tracing)
    assert "service_tier" not in trace
    assert trace["cost_usd"] == (1234 * 2.5 + 567 * 10) / 1e6


def test_openai_audio_tokens_are_sent_and_priced_at_the_audio_rates(provider, tracing):
    provider.tokens, provider.audio = (120, 80), (100, 60)
    openai_client(provider.url).chat.completions.create(model="gpt-audio", messages=MESSAGES, modalities=["text", "audio"], audio={"voice": "alloy", "format": "wav"})
    trace = only_trace(tracing)
    p = TABLE["openai"]["gpt-audio"]
    assert (trace["tokens_audio_in"], trace["tokens_audio_out"]) == (100, 60)
    assert trace["cost_usd"] == (20 * p["input"] + 100 * p["input_audio"] + 20 * p["output"] + 60 * p["output_audio"]) / 1e6


def test_openai_embeddings_are_traced_and_priced(provider, tracing):
    result = openai_client(provider.url).embeddings.create(model="text-embedding-3-small", input="The food was delicious")
    assert len(result.data[0].embedding) == 3
    trace = only_trace(tracing)
    assert {k: trace[k] for k in ("provider", "model", "tokens_in", "tokens_out", "status")} == {
        "provider": "openai",
        "model": "text-embedding-3-small",
        "tokens_in": EMBEDDING_TOKENS,
        "tokens_out": 0,
        "status": "success",
    }
    assert trace["cost_usd"] == EMBEDDING_TOKENS * TABLE["openai"]["text-embedding-3-small"]["input"] / 1e6


def test_a_failed_call_without_tokens_costs_zero(provider, tracing):
    provider.fail_status = 429
    with pytest.raises(Exception):
        openai_client(provider.url).embeddings.create(model="text-embedding-3-small", input="x")
    trace = only_trace(tracing)
    assert (trace["status"], trace["tokens_in"], trace["cost_usd"]) == ("error", 0, 0)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_1h_cache_writes_and_web_searches_are_sent_and_priced(provider, tracing, stream):
    provider.tokens, provider.anthropic_cache = (1000, 100), (600, 0)
    provider.anthropic_1h, provider.web_searches = 400, 2
    made = anthropic_client(provider.url).messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=MESSAGES, stream=stream)
    if stream:
        list(made)
    trace = only_trace(tracing)
    p = TABLE["anthropic"]["claude-sonnet-4-5"]
    assert (trace["tokens_cache_write"], trace["tokens_cache_write_1h"], trace["web_search_requests"]) == (600, 400, 2)
    assert trace["cost_usd"] == (
        1000 * p["input"] + 200 * p["cache_write"] + 400 * p["cache_write_1h"] + 100 * p["output"]
    ) / 1e6 + 2 * p["web_search_per_1k"] / 1000


def test_gemini_audio_prompt_tokens_and_traffic_type(provider, tracing):
    provider.tokens, provider.audio, provider.traffic_type = (98, 15), (96, 0), "ON_DEMAND_PRIORITY"
    client = gemini_client(provider.url)  # kept: a collected genai.Client closes its connection
    client.models.generate_content(model="gemini-2.5-flash", contents="Transcribe this")
    trace = only_trace(tracing)
    assert (trace["tokens_audio_in"], trace["service_tier"]) == (96, "priority")
    # No priority rate for gemini-2.5-flash in the table: unpriced (0), not the standard price.
    assert "priority" not in TABLE["gemini"]["gemini-2.5-flash"].get("service_tiers", {})
    assert trace["cost_usd"] == 0


def test_gemini_audio_on_demand_is_priced_at_the_audio_rate(provider, tracing):
    provider.tokens, provider.audio = (98, 15), (96, 0)
    client = gemini_client(provider.url)  # kept: a collected genai.Client closes its connection
    client.models.generate_content(model="gemini-2.5-flash", contents="Transcribe this")
    trace = only_trace(tracing)
    p = TABLE["gemini"]["gemini-2.5-flash"]
    assert "service_tier" not in trace
    assert trace["cost_usd"] == (2 * p["input"] + 96 * p["input_audio"] + 15 * p["output"]) / 1e6


def test_gemini_embed_content_is_traced_its_usage_marked_missing(provider, tracing):
    client = gemini_client(provider.url)
    result = client.models.embed_content(model="gemini-embedding-001", contents="What is the meaning of life?")
    assert result.embeddings[0].values
    trace = only_trace(tracing)
    assert (trace["model"], trace["status"], trace["tokens_in"], trace["cost_usd"]) == ("gemini-embedding-001", "success", 0, 0)
    assert trace["metadata"]["calltrace.usage"] == "missing"


# Google's Gemini API pricing: grounded prompts of Gemini 2.x, search queries of Gemini 3.
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model, searches", [("gemini-2.5-flash", 1), ("gemini-3-flash-preview", len(GEMINI_SEARCH_QUERIES))])
def test_gemini_grounding_is_sent_as_web_searches_and_priced(provider, tracing, model, searches, stream):
    client = gemini_client(provider.url)  # kept: a collected genai.Client closes its connection
    config = types.GenerateContentConfig(tools=[types.Tool(google_search=types.GoogleSearch())])
    if stream:
        text = "".join(c.text or "" for c in client.models.generate_content_stream(model=model, contents="Who won Euro 2024?", config=config))
    else:
        text = client.models.generate_content(model=model, contents="Who won Euro 2024?", config=config).text
    assert text == "Hello there!"
    trace = only_trace(tracing)
    p = TABLE["gemini"][model]
    tokens_in, tokens_out = provider.tokens
    expected = (tokens_in * p["input"] + tokens_out * p["output"]) / 1e6 + searches * p["web_search_per_1k"] / 1000
    assert (trace["model"], trace["status"], trace["web_search_requests"]) == (model, "success", searches)
    assert abs(trace["cost_usd"] / expected - 1) < 0.01


def test_gemini_without_grounding_sends_no_web_searches(provider, tracing):
    client = gemini_client(provider.url)
    client.models.generate_content(model="gemini-3-flash-preview", contents="Say hello")
    assert "web_search_requests" not in only_trace(tracing)


@pytest.mark.parametrize("vector", GROUNDING_VECTORS, ids=lambda v: f"{v['model']}:{len(v['candidates'])}")
def test_gemini_grounding_searches_are_as_the_shared_vectors_say(vector):
    response = types.GenerateContentResponse.model_validate({"candidates": vector["candidates"]})
    assert grounding_searches(vector["model"], response.candidates) == vector["expect"]
