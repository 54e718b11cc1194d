"""What every training run does around `trainer.train()`, for SFT and GRPO alike: sample the run's
identity at launch, write the manifest before training (with what the trainer resolved), then
check that the adapter is live, save it with the tokenizer (the one chat template), and complete
the manifest. Under `accelerate launch` only the main process writes."""
from __future__ import annotations

import time
from pathlib import Path

from training.run.integrity import lora_snapshot, require_live_adapter
from training.run.manifest import git_state, library_versions, step_time_stats, write_manifest


class RunLifecycle:
    def __init__(self, kind: str, profile):
        self.kind, self.profile = kind, profile
        self.out = Path(profile.output_dir)
        self.launched = {"git": git_state(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def begin(self, trainer, data: dict, resolved: dict, resumed_from: str | None) -> None:
        self.trainer = trainer
        self.initial = lora_snapshot(trainer.model)  # same seed: the same initial LoRA on a resume
        self.main = trainer.is_world_process_zero()
        self.manifest = {"kind": self.kind, **self.launched, "data": data, "model": self.profile.model,
                         "profile": self.profile.model_dump(), "resolved": resolved,
                         "versions": library_versions(), "world_size": trainer.accelerator.num_processes,
                         "resumed_from": resumed_from, "status": "running"}
        if self.main:
            write_manifest(self.out, self.manifest)

    def end(self, result, recorder, probe_ids, tokenizer, **extra) -> dict:
        """Fails the run (InertAdapter) before saving anything if the adapter learned nothing."""
        adapter = require_live_adapter(self.trainer.model, self.initial, probe_ids)
        self.trainer.save_model(str(self.out / "adapter"))  # saves on the main process only
        if self.main:
            tokenizer.save_pretrained(str(self.out / "adapter"))
        self.manifest.update(status="done", train_metrics=result.metrics, adapter_check=adapter.__dict__,
                             step_times=step_time_stats(recorder.durations),
                             step_durations=[round(d, 6) for d in recorder.durations],
                             log_history=recorder.logs, global_step=self.trainer.state.global_step, **extra)
        if self.main:
            write_manifest(self.out, self.manifest)
        return {**self.manifest, "is_main_process": self.main}
