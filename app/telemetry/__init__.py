"""What the service tells its operators: Prometheus metrics, logs, traces and heap release."""
