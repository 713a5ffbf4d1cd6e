"""A fake of the three providers' HTTP APIs, with bodies shaped like the real ones.

Routes: OpenAI POST /v1/chat/completions (also Azure's
/openai/deployments/{name}/chat/completions) and /v1/responses, Anthropic POST
/v1/messages, Gemini POST /v1beta/models/{model}:generateContent (or /v1/...) and
:streamGenerateContent?alt=sse. Each answers as JSON or as an SSE stream
(chunked), `event_delay` seconds before each event, and can be told to fail:

- `fail_status`: the next request gets this HTTP status with the provider's error body;
- `stream_failure`: "event" sends the provider's in-band error event mid-stream,
  "disconnect" drops the connection mid-stream; for OpenAI responses,
  "response.failed" ends the stream with that event.

A Gemini request offering tools whose last turn is not a function response is
answered with a call of the first tool, as the real API does.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import struct
import threading
from typing import Any, Dict, List, Optional

from .server import Handler, Server

# Providers report a dated snapshot for an alias, as the real APIs do.
SNAPSHOTS = {
    "gpt-4o": "gpt-4o-2024-08-06",
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "claude-haiku-4-5": "claude-haiku-4-5-20251001",
    "gemini-2.0-flash": "gemini-2.0-flash-001",
}

TEXT = ["Hel", "lo ", "there", "!"]
CREATED = 1732000000
EMBEDDING_TOKENS = 8


def sse(data: Any, event: Optional[str] = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n"


class ProviderHandler(Handler):
    def do_POST(self) -> None:
        fake: FakeProvider = self.fake  # type: ignore[attr-defined]
        body = self.read_json() or {}
        fake.record(self.path, dict(self.headers), body)
        path = self.path.split("?", 1)[0]
        status = fake.take_failure()
        gemini = re.fullmatch(r"/v1(?:beta)?/models/([^:]+):(generateContent|streamGenerateContent)", path)
        embed = re.fullmatch(r"/v1(?:beta)?/models/([^:]+):batchEmbedContents", path)
        if path == "/v1/embeddings":
            self.openai_embeddings(body, status)
        elif embed:
            self.gemini_embeddings(body, status)
        elif path == "/v1/chat/completions" or re.fullmatch(r"/openai/deployments/[^/]+/chat/completions", path):
            self.openai_chat(fake, body, status)
        elif path == "/v1/responses":
            self.openai_responses(fake, body, status)
        elif path == "/v1/messages":
            self.anthropic(fake, body, status)
        elif gemini:
            self.gemini(fake, gemini.group(1), gemini.group(2) == "streamGenerateContent", status, body)
        else:
            self.send_json(404, {"error": {"message": f"no route {path}"}})

    # --- OpenAI ---------------------------------------------------------

    def openai_error(self, status: int) -> None:
        kinds = {400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit_exceeded"}
        self.send_json(
            status,
            {
                "error": {
                    "message": "The model `nope` does not exist or you do not have access to it."
                    if status == 400
                    else "The server had an error while processing your request.",
                    "type": kinds.get(status, "server_error"),
                    "param": None,
                    "code": None,
                }
            },
        )

    def openai_embeddings(self, body: Dict[str, Any], status: Optional[int]) -> None:
        if status:
            return self.openai_error(status)
        vector = [0.0023064255, -0.009327292, 0.015797347]
        # The openai package asks for base64 (little-endian float32) unless told otherwise.
        if body.get("encoding_format") == "base64":
            vector = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        self.send_json(
            200,
            {
                "object": "list",
                "data": [{"object": "embedding", "index": 0, "embedding": vector}],
                "model": body["model"],
                "usage": {"prompt_tokens": EMBEDDING_TOKENS, "total_tokens": EMBEDDING_TOKENS},
            },
        )

    def gemini_embeddings(self, body: Dict[str, Any], status: Optional[int]) -> None:
        """The Gemini API's batchEmbedContents: vectors, and no token counts."""
        if status:
            return self.send_json(status, {"error": {"code": status, "message": "overloaded", "status": "UNAVAILABLE"}})
        values = [0.013168523, -0.008711934, -0.046782676]
        self.send_json(200, {"embeddings": [{"values": values} for _ in body.get("requests") or [{}]]})

    def openai_chat(self, fake: "FakeProvider", body: Dict[str, Any], status: Optional[int]) -> None:
        if status:
            return self.openai_error(status)
        model = SNAPSHOTS.get(body["model"], body["model"])
        tokens_in, tokens_out = fake.tokens
        audio_in, audio_out = fake.audio
        usage = {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
            "prompt_tokens_details": {"cached_tokens": fake.cached_in, "audio_tokens": audio_in},
            "completion_tokens_details": {"reasoning_tokens": fake.reasoning, "audio_tokens": audio_out},
        }
        # OpenAI reports the tier that served the request: the one asked for, if flex or priority.
        tier = body.get("service_tier") if body.get("service_tier") in ("flex", "priority") else "default"
        base = {"id": fake.unique("chatcmpl-B9MBs8CjcvOU2jLn4n"), "created": CREATED, "model": model}
        if not body.get("stream"):
            return self.send_json(
                200,
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "".join(TEXT), "refusal": None},
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                    "service_tier": tier,
                    "system_fingerprint": "fp_50cad350e4",
                },
            )
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunk = {**base, "object": "chat.completion.chunk", "system_fingerprint": "fp_50cad350e4"}
        if with_usage:
            chunk["usage"] = None

        def delta(content: Dict[str, Any], finish: Optional[str] = None) -> str:
            return sse({**chunk, "choices": [{"index": 0, "delta": content, "logprobs": None, "finish_reason": finish}]})

        events = [delta({"role": "assistant", "content": "", "refusal": None})]
        events += [delta({"content": piece}) for piece in TEXT]
        events.append(delta({}, "stop"))
        if with_usage:
            events.append(sse({**chunk, "choices": [], "usage": usage}))
        events.append(sse("[DONE]"))
        self.stream(fake, events, sse({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}))

    def openai_responses(self, fake: "FakeProvider", body: Dict[str, Any], status: Optional[int]) -> None:
        if status:
            return self.openai_error(status)
        model = SNAPSHOTS.get(body["model"], body["model"])
        tokens_in, tokens_out = fake.tokens
        response_id = fake.unique("resp_67ccd3a9da748190baa7f1570fe91ac6")
        message = {
            "id": "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c6ef6d24",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "".join(TEXT), "annotations": []}],
        }

        def response(state: str, done: bool) -> Dict[str, Any]:
            return {
                "id": response_id,
                "object": "response",
                "created_at": CREATED,
                "status": state,
                "error": None,
                "incomplete_details": None,
                "instructions": None,
                "max_output_tokens": None,
                "model": model,
                "output": [message] if done else [],
                "parallel_tool_calls": True,
                "previous_response_id": None,
                "reasoning": {"effort": None, "summary": None},
                "store": True,
                "temperature": 1.0,
                "text": {"format": {"type": "text"}},
                "tool_choice": "auto",
                "tools": [],
                "top_p": 1.0,
                "truncation": "disabled",
                "usage": {
                    "input_tokens": tokens_in,
                    "input_tokens_details": {"cached_tokens": fake.cached_in},
                    "output_tokens": tokens_out,
                    "output_tokens_details": {"reasoning_tokens": fake.reasoning},
                    "total_tokens": tokens_in + tokens_out,
                }
                if done
                else None,
                "user": None,
                "metadata": {},
            }

        if not body.get("stream"):
            return self.send_json(200, response("completed", True))
        seq = iter(range(1000))

        def event(kind: str, **fields: Any) -> str:
            return sse({"type": kind, "sequence_number": next(seq), **fields}, kind)

        events = [
            event("response.created", response=response("in_progress", False)),
            event("response.in_progress", response=response("in_progress", False)),
        ]
        part = {"item_id": message["id"], "output_index": 0, "content_index": 0}
        text = {"type": "output_text", "text": "".join(TEXT), "annotations": []}
        events += [
            event("response.output_item.added", output_index=0, item={**message, "status": "in_progress", "content": []}),
            event("response.content_part.added", **part, part={**text, "text": ""}),
        ]
        events += [event("response.output_text.delta", **part, delta=piece, logprobs=[]) for piece in TEXT]
        events += [
            event("response.output_text.done", **part, text=text["text"], logprobs=[]),
            event("response.content_part.done", **part, part=text),
            event("response.output_item.done", output_index=0, item=message),
        ]
        if fake.stream_failure == "response.failed":
            fake.take_stream_failure()
            failed = {**response("failed", False), "error": {"code": "server_error", "message": "The model failed to respond."}}
            events.append(event("response.failed", response=failed))
        else:
            events.append(event("response.completed", response=response("completed", True)))
        failure = event("error", code="server_error", message="The server had an error while processing your request.", param=None)
        self.stream(fake, events, failure)

    # --- Anthropic ------------------------------------------------------

    def anthropic(self, fake: "FakeProvider", body: Dict[str, Any], status: Optional[int]) -> None:
        # Constant, unlike the message ids: tests compare the error text of two failed calls.
        headers = {"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"}
        if status:
            kinds = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}
            return self.send_json(
                status,
                {
                    "type": "error",
                    "error": {"type": kinds.get(status, "api_error"), "message": "messages: field required" if status == 400 else "Overloaded"},
                    "request_id": headers["request-id"],
                },
                headers,
            )
        model = SNAPSHOTS.get(body["model"], body["model"])
        tokens_in, tokens_out = fake.tokens
        cached_write, cached_read = fake.anthropic_cache
        usage = {
            "input_tokens": tokens_in,
            "cache_creation_input_tokens": cached_write,
            "cache_read_input_tokens": cached_read,
            "output_tokens": tokens_out,
            "service_tier": "standard",
            # Cache writes by lifetime, and server tools, as the API reports them since 2025.
            "cache_creation": {
                "ephemeral_5m_input_tokens": cached_write - fake.anthropic_1h,
                "ephemeral_1h_input_tokens": fake.anthropic_1h,
            },
            "server_tool_use": {"web_search_requests": fake.web_searches, "web_fetch_requests": 0},
        }
        message = {
            "id": fake.unique("msg_013Zva2CMHLNnX"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": "".join(TEXT)}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return self.send_json(200, message, headers)
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [
            sse({"type": "message_start", "message": start}, "message_start"),
            sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}, "content_block_start"),
            sse({"type": "ping"}, "ping"),
        ]
        events += [
            sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
            for piece in TEXT
        ]
        events += [
            sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            sse(
                {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": tokens_out}},
                "message_delta",
            ),
            sse({"type": "message_stop"}, "message_stop"),
        ]
        failure = sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error")
        self.stream(fake, events, failure, headers)

    # --- Gemini ---------------------------------------------------------

    def gemini(self, fake: "FakeProvider", model: str, streamed: bool, status: Optional[int], body: Dict[str, Any]) -> None:
        if status:
            states = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
            return self.send_json(
                status,
                {
                    "error": {
                        "code": status,
                        "message": "API key not valid. Please pass a valid API key." if status == 400 else "The model is overloaded. Please try again later.",
                        "status": states.get(status, "INTERNAL"),
                    }
                },
            )
        version = SNAPSHOTS.get(model, model)
        tokens_in, tokens_out = fake.tokens
        response_id = fake.unique("mMjJaOPDBZ2hz7IP")

        grounded = any("googleSearch" in tool for tool in body.get("tools") or [])

        def chunk(
            text: str, out: int, finish: Optional[str] = None, part: Optional[Dict[str, Any]] = None, grounding: Optional[Dict[str, Any]] = None
        ) -> Dict[str, Any]:
            candidate: Dict[str, Any] = {"content": {"parts": [part or {"text": text}], "role": "model"}, "index": 0}
            if finish:
                candidate["finishReason"] = finish
            if grounded and grounding:
                candidate["groundingMetadata"] = grounding
            # Gemini counts thoughts apart from the candidates (total = prompt + candidates + thoughts)
            # and gives the cached part of the prompt, each only when there is some.
            thoughts = fake.reasoning if finish else 0
            audio_in, _ = fake.audio
            prompt_details = [{"modality": "TEXT", "tokenCount": tokens_in - audio_in}]
            if audio_in:
                prompt_details.append({"modality": "AUDIO", "tokenCount": audio_in})
            usage: Dict[str, Any] = {
                "promptTokenCount": tokens_in,
                "candidatesTokenCount": out,
                "totalTokenCount": tokens_in + out + thoughts,
                "promptTokensDetails": prompt_details,
                "trafficType": fake.traffic_type,
            }
            if fake.cached_in:
                usage["cachedContentTokenCount"] = fake.cached_in
                usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": fake.cached_in}]
            if thoughts:
                usage["thoughtsTokenCount"] = thoughts
            return {
                "candidates": [candidate],
                "usageMetadata": usage,
                "modelVersion": version,
                "responseId": response_id,
            }

        tools = [f for tool in body.get("tools") or [] for f in tool.get("functionDeclarations") or []]
        last = (body.get("contents") or [{}])[-1].get("parts") or [{}]
        if tools and "functionResponse" not in last[0]:
            call = chunk("", tokens_out, "STOP", {"functionCall": {"name": tools[0]["name"], "args": {}}})
            return self.send_sse([sse(call)]) if streamed else self.send_json(200, call)
        if not streamed:
            return self.send_json(200, chunk("".join(TEXT), tokens_out, "STOP", grounding=GROUNDING))
        # A stream sends the sources with the text citing them, then all the grounding on its last chunk.
        sources = {k: GROUNDING[k] for k in ("groundingChunks", "groundingSupports")}
        events = [sse(chunk(piece, 0, grounding=sources if i == len(TEXT) - 2 else None)) for i, piece in enumerate(TEXT[:-1])]
        events.append(sse(chunk(TEXT[-1], tokens_out, "STOP", grounding=GROUNDING)))
        failure = sse({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}})
        self.stream(fake, events, failure)

    # --- shared ---------------------------------------------------------

    def stream(self, fake: "FakeProvider", events: List[str], failure_event: str, headers: Optional[Dict[str, str]] = None) -> None:
        """Sends the events, or two of them and then the requested failure."""
        failure = fake.take_stream_failure()
        if failure == "event":
            events = events[:2] + [failure_event]
        self.send_sse(events, disconnect_after=2 if failure == "disconnect" else None, headers=headers, delay=fake.event_delay)


