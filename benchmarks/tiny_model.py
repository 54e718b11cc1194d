"""A tiny random-init Llama and a byte-level BPE tokenizer trained here on the given texts, saved
as a local model directory: what the training tests and benchmark use (nothing is downloaded)."""
from __future__ import annotations

from pathlib import Path

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_tiny_model(out_dir: str | Path, texts: list[str], vocab_size: int = 512, hidden: int = 48,
                     layers: int = 2, seed: int = 0) -> Path:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from training.chat import chat_template

    out = Path(out_dir)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1, special_tokens=SPECIAL)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token="<|im_start|>")
    tokenizer.chat_template = chat_template()
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 2,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=1024, pad_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
                         tie_word_embeddings=True)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def pretrain(model_dir: str | Path, conversations: list[list[dict]], steps: int = 300, lr: float = 3e-3,
             seed: int = 0) -> Path:
    """Full-parameter training of the tiny model on the given conversations, so that it knows
    something before a LoRA run starts (a random model's samples never compile, and GRPO needs
    rewards that differ within a group). Saved in place."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.collate import WeightedCollator
    from training.encode import encode
    from training.loss import supervised_tokens, weighted_token_loss

    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    examples = [{"input_ids": e.input_ids, "labels": e.labels} for e in
                (encode(c, tokenizer, 512) for c in conversations)]
    batch = WeightedCollator(tokenizer.pad_token_id, padding_free=False)(examples)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        loss = weighted_token_loss(logits, batch["labels"], batch["token_weights"], supervised_tokens(batch["labels"]))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained(model_dir)
    return Path(model_dir)
