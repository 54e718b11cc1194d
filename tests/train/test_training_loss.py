"""T1: accumulating 8 micro-batches gives the same update as one batch of 8 (with padding,
uneven lengths and per-row weights), on a tiny random GPT-2."""
import torch

from training.loss import IGNORE, supervised_tokens, weighted_token_loss


def _model():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=97, n_positions=64, n_embd=16, n_layer=1, n_head=2,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)  # dropout would differ per pass
    return GPT2LMHeadModel(config)


def _batch():
    g = torch.Generator().manual_seed(1)
    lengths = [5, 9, 17, 23, 8, 30, 12, 3]
    width = max(lengths)
    ids = torch.zeros(8, width, dtype=torch.long)
    labels = torch.full((8, width), IGNORE)
    mask = torch.zeros(8, width, dtype=torch.long)
    for i, n in enumerate(lengths):
        row = torch.randint(1, 97, (n,), generator=g)
        ids[i, :n], mask[i, :n] = row, 1
        labels[i, n // 2:n] = row[n // 2:]  # the "answer" half is supervised
    weights = torch.tensor([1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0, 1.0])
    return ids, mask, labels, weights


def _grads(model):
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


def test_gradient_accumulation_equals_the_big_batch():
    ids, mask, labels, weights = _batch()
    num_items = supervised_tokens(labels)
    big = _model()
    weighted_token_loss(big(input_ids=ids, attention_mask=mask).logits, labels, weights, num_items).backward()
    accumulated = _model()
    for i in range(8):  # 8 micro-batches of one row, normalised by the whole step's token count
        one = slice(i, i + 1)
        out = accumulated(input_ids=ids[one], attention_mask=mask[one]).logits
        weighted_token_loss(out, labels[one], weights[one], num_items).backward()
    assert torch.allclose(_grads(big), _grads(accumulated), atol=1e-6, rtol=1e-4)


def test_weights_scale_a_rows_contribution():
    ids, mask, labels, _ = _batch()
    model = _model()
    logits = model(input_ids=ids, attention_mask=mask).logits.detach()
    n = supervised_tokens(labels)
    base = weighted_token_loss(logits, labels, torch.ones(8), n)
    doubled = weighted_token_loss(logits, labels, torch.tensor([2.0] + [1.0] * 7), n)
    first_only = weighted_token_loss(logits[:1], labels[:1], torch.ones(1), n)
    assert torch.allclose(doubled - base, first_only)
    chunked = weighted_token_loss(logits, labels, torch.ones(8), n, chunk=7)
    assert torch.allclose(chunked, base)
