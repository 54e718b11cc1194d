"""`synth train sft`: LoRA SFT with TRL's SFTTrainer on a snapshot.

Our parts, each tested alone: rows are encoded with the answer-keeping truncation and their
`mix_weight` (dataset.py), batched padding-free (collate.py), ordered by the curriculum sampler,
and the loss is the weighted token loss normalised over the whole optimizer step (loss.py),
computed from TRL's fused LM head. Every run checks its split, writes a manifest and fails if the
adapter it produced is inert."""
from __future__ import annotations

from pathlib import Path

import torch
from trl import SFTConfig, SFTTrainer

from oracles.errors import MissingInput
from synth.prompting.chat import chat_template
from training.data.collate import WeightedCollator
from training.data.curriculum import CurriculumSampler
from synth.tasks.edits import edit_row
from training.data.dataset import check_grouped_split, encode_rows, load_split, snapshot_fingerprint
from training.run.lifecycle import RunLifecycle
from training.loss import supervised_log_probs, weighted_nll
from training.run.manifest import RunRecorder, check_resume
from training.run.profile import Profile
from training.run.trainer_args import batching, build, lora_kwargs, resolved, sft_kwargs


class WeightedSFTTrainer(SFTTrainer):
    """SFTTrainer with per-token loss weights and the curriculum order."""

    def __init__(self, *args, difficulties: list[int], lengths: list[int] | None = None, **kwargs):
        self._difficulties, self._lengths = difficulties, lengths
        super().__init__(*args, **kwargs)

    def _get_train_sampler(self, train_dataset=None):
        return CurriculumSampler(self._difficulties, self.args.seed, self._lengths,
                                 self.args.per_device_train_batch_size)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        weights, labels = inputs.pop("token_weights"), inputs.pop("labels")
        if num_items_in_batch is None:
            if model.training:  # without it each micro-batch would be averaged on its own (audit defect)
                raise RuntimeError("the trainer did not count the optimizer step's supervised tokens")
            num_items_in_batch = (labels[:, 1:] != -100).sum()
        # the final hidden states, with logits for one position only: the loss projects just the
        # supervised positions onto the vocabulary (through the wrapped model, so DDP still syncs)
        outputs = model(**inputs, use_cache=False, output_hidden_states=True, logits_to_keep=1)
        lm_head = self.accelerator.unwrap_model(model).get_output_embeddings()
        log_probs = supervised_log_probs(outputs.hidden_states[-1], labels, lm_head)
        loss = weighted_nll(log_probs, weights[:, 1:], num_items_in_batch)
        if self.args.average_tokens_across_devices and model.training:
            loss = loss * self.accelerator.num_processes  # the count spans all ranks; DDP averages gradients
        return (loss, outputs) if return_outputs else loss


def load_model(model_dir: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if not Path(model_dir).is_dir():
        raise MissingInput(f"model {model_dir!r} is not a local directory (nothing is downloaded)")
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    tokenizer.chat_template = chat_template()  # the one template: train, serve and eval
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    return model, tokenizer


def build_trainer(profile: Profile, train_rows: list[dict], val_rows: list[dict], model, tokenizer,
                  output_dir: str, data_fingerprint: str):
    from datasets import Dataset
    from peft import LoraConfig

    args = build(SFTConfig, sft_kwargs(profile, output_dir))
    lora = build(LoraConfig, lora_kwargs(profile))
    batch = batching(profile)
    train = encode_rows(train_rows, tokenizer, batch["max_length"])
    val = encode_rows(val_rows, tokenizer, batch["max_length"])
    if not train.rows:
        raise ValueError(f"no trainable rows: {train.stats}")
    recorder = RunRecorder(data_fingerprint)
    trainer = WeightedSFTTrainer(
        model=model, args=args, train_dataset=Dataset.from_list(train.rows),
        eval_dataset=Dataset.from_list(val.rows) if val.rows else None, processing_class=tokenizer,
        data_collator=WeightedCollator(tokenizer.pad_token_id, padding_free=batch["padding_free"]),
        peft_config=lora, callbacks=[recorder], difficulties=[r["difficulty"] for r in train.rows],
        lengths=[len(r["input_ids"]) for r in train.rows] if batch["bucketed"] else None)
    return trainer, recorder, {"train": train.stats, "val": val.stats}, resolved(trainer.args, lora, batch)


def run_sft(profile: Profile, resume: bool = False, merge: bool = True) -> dict:
    run = RunLifecycle("sft", profile)
    train_rows, val_rows = load_split(profile.data)
    groups = check_grouped_split(train_rows, val_rows)
    if profile.edits:  # the same verified rows, asked and answered as edits
        train_rows, val_rows = [edit_row(r) for r in train_rows], [edit_row(r) for r in val_rows]
    data_fingerprint = snapshot_fingerprint(profile.data)
    checkpoint = str(check_resume(run.out, data_fingerprint)) if resume else None
    model, tokenizer = load_model(profile.model)
    trainer, recorder, encode_stats, config = build_trainer(profile, train_rows, val_rows, model, tokenizer,
                                                           str(run.out), data_fingerprint)
    run.begin(trainer, {"dir": profile.data, "fingerprint": data_fingerprint, "groups": groups, **encode_stats},
              config, checkpoint)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    evaluation = trainer.evaluate() if trainer.eval_dataset is not None else {}
    probe = torch.tensor([trainer.train_dataset[0]["input_ids"][:64]], device=trainer.model.device)
    collator = trainer.data_collator
    manifest = run.end(result, recorder, probe, tokenizer, eval_metrics=evaluation,
                       padding_fraction=collator.measured_padding(), tokens_computed=collator.positions)
    if merge and run.main:
        merged = trainer.model.merge_and_unload()
        merged.save_pretrained(str(run.out / "merged"))
        tokenizer.save_pretrained(str(run.out / "merged"))
    return manifest
