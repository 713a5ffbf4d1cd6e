"""Traces delivered to a slow calltrace service: concurrent senders against the one-at-a-time baseline, same run.

    python sdk/python/bench/delivery.py [--calls N] [--service-ms MS] [--results bench/RESULTS.md]

An application makes N traced calls (the real openai client against the fake
provider) as fast as it can, as a batch job would, and then has the exit
window (10 s) to deliver its traces; the fake calltrace service (tests/fakes,
in its own process) answers each trace after MS milliseconds. Each row runs
once with one sender (concurrency=1: one trace per round trip, as before) and
once with the default pool.

With --results, the table replaces the section of that file between
<!-- sdk-python-delivery:begin --> and <!-- sdk-python-delivery:end -->.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from overhead import API_KEY, replace_section, start_fakes

import calltrace  # noqa: E402  (overhead put tests/ on sys.path)
from clients import openai_client  # noqa: E402
from shapes import MESSAGES  # noqa: E402

BEGIN, END = "<!-- sdk-python-delivery:begin -->", "<!-- sdk-python-delivery:end -->"
EXIT_WINDOW = 10.0
DEFAULT_CONCURRENCY = 16


def deliver(provider: str, endpoint: str, calls: int, concurrency: int) -> dict:
    calltrace.init(api_key=API_KEY, endpoint=endpoint, concurrency=concurrency, max_queue_size=10 * calls)
    client = openai_client(provider)
    started = time.perf_counter()
    for _ in range(calls):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    calls_done = time.perf_counter()
    all_delivered = calltrace.flush(EXIT_WINDOW)
    flushed = time.perf_counter()
    counts = calltrace.stats()
    calltrace.shutdown(0.1)  # what the exit window did not deliver is lost
    return {
        "sent": counts["sent"],
        "calls_s": calls_done - started,
        "flush_s": flushed - calls_done,
        "all": all_delivered,
        "rate": counts["sent"] / (flushed - started),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1500)
    parser.add_argument("--service-ms", type=float, default=50.0)
    parser.add_argument("--results", type=Path, help="write the table into this RESULTS.md")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    fakes, urls = start_fakes(str(args.service_ms / 1000))
    rows = {}
    try:
        for concurrency in (1, DEFAULT_CONCURRENCY):
            rows[concurrency] = deliver(urls["provider"], urls["endpoint"], args.calls, concurrency)
            print(concurrency, rows[concurrency], flush=True)
    finally:
        fakes.stdin.close()
        fakes.wait(10)

    baseline = rows[1]["rate"]
    lines = [
        f"| senders | calls | delivered within the {EXIT_WINDOW:.0f} s exit window | calls took s | exit flush took s | traces/s delivered | ratio to one sender |",
        "|---|---|---|---|---|---|---|",
    ]
    for concurrency, row in rows.items():
        flush = f"{row['flush_s']:.2f}" if row["all"] else f"> {EXIT_WINDOW:.0f} (cut)"
        lines.append(
            f"| {concurrency} | {args.calls} | {row['sent']} | {row['calls_s']:.2f} | {flush} | {row['rate']:.0f} | {row['rate'] / baseline:.1f}x |"
        )
    summary = (
        f"Run {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {os.cpu_count()} CPU cores, "
        f"load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after the run; "
        f"the fake service answers each trace after {args.service_ms:.0f} ms."
    )
    table = "\n".join(lines)
    print(table)
    print(summary)
    if args.results:
        section = (
            "## Python SDK: traces delivered to a slow service\n\n"
            "`python sdk/python/bench/delivery.py` — target: all 1,500 traces of a batch delivered within the 10 s exit window "
            "when the service takes 50 ms per trace.\n\n"
            f"{table}\n\n{summary}"
        )
        replace_section(args.results, BEGIN, END, section)


if __name__ == "__main__":
    main()
