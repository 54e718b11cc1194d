"""Sampling from a local Hugging Face model directory with `transformers` (the policy's own
samples, beside the API providers). Costs nothing, needs no key, seeded. Prompts are decoded in
left-padded batches of similar length, and a completion leaves its batch as soon as it is done:
on a CPU each decoding step costs in proportion to the rows still in it (attention over their
whole prompt), so the finished ones must not ride along to the longest. A prompt that starts as
an earlier one of its batch does (the system prompt; the same context for several tasks of one
declaration; a sample's copies) reuses that one's keys and values for the shared start: half the
tokens of the loop's held-out prompts are such starts, and prompt processing is most of the time."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

_GENERATE_LOCK = threading.Lock()
DTYPES = ("float32", "bfloat16")
PREFILL_ROWS = 8
MIN_SHARED = 16  # tokens: a shorter common start is computed again rather than looked up
# rows decoded together by default: with finished rows leaving, larger batches amortise each
# step's weight reads (96 held-out prompts, 2 cores: 24 rows 1.2-1.3x slower than 48, 96 no faster)
BATCH_ROWS = 48


@dataclass
class LocalSampler:
    model_dir: str | Path
    # the caller's setting ([models.NAME] dtype, a profile's): bfloat16 is ~3x faster prompt
    # processing on CPUs with AMX/AVX512-BF16 (and on GPUs)
    dtype: str
    max_new_tokens: int = 128
    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 50  # as transformers' generate samples by default
    seed: int = 0
    adapter: str | Path | None = None  # a LoRA adapter directory applied on top (peft)

    def __post_init__(self):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r}: one of {DTYPES}")
        self._torch = torch
        self.prefill_tokens = 0  # prompt tokens run through the model (a start shared in a batch counted once)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(str(self.model_dir), local_files_only=True,
                                                          dtype=getattr(torch, self.dtype))
        if self.adapter:  # merged into the weights: decoding runs no adapter layers (GRPO's, loop: 1.15x faster)
            from peft import PeftModel
            self.model = PeftModel.from_pretrained(self.model, str(self.adapter), local_files_only=True).merge_and_unload()
        self.model.eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token

    @property
    def name(self) -> str:
        return f"local:{Path(self.model_dir).name}" + (f"+{Path(self.adapter).name}" if self.adapter else "")

    def sample(self, prompt: str, k: int) -> list[str]:
        """k sampled completions of one prompt (the prompt itself is not part of them)."""
        return self.complete([prompt], k=k, greedy=False)[0]

    def greedy(self, prompts: list[str], batch_size: int = 8, until=None) -> list[str]:
        """One greedy completion per prompt. Deterministic: no sampling."""
        return [out[0] for out in self.complete(prompts, k=1, greedy=True, batch_size=batch_size, until=until)]

    def complete(self, prompts: list[str], k: int = 1, greedy: bool = True, batch_size: int = 8,
                 until=None) -> list[list[str]]:
        """k completions per prompt (greedy: k = 1), decoded in left-padded batches of prompts of
        similar length. A completion is done at the end-of-sequence token, at max_new_tokens, or
        when `until(text)` says so (e.g. its first fenced block closed: what is read of it is
        fixed). Sampling is seeded per batch: the same prompts give the same samples."""
        if greedy and k != 1:
            raise ValueError("greedy decoding gives one completion per prompt")
        with _GENERATE_LOCK:  # one model, one decoding at a time
            tok = self.tokenizer
            side, tok.padding_side = tok.padding_side, "left"
            order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
            out: list[list[str]] = [[] for _ in prompts]
            try:
                for number, start in enumerate(range(0, len(order), batch_size)):
                    chunk = order[start:start + batch_size]
                    inputs = tok([prompts[i] for i in chunk], return_tensors="pt", padding=True)
                    texts = self._decode(inputs["input_ids"].repeat_interleave(k, 0),
                                         inputs["attention_mask"].repeat_interleave(k, 0),
                                         greedy, self.seed + number, until)
                    for j, i in enumerate(chunk):
                        out[i] = texts[j * k:(j + 1) * k]
            finally:
                tok.padding_side = side
            return out

    def _decode(self, input_ids, attention_mask, greedy: bool, seed: int, until) -> list[str]:
        """The completions of one left-padded batch. Rows that are done leave the batch (and the
        KV cache) at once."""
        torch, tok = self._torch, self.tokenizer
        generator = torch.Generator().manual_seed(seed)
        tokens: list[list[int]] = [[] for _ in range(len(input_ids))]
        alive = list(range(len(input_ids)))  # batch position -> row
        with torch.no_grad():
            cache, logits, mask = self._prefill(input_ids, attention_mask)
            for _ in range(self.max_new_tokens):
                chosen = logits.argmax(-1) if greedy else self._sample(logits, generator)
                keep = []
                for position, (row, token) in enumerate(zip(alive, chosen.tolist())):
                    if token != tok.eos_token_id:
                        tokens[row].append(token)
                        done = len(tokens[row]) >= self.max_new_tokens or (
                            until is not None and until(tok.decode(tokens[row], skip_special_tokens=True)))
                        if not done:
                            keep.append(position)
                if not keep:
                    break
                if len(keep) < len(alive):
                    index = torch.tensor(keep)
                    _keep_rows(cache, index)
                    mask, chosen = mask[index], chosen[index]
                    alive = [alive[p] for p in keep]
                mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
                logits = self._forward(chosen[:, None], mask, cache)
        return [tok.decode(t, skip_special_tokens=True) for t in tokens]

    def _prefill(self, input_ids, attention_mask):
        """The prompts' KV cache, in a static cache with room for the completions, their
        next-token logits, and the attention mask that goes with the cache. A prompt whose start
        an earlier one shares (`shared_starts`) is computed from that one's keys and values on,
        in waves (a prompt after the one it starts from), PREFILL_ROWS rows at a time: attention
        over a static cache's empty room is paid for, not skipped. Each row's cache keeps its real
        tokens only, so decoding attends over no more than without shared starts."""
        from transformers import StaticCache

        torch = self._torch
        rows = [ids[m.bool()] for ids, m in zip(input_ids, attention_mask)]
        starts = shared_starts([r.tolist() for r in rows])
        self.prefill_tokens += sum(len(r) - shared for r, (_, shared) in zip(rows, starts))
        done: list = [None] * len(rows)  # per row: (keys per layer, values per layer) of its prompt's real tokens
        logits: list = [None] * len(rows)
        for wave in _waves(starts):
            wave.sort(key=lambda i: len(rows[i]) - starts[i][1])  # similar lengths share a part's padding
            for at in range(0, len(wave), PREFILL_ROWS):
                self._prefill_part(wave[at:at + PREFILL_ROWS], rows, starts, done, logits)
        width = max(len(r) for r in rows)
        mask = torch.stack([_left_pad(torch.ones(len(r), dtype=torch.long), width) for r in rows])
        # a static cache for decoding: a growing one is copied whole at every step (1.5x slower)
        cache = StaticCache(config=self.model.config, max_cache_len=width + self.max_new_tokens)
        for number, layer in enumerate(cache.layers):
            keys = torch.stack([_left_pad(d[0][number], width, dim=1) for d in done])
            values = torch.stack([_left_pad(d[1][number], width, dim=1) for d in done])
            layer.lazy_initialization(keys, values)
            layer.keys[:, :, :width], layer.values[:, :, :width] = keys, values
            layer.cumulative_length.fill_(width)
        return cache, torch.cat(logits), mask

    def _prefill_part(self, part: list[int], rows, starts, done: list, logits: list) -> None:
        """One forward over the rest of each prompt of `part`, after the keys and values of the
        start it shares (none for a prompt that shares none); fills `done` and `logits`."""
        from transformers import DynamicCache

        torch = self._torch
        shared = [starts[i][1] for i in part]
        pasts = [([k[:, :n] for k in done[parent][0]], [v[:, :n] for v in done[parent][1]])
                 if parent is not None else None for parent, n in (starts[i] for i in part)]
        rest = [rows[i][starts[i][1]:] for i in part]
        past_width, rest_width = max(shared), max(len(r) for r in rest)
        ids = torch.stack([_left_pad(r, rest_width, fill=self.tokenizer.pad_token_id) for r in rest])
        mask = torch.stack([torch.cat([_left_pad(torch.ones(n, dtype=torch.long), past_width),
                                       _left_pad(torch.ones(len(r), dtype=torch.long), rest_width)])
                            for n, r in zip(shared, rest)])
        cache = DynamicCache(config=self.model.config)
        if past_width:
            some = next(p for p in pasts if p)
            for number in range(len(some[0])):
                keys, values = (torch.stack([_left_pad(p[kind][number] if p else some[kind][number][:, :0], past_width,
                                                       dim=1) for p in pasts]) for kind in (0, 1))
                cache.update(keys, values, number)
        out = self._forward(ids, mask, cache)
        for k, i in enumerate(part):
            real = mask[k].nonzero().squeeze(1)  # its padding dropped: a later row, and decoding, attend to no gap
            done[i] = ([layer.keys[k][:, real] for layer in cache.layers],
                       [layer.values[k][:, real] for layer in cache.layers])
            logits[i] = out[k:k + 1]

    def _forward(self, input_ids, mask, cache):
        """Logits of the next token after `input_ids` (left-padded: positions count real tokens)."""
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -input_ids.shape[1]:]
        out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                         past_key_values=cache, use_cache=True, logits_to_keep=1)
        return out.logits[:, -1, :].float()

    def _sample(self, logits, generator):
        """Temperature, top-k and nucleus (top-p) sampling of one token per row."""
        torch = self._torch
        top, top_ids = (logits / self.temperature).topk(min(self.top_k, logits.shape[-1]), dim=-1)
        sorted_probs = torch.softmax(top, dim=-1)  # top-k comes sorted, most likely first
        outside = sorted_probs.cumsum(-1) - sorted_probs > self.top_p  # the most likely token always stays
        sorted_probs = sorted_probs.masked_fill(outside, 0.0)
        picked = torch.multinomial(sorted_probs, 1, generator=generator)
        return top_ids.gather(-1, picked).squeeze(-1)


def _keep_rows(cache, index) -> None:
    """Only the rows `index` stay in a static KV cache (transformers' StaticCache does not shrink)."""
    for layer in cache.layers:
        layer.keys, layer.values = layer.keys[index], layer.values[index]
        layer.batch_size = len(index)


def shared_starts(rows: list[list[int]]) -> list[tuple[int | None, int]]:
    """Per prompt (token ids), the earlier prompt it shares the longest start with (the first of
    equals) and how many tokens, at least MIN_SHARED and always one short of its own end (its last
    token's logits are computed); (None, 0) when none does."""
    out: list[tuple[int | None, int]] = []
    for k, row in enumerate(rows):
        best, parent = 0, None
        for j in range(k):
            n = 0
            for a, b in zip(row, rows[j]):
                if a != b:
                    break
                n += 1
            if n > best:
                best, parent = n, j
        best = min(best, len(row) - 1)
        out.append((parent, best) if best >= MIN_SHARED else (None, 0))
    return out


def _waves(starts: list[tuple[int | None, int]]) -> list[list[int]]:
    """The prompts in rounds: each after the one whose start it shares."""
    level: list[int] = []
    for parent, _ in starts:
        level.append(0 if parent is None else level[parent] + 1)
    return [[i for i, n in enumerate(level) if n == wave] for wave in range(max(level, default=-1) + 1)]


def _left_pad(tensor, width: int, dim: int = 0, fill: int = 0):
    """`tensor` with `fill` before it along `dim`, to `width`."""
    import torch

    missing = width - tensor.shape[dim]
    if missing <= 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([tensor.new_full(shape, fill), tensor], dim=dim)
