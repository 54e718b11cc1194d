"""`synth bench loop`: does synth's data make a real model better, on every kind of row it makes?
A thin driver over the commands a user runs (examples/loop/: the config and the profile):

    synth run --config examples/loop/synth.toml            repair and doc rows of the training crates,
                                                            held-out and RL tasks of both families
    synth eval --answers unchanged|rustc|rustc_all|compiler_words|best_free|free_search --family repair
                                                            baselines needing no model (the compiler's help)
    synth eval --model BASE [--shots 1 --family repair --turns 1]
                                                            the base model (and shown one worked example:
                                                            a first-answer baseline, no second turn)
    synth train sft --profile examples/loop/profile.toml    LoRA SFT on the snapshot
    synth eval --model SFT --baseline base.json
    synth eval --model SFT --after best_free --family repair
                                                            the compiler's help first, the model on what it leaves
    synth eval --model SFT --after free_search --family repair --samples 8 --pick compiled --turns 1 [--draws N]
                                                            every quick fix the compiler's words allow first, then
                                                            the model sampled 8 times, rustc picking one
                                                            (drawn N times with `synth bench loop --draws N`)
    synth selfrepair --answers base=... --answers sft=...  the two models' rejected codegen answers as tasks
    synth eval --tasks RUN/tasks/selfrepair.jsonl --turns 1 (base, SFT, GRPO; and --answers best_free): repairing real mistakes
    synth train grpo --model SFT                            GRPO, the compiler as reward
    synth eval --model SFT --adapter GRPO --baseline sft.json

Each evaluation is greedy (the picked one aside) on the same held-out tasks (crates not used in training), per family,
with paired-bootstrap intervals (answer groups resampled). `--ablate mens` trains a second SFT
model on audit-style error-correction rows in place of synth's repair rows (same declarations,
same number of rows and steps: benchmarks/mens_rows.py) and compares both on the held-out repair
tasks. `seconds` says where the time went; RUN/progress.json is written after every phase."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.loop_commands import (CONFIG, PROFILE, Loop, draws_figures, family_rates, paired, turn_gain,
                                      with_selfrepair)

RATES = ("compile_rate", "pass_at_1")
COMPILER_BASELINES = ("rustc", "rustc_all", "compiler_words", "best_free", "free_search")
FIRST = "best_free"  # what a user runs first for free: the model is also measured repairing what it leaves
# what a task's answer must do to count as fixed in the breakdowns (beyond the compiler, by operator):
# compile and count, and pass the tests the judge ran (the crate's own, `[eval] crate_tests`), where any
FIXED = "pass@1"
PICKED = 8  # samples a task where the compiler picks the answer (rejection sampling, as a user runs it)
# what the picked repairer starts from: a user who samples a model 8 times also clicks through the
# compiler's 8 ways (the loop's SFT model at 55ee430, four draws: 72.6% against 71.7% after best_free)
PICKED_AFTER = "free_search"
# the operators of the loop before issue "Repair beyond the compiler": their tasks' figure, for continuity
OLD_OPERATORS = ("unresolved_name", "return_type_mismatch", "argument_count", "use_after_move", "immutable_binding",
                 "conflicting_borrow", "missing_method", "missing_field", "dropped_try", "missing_trait_method",
                 "dropped_bound", "argument_type")


def run_loop_bench(config: Path = CONFIG, profile: Path = PROFILE, sft_steps: int | None = None,
                   grpo_steps: int | None = None, threads: int | None = None, ablate: tuple[str, ...] = (),
                   seed: int = 0, rounds: int = 1, draws: int = 1) -> dict:
    from synth.settings.config import load_config
    from synth.lanes import LANES
    from training.base_model import DEFAULT_DIR
    from training.run.profile import load_profile

    base = str(Path(load_profile(profile).model))
    if not (Path(base) / "config.json").exists():
        raise FileNotFoundError(f"no base model at {base} (run `make model`; default {DEFAULT_DIR})")
    # the config's run directory: its policy model (what round 2 samples) is the SFT model written there
    run = Path(load_config(config, LANES).run.out)
    for stale in ("sft", "grpo", "grpo_layered", "eval", "rounds", "mens_sft", "ablate"):  # a fresh start: no policy before round 1
        shutil.rmtree(run / stale, ignore_errors=True)
    run.mkdir(parents=True, exist_ok=True)
    loop = Loop(run, Path(profile).resolve(), seed, threads)
    data = loop.data("data", config)
    evals = {"base": loop.eval("eval_base", "base", "--model", base)}
    evals["unchanged"] = loop.eval("baselines", "unchanged", "--answers", "unchanged", "--family", "repair")
    for kind in COMPILER_BASELINES:
        evals[kind] = loop.eval("baselines", kind, "--answers", kind, "--family", "repair")
    evals["one_shot_base"] = loop.eval("eval_one_shot", "one_shot_base", "--model", base, "--shots", "1",
                                       "--family", "repair", "--turns", "1")  # only its first answers are compared
    sft_model = str(run / "sft" / "merged")
    history, selfrepair = [], None
    for number in range(1, rounds + 1):
        if number > 1:  # the policy (last round's model) answers the RL tasks; what passes joins SFT
            keep = run / "rounds" / str(number - 1)
            shutil.copytree(run / "sft" / "merged", keep / "merged")
            data = loop.data(f"data_round{number}", config)
        steps = sft_steps or (one_epoch(loop) if rounds > 1 else None)  # rounds compare data: each sees all its rows
        if loop.train(f"sft_round{number}" if number > 1 else "sft", "sft", run / "sft", "--data", run,
                      *(["--max-steps", str(steps)] if steps else [])) != 0:
            raise RuntimeError("synth train sft failed (see its output above)")
        name = "sft" if number == rounds else f"sft_round{number}"
        evals[name] = loop.eval(f"eval_{name}", name, "--model", sft_model, baseline="base")
        if number == rounds:
            evals["sft_after_free"] = loop.eval("eval_after_free", "sft_after_free", "--model", sft_model,
                                                "--after", FIRST, "--family", "repair")
            evals["sft_picked_after_free"] = loop.eval("eval_picked", "sft_picked_after_free", "--model", sft_model,
                                                       "--after", PICKED_AFTER, "--family", "repair", "--turns", "1", "--samples",
                                                       str(PICKED), "--pick", "compiled", "--draws", str(draws))
        if number == 1:  # the held-out mistakes of the base and round-1 models: every round is measured on them
            selfrepair = selfrepair_tasks(loop, ("base", name))
        if selfrepair is not None:
            evals[f"selfrepair_{name}"] = loop.eval(f"eval_selfrepair_{name}", f"selfrepair_{name}", "--model",
                                                    sft_model, "--turns", "1", tasks=selfrepair)
        both = with_selfrepair(evals[name], evals.get(f"selfrepair_{name}"))
        history.append({**round_figures(number, data, both, history[-1]["eval"] if history else None, seed),
                        "sft_steps": steps})
    if selfrepair is not None:
        evals["selfrepair_base"] = loop.eval("eval_selfrepair_base", "selfrepair_base", "--model", base, "--turns", "1",
                                             tasks=selfrepair)
        evals["selfrepair_best_free"] = loop.eval("baselines", "selfrepair_best_free", "--answers", FIRST,
                                                  tasks=selfrepair)  # the compiler's help on the models' own mistakes
    steps = ["--max-steps", str(grpo_steps)] if grpo_steps else []
    grpo_ok = loop.train("grpo", "grpo", run / "grpo", "--model", sft_model, "--tasks", run / "tasks" / "rl.jsonl",
                         *steps) == 0
    grpo_manifest = _read(run / "grpo" / "run_manifest.json")
    if grpo_ok:
        evals["grpo"] = loop.eval("eval_grpo", "grpo", "--model", sft_model, "--adapter", run / "grpo" / "adapter",
                                  baseline="sft")
        evals["grpo_after_free"] = loop.eval("eval_after_free", "grpo_after_free", "--model", sft_model, "--adapter",
                                             run / "grpo" / "adapter", "--after", FIRST, "--family", "repair")
        if selfrepair is not None:
            evals["selfrepair_grpo"] = loop.eval("eval_selfrepair_grpo", "selfrepair_grpo", "--model", sft_model,
                                                 "--adapter", run / "grpo" / "adapter", "--turns", "1",
                                                 tasks=selfrepair)
    models = {"base": {"model": base, "adapter": None}, "sft": {"model": sft_model, "adapter": None},
              "grpo": {"model": sft_model, "adapter": str(run / "grpo" / "adapter") if grpo_ok else None}}
    result = summary(evals, data, loop, grpo_ok, grpo_manifest, models, seed, run)
    if rounds > 1:
        result["rounds"] = [{k: v for k, v in r.items() if k != "eval"} for r in history]
        result["round2_vs_round1"] = history[1]["vs_previous_round"]
    if "mens" in ablate:
        from benchmarks.ablations import ablate_mens
        result["ablation"] = ablate_mens(loop, evals, sft_steps, seed)
    if "reward" in ablate:
        from benchmarks.ablations import ablate_reward
        binary = with_selfrepair(evals.get("grpo") or evals["sft"], evals.get("selfrepair_grpo"))
        result["reward_tiers"] = ablate_reward(loop, evals, sft_model, grpo_steps, selfrepair, seed,
                                               trained={"binary": (binary, run / "grpo")} if grpo_ok else None)
    arms = tuple(a for a in ablate if a not in ("mens", "reward"))
    if arms:
        from benchmarks.ablations import run_ablations
        result["ablations"] = run_ablations(loop, arms, sft_steps, seed)
    result["seconds"] = {**loop.seconds, "total": round(sum(loop.seconds.values()), 1)}
    return result


def one_epoch(loop: Loop) -> int:
    """SFT steps that show every training row once (the profile's rows per step)."""
    from training.run.profile import load_profile
    sft = load_profile(loop.profile).sft
    return -(-loop.report["data"]["train_rows"] // (sft.batch_size * sft.grad_accum))


def selfrepair_tasks(loop: Loop, names: tuple[str, ...]) -> Path | None:
    """`synth selfrepair`: the held-out codegen answers of these models that rustc rejected, as
    tasks (RUN/tasks/selfrepair.jsonl); None when there are none."""
    out = loop.out / "tasks" / "selfrepair.jsonl"
    answers = [a for name in names for a in ("--answers", f"{name}={loop.out / 'eval' / f'{name}.answers.jsonl'}")]
    if loop.synth("selfrepair", "selfrepair", "--profile", loop.profile, "--tasks", loop.out / "tasks" / "heldout.jsonl",
                  *answers, "--out", out, "--json") != 0:
        raise RuntimeError("synth selfrepair failed (see its output above)")
    return out if out.read_text().strip() else None


def round_figures(number: int, data: dict, result: dict, previous: dict | None, seed: int) -> dict:
    """One round of expert iteration: what its data phase sampled from the policy (pass@k on the RL
    tasks before sampling, samples kept per family) and the held-out rates after its SFT, against
    the round before."""
    rft = (data.get("stages") or {}).get("rft") or {}
    out = {"round": number, "rft": rft.get("by_family") if number > 1 else None,
           "rft_rows": rft.get("rows") if number > 1 else 0,
           "heldout": {family: family_rates(result, family) for family in result["families"]}, "eval": result}
    if previous is not None:
        out["vs_previous_round"] = {family: paired(previous, result, family, seed) for family in result["families"]}
    return out


def summary(evals: dict, data: dict, loop: Loop, grpo_ok: bool, grpo_manifest: dict, models: dict, seed: int,
            run: Path) -> dict:
    from training.run.profile import load_profile
    grpo = evals.get("grpo") or evals["sft"]  # an inert GRPO adapter is the SFT model
    families = {}
    for family in ("codegen", "repair"):
        if family not in evals["base"]["families"]:
            continue
        rates = {name: family_rates(evals[name], family) for name in ("base", "sft")}
        rates["grpo"] = family_rates(grpo, family)
        out = {"heldout_tasks": evals["base"]["families"][family]["tasks"], **rates,
               "sft_vs_base": paired(evals["base"], evals["sft"], family, seed),
               "grpo_vs_sft": paired(evals["sft"], grpo, family, seed)}
        named = {"base": evals["base"], "sft": evals["sft"], "grpo": grpo}
        if any("turns" in r["families"].get(family, {}) for r in named.values()):  # compile-feedback turns
            out["turns"] = {name: r["families"][family].get("turns") for name, r in named.items()}
            out["turn_gain"] = {name: turn_gain(r, family, seed) for name, r in named.items()}
        # greedy replies that gave back the code shown, and those a retry changed ([eval] retries)
        out["gave_back"] = {name: (r.get("gave_back") or {}).get(family) for name, r in named.items()}
        if family == "repair":
            out["baselines"] = {"unchanged": _rate(evals["unchanged"], family),
                                "one_shot_base": _rate(evals["one_shot_base"], family),
                                "rustc_suggestions": _rate(evals["rustc"], family),
                                "rustc_applicable_tasks": evals["rustc"]["families"].get(family, {}).get("tasks", 0)}
            out["baselines"].update({kind: _rate(evals[kind], family) for kind in COMPILER_BASELINES[1:]})
            out["sft_vs_one_shot_base"] = paired(evals["one_shot_base"], evals["sft"], family, seed)
            out["sft_vs_rustc_suggestions"] = paired(evals["rustc"], evals["sft"], family, seed)
            out["sft_vs_best_free"] = paired(evals["best_free"], evals["sft"], family, seed)
            out["where_rustc_fails"] = where_fails(evals["rustc"], evals["sft"], family)
            models = {"base": evals["base"], "sft": evals["sft"], "grpo": grpo, "best_free": evals["best_free"]}
            out["beyond_compiler"] = beyond_compiler(models, family)
            out["after_compiler"] = after_compiler(evals, family, seed)
            out["by_operator"] = by_operator(models, family)
            out["by_compiler_solvable"] = by_compiler_solvable(models, family)
            out["by_unseen_literals"] = by_unseen_literals(models, family)
            out["old_operators"] = rates_on(models, family, lambda t, p: p.get("operator") in OLD_OPERATORS)
        families[family] = out
    if "selfrepair_base" in evals:
        families["selfrepair"] = selfrepair_figures(evals, run / "tasks" / "selfrepair.jsonl", seed)
    codegen = families.get("codegen", {})
    zero_std = grpo_manifest.get("frac_reward_zero_std", [])
    return {"source": "corpus", "heldout_tasks": codegen.get("heldout_tasks", 0),
            "train_rows": loop.report["data"]["train_rows"], "rl_tasks": loop.report["data"]["rl_tasks"],
            "data": loop.report["data"],
            **{name: codegen.get(name, {}) for name in ("base", "sft", "grpo", "sft_vs_base", "grpo_vs_sft")},
            "families": families, "grpo_adapter_changed": grpo_ok,
            "grpo_note": None if grpo_ok else "GRPO adapter stayed inert or training failed; evaluated as the SFT model",
            "frac_reward_zero_std": zero_std, "grpo_probe": (grpo_manifest.get("data") or {}).get("probe"),
            "grpo_rewards": grpo_manifest.get("reward_components"), "models": models,
            "settings": {"profile": load_profile(loop.profile).model_dump(), "seed": seed, "decoding": "greedy"}}


def selfrepair_figures(evals: dict, tasks_path: Path, seed: int) -> dict:
    """The models on the held-out self-repair tasks (the base and SFT models' own rejected codegen
    answers), in the shape of the other families; whose mistakes they are, each model on its own, and
    `best_free`: what the compiler's help alone fixes of them."""
    named = {"base": evals["selfrepair_base"], "sft": evals["selfrepair_sft"],
             "grpo": evals.get("selfrepair_grpo") or evals["selfrepair_sft"]}
    makers = {t["id"]: t.get("made_by", "").split(",") for t in map(json.loads, tasks_path.read_text().splitlines())}
    names = sorted({name for m in makers.values() for name in m})
    out = {"heldout_tasks": named["base"]["families"].get("selfrepair", {}).get("tasks", 0),
           "made_by": {name: sum(name in m for m in makers.values()) for name in names},
           **{name: family_rates(r, "selfrepair") for name, r in named.items()},
           "sft_vs_base": paired(named["base"], named["sft"], "selfrepair", seed),
           "grpo_vs_sft": paired(named["sft"], named["grpo"], "selfrepair", seed),
           "best_free": _rate(evals["selfrepair_best_free"], "selfrepair") if "selfrepair_best_free" in evals else None}
    out["on_own_mistakes"] = {name: rates_on(named, "selfrepair", lambda t, p, name=name: name in makers.get(t, ()))
                              for name in names}
    return out


def where_fails(baseline: dict, model: dict, family: str) -> dict:
    """The model on the tasks the baseline does not fix (or does not apply to)."""
    fixed = {t for t, p in baseline["per_task"].items() if p[FIXED]}
    mine = [p[FIXED] for t, p in model["per_task"].items() if p["family"] == family and t not in fixed]
    return {"tasks": len(mine), "model_rate": round(sum(mine) / len(mine), 4) if mine else None}


def beyond_compiler(models: dict, family: str, keep=lambda t, p: True) -> dict:
    """Each model's rate on the held-out tasks the compiler's help (best_free) does not fix (of
    those `keep(task_id, per_task)` selects)."""
    fixed = {t for t, p in models["best_free"]["per_task"].items() if p[FIXED]}
    out = rates_on({k: v for k, v in models.items() if k != "best_free"}, family,
                   lambda t, p: t not in fixed and keep(t, p))
    return {"tasks": out.pop("tasks"), **out}


def after_compiler(evals: dict, family: str, seed: int) -> dict:
    """The repairer a user would run: the compiler's help first, the model on what it leaves (its
    partial fix with the errors left, or the task where it changed nothing); against the help alone,
    paired, and on the tasks the help fails (the model's own share)."""
    sft = evals["sft_after_free"]
    grpo = evals.get("grpo_after_free") or sft
    picked = evals.get("sft_picked_after_free")
    named = {"base": evals["base"], "sft": sft, "grpo": grpo, **({"sft_picked": picked} if picked else {}),
             "best_free": evals[FIRST]}
    beyond = beyond_compiler(named, family)
    beyond.pop("base")
    out = {"first": FIRST, "best_free": _rate(evals[FIRST], family), "sft": _rate(sft, family),
           "grpo": _rate(grpo, family), "sft_vs_best_free": paired(evals[FIRST], sft, family, seed),
           "grpo_vs_best_free": paired(evals[FIRST], grpo, family, seed), "beyond_compiler": beyond,
           "by_unseen_literals": by_unseen_literals(named, family),
           "turns": {"sft": sft["families"][family].get("turns"), "grpo": grpo["families"][family].get("turns")}}
    if picked:  # the SFT model sampled PICKED times a task, the compiler picking (one answer counted)
        out["sft_picked"] = {"samples": PICKED, "after": picked.get("after"), "rate": _rate(picked, family),
                             "any_sample_rate": picked["families"][family].get("any_sample_rate"),
                             "vs_best_free": paired(evals[FIRST], picked, family, seed),
                             "vs_sft_greedy": paired(sft, picked, family, seed)}
        # against the compiler's help tried as often as the model (free_search: up to PICKED answers, rustc picking)
        search = evals["free_search"]
        beyond = beyond_compiler({"base": evals["base"], "sft_picked": picked, "best_free": search}, family)
        out["sft_picked"].update(free_search=_rate(search, family), vs_free_search=paired(search, picked, family, seed),
                                 beyond_free_search={"tasks": beyond["tasks"], "sft_picked": beyond["sft_picked"]})
        if "draw_results" in picked:  # the pick drawn again (`--draws`): each draw, and their means
            every = [picked, *picked["draw_results"]]
            out["sft_picked"]["draws"] = draws_figures(evals[FIRST], every, family, seed)
            out["sft_picked"]["draws_vs_free_search"] = draws_figures(search, every, family, seed, "free_search")
    return out


def by_operator(models: dict, family: str) -> dict:
    """The rates per mutation operator of the tasks (and how many of them the compiler's help fixes)."""
    operators = sorted({p.get("operator") or "" for p in models["base"]["per_task"].values() if p["family"] == family})
    return {op: rates_on(models, family, lambda t, p, op=op: (p.get("operator") or "") == op) for op in operators}


def by_compiler_solvable(models: dict, family: str) -> dict:
    """The rates on the tasks whose row the synthesis marked solvable by the compiler's help, and the others."""
    return {str(flag).lower(): rates_on(models, family, lambda t, p, flag=flag: p.get("compiler_solvable") is flag)
            for flag in (True, False)}


def by_unseen_literals(models: dict, family: str) -> dict:
    """The rates where every value the fix needs is in the prompt's code (`in_sight`) and where one
    is not (`unseen`: a repairer can only guess it; synth/mutate/unseen.py), on all the tasks and
    on those the compiler's help (best_free) fails."""
    out = {}
    for name, unseen in (("in_sight", False), ("unseen", True)):
        chosen = {t for t, p in models["base"]["per_task"].items()
                  if p.get("unseen_literals") is not None and bool(p["unseen_literals"]) is unseen}
        out[name] = {**rates_on(models, family, lambda t, p, chosen=chosen: t in chosen),
                     "beyond_compiler": beyond_compiler(models, family, lambda t, p, chosen=chosen: t in chosen)}
    return out


def rates_on(models: dict, family: str, keep) -> dict:
    """Each model's rate of fixes (FIXED) on the tasks of `family` that `keep(task_id, per_task)`
    selects, as the base model's evaluation lists them."""
    chosen = [t for t, p in models["base"]["per_task"].items() if p["family"] == family and keep(t, p)]
    out = {"tasks": len(chosen)}
    for name, result in models.items():
        scores = [result["per_task"][t][FIXED] for t in chosen if t in result["per_task"]]
        out[name] = round(sum(scores) / len(scores), 4) if scores else None
    return out


def _rate(result: dict, family: str) -> float | None:
    return result["families"].get(family, {}).get("compile_rate")


def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def bench(args) -> dict:
    """`synth bench loop` (its run directory is the loop config's `[run] out`: runs/loop)."""
    return run_loop_bench(seed=args.seed, sft_steps=args.steps, grpo_steps=args.rl_steps, threads=args.jobs,
                          ablate=args.ablate or (), rounds=args.rounds or 1, draws=args.draws or 1)
