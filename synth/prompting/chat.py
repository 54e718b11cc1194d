"""One chat template (ChatML, prompts/chat_template.jinja) and one system prompt
(prompts/system.txt) for training, serving and evaluation. `render` is the reference; the same
template is installed on the tokenizer, and a test compares the bytes of all three paths."""
from __future__ import annotations

import functools

from synth.prompting.templates import PROMPTS, system_prompt

IM_START, IM_END = "<|im_start|>", "<|im_end|>"


@functools.cache
def chat_template() -> str:
    return (PROMPTS / "chat_template.jinja").read_text()


def with_system(messages: list[dict]) -> list[dict]:
    """The one system prompt first, unless the row brings its own (it then starts with it)."""
    if messages and messages[0]["role"] == "system":
        return list(messages)
    return [{"role": "system", "content": system_prompt()}, *messages]


def render(messages: list[dict], add_generation_prompt: bool = False) -> str:
    text = "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages)
    return text + (f"{IM_START}assistant\n" if add_generation_prompt else "")


def serve_prompt(user: str, shots: list[tuple[str, str]] | tuple = ()) -> str:
    """What serving and evaluation send the model for a user request; `shots`: worked examples
    (request, answer) shown as earlier turns of the conversation."""
    turns = [turn for request, answer in shots
             for turn in ({"role": "user", "content": request}, {"role": "assistant", "content": answer})]
    return render(with_system([*turns, {"role": "user", "content": user}]), add_generation_prompt=True)


def row_messages(row: dict) -> list[dict]:
    """A row's conversation: `messages` win; else prompt/response; else the Mens aliases
    instruction + blank line + input as the prompt, output as the response."""
    if row.get("messages"):
        return [{"role": m["role"], "content": m["content"]} for m in row["messages"]]
    if "prompt" in row and "response" in row:
        prompt, response = row["prompt"], row["response"]
    elif "instruction" in row:
        prompt = row["instruction"] + (f"\n\n{row['input']}" if row.get("input") else "")
        response = row.get("output", "")
    else:
        raise ValueError(f"row {row.get('id', '?')}: no messages, prompt/response or instruction/output")
    return [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
