"""The loopback provider server lives in benchmarks/ (the refresh benchmark uses it too)."""
from benchmarks.fixtures.llm_server import FakeLLMServer  # noqa: F401
