"""OpenTelemetry glue, imported by ``tideq`` only when the ``opentelemetry`` package is installed
(the ``otel`` extra: ``opentelemetry-api``; the application sets up the SDK as usual). On import
it registers two hooks with the native module:

- producers: an enqueue without ``trace=`` carries the current span's context (the global
  propagator's ``traceparent``/``tracestate``); outside a span it carries none;
- workers started once an SDK set a tracer provider: each job handler (``work``, ``run``, each
  task of ``work_tasks``; not batch handlers) runs inside a span ``"<queue> process"`` of kind
  CONSUMER from the tracer ``"tideq"``, whose
  parent is the job's trace context (the producer's span), with the messaging attributes of the
  OpenTelemetry semantic conventions. The span is current while the handler runs, so the spans
  the handler makes are its children; an exception from the handler is recorded on it (status
  ERROR) and re-raised.

Only ``opentelemetry-api`` is used. Without an SDK (or with none configured yet when a worker
starts) handlers run unwrapped: no-op spans would cost a worker half its speed for nothing.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Callable, Optional

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tideq._tideq import __version__, _set_otel_hooks

if TYPE_CHECKING:
    from tideq._tideq import Job

__all__ = ["inject", "tracing", "wrap"]

_HEADERS = ("traceparent", "tracestate")
# The parent of a job's span when the job carries no trace context: none (a new trace).
_ROOT = Context()


def inject() -> Optional[dict[str, str]]:
    """The current span's trace context as the W3C headers a job envelope carries, or None when
    there is no valid current span (checked first: the common case costs one context lookup)."""
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    headers = {k: v for k, v in carrier.items() if k in _HEADERS}
    return headers if "traceparent" in headers else None


def tracing() -> bool:
    """Whether an OpenTelemetry SDK set a tracer provider. The API alone (a dependency of many
    packages) gives no-op spans, and running each job in one would cost a worker much of its
    speed for nothing: handlers then run as they are. Checked when a worker starts."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def _attributes(job: Job, queue: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": "tideq",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": queue,
        "messaging.message.id": job.id,
        "tideq.attempt": job.attempt,
    }
    if job.task is not None:
        attributes["tideq.task"] = job.task
    return attributes


def _interrupted(span: Span, exc: BaseException) -> None:
    """Records an exception that is not an ``Exception`` (``asyncio.CancelledError`` of a handler
    cancelled for its timeout, a cancel or the end of the grace period; ``KeyboardInterrupt``),
    which ``start_as_current_span`` leaves unrecorded."""
    if isinstance(exc, Exception) or isinstance(exc, GeneratorExit):
        return
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def wrap(handler: Callable[[Job], Any], queue: str) -> Callable[[Job], Any]:
    """``handler`` running inside the job's consumer span. An ``async def`` handler gives an
    ``async def`` (the worker runs coroutine functions on its event loop), a plain one a plain
    function; one that returns an awaitable keeps its span open until the awaitable is done."""
    if not callable(handler):
        return handler  # the worker raises its own TypeError
    if not tracing():
        return handler
    tracer = trace.get_tracer("tideq", __version__)
    name = f"{queue} process"

    def span(job: Job, end_on_exit: bool = True) -> Any:
        # A job without a trace context starts a trace of its own (nothing to extract); the span
        # is made current with use_span, which costs less than start_as_current_span's layers.
        headers = job.trace
        started = tracer.start_span(
            name,
            context=propagate.extract(headers) if headers else _ROOT,
            kind=SpanKind.CONSUMER,
            attributes=_attributes(job, queue),
        )
        return trace.use_span(started, end_on_exit=end_on_exit)

    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def process_async(job: Job) -> Any:
            with span(job) as current:
                try:
                    return await handler(job)
                except BaseException as exc:
                    _interrupted(current, exc)
                    raise

        return process_async

    @functools.wraps(handler)
    def process(job: Job) -> Any:
        current: Optional[Span] = None
        try:
            with span(job, end_on_exit=False) as current:
                try:
                    out = handler(job)
                except BaseException as exc:
                    _interrupted(current, exc)
                    raise
        except BaseException:
            if current is not None:
                current.end()
            raise
        assert current is not None
        if inspect.isawaitable(out):
            # A plain function that returned an awaitable: the worker awaits it, in the span.
            return _finish(current, out)
        current.end()
        return out

    return process


async def _finish(span: Span, awaitable: Awaitable[Any]) -> Any:
    with trace.use_span(span, end_on_exit=True):
        try:
            return await awaitable
        except BaseException as exc:
            _interrupted(span, exc)
            raise


_set_otel_hooks(inject, wrap)
