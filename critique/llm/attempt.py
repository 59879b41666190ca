"""One attempt at a call, wherever it runs (the run's process or a worker of
critique.llm.workers): the fields of a reply, and what a failed attempt means - worth a retry
or not, and how long the provider asked us to wait."""

from __future__ import annotations

import email.utils
import random
import time


class MalformedResponse(Exception):
    """The provider answered 200 with a body that is not a chat completion."""


class CallFailed(Exception):
    """An attempt that failed in a worker process, classified there (a litellm exception may not pickle)."""

    def __init__(self, worth_retry: bool, retry_after: float | None, text: str):
        super().__init__(text)
        self.worth_retry, self.retry_after, self.text = worth_retry, retry_after, text


def describe(error: BaseException) -> str:
    """The error's text as a call record holds it (before redaction)."""
    return error.text if isinstance(error, CallFailed) else f"{type(error).__name__}: {error}"


def fields_of(response) -> dict:
    """The LLMResult fields of a chat completion; MalformedResponse if it is not one."""
    try:
        usage = getattr(response, "usage", None)
        details = getattr(usage, "completion_tokens_details", None)
        choice = response.choices[0]
        text = choice.message.content
        if text is not None and not isinstance(text, str):
            raise TypeError(f"message content is {type(text).__name__}")
        return {
            "text": text,
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "reasoning_tokens": int(getattr(details, "reasoning_tokens", 0) or 0),
            "finish_reason": choice.finish_reason,
        }
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
        raise MalformedResponse(f"not a chat completion ({type(exc).__name__}: {exc})") from None


def context_exceeded(error: BaseException) -> bool:
    """The provider refused the prompt as longer than the model's context (litellm maps the providers'
    own errors to ContextWindowExceededError; a worker process passes its name in the text)."""
    import litellm

    if isinstance(error, CallFailed):
        return error.text.startswith("ContextWindowExceededError")
    return isinstance(error, litellm.ContextWindowExceededError)


# HTTP statuses worth another attempt: timeout, conflict, too early, rate limit, and 5xx.
RETRY_STATUS = frozenset({408, 409, 425, 429})


def retryable(error: BaseException) -> bool:
    """A rate limit, a server error, a timeout, a dropped connection or a malformed body; not a bad request."""
    import litellm

    if isinstance(error, CallFailed):
        return error.worth_retry
    if isinstance(error, (MalformedResponse, TimeoutError, ConnectionError, litellm.Timeout,
                          litellm.APIConnectionError, litellm.RateLimitError, litellm.InternalServerError,
                          litellm.ServiceUnavailableError)):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status in RETRY_STATUS or status >= 500)


def retry_after_of(error: BaseException) -> float | None:
    """Seconds the provider asked us to wait (Retry-After: seconds or an HTTP date), or None."""
    if isinstance(error, CallFailed):
        return error.retry_after
    headers = getattr(error, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(error, "response", None), "headers", None)
    try:
        value = headers.get("retry-after") if headers is not None else None
    except Exception:  # noqa: BLE001 - a header object of another shape: no advice
        return None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_tz(value)
        return max(0.0, email.utils.mktime_tz(when) - time.time()) if when else None


def backoff(retries: int, first: float, cap: float, asked: float | None) -> float:
    """Seconds to wait before retry number ``retries + 1``: what the provider asked (up to ten
    minutes), else ``first * 2**retries`` capped at ``cap``, with up to 25% jitter."""
    if asked is not None and asked <= 600:
        return asked
    return min(cap, first * 2 ** retries) * (1 + 0.25 * random.random())
