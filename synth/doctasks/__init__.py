"""The doc lane: documented functions as tasks, no LLM needed."""
