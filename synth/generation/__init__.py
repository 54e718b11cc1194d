"""Rows a model writes and the compiler checks: back-translation and rejection sampling (LangGraph
graphs wiring plain functions)."""
