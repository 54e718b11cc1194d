"""The training loss: cross-entropy over supervised tokens, each row scaled by its `mix_weight`,
normalised by the number of supervised tokens in the whole optimizer step (all accumulated
micro-batches), so gradient accumulation gives exactly the update of one big batch. The
audit's trainer dropped 7 of 8 micro-batch gradients; a per-micro-batch mean is the subtler
version of the same mistake (short rows get more weight)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE = -100


def supervised_tokens(labels: torch.Tensor) -> int:
    """Tokens that carry loss (after the shift that aligns predictions with targets)."""
    return int((labels[:, 1:] != IGNORE).sum())


def weighted_token_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor,
                        num_items: int, chunk: int = 4096) -> torch.Tensor:
    """sum over supervised tokens of CE x weight, / num_items. `weights` per row [B] or per token [B, T]. The CE is computed in chunks of
    rows x positions so a large vocabulary never materialises one huge float32 copy of the logits."""
    logits, labels = logits[:, :-1], labels[:, 1:]
    total = logits.new_zeros(())
    flat_logits = logits.reshape(-1, logits.shape[-1])
    flat_labels = labels.reshape(-1)
    weights = weights[:, None].expand_as(labels) if weights.dim() == 1 else weights[:, 1:]
    flat_weights = weights.reshape(-1).to(logits.dtype)
    for start in range(0, flat_labels.shape[0], chunk):
        part = slice(start, start + chunk)
        ce = F.cross_entropy(flat_logits[part].float(), flat_labels[part], ignore_index=IGNORE, reduction="none")
        total = total + (ce * flat_weights[part]).sum()
    return total / max(1, num_items)


def supervised_log_probs(hidden: torch.Tensor, labels: torch.Tensor, lm_head: torch.nn.Module) -> torch.Tensor:
    """Each next token's log-probability, aligned with the shifted labels: [B, T-1], zero where
    nothing is supervised. The vocabulary projection is computed at the supervised positions only
    (`hidden`: the model's final hidden states, [B, T, H]): a prompt's positions carry no loss, and
    on a CPU projecting every one of them onto a 49k vocabulary was over half of an SFT step."""
    labels, hidden = labels[:, 1:], hidden[:, :-1]
    mask = labels != IGNORE
    logits = lm_head(hidden[mask].to(lm_head.weight.dtype)).float()
    picked = logits.log_softmax(-1).gather(-1, labels[mask].unsqueeze(-1)).squeeze(-1)
    return picked.new_zeros(mask.shape).masked_scatter(mask, picked)


def weighted_nll(token_log_probs: torch.Tensor, token_weights: torch.Tensor, num_items: int | torch.Tensor
                 ) -> torch.Tensor:
    """The same loss from per-token log-probabilities already aligned with the shifted labels
    (zero where nothing is supervised), as TRL's fused LM head returns them without building the
    logits: sum of -log p x weight, / the optimizer step's supervised tokens."""
    total = -(token_log_probs.float() * token_weights.to(token_log_probs.device).float()).sum()
    return total / torch.as_tensor(num_items, device=total.device).clamp(min=1)
