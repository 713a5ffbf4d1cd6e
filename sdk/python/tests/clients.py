"""Real provider clients pointed at the fake provider, with the libraries' own retries off."""

from __future__ import annotations

import anthropic
import openai
from google import genai
from google.genai import types


def openai_client(url: str, **options) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=url + "/v1", max_retries=0, **options)


def openai_async(url: str, **options) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url=url + "/v1", max_retries=0, **options)


def anthropic_client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=url, max_retries=0)


def anthropic_async(url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=url, max_retries=0)


def gemini_client(url: str) -> genai.Client:
    return genai.Client(api_key="gemini-test", http_options=types.HttpOptions(base_url=url))
