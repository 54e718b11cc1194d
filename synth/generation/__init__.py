"""LangGraph graphs: thin wiring of plain stages (back-translation, rejection sampling)."""
