"""Background work: the worker that claims jobs, the scheduler, each job kind, and the LLM
client consolidation calls."""
