"""LLM-driven consolidation of episodes into facts and rules."""
