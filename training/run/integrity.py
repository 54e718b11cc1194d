"""The adapter can be inert: a run can finish with a normal loss curve and have learned nothing
(gradients never reached the LoRA weights, a NaN hidden by a max, an adapter never applied).
After training, check that LoRA weights moved from their initial values and that the adapted
model's outputs differ from the base model's on the same inputs; fail the run otherwise."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from oracles.errors import SynthError


@dataclass
class AdapterCheck:
    changed_tensors: int
    lora_tensors: int
    max_weight_change: float
    max_logit_change: float

    @property
    def inert(self) -> bool:
        return self.changed_tensors == 0 or self.max_logit_change == 0.0


class InertAdapter(SynthError, RuntimeError):
    """The adapter learned nothing (see the module docstring): the run failed, exit 1."""
    label = "training failed"


def lora_snapshot(model) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters() if "lora_" in name}


def check_adapter(model, initial: dict[str, torch.Tensor], input_ids: torch.Tensor) -> AdapterCheck:
    """`model` is a peft model after training; `initial` its LoRA weights before training."""
    now = lora_snapshot(model)
    deltas = {name: float((now[name] - initial[name]).abs().max()) for name in initial}
    model.eval()
    with torch.no_grad():
        adapted = model(input_ids=input_ids).logits
        with model.disable_adapter():
            base = model(input_ids=input_ids).logits
    return AdapterCheck(changed_tensors=sum(d > 0 for d in deltas.values()), lora_tensors=len(deltas),
                        max_weight_change=max(deltas.values(), default=0.0),
                        max_logit_change=float((adapted - base).abs().max()))


def require_live_adapter(model, initial, input_ids) -> AdapterCheck:
    result = check_adapter(model, initial, input_ids)
    if result.inert:
        raise InertAdapter(f"the adapter is inert: {result.changed_tensors}/{result.lora_tensors} LoRA tensors "
                           f"changed, max logit change {result.max_logit_change:g}")
    return result
