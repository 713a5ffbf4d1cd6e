"""Median time calltrace adds to a provider call: patched versus unpatched, interleaved, same run.

    python sdk/python/bench/overhead.py [--iterations N] [--results bench/RESULTS.md]

Real clients call the fake provider (tests/fakes) over loopback. The fakes,
the provider and the calltrace service, run in a subprocess so that their
work is not counted in the process measured. Each pair of calls runs one
unpatched and one patched call, in alternating order, after a warm-up. A
second run points calltrace at a closed port (the service down). A third row
times the wrapper alone around a canned response, with no network at all.

With --results, the table replaces the Python SDK section of that file (between
<!-- sdk-python:begin --> and <!-- sdk-python:end -->, appended if absent).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
sys.path.insert(0, str(TESTS))

import calltrace  # noqa: E402
from calltrace import _patching  # noqa: E402
from calltrace._calls import wrap  # noqa: E402
from calltrace.providers.openai import ChatCompletions  # noqa: E402
from shapes import SHAPES  # noqa: E402

BEGIN, END = "<!-- sdk-python:begin -->", "<!-- sdk-python:end -->"
API_KEY = "ct_benchmark0123456789abcdefghijklmnopq"


def start_fakes(*args: str):
    fakes = subprocess.Popen(
        [sys.executable, "-m", "fakes", *args], cwd=TESTS, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    return fakes, json.loads(fakes.stdout.readline())


def closed_port_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1/traces"


def one_call(shape, client, stream: bool) -> None:
    result = shape.call(client, stream)
    if stream:
        for _ in result:
            pass


def timed(shape, client, stream: bool) -> float:
    started = time.perf_counter()
    one_call(shape, client, stream)
    return time.perf_counter() - started


def measure(shape, url: str, stream: bool, iterations: int, warmup: int):
    """(unpatched times, patched times, paired differences), in seconds."""
    client = shape.sync_client(url)
    for n in range(warmup):
        set_patched(n % 2 == 0)
        one_call(shape, client, stream)
    plain, traced, paired = [], [], []
    for n in range(iterations):
        times = {}
        for patched in ((False, True) if n % 2 else (True, False)):
            set_patched(patched)
            times[patched] = timed(shape, client, stream)
        plain.append(times[False])
        traced.append(times[True])
        paired.append(times[True] - times[False])
    set_patched(True)
    return plain, traced, paired


def set_patched(patched: bool) -> None:
    # Swapping the class attributes, outside the timed region, is what
    # calltrace.init/unpatch do, without resetting the sender between calls.
    _patching.unpatch_all()
    if patched:
        _patching.patch_installed()


def wrapper_alone(iterations: int) -> float:
    """Median seconds the wrapper adds around a function returning a canned ChatCompletion."""
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1234, "completion_tokens": 567, "total_tokens": 1801},
        }
    )

    def create(self, **kwargs):
        return completion

    traced = wrap(create, ChatCompletions())
    kwargs = {"model": "gpt-4o", "messages": []}
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        create(None, **kwargs)
        middle = time.perf_counter()
        traced(None, **kwargs)
        ended = time.perf_counter()
        samples.append((ended - middle) - (middle - started))
    return statistics.median(samples)


def row(label: str, plain, traced, paired) -> str:
    ms = lambda seconds: f"{seconds * 1e3:.3f}"  # noqa: E731
    us = lambda seconds: f"{seconds * 1e6:+.1f}"  # noqa: E731
    added = statistics.median(traced) - statistics.median(plain)
    return f"| {label} | {ms(statistics.median(plain))} | {ms(statistics.median(traced))} | {us(added)} | {us(statistics.median(paired))} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000, help="call pairs per row (default 1000)")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--results", type=Path, help="write the table into this RESULTS.md")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    fakes, urls = start_fakes()
    lines = [
        "| call (sync) | unpatched median ms | patched median ms | added µs (difference of medians) | added µs (median of paired differences) |",
        "|---|---|---|---|---|",
    ]
    try:
        calltrace.init(api_key=API_KEY, endpoint=urls["endpoint"])
        for shape in SHAPES:
            for stream in (False, True):
                label = f"{shape.id} {'stream' if stream else 'whole'}"
                lines.append(row(label, *measure(shape, urls["provider"], stream, args.iterations, args.warmup)))
                print(lines[-1], flush=True)
        assert calltrace.flush(30), "traces still pending after the run"
        sent = calltrace.stats()
        calltrace.init(api_key=API_KEY, endpoint=closed_port_endpoint(), retry_base_delay=0.05, retry_max_delay=1.0)
        for shape, stream in ((SHAPES[0], False), (SHAPES[2], True)):
            label = f"{shape.id} {'stream' if stream else 'whole'}, service down"
            lines.append(row(label, *measure(shape, urls["provider"], stream, args.iterations, args.warmup)))
            print(lines[-1], flush=True)
        down = calltrace.stats()
        # Traces of the canned calls do go to the fake service, as in real use.
        calltrace.init(api_key=API_KEY, endpoint=urls["endpoint"], max_queue_size=100 * args.iterations)
        alone = wrapper_alone(10 * args.iterations)
        calltrace.shutdown(30)
        lines.append(f"| wrapper alone, canned response, no provider network | – | – | {alone * 1e6:+.1f} | – |")
        print(lines[-1])
    finally:
        fakes.stdin.close()
        fakes.wait(10)

    summary = (
        f"Run {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {os.cpu_count()} CPU cores, "
        f"load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after the run, "
        f"{args.iterations} interleaved pairs per row after {args.warmup} warm-up calls; "
        f"traces sent in the first part: {sent['sent']} (dropped {sent['dropped']}, failed {sent['failed']}); "
        f"with the service down: dropped {down['dropped']}, failed {down['failed']}."
    )
    print(summary)
    if args.results:
        write_results(args.results, "\n".join(lines), summary)


def write_results(path: Path, table: str, summary: str) -> None:
    section = (
        "## Python SDK: time added per traced call\n\n"
        "`python sdk/python/bench/overhead.py` — target: under 0.3 ms (300 µs) added per call.\n"
        "Loopback calls to the fake provider (tests/fakes, in its own process) with the real client libraries.\n\n"
        f"{table}\n\n{summary}"
    )
    replace_section(path, BEGIN, END, section)


def replace_section(path: Path, begin: str, end: str, section: str) -> None:
    """Puts `section` between the markers `begin` and `end` of the file, or appends it with them."""
    section = f"{begin}\n{section}\n{end}"
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        text = text[: text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + section + "\n"
    path.write_text(text)


if __name__ == "__main__":
    main()
