"""The inert-adapter check passes after real training and fails on a planted inert adapter."""
import pytest
import torch

from training.run.integrity import InertAdapter, lora_snapshot, require_live_adapter
from training.loss import supervised_tokens, weighted_token_loss


def _peft_model():
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(vocab_size=97, n_positions=64, n_embd=16, n_layer=1, n_head=2))
    return get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], lora_dropout=0.0))


def _train(model, steps: int, lr: float):
    ids = torch.randint(1, 97, (4, 12), generator=torch.Generator().manual_seed(2))
    labels = ids.clone()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    for _ in range(steps):
        loss = weighted_token_loss(model(input_ids=ids).logits, labels, torch.ones(4), supervised_tokens(labels))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return ids


def test_a_trained_adapter_is_live():
    model = _peft_model()
    initial = lora_snapshot(model)
    ids = _train(model, steps=5, lr=1e-2)
    check = require_live_adapter(model, initial, ids)
    assert check.changed_tensors == check.lora_tensors > 0 and check.max_logit_change > 0


def test_a_planted_inert_adapter_fails_the_run():
    model = _peft_model()
    initial = lora_snapshot(model)
    ids = _train(model, steps=5, lr=0.0)  # the loop runs, the loss is normal, nothing is learned
    with pytest.raises(InertAdapter, match="inert: 0/"):
        require_live_adapter(model, initial, ids)


def test_weights_that_move_without_changing_outputs_are_inert():
    """A moved but never-applied adapter: lora_A changes while lora_B stays zero."""
    model = _peft_model()
    initial = lora_snapshot(model)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_A" in name:
                p.add_(0.5)
    ids = torch.randint(1, 97, (2, 8), generator=torch.Generator().manual_seed(3))
    with pytest.raises(InertAdapter, match="max logit change 0"):
        require_live_adapter(model, initial, ids)
