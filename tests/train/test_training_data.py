"""The audit's data-side training defects, each pinned by a test: one template and system prompt
(T2/T3), `input` joined (T4), loss on the whole answer (T5), the answer survives truncation (T6),
shuffle within difficulty (T7). A tokenizer is trained here; nothing is downloaded."""
import pytest
from conftest import EXAMPLE_CRATE

from synth.prompting.templates import system_prompt
from synth.prompting.chat import chat_template, render, row_messages, serve_prompt, with_system
from training.data.curriculum import epoch_order
from training.data.encode import IGNORE, encode


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    texts = [p.read_text() for p in sorted((EXAMPLE_CRATE / "src").glob("*.rs"))] + [system_prompt()]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=600, min_frequency=1,
                            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = chat_template()
    return tok


ROW = {"messages": [{"role": "user", "content": "Write gcd."}, {"role": "assistant", "content": "fn gcd() {}"}]}


def test_train_serve_and_eval_render_the_same_bytes(tokenizer):
    conversation = with_system(row_messages(ROW))
    train_text = tokenizer.apply_chat_template(conversation, tokenize=False)
    assert train_text == render(conversation)  # the tokenizer's template is ours
    served = tokenizer.apply_chat_template(conversation[:-1], tokenize=False, add_generation_prompt=True)
    assert served == serve_prompt("Write gcd.")  # serving and eval send exactly the training prefix
    assert train_text.startswith(served)
    assert conversation[0] == {"role": "system", "content": system_prompt()}
    assert "->" not in system_prompt() and "retired" not in system_prompt()  # no retired syntax taught


def test_input_is_joined_into_the_prompt():
    messages = row_messages({"instruction": "Fix this.", "input": "fn f( {", "output": "fn f() {}"})
    assert messages[0] == {"role": "user", "content": "Fix this.\n\nfn f( {"}
    assert messages[1]["content"] == "fn f() {}"
    assert row_messages({"prompt": "p", "response": "r"})[1]["content"] == "r"
    with pytest.raises(ValueError, match="no messages"):
        row_messages({"id": "x"})


def test_loss_covers_the_whole_answer_and_nothing_else(tokenizer):
    long_answer = "\n".join(f"let x{i} = {i};" for i in range(60))
    enc = encode([{"role": "user", "content": "Write it."}, {"role": "assistant", "content": long_answer}],
                 tokenizer, max_len=4096)
    answer_ids = tokenizer(long_answer + "<|im_end|>\n", add_special_tokens=False)["input_ids"]
    supervised = [t for t in enc.labels if t != IGNORE]
    assert supervised == answer_ids and enc.supervised == len(answer_ids) > 64  # not just the last 64
    prompt_len = len(enc.input_ids) - len(answer_ids)
    assert enc.labels[:prompt_len] == [IGNORE] * prompt_len and enc.input_ids[prompt_len:] == answer_ids


def test_the_answer_survives_truncation(tokenizer):
    prompt = "Context: " + " ".join(f"item{i}" for i in range(400))
    answer = "fn answer() -> u8 { 42 }"
    enc = encode([{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}], tokenizer, 200)
    answer_ids = tokenizer(answer + "<|im_end|>\n", add_special_tokens=False)["input_ids"]
    assert len(enc.input_ids) <= 200 and enc.prompt_trimmed > 0 and enc.answer_trimmed == 0
    assert [t for t in enc.labels if t != IGNORE] == answer_ids  # the whole answer, prompt trimmed instead
    text = tokenizer.decode(enc.input_ids)
    assert text.startswith(f"<|im_start|>system\n{system_prompt()}<|im_end|>")  # the system turn is whole
    assert text.rstrip().endswith(answer + "<|im_end|>")
    assert "item0" in text and "item399" in text  # trimmed from the middle: both ends kept
    huge = encode([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y " * 500}], tokenizer, 64)
    assert huge.trainable and len(huge.input_ids) <= 64 and huge.answer_trimmed > 0


def test_shuffle_within_difficulty_new_each_epoch():
    rows = [{"id": i, "difficulty": d} for i, d in enumerate([3, 1, 2] * 20)]
    first, second = epoch_order(rows, seed=0, epoch=0), epoch_order(rows, seed=0, epoch=1)
    assert [r["difficulty"] for r in first] == sorted(r["difficulty"] for r in rows)
    within = [r["id"] for r in first if r["difficulty"] == 2]
    assert within != sorted(within)  # shuffled, not file order
    assert [r["id"] for r in first] != [r["id"] for r in second]  # a new order each epoch
    assert epoch_order(rows, seed=0, epoch=0) == first  # seeded


def test_grpo_and_eval_send_the_served_prompt_and_training_sees_the_same_prefix(tokenizer, tmp_path):
    """T2/T3 across the three code paths: GRPO's prompts, eval's sampler input and the prefix of a
    training row are the same bytes as `serve_prompt`."""

    from synth.tasks.judge import Judge
    from training.evaluation.evaluate import evaluate
    from training.evaluation.model_answers import ModelAnswers
    from training.grpo import task_dataset
    from training.run.profile import EvalSettings
    from synth.tasks.task import Task

    task = Task(id="t", lang="rust", prompt="Write gcd.")
    assert task_dataset([task])["prompt"] == [serve_prompt("Write gcd.")]

    class Recording:  # a model stand-in: records what eval sends it, greedy or sampled
        name, seen = "recording", []

        def complete(self, prompts, k, greedy, batch_size, until):
            self.seen.extend(prompts)
            return [["```rust\nfn gcd() {}\n```"] * k for _ in prompts]

        def greedy(self, prompts, batch_size, until):
            return [c[0] for c in self.complete(prompts, 1, True, batch_size, until)]

    class AcceptAll:
        def check(self, candidates):
            from oracles.verdict import Verdict
            return [Verdict(candidate_id=c.id, passed=True, oracle="x", toolchain="x") for c in candidates]

    sampler, judge = Recording(), Judge({"rust": AcceptAll()})
    for decoding in ("sample", "greedy"):
        settings = EvalSettings(k=1, samples=2, decoding=decoding)
        evaluate(settings, ModelAnswers(settings, sampler), judge, [task], sampler.name)
    assert sampler.seen == [serve_prompt("Write gcd.")] * 2
    enc = encode([{"role": "user", "content": "Write gcd."}, {"role": "assistant", "content": "fn gcd() {}"}],
                 tokenizer, 4096)
    prompt_len = enc.labels.index(next(t for t in enc.labels if t != IGNORE))
    assert tokenizer.decode(enc.input_ids[:prompt_len]) == serve_prompt("Write gcd.")
