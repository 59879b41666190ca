"""One attempt at a call, wherever it runs (the run's process or a worker of
critique.llm.workers): the fields of a reply, and what a failed attempt means - worth a retry
or not, and how long the provider asked us to wait."""

from __future__ import annotations

import email.utils
import random
import time


class MalformedResponse(Exception):
    """The provider answered 200 with a body that is not a chat completion."""


class EmptyReply(Exception):
    """The provider answered with no content (reasoning only, or a tool call instead of a message): no answer of
    the model, so never cached nor logged as one; retried like a malformed body, then an error (a rerun asks
    again)."""


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
        if not (text or "").strip() and choice.finish_reason != "length":
            what = "a tool call" if getattr(choice.message, "tool_calls", None) else "no content"
            raise EmptyReply(f"the reply has {what} (finish_reason {choice.finish_reason!r}); nothing to read an "
                             "answer from")
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
    if isinstance(error, (MalformedResponse, EmptyReply, TimeoutError, ConnectionError, litellm.Timeout,
                          litellm.APIConnectionError, litellm.RateLimitError, litellm.InternalServerError,
                          litellm.ServiceUnavailableError)):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status in RETRY_STATUS or status >= 500)


# Errors no retry can cure, by the exception's name (litellm's, as ``describe`` writes it) or by words of its
# text (a provider that reports missing credentials as a server error), each with what to do about it.
_INCURABLE_NAMES = {
    "AuthenticationError": "check the provider's key (its environment variable, or api_key) and the --api-base",
    "PermissionDeniedError": "check that the key may use this model",
    "NotFoundError": "check the model name (litellm's provider/model) and the --api-base",
    "UnsupportedParamsError": "a setting the provider does not take; change it (--reasoning-effort, "
                              "--temperature, --max-tokens, --seed)",
    "BadRequestError": "the provider rejected the request as sent; check the model name and the settings",
}
_INCURABLE_WORDS = {
    "missing credentials": _INCURABLE_NAMES["AuthenticationError"],
    "invalid api key": _INCURABLE_NAMES["AuthenticationError"],
    "incorrect api key": _INCURABLE_NAMES["AuthenticationError"],
    "credentials encoded in url": "take the credentials out of the --api-base URL and give the key as the "
                                  "provider's key variable",
}


def incurable(text: str) -> str | None:
    """What to do about a failed call whose error (``describe``'s text) no retry can cure: bad credentials, an
    unknown model, a rejected parameter; None when a retry may help or it is not known."""
    name = text.split(":", 1)[0].strip()
    if name in _INCURABLE_NAMES:
        return _INCURABLE_NAMES[name]
    lowered = text.lower()
    return next((hint for words, hint in _INCURABLE_WORDS.items() if words in lowered), None)


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


def outage(model: str, streak: list[str]) -> str:
    """Why a client stops after ``streak``, the errors of the calls that failed in a row (FAILURES_IN_A_ROW)."""
    kinds = len(set(streak))
    alike = "the same error" if kinds == 1 else f"{kinds} different errors"
    return (f"{model}: {len(streak)} calls in a row failed, with {alike} (the last: {streak[-1]}); the run stopped "
            "rather than fail every call. What is logged stays; run the same command again to resume")