# Grounding with Google Search, as the Gemini API answers a request with the googleSearch tool.
GEMINI_SEARCH_QUERIES = ["who won euro 2024", "euro 2024 final score"]
GROUNDING: Dict[str, Any] = {
    "webSearchQueries": GEMINI_SEARCH_QUERIES,
    "searchEntryPoint": {
        "renderedContent": '<style>.container{display:flex}</style><div class="container">'
        '<a class="chip" href="https://www.google.com/search?q=who+won+euro+2024">who won euro 2024</a></div>'
    },
    "groundingChunks": [
        {"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQE1", "title": "uefa.com"}},
        {"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQH7", "title": "aljazeera.com"}},
    ],
    "groundingSupports": [
        {"segment": {"startIndex": 0, "endIndex": 5, "text": "Hello"}, "groundingChunkIndices": [0, 1], "confidenceScores": [0.97, 0.91]}
    ],
}


class FakeProvider(Server):
    handler = ProviderHandler

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = 0
        self._run = secrets.token_hex(3)
        self.requests: List[Dict[str, Any]] = []
        self.tokens = (1234, 567)
        self.anthropic_cache = (0, 0)
        # OpenAI's cached_tokens and Gemini's cachedContentTokenCount (parts of the prompt), and
        # reasoning tokens (OpenAI: part of completion_tokens; Gemini: thoughtsTokenCount, apart).
        self.cached_in = 0
        self.reasoning = 0
        self.event_delay = 0.0
        self.fail_status: Optional[int] = None
        self.stream_failure: Optional[str] = None
        self._billing_defaults()

    def _billing_defaults(self) -> None:
        # Billing modes: audio parts of the prompt and completion (OpenAI; Gemini the prompt's),
        # Anthropic's 1-hour part of the cache writes and web searches, Gemini's trafficType.
        self.audio = (0, 0)
        self.anthropic_1h = 0
        self.web_searches = 0
        self.traffic_type = "ON_DEMAND"

    def unique(self, prefix: str) -> str:
        """An id no other response has, in this fake or another one, as the real APIs' ids (prefix kept for the look)."""
        with self._lock:
            self._ids += 1
            return f"{prefix}{self._run}{self._ids:06d}"

    def record(self, path: str, headers: Dict[str, str], body: Any) -> None:
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})

    def take_failure(self) -> Optional[int]:
        with self._lock:
            status, self.fail_status = self.fail_status, None
            return status

    def take_stream_failure(self) -> Optional[str]:
        with self._lock:
            failure, self.stream_failure = self.stream_failure, None
            return failure

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.tokens = (1234, 567)
            self.anthropic_cache = (0, 0)
            self.cached_in = 0
            self.reasoning = 0
            self.event_delay = 0.0
            self.fail_status = None
            self.stream_failure = None
            self._billing_defaults()
