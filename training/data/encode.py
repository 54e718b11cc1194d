"""Token ids and labels for one conversation: loss on the whole assistant answer (and its end
marker), none on the prompt. Truncation keeps the answer: the prompt is trimmed from its middle
first; the answer's tail is cut only when it needs more than half the window, and a row left with no
supervised token is not trained (the caller counts it). The answer keeps up to half the window;
the system turn is trimmed only after the user turns."""
from __future__ import annotations

from dataclasses import dataclass

from synth.prompting.chat import IM_END, render, with_system

IGNORE = -100
MIN_PROMPT_TOKENS = 16  # of the user turns, trimming always keeps this many (both ends)


@dataclass
class Encoded:
    input_ids: list[int]
    labels: list[int]
    supervised: int
    prompt_trimmed: int  # prompt tokens removed
    answer_trimmed: int  # answer tokens removed

    @property
    def trainable(self) -> bool:
        return self.supervised > 0


def encode(messages: list[dict], tokenizer, max_len: int) -> Encoded:
    conversation = with_system(messages)
    if conversation[-1]["role"] != "assistant":
        raise ValueError("the last message must be the assistant's answer")
    system_ids = tokenizer(render(conversation[:1]), add_special_tokens=False)["input_ids"]
    rest_ids = tokenizer(render(conversation[1:-1], add_generation_prompt=True), add_special_tokens=False)["input_ids"]
    answer = tokenizer(conversation[-1]["content"] + IM_END + "\n", add_special_tokens=False)["input_ids"]
    prompt_trimmed = answer_trimmed = 0
    if len(system_ids) + len(rest_ids) + len(answer) > max_len:
        # The answer keeps up to half the window (all of it if the prompt is short enough) ...
        keep = min(len(answer), max(max_len // 2, max_len - len(system_ids) - len(rest_ids)))
        answer_trimmed, answer = len(answer) - keep, answer[:keep]
        # ... and the prompt gives up the rest: user turns from their middle, then the system turn.
        over = len(system_ids) + len(rest_ids) + len(answer) - max_len
        rest_ids, cut = _cut_middle(rest_ids, min(over, max(0, len(rest_ids) - MIN_PROMPT_TOKENS)))
        system_ids, cut_system = _cut_middle(system_ids, over - cut)
        prompt_trimmed = cut + cut_system
    prompt = system_ids + rest_ids
    return Encoded(input_ids=prompt + answer, labels=[IGNORE] * len(prompt) + answer,
                   supervised=len(answer), prompt_trimmed=prompt_trimmed, answer_trimmed=answer_trimmed)


def _cut_middle(ids: list[int], n: int) -> tuple[list[int], int]:
    n = max(0, min(n, len(ids)))
    if not n:
        return ids, 0
    head = (len(ids) - n) // 2
    return ids[:head] + ids[head + n:], n
