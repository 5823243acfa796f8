"""Speed: throughput and latency of the service, its statements and the model."""
