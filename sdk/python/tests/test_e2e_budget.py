"""enforce_budget end to end: the installed SDK, the real provider clients against the fake provider, and
the real calltrace server of this repository (behind a proxy that counts requests) with a spend budget
for one user, used up by real traffic. Never skips: see test_e2e_server.py for what it needs."""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time

import pytest

import calltrace
from clients import anthropic_client, gemini_client, openai_client
from fakes.proxy import CountingProxy
from shapes import MESSAGES
from test_e2e_server import cli, listening_port, node_command

BUDGET_USD = 0.02  # a little over two gpt-4o calls of the fake provider (1234 in, 567 out)
BUDGET_GET = "GET /v1/budget"
TRACE_POST = "POST /v1/traces"


@pytest.fixture(scope="module")
def budget_server(tmp_path_factory):
    data = str(tmp_path_factory.mktemp("calltrace-budget"))
    key = cli("keys", "create", "--plan", "pro", "--data-dir", data).strip()
    rule = json.loads(cli("alerts", "create", "--plan", "pro", "--kind", "spend", "--budget-usd", str(BUDGET_USD), "--window", "day",
                          "--user", "u_over", "--json", "--data-dir", data))
    assert rule["id"]
    server = subprocess.Popen(node_command("serve", "--port", "0", "--data-dir", data),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proxy = None
    try:
        proxy = CountingProxy(listening_port(server, timeout=90)).start()
        yield {"key": key, "proxy": proxy, "endpoint": proxy.url + "/v1/traces"}
    finally:
        if proxy is not None:
            proxy.stop()
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def chat(provider, user_id, stream=False):
    client = openai_client(provider.url)
    if stream:
        return list(client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True,
                                                   stream_options={"include_usage": True}, calltrace={"user_id": user_id}))
    return client.chat.completions.create(model="gpt-4o", messages=MESSAGES, calltrace={"user_id": user_id})


def test_refuses_once_real_traffic_used_up_a_users_budget_and_fails_open(budget_server, provider, caplog):
    proxy = budget_server["proxy"]
    calltrace.init(api_key=budget_server["key"], endpoint=budget_server["endpoint"], enforce_budget=True,
                   budget_refresh=0.2, retry_base_delay=0.05, max_retries=40)
    try:
        made, refused = 0, None
        for attempt in range(80):
            provider_calls, traces = len(provider.requests), proxy.count(TRACE_POST)
            try:
                chat(provider, "u_over", stream=attempt % 2 == 1)
            except calltrace.BudgetExceeded as error:
                refused = error
                assert len(provider.requests) == provider_calls
                assert calltrace.flush(20)
                assert proxy.count(TRACE_POST) == traces  # a refused call is not traced
                break
            made += 1
            assert calltrace.flush(20)  # stored before the next call
            time.sleep(0.25)
        assert refused is not None, f"{made} calls made, none refused"
        assert refused.scope == {"kind": "user", "value": "u_over", "metadata_key": ""}
        assert refused.rule_id and refused.budget_usd == BUDGET_USD and refused.spend_usd >= BUDGET_USD
        assert made >= 3  # the third call crosses the budget; the rest is the refresh delays

        # Every provider, and Anthropic's stream helper, is refused now; another user is not.
        before = len(provider.requests)
        for call in (
            lambda: anthropic_client(provider.url).messages.create(
                model="claude-haiku-4-5", max_tokens=8, messages=MESSAGES, calltrace={"user_id": "u_over"}),
            lambda: gemini_client(provider.url).models.generate_content(
                model="gemini-2.0-flash", contents="hi", calltrace={"user_id": "u_over"}),
        ):
            with pytest.raises(calltrace.BudgetExceeded):
                call()
        assert len(provider.requests) == before
        assert chat(provider, "u_other").choices
        assert len(provider.requests) == before + 1

        # The status cannot be read: calls proceed, with one warning; readable again: refused again.
        with caplog.at_level(logging.WARNING, logger="calltrace"):
            proxy.budget_down = True
            time.sleep(0.8)
            assert chat(provider, "u_over").choices
        warnings = [r.getMessage() for r in caplog.records if "enforce_budget" in r.getMessage()]
        assert len(warnings) == 1 and "could not read budgets" in warnings[0], warnings
        assert budget_server["key"] not in warnings[0]
        proxy.budget_down = False
        proxy.wait_for(BUDGET_GET, proxy.count(BUDGET_GET) + 2)
        with pytest.raises(calltrace.BudgetExceeded):
            chat(provider, "u_over")
    finally:
        calltrace.shutdown(10)


def test_a_call_adds_no_request_the_status_is_read_in_the_background(budget_server, provider):
    proxy = budget_server["proxy"]
    # An earlier test's refresher, stopped but perhaps still inside its last read, ends first.
    for thread in threading.enumerate():
        if thread.name == "calltrace-budget":
            thread.join(30)
    before = proxy.count(BUDGET_GET)
    calltrace.init(api_key=budget_server["key"], endpoint=budget_server["endpoint"], enforce_budget=True,
                   budget_refresh=600, retry_base_delay=0.05, max_retries=40)
    try:
        proxy.wait_for(BUDGET_GET, before + 1)
        time.sleep(0.2)  # the answer taken in
        traces = proxy.count(TRACE_POST)
        for _ in range(10):
            assert chat(provider, "u_other").choices
        with pytest.raises(calltrace.BudgetExceeded):
            chat(provider, "u_over")
        assert calltrace.flush(20)
        assert proxy.count(TRACE_POST) == traces + 10
        assert proxy.count(BUDGET_GET) == before + 1
    finally:
        calltrace.shutdown(10)


def test_off_by_default_never_reads_the_status_nor_refuses(budget_server, provider):
    proxy = budget_server["proxy"]
    before = proxy.count(BUDGET_GET)
    calltrace.init(api_key=budget_server["key"], endpoint=budget_server["endpoint"], retry_base_delay=0.05,
                   max_retries=40)
    try:
        assert chat(provider, "u_over").choices
        time.sleep(0.5)
        assert chat(provider, "u_over", stream=True)
        assert len(provider.requests) == 2
        assert calltrace.flush(20)
        assert proxy.count(BUDGET_GET) == before
    finally:
        calltrace.shutdown(10)
