"""OpenTelemetry traces of every request when `otlp_endpoint` is set (the optional `otel`
extra: `pip install 'engram[otel]'`)."""

import logging

from fastapi import FastAPI

logger = logging.getLogger(__name__)


def configure_tracing(app: FastAPI, otlp_endpoint: str | None) -> bool:
    """Export a span per request to the OTLP/HTTP endpoint; False when off or not installed."""
    if not otlp_endpoint:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter,
        )
        from opentelemetry.instrumentation.fastapi import (
            FastAPIInstrumentor,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
        )
    except ImportError:
        logger.warning(
            "otlp_endpoint is set but the otel extra is not installed "
            "(pip install 'engram[otel]'): no traces are exported"
        )
        return False
    provider = TracerProvider(resource=Resource.create({"service.name": "engram"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint)))
    trace.set_tracer_provider(provider)
    FastAPIInstrumentor.instrument_app(app, tracer_provider=provider)
    logger.info("traces exported to %s", otlp_endpoint)
    return True
