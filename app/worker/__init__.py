"""Background job runners: the worker and scheduler, and each job kind they run."""
