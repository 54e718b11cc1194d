"""A model's reply as the judge reads one: code in a fenced Rust block."""


def fenced(code: str) -> str:
    return f"```rust\n{code}\n```"
