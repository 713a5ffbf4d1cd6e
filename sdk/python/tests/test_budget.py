"""enforce_budget: a call past an exceeded spend budget is refused with BudgetExceeded and the provider
is not called; the status is read in the background (no request on a call) and the SDK fails open.
The real provider clients against the fake provider, and the fake service's GET /v1/budget."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

import calltrace
from calltrace._attributes import Attributes
from calltrace._budget import exceeded_budget, parse_status
from clients import anthropic_async, anthropic_client, gemini_client, openai_client
from conftest import API_KEY
from fakes.collector import DROP, NO_BUDGETS
from shapes import MESSAGES, SHAPES, run
from test_call_shapes import MODES, STREAMING

REFRESH = 0.03
PROJECT = {"kind": "ALERT_SCOPE_KIND_PROJECT"}
NOON = 1764158400.0  # 2025-11-26T12:00:00Z


def budget(scope, **extra):
    """A Budget as protobuf JSON writes it: enum names, camelCase, defaults left out."""
    return {
        "ruleId": "r_cap",
        "name": "daily cap",
        "scope": scope,
        "window": {"kind": "ALERT_WINDOW_KIND_ROLLING_HOURS", "rollingHours": 24},
        "budgetUsd": 5,
        "spendUsd": 5.25,
        "exceeded": True,
        **extra,
    }


def exceeded(scope):
    return (200, {"projectId": "p_1", "budgets": [budget(scope)]}, {}, 0.0)


@pytest.fixture
def enforcing(collector):
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, enforce_budget=True, budget_refresh=REFRESH)
    collector.answer_budget(NO_BUDGETS)
    yield collector
    calltrace.shutdown(2)


def refused(provider, call):
    """Runs call(), which must raise BudgetExceeded without reaching the provider; returns the error."""
    before = len(provider.requests)
    with pytest.raises(calltrace.BudgetExceeded) as raised:
        call()
    assert len(provider.requests) == before
    return raised.value


def chat(provider, **options):
    return openai_client(provider.url).chat.completions.create(model="gpt-4o", messages=MESSAGES, **options)


# The status as read.


def test_reads_a_status_with_left_out_defaults_and_each_scope():
    budgets = parse_status({
        "projectId": "p_1",
        "budgets": [
            budget({"kind": "ALERT_SCOPE_KIND_METADATA", "value": "search", "metadataKey": "feature"}),
            {"ruleId": "r_2", "scope": PROJECT, "spendUsd": "Infinity"},
        ],
    })
    first, second = budgets
    assert (first.kind, first.value, first.metadata_key, first.budget_usd, first.spend_usd, first.exceeded) == (
        "metadata", "search", "feature", 5.0, 5.25, True)
    assert first.ends_at is None  # a rolling window has no end
    assert (second.name, second.kind, second.value, second.budget_usd, second.exceeded) == ("", "project", "", 0.0, False)
    assert second.spend_usd == float("inf")
    assert parse_status({"projectId": "p_1"}) == []


@pytest.mark.parametrize("body", [None, "budgets", {"budgets": {"ruleId": "r"}}, {"budgets": [{"name": "x"}]}])
def test_refuses_a_body_that_is_no_budget_status(body):
    with pytest.raises(ValueError, match="not a BudgetStatus"):
        parse_status(body)


@pytest.mark.parametrize(
    "kind, value, key, counted, other",
    [
        ("USER", "u_1", "", dict(user_id="u_1"), dict(user_id="u_2")),
        ("TAG", "search", "", dict(tags=["chat", "search"]), dict(tags=["chat"])),
        ("METADATA", "acme", "team", dict(metadata={"team": "acme"}), dict(metadata={"org": "acme"})),
    ],
)
def test_a_scoped_budget_counts_the_calls_it_names_and_no_others(kind, value, key, counted, other):
    budgets = parse_status({"budgets": [budget({"kind": f"ALERT_SCOPE_KIND_{kind}", "value": value, "metadataKey": key})]})
    assert exceeded_budget(budgets, "m", Attributes.given(**counted), None, NOON).rule_id == "r_cap"
    assert exceeded_budget(budgets, "m", Attributes.given(**other), None, NOON) is None


def test_model_environment_project_and_key_budgets():
    def scoped(kind, value=""):
        return parse_status({"budgets": [budget({"kind": f"ALERT_SCOPE_KIND_{kind}", "value": value})]})

    none = Attributes()
    assert exceeded_budget(scoped("MODEL", "gpt-4o"), "gpt-4o", none, None, NOON)
    assert exceeded_budget(scoped("MODEL", "gpt-4o"), "gpt-4o-mini", none, None, NOON) is None
    assert exceeded_budget(scoped("ENVIRONMENT", "prod"), "m", none, "prod", NOON)
    assert exceeded_budget(scoped("ENVIRONMENT", "prod"), "m", none, "dev", NOON) is None
    assert exceeded_budget(scoped("PROJECT"), "m", none, None, NOON)
    assert exceeded_budget(scoped("KEY", "k_1"), "m", none, None, NOON)


def test_never_refuses_on_a_budget_under_its_limit_an_ended_calendar_window_or_an_unknown_scope():
    day = {"window": {"kind": "ALERT_WINDOW_KIND_DAY"}, "windowEnd": "2025-11-27T00:00:00.5Z"}
    none = Attributes()
    assert exceeded_budget(parse_status({"budgets": [budget(PROJECT, exceeded=False)]}), "m", none, None, NOON) is None
    calendar = parse_status({"budgets": [budget(PROJECT, **day)]})
    assert exceeded_budget(calendar, "m", none, None, NOON)
    assert exceeded_budget(calendar, "m", none, None, NOON + 12 * 3600 + 1) is None
    unknown = parse_status({"budgets": [budget({"kind": "ALERT_SCOPE_KIND_TEAM", "value": "x"})]})
    assert exceeded_budget(unknown, "m", none, None, NOON) is None


# Against the real provider clients.


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize("stream", STREAMING)
def test_every_call_shape_is_refused_without_calling_the_provider_or_tracing(enforcing, provider, shape, stream, asynchronous):
    enforcing.answer_budget(exceeded(PROJECT))
    error = refused(provider, lambda: run(shape, provider.url, stream=stream, asynchronous=asynchronous))
    assert (error.rule_id, error.name, error.spend_usd, error.budget_usd) == ("r_cap", "daily cap", 5.25, 5.0)
    assert error.scope == {"kind": "project", "value": "", "metadata_key": ""}
    assert str(error) == 'calltrace: budget \'daily cap\' for the project is exceeded ($5.25 of $5); the provider was not called'
    assert calltrace.flush(5)
    assert enforcing.traces() == []


def test_embeddings_and_the_anthropic_stream_helper_are_refused(enforcing, provider):
    enforcing.answer_budget(exceeded(PROJECT))
    refused(provider, lambda: openai_client(provider.url).embeddings.create(model="text-embedding-3-small", input="x"))
    refused(provider, lambda: gemini_client(provider.url).models.embed_content(model="gemini-embedding-001", contents="x"))

    def helper():
        with anthropic_client(provider.url).messages.stream(model="claude-haiku-4-5", max_tokens=8, messages=MESSAGES) as s:
            s.get_final_message()

    async def helper_async():
        async with anthropic_async(provider.url).messages.stream(
            model="claude-haiku-4-5", max_tokens=8, messages=MESSAGES
        ) as s:
            await s.get_final_message()

    refused(provider, helper)
    refused(provider, lambda: asyncio.run(helper_async()))
    assert provider.requests == []


def test_refuses_only_the_calls_of_the_user_tag_model_or_metadata_value_it_counts(enforcing, provider):
    enforcing.answer_budget(exceeded({"kind": "ALERT_SCOPE_KIND_USER", "value": "u_1"}))
    with calltrace.attributes(user_id="u_1"):
        refused(provider, lambda: chat(provider))
    refused(provider, lambda: chat(provider, calltrace={"user_id": "u_1"}))
    with calltrace.untraced(), calltrace.attributes(user_id="u_1"):
        refused(provider, lambda: chat(provider))  # untraced() stops the trace, not the budget
    with calltrace.attributes(user_id="u_2"):
        assert chat(provider).choices
    assert chat(provider).choices

    enforcing.answer_budget(exceeded({"kind": "ALERT_SCOPE_KIND_TAG", "value": "batch"}))
    with calltrace.attributes(tags=["batch"]):
        refused(provider, lambda: chat(provider))
    assert chat(provider, calltrace={"tags": ["chat"]}).choices

    enforcing.answer_budget(exceeded({"kind": "ALERT_SCOPE_KIND_MODEL", "value": "gpt-4o"}))
    refused(provider, lambda: chat(provider))
    assert openai_client(provider.url).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES).choices

    enforcing.answer_budget(exceeded({"kind": "ALERT_SCOPE_KIND_METADATA", "value": "search", "metadataKey": "feature"}))
    error = refused(provider, lambda: chat(provider, calltrace={"metadata": {"feature": "search"}}))
    assert "for metadata.feature 'search'" in str(error)
    assert chat(provider, calltrace={"metadata": {"feature": "chat"}}).choices

    enforcing.answer_budget(NO_BUDGETS)
    with calltrace.attributes(user_id="u_1"):
        assert chat(provider).choices  # no longer exceeded: through again
    assert calltrace.flush(5)
    assert len(enforcing.traces()) == 6


def test_an_environment_budget_counts_inits_environment(collector, provider):
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, environment="prod", enforce_budget=True,
                   budget_refresh=REFRESH)
    try:
        collector.answer_budget(exceeded({"kind": "ALERT_SCOPE_KIND_ENVIRONMENT", "value": "prod"}))
        refused(provider, lambda: chat(provider))
        collector.answer_budget(exceeded({"kind": "ALERT_SCOPE_KIND_ENVIRONMENT", "value": "staging"}))
        assert chat(provider).choices
    finally:
        calltrace.shutdown(2)


def test_the_status_is_read_with_the_key_in_the_background_only(collector, provider):
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, enforce_budget=True, budget_refresh=60)
    try:
        deadline = time.monotonic() + 5
        while not collector.budget_requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(collector.budget_requests) == 1
        assert collector.budget_requests[0]["Authorization"] == f"Bearer {API_KEY}"
        for _ in range(20):
            chat(provider)
        assert calltrace.flush(5)
        assert len(collector.traces()) == 20
        assert len(collector.budget_requests) == 1  # 20 calls, no request of theirs
    finally:
        calltrace.shutdown(2)


@pytest.mark.parametrize(
    "answer, warning",
    [
        ((500, {"error": "internal"}, {}, 0.0), "answered 500"),
        ((503, {"error": "unavailable"}, {}, 0.0), "answered 503"),
        ((401, {"error": "unauthenticated"}, {}, 0.0), "refused the API key for /v1/budget (401)"),
        ((403, {"error": "forbidden"}, {}, 0.0), "refused the API key for /v1/budget (403)"),
        ((200, {"budgets": "all of them"}, {}, 0.0), "unreadable budget status"),
        ((200, b"<html>", {}, 0.0), "unreadable budget status"),
        (DROP, "could not read budgets"),
    ],
    ids=["500", "503", "401", "403", "not-a-status", "not-json", "dropped"],
)
def test_fails_open_with_one_warning(enforcing, provider, caplog, answer, warning):
    enforcing.answer_budget(exceeded(PROJECT))
    refused(provider, lambda: chat(provider))
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        enforcing.answer_budget(answer)
        enforcing.answer_budget(answer)  # several failed refreshes: still one warning
        for _ in range(3):
            assert chat(provider).choices
    messages = [r.getMessage() for r in caplog.records if "enforce_budget" in r.getMessage()]
    assert len(messages) == 1, messages
    assert warning in messages[0]
    assert "calls are not refused until it answers" in messages[0]
    assert API_KEY not in messages[0]


def test_fails_open_on_a_timeout(collector, provider, caplog):
    # A timeout far above an answer's time on a loaded machine (a read that times out is failed open too,
    # so a prompt answer must never reach it), and an answer delayed far past it.
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, enforce_budget=True, budget_refresh=REFRESH,
                   timeout=1.0)
    try:
        collector.answer_budget(exceeded(PROJECT))
        refused(provider, lambda: chat(provider))
        with caplog.at_level(logging.WARNING, logger="calltrace"):
            collector.answer_budget((200, NO_BUDGETS[1], {}, 3.0))
            assert chat(provider).choices
        assert any("could not read budgets" in r.getMessage() for r in caplog.records)
    finally:
        calltrace.shutdown(2)


def test_fails_open_when_the_service_is_unreachable(provider, caplog):
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        calltrace.init(api_key=API_KEY, endpoint="http://127.0.0.1:1/v1/traces", enforce_budget=True,
                       budget_refresh=REFRESH, max_retries=0)
        try:
            for _ in range(3):
                assert chat(provider).choices
                time.sleep(REFRESH * 2)
        finally:
            calltrace.shutdown(0.5)
    messages = [r.getMessage() for r in caplog.records if "enforce_budget" in r.getMessage()]
    assert len(messages) == 1 and "could not read budgets from http://127.0.0.1:1/v1/budget" in messages[0], messages


def test_off_by_default_never_reads_the_status_nor_refuses(tracing, provider):
    tracing.budget = exceeded(PROJECT)
    time.sleep(REFRESH * 4)
    assert chat(provider).choices
    assert anthropic_client(provider.url).messages.create(model="claude-haiku-4-5", max_tokens=8, messages=MESSAGES)
    assert tracing.budget_requests == []


def test_rejects_a_refresh_interval_that_cannot_work():
    with pytest.raises(ValueError, match="budget_refresh"):
        calltrace.init(api_key=API_KEY, enforce_budget=True, budget_refresh=0)
