"""Tracing is off without an endpoint, and says so in one line when the extra is missing."""

import importlib.util
import logging

import pytest
from fastapi import FastAPI

from app.telemetry.tracing import configure_tracing


def test_no_endpoint_configures_nothing():
    assert configure_tracing(FastAPI(), None) is False


@pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry.sdk") is not None, reason="the otel extra is installed"
)
def test_an_endpoint_without_the_extra_warns_once_and_serves_on(caplog):
    with caplog.at_level(logging.WARNING, logger="app.telemetry.tracing"):
        assert configure_tracing(FastAPI(), "http://127.0.0.1:4318/v1/traces") is False
    [warning] = caplog.records
    assert "otel extra is not installed" in warning.getMessage()
