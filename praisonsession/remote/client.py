"""``RemoteClient``: HTTP to one session server (``praisonsession serve``, or PraisonAI's
``Agent.launch``), over one pooled ``requests.Session``.

Blocking on purpose, like the LLM client: sessions call it through
:func:`praisonsession._internal.runtime.offload`. Each request waits at most what is left of the
calling operation's ``timeout``. Retries (tenacity, bounded by attempts and by that deadline)
happen only where they cannot apply anything twice:

- a connection that was never made (refused, or no answer to the connect): always;
- a dropped connection or an HTTP 5xx: only for a request that is safe to repeat (a read, a
  plain set) or that carries an ``Idempotency-Key`` the server honours (a chat turn on a
  praisonsession server).

The token goes in an ``Authorization: Bearer`` header and nowhere else: not in a repr, an
error message or a log line.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import requests
import tenacity

from .._internal.json_data import decode, dumps
from .._internal.redaction import clean_secret, is_secret_parameter, redact_text, redact_url
from .._internal.retry import RetryPolicy
from .._internal.runtime import expired, remaining
from ..errors import (
    AgentURLError,
    InvalidValueError,
    PraisonSessionError,
    RemoteAuthError,
    RemoteConnectionError,
    RemoteRequestError,
    RemoteServerError,
)
from .attempts import Attempts
from .wire import (
    HEALTH,
    IDEMPOTENCY_HEADER,
    SERVER_NAME,
    decode_error,
    server_message,
    store_path,
)

__all__ = ["RemoteClient", "ServerInfo", "normalize_agent_url"]

#: Attempts per request at most (the first one included), and the longest wait between two.
MAX_ATTEMPTS = 6
#: Retries after an HTTP 5xx answer: the server has retried its store already.
MAX_ANSWERED_RETRIES = 2
MAX_BACKOFF = 2.0
FIRST_BACKOFF = 0.1
#: Waits of 0.1, 0.2, 0.4 ... s (jittered, at most 2 s), never past the operation's deadline.
RETRIES = RetryPolicy(MAX_ATTEMPTS, FIRST_BACKOFF, MAX_BACKOFF)
#: How much sooner than the operation's deadline a request gives up.
DEADLINE_MARGIN = 0.2


def normalize_agent_url(agent_url: Any) -> str:
    """``agent_url`` with ``http://`` prepended when it names no scheme, and no trailing
    slash; refused unless it is an http(s) URL with a host (AgentURLError: a ConnectionError,
    as PraisonAI raises when it cannot connect to such a URL)."""
    if not isinstance(agent_url, str):
        raise InvalidValueError(
            "agent_url must be a URL such as 'http://127.0.0.1:8000/agent', got "
            f"{type(agent_url).__name__}."
        )
    url = agent_url.strip()
    if "://" not in url:
        url = "http://" + url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise AgentURLError(
            f"agent_url {redact_url(url)!r} is not a valid URL: {str(exc).rstrip('.')}. "
            "Use one such as 'http://127.0.0.1:8000/agent'.",
            url=redact_url(url),
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AgentURLError(
            f"Cannot connect to agent_url {redact_url(url)!r}: it is not an http(s) URL with "
            "a host. Use one such as 'http://127.0.0.1:8000/agent' (http:// is added when "
            "the URL names no scheme).",
            url=redact_url(url),
        )
    return url.rstrip("/")


def _split_query(url: str) -> tuple[str, list[tuple[str, str]], str | None]:
    """``url`` without its query, the query's plain parameters, and the value of a secret one
    (``?token=...``), which goes in the Authorization header instead of every logged URL.

    Kept in the URL, a query would also end up in the middle of the paths built from it
    (``/agent?x=1/health``); requests appends these parameters to each request instead.
    """
    parts = urlsplit(url)
    if not parts.query:
        return url, [], None
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    plain = [(name, value) for name, value in pairs if not is_secret_parameter(name)]
    secrets = [value for name, value in pairs if is_secret_parameter(name)]
    if len(secrets) > 1:
        raise InvalidValueError(
            f"agent_url {redact_url(url)!r} carries {len(secrets)} secret parameters; pass the "
            "server's token once, as api_key."
        )
    bare = urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")
    return bare, plain, secrets[0] if secrets else None


@dataclass(frozen=True)
class ServerInfo:
    """What the connection test learned: whose server it is, and its agent paths."""

    keeps_sessions: bool
    version: str = ""
    endpoints: list[str] = field(default_factory=list)


class _Transient(Exception):
    """An answer or failure worth another attempt (internal)."""

    def __init__(self, cause: BaseException | None, response: requests.Response | None) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.response = response


class _OutOfTime(Exception):
    """No time left for another attempt (internal)."""


class RemoteClient:
    """Requests to the session server at ``agent_url`` (the agent's own URL, as PraisonAI takes
    it: ``http://host:8000/agent``)."""

    def __init__(self, agent_url: str, *, token: str | None, timeout: float) -> None:
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise InvalidValueError("api_key must be a non-empty str (the server's token).")
        if token is not None:
            token = clean_secret(token, "The session server's token (api_key)")
        url = normalize_agent_url(agent_url)
        self.url, self._params, lifted = _split_query(url)
        if lifted is not None:  # sent as a header: a URL is written to logs, a header is not
            lifted = clean_secret(lifted, f"The token in agent_url {redact_url(url)!r}")
            if token is not None and token != lifted:
                raise InvalidValueError(
                    f"agent_url {redact_url(url)!r} carries a token in its query and api_key "
                    "(or PRAISONSESSION_REMOTE_TOKEN) gives another; pass it once, as api_key."
                )
            token = lifted
        self.shown_url = redact_url(url)
        self.timeout = timeout
        self.server: ServerInfo | None = None
        self._token = token
        self._http = requests.Session()
        from .._version import __version__

        self._http.headers.update(
            {"Accept": "application/json", "User-Agent": f"praisonsession/{__version__}"}
        )
        if token:
            self._http.headers["Authorization"] = f"Bearer {token}"

    def __repr__(self) -> str:
        return f"RemoteClient({self.shown_url!r})"

    # -- the connection test --------------------------------------------------------------

    def check_connection(self, *, attempts: Attempts | None = None) -> ServerInfo:
        """PraisonAI's test: ``GET <agent_url>/health``; if that is not 200, ``HEAD
        <agent_url>`` answering 200 or 405 (a POST-only route) will do."""
        attempts = attempts or Attempts()
        probe = self.url if "/health" in self.url else self.url + HEALTH
        response = self._send("GET", probe, attempts, safe=True)
        if response.status_code == 200:
            body = _json_or_none(response)
            ours = isinstance(body, dict) and body.get("server") == SERVER_NAME
            server = ServerInfo(
                keeps_sessions=ours,
                version=str(body.get("version", "")) if ours else "",
                endpoints=list(body.get("endpoints") or []) if isinstance(body, dict) else [],
            )
            if ours and (urlsplit(self.url).path or "/") not in server.endpoints:
                raise self._no_agent_here(server.endpoints)
            self.server = server
            return server
        if response.status_code == 404:
            self._check_path(probe, attempts)
        fallback = self._send("HEAD", self.url, attempts, safe=True)
        if fallback.status_code in (200, 405):
            self.server = ServerInfo(keeps_sessions=False)
            return self.server
        if fallback.status_code in (401, 403):
            raise self._auth_error(fallback.status_code)
        raise RemoteConnectionError(
            f"The remote agent at {self.shown_url} answered HTTP {response.status_code} to "
            f"GET {redact_url(probe)} and HTTP {fallback.status_code} to HEAD {self.shown_url}. "
            "Check agent_url: the host, the port and the agent's path (praisonsession serve "
            "uses --path, /agent by default).",
            url=self.shown_url,
            status=fallback.status_code,
        )

    def _check_path(self, probe: str, attempts: Attempts) -> None:
        """Our server answers 404 at an agent path it does not host: say which ones it has."""
        parts = urlsplit(self.url)
        root = f"{parts.scheme}://{parts.netloc}{HEALTH}"
        if root == probe:
            return
        response = self._send("GET", root, attempts, safe=True)
        body = _json_or_none(response) if response.status_code == 200 else None
        if isinstance(body, dict) and body.get("server") == SERVER_NAME:
            raise self._no_agent_here(list(body.get("endpoints") or []))

    def _no_agent_here(self, endpoints: list[str]) -> RemoteRequestError:
        parts = urlsplit(self.url)
        return RemoteRequestError(
            f"The session server at {redact_url(f'{parts.scheme}://{parts.netloc}')} hosts no "
            f"agent at {parts.path or '/'!r}; its agent paths are: "
            f"{', '.join(endpoints) or 'none'}. Put one of them at the end of agent_url, "
            f"e.g. {redact_url(f'{parts.scheme}://{parts.netloc}')}{(endpoints or ['/agent'])[0]}.",
            url=self.shown_url,
            status=404,
        )

    # -- requests ---------------------------------------------------------------------------

    @property
    def keeps_sessions(self) -> bool:
        return self.server is not None and self.server.keeps_sessions

    def chat(
        self,
        session_id: str,
        user_id: str,
        query: str,
        extra: dict[str, Any],
        *,
        attempts: Attempts | None = None,
    ) -> str:
        """One turn: ``POST <agent_url>`` with PraisonAI's body; the agent's reply."""
        body = {"query": query, "session_id": session_id, "user_id": user_id, **extra}
        headers = {}
        if self.keeps_sessions:  # our server applies a retried turn once
            headers[IDEMPOTENCY_HEADER] = uuid.uuid4().hex
        attempts = attempts or Attempts()
        response = self._send(
            "POST", self.url, attempts, body, safe=self.keeps_sessions, headers=headers
        )
        self._raise_for(response)
        result = _json_or_none(response)
        if result is None:
            return response.text
        if isinstance(result, dict):
            for key in ("response", "final_response"):  # the latter: PraisonAI's AgentTeam
                if key in result:
                    return str(result[key])
        return str(result)

    def store(
        self, operation: str, body: dict[str, Any], safe: bool, *, attempts: Attempts | None = None
    ) -> Any:
        """One store operation on the server; its JSON result."""
        if not self.keeps_sessions:
            raise RemoteRequestError(
                f"The remote agent at {self.shown_url} keeps no session state: it is not a "
                "praisonsession server (PraisonAI's Agent.launch, say), so state calls cannot "
                "work there; only chat() does. Serve the agent with `praisonsession serve` to "
                "keep state and one history per session_id.",
                url=self.shown_url,
            )
        path = store_path(self.url, operation)
        response = self._send("POST", path, attempts or Attempts(), body, safe=safe)
        self._raise_for(response)
        payload = _json_or_none(response)
        if not isinstance(payload, dict) or "result" not in payload:
            raise RemoteServerError(
                f"The session server at {self.shown_url} answered {operation!r} with something "
                "that is not a result; is agent_url a praisonsession server?",
                url=self.shown_url,
                status=response.status_code,
            )
        return payload["result"]

    def close(self) -> None:
        self._http.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _raise_for(self, response: requests.Response) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        if status in (401, 403):
            raise self._auth_error(status, _json_or_none(response))
        body = _json_or_none(response)
        raise decode_error(status, body if body is not None else response.text, self.shown_url)

    def _auth_error(self, status: int, body: Any = None) -> RemoteAuthError:
        """The refusal, with the server's own explanation when it gave one: a 403 means the
        token was accepted but does not reach what was asked, and the server says why."""
        sent = "a token" if self._token else "no token"
        said = server_message(body).rstrip(". ")
        explained = f" ({said})" if said else ""
        if status == 403:
            advice = (
                "The token is valid but does not reach this: use a token issued for that user, "
                "or the server's admin token."
            )
        else:
            advice = (
                "Pass the server's token: Session(agent_url=..., api_key=...) or the "
                "PRAISONSESSION_REMOTE_TOKEN environment variable."
            )
        return RemoteAuthError(
            f"The session server at {self.shown_url} refused the request with HTTP {status}"
            f"{explained}; {sent} was sent. {advice}",
            url=self.shown_url,
            status=status,
        )

    def _send(
        self,
        method: str,
        url: str,
        attempts: Attempts,
        body: Any = None,
        *,
        safe: bool,
        headers: dict[str, str] | None = None,
    ) -> requests.Response:
        """One request, with bounded retries; a 5xx that outlives them is returned as is.
        ``attempts`` is the call's record: no attempt starts once the caller stopped it."""
        data = None
        if body is not None:
            data = dumps(body).encode("utf-8")  # a lone surrogate goes as \\uXXXX, as stored
            headers = {**(headers or {}), "Content-Type": "application/json"}
        started = time.monotonic()
        try:  # the usual case, answered at once: no retry machinery to set up
            return self._attempt(method, url, data, headers, safe, attempts)
        except _Transient as exc:
            failures: list[_Transient] = [exc]
        except _OutOfTime:  # the caller stopped waiting before this request began
            raise expired(f"a request to {self.shown_url}") from None
        took = [time.monotonic() - started]  # how long the last attempt took
        first = [True]

        def attempt() -> requests.Response:
            if first[0]:  # the attempt made above: tenacity counts it and waits after it
                first[0] = False
                raise failures[0]
            if failures and remaining(self.timeout) <= 0:
                raise _OutOfTime  # the operation's deadline came first: report the last failure
            began = time.monotonic()
            try:
                return self._attempt(method, url, data, headers, safe, attempts)
            except _Transient as exc:
                failures.append(exc)
                raise
            finally:
                took[0] = time.monotonic() - began

        def stop(state: tenacity.RetryCallState) -> bool:  # besides RETRIES' attempts
            answered = sum(1 for failure in failures if failure.response is not None)
            left = remaining(float("inf"))
            return (
                answered > MAX_ANSWERED_RETRIES
                or left <= max(FIRST_BACKOFF, took[0])  # no time for another such attempt
            )

        retrying = RETRIES.retrying(
            lambda exc: isinstance(exc, _Transient), stop=stop, sleep=attempts.pause
        )
        try:
            return retrying(attempt)
        except (_Transient, _OutOfTime):
            failed = failures[-1]
            if failed.response is not None:
                return failed.response
            elapsed = time.monotonic() - started
            raise self._unreachable(failed.cause, len(failures), elapsed) from None

    def _attempt(
        self,
        method: str,
        url: str,
        data: bytes | None,
        headers: dict[str, str] | None,
        safe: bool,
        attempts: Attempts,
    ) -> requests.Response:
        if not attempts.begin():
            raise _OutOfTime  # the caller stopped waiting: it has its answer
        never_sent = False
        try:
            response = self._request(method, url, data, headers)
        except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema) as exc:
            never_sent = True
            raise RemoteConnectionError(
                f"Cannot send to {self.shown_url}: {redact_text(str(exc), self._token)}. "
                "Fix agent_url.",
                url=self.shown_url,
            ) from None
        except requests.exceptions.ConnectionError as exc:
            never_sent = _never_sent(exc)
            if safe or never_sent:
                raise _Transient(exc, None) from None
            raise self._unreachable(exc, 1, 0.0, applied_maybe=True) from None
        except requests.exceptions.RequestException as exc:  # a read timeout: not retried
            raise self._unreachable(exc, 1, 0.0, applied_maybe=not safe) from None
        finally:
            attempts.end(never_sent=never_sent)
        if response.status_code >= 500 and safe and _transient_answer(response):
            raise _Transient(None, response)
        return response

    def _request(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str] | None
    ) -> requests.Response:
        # end a little before the operation's deadline, so that a session on an event loop
        # gets this typed error rather than a bare OperationTimeoutError from the deadline
        left = remaining(self.timeout)
        left = max(0.001, left - min(DEADLINE_MARGIN, left / 10))
        return self._http.request(
            method, url, params=self._params, data=data, headers=headers, timeout=left
        )

    def _unreachable(
        self, exc: BaseException | None, attempts: int, elapsed: float, applied_maybe: bool = False
    ) -> PraisonSessionError:
        if isinstance(exc, requests.exceptions.Timeout):
            last = f"no answer within timeout={self.timeout:g} s"
        elif isinstance(exc, requests.exceptions.ConnectionError):
            last = f"could not connect ({_reason(exc)})"
        else:
            last = redact_text(f"{type(exc).__name__}: {exc}", self._token)
        tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
        message = (
            f"The session server at {self.shown_url} gave no answer ({last}; {tries} in "
            f"{elapsed:.1f} s). Check that it is running (praisonsession serve ...), that "
            "agent_url names its host and port, and that nothing blocks the connection."
        )
        if isinstance(exc, requests.exceptions.Timeout):
            message += " Pass a larger timeout= if its agent is legitimately slow."
        if applied_maybe:
            message += (
                " The connection broke after the request was sent, so it may or may not have "
                "been applied; it was not repeated."
            )
        return RemoteConnectionError(message, url=self.shown_url)


def _never_sent(exc: requests.exceptions.ConnectionError) -> bool:
    """True when the connection was never made, so the request cannot have been applied."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    import urllib3.exceptions

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, urllib3.exceptions.NewConnectionError):
            return True
        if isinstance(cause, urllib3.exceptions.MaxRetryError):
            cause = cause.reason
            continue
        cause = cause.args[0] if cause.args and isinstance(cause.args[0], BaseException) else None
    return False


def _reason(exc: requests.exceptions.ConnectionError) -> str:
    text = str(exc)
    for reason in ("Connection refused", "Name or service not known", "Connection reset"):
        if reason in text:
            return reason.lower()
    return type(exc).__name__


def _transient_answer(response: requests.Response) -> bool:
    """A 5xx is worth another attempt unless our server says the error is not transient."""
    if response.status_code == 501:
        return False
    body = _json_or_none(response)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return error.get("type") == "StoreUnavailableError"
    return True


def _json_or_none(response: requests.Response) -> Any:
    try:
        return decode(response.content)
    except (ValueError, UnicodeDecodeError):
        return None
