"""`synth bench loop --ablate gate,diagnostics,operators` (and `synth bench ablate`, on the run the
loop left in runs/loop): each arm trains one more SFT model that differs from its twin in one thing
only (the same declarations, as many rows, the same steps), and both are evaluated, greedy, on
held-out repair tasks neither was shaped for, with the paired difference and its interval and the
compiler's help (best_free) on the same tasks beside.

- diagnostics: the loop's SFT model (rows whose prompts show rustc's errors) against the same rows
  with the compiler's section taken out of every repair prompt; each model evaluated on both
  prompt forms of the held-out tasks.
- gate: no diagnostics in either arm, evaluated without them: the gated rows (as in the
  diagnostics arm) against as many drawn from the same AST operators' mutants unfiltered: those
  the gate let through, those that still compile, and mutants of declarations whose original does
  not compile, in the shares an ungated pipeline makes them.
- operators: no diagnostics in either arm (the audit's mutations were never compiled): synth's
  rows of one set of operators (TRAIN_OPERATORS) against their audit-style twins
  (benchmarks/mens_rows.py: the same declarations, its 4 textual mutations); evaluated on the
  held-out tasks of the other operators (EVAL_OPERATORS), which neither arm trained on (not
  `two_errors`, whose edits are the first set's too).
- mens (ablate_mens below): the SFT on audit-style error-correction rows in place of synth's
  repair rows, as many, for as many steps.
- reward (ablate_reward below): GRPO from the loop's SFT model on the layered
  reward and on the binary one, both trained here for the same `--rl-steps`."""
from __future__ import annotations

import json
import random
from pathlib import Path

from benchmarks.loop_commands import CONFIG, PROFILE, Loop, family_rates, paired, with_selfrepair
from benchmarks.mens_rows import audit_row
from synth.mutate.repair import EQUIVALENT, ORIGINAL_FAILS
from synth.rows.rowfile import existing_rows, read_rows

ARMS = ("diagnostics", "gate", "operators")
# The operators arm: both models train on the rows of the first set (synth's, or their audit-style
# twins) and are measured on the held-out tasks of the second, which neither trained on.
TRAIN_OPERATORS = ("unresolved_name", "return_type_mismatch", "use_after_move", "immutable_binding",
                   "conflicting_borrow", "missing_method", "missing_field", "dropped_try", "dropped_bound")
EVAL_OPERATORS = ("argument_count", "argument_type", "missing_trait_method", "removed_match_arm",
                  "generic_argument_count", "missing_lifetime", "dropped_clone", "argument_from_context")
COMPILER_SECTION = "\n\nThe compiler says:\n"


def without_diagnostics(prompt: str) -> str:
    """A repair prompt with the compiler's section taken out (the instruction after it kept)."""
    head, found, rest = prompt.partition(COMPILER_SECTION)
    return f"{head}\n\n{rest.rsplit(chr(10) * 2, 1)[-1]}" if found else prompt


def plain_row(row: dict) -> dict:
    """A repair row as it would be without the compiler's words in its prompt."""
    if row.get("task") != "repair":
        return row
    prompt = without_diagnostics(row["prompt"])
    messages = [({**m, "content": prompt} if m["role"] == "user" else m) for m in row["messages"]]
    return {**row, "prompt": prompt, "messages": messages}


def write_arm_data(out: Path, train: list[dict], val: list[dict]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("val", val)):
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"train": len(train), "repair": sum(r.get("task") == "repair" for r in train), "val": len(val)}


def write_tasks(path: Path, tasks: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def run_ablations(loop, arms: tuple[str, ...], sft_steps: int | None, seed: int) -> dict:
    """The arms asked for, on the loop's run directory (its snapshot, tasks, SFT model and evaluations)."""
    run = loop.out
    base_dir = run / "ablate"
    train, val = read_rows(existing_rows(run, "train")), (read_rows(existing_rows(run, "val"))
                                                          if existing_rows(run, "val").exists() else [])
    heldout = [json.loads(line) for line in (run / "tasks" / "heldout.jsonl").read_text().splitlines()]
    repair = [t for t in heldout if t["family"] == "repair"]
    plain = [{**t, "prompt": without_diagnostics(t["prompt"])} for t in repair]
    files = {"with": run / "tasks" / "heldout.jsonl", "plain": write_tasks(base_dir / "heldout_plain.jsonl", plain)}
    evals = {"best_free": json.loads((run / "eval" / "best_free.json").read_text()),
             "sft@with": json.loads((run / "eval" / "sft.json").read_text())}
    steps = ["--max-steps", str(sft_steps)] if sft_steps else []

    def model(name: str, rows: list[dict], val_rows: list[dict]) -> tuple[str, dict]:
        made = write_arm_data(base_dir / name, rows, val_rows)
        if loop.train(f"ablate_{name}", "sft", base_dir / name / "sft", "--data", base_dir / name, *steps) != 0:
            raise RuntimeError(f"synth train sft for the {name} arm failed")
        return str(base_dir / name / "sft" / "merged"), made

    def evaluate(key: str, path: str, form: str, subset: Path | None = None) -> dict:
        if key not in evals:
            name = key.replace("@", "_on_")
            evals[key] = loop.eval(f"ablate_eval_{name}", f"ablate_{name}", "--model", path, "--family", "repair",
                                   tasks=subset or files[form])
        return evals[key]

    def compare(a: str, b: str, ids: set[str] | None = None) -> dict:
        return compared(evals, a, b, ids, seed)

    out: dict = {}
    plain_rows = [plain_row(r) for r in train]
    need_plain = {"diagnostics", "gate"} & set(arms)
    if need_plain:
        plain_model, made = model("plain", plain_rows, [plain_row(r) for r in val])
        evaluate("sft@plain", str(run / "sft" / "merged"), "plain")
        evaluate("plain@with", plain_model, "with")
        evaluate("plain@plain", plain_model, "plain")
    if "diagnostics" in arms:
        out["diagnostics"] = {"rows": made, "on_prompts_with_diagnostics": compare("plain@with", "sft@with"),
                              "on_prompts_without": compare("plain@plain", "sft@plain")}
    if "gate" in arms:
        rows = ungated_rows(run, plain_rows, seed)
        ungated_model, made = model("ungated", rows["rows"], [plain_row(r) for r in val])
        evaluate("ungated@plain", ungated_model, "plain")
        out["gate"] = {"rows": made, "drawn_from": rows["pool"], "on_prompts_without": compare("ungated@plain", "plain@plain")}
    if "operators" in arms:
        old = [r for r in plain_rows if r.get("task") != "repair" or r.get("operator") in TRAIN_OPERATORS]
        audit = [audit_row(r, seed) if r.get("task") == "repair" else r for r in old]
        newer = [t for t in plain if t.get("operator") in EVAL_OPERATORS]
        subset = write_tasks(base_dir / "heldout_plain_other_operators.jsonl", newer)
        ids = {t["id"] for t in newer}
        synth_model, made = model("synth_operators", old, [plain_row(r) for r in val])
        audit_model, _ = model("audit_operators", audit, [plain_row(r) for r in val])
        evaluate("synth_operators@other", synth_model, "plain", subset)
        evaluate("audit_operators@other", audit_model, "plain", subset)
        out["operators"] = {"rows": made, "train_operators": list(TRAIN_OPERATORS),
                            "eval_operators": sorted({t["operator"] for t in newer}),
                            "on_tasks_of_other_operators": compare("audit_operators@other", "synth_operators@other", ids)}
    return out


def compared(evals: dict, a: str, b: str, ids: set[str] | None, seed: int) -> dict:
    """b - a on the repair tasks both answered (of `ids`), paired and clustered by declaration;
    each one's rate there, and best_free's."""
    left = _only(evals[a], ids)
    right = _only(evals[b], set(left["per_task"]))
    left = _only(left, set(right["per_task"]))
    return {"tasks": len(left["per_task"]), a: _rate(left), b: _rate(right),
            "best_free": _rate(_only(evals["best_free"], set(left["per_task"]))),
            "difference": paired(left, right, "repair", seed)["compile_rate"]}


def ungated_rows(run: Path, gated: list[dict], seed: int) -> dict:
    """As many repair rows as `gated` has, drawn (seeded) from every mutant the operators made of
    the training declarations, gate or no gate: the gated rows, the mutants that still compile
    (rejected/repair.jsonl) and one mutant per operator of each declaration whose original does
    not compile. Prompts without diagnostics, shaped as the gated rows'; answers the declarations."""
    repair = [r for r in gated if r.get("task") == "repair"]
    by_decl = {(r.get("provenance") or {}).get("decl_id"): r for r in repair}
    rejected = [json.loads(line) for line in (run / "rejected" / "repair.jsonl").read_text().splitlines()]
    equivalent = [twin(by_decl[r["decl"]], r["broken"], r["operator"]) for r in rejected
                  if r["kind"] == EQUIVALENT and r.get("decl") in by_decl]
    failing = failing_originals(run, {r["decl"] for r in rejected if r["kind"] == ORIGINAL_FAILS},
                                {r.get("crate") for r in repair}, seed)
    pool = repair + equivalent + failing
    drawn = random.Random(f"{seed}:ungated").sample(pool, len(repair))
    others = [r for r in gated if r.get("task") != "repair"]
    return {"rows": others + drawn, "pool": {"gated": len(repair), "still_compile": len(equivalent),
                                             "original_fails": len(failing)}}


def twin(row: dict, broken: str, operator: str) -> dict:
    """`row` (a plain repair row) with another broken form of its declaration in its prompt."""
    prompt = row["prompt"].replace(f"```rust\n{row['broken'].rstrip()}\n```", f"```rust\n{broken.rstrip()}\n```", 1)
    messages = [({**m, "content": prompt} if m["role"] == "user" else m) for m in row["messages"]]
    return {**row, "prompt": prompt, "messages": messages, "broken": broken, "operator": operator, "gate": "none"}


def failing_originals(run: Path, decl_ids: set[str], crates: set[str], seed: int) -> list[dict]:
    """Rows an ungated pipeline makes of declarations whose original does not compile: each
    operator's mutant, its prompt without diagnostics, the (failing) original as the answer."""
    from synth.settings.config import load_config
    from synth.extract.extract import extract_sources
    from synth.extract.model import block_text, crate_name
    from synth.lanes import LANES
    from synth.mutate.repair import OperatorStats, make_mutants, repair_prompt
    from synth.mutate.operators.rust import RUST_OPERATORS
    from synth.prompting.templates import system_prompt
    if not decl_ids:
        return []
    decls = [d for d in extract_sources(load_config(CONFIG, LANES).sources)[0]  # as the run extracted them
             if d.id in decl_ids and crate_name(d) in crates]
    stats = {op.name: OperatorStats() for op in RUST_OPERATORS}
    rows = []
    for m in make_mutants(decls, RUST_OPERATORS, seed, stats):
        prompt = without_diagnostics(repair_prompt(m.decl, m.broken, "", False))
        fixed = block_text(m.decl.clean_text)
        rows.append({"id": f"ungated-{m.decl.id}-{m.operator}", "lang": "rust", "task": "repair", "prompt": prompt,
                     "response": fixed, "crate": crate_name(m.decl), "operator": m.operator, "gate": "none",
                     "messages": [{"role": "system", "content": system_prompt()}, {"role": "user", "content": prompt},
                                  {"role": "assistant", "content": fixed}]})
    return rows


def _only(result: dict, ids: set[str] | None) -> dict:
    """The result's repair tasks (of `ids`)."""
    return {**result, "per_task": {t: p for t, p in result["per_task"].items()
                                   if p["family"] == "repair" and (ids is None or t in ids)}}


def _rate(result: dict) -> float | None:
    scores = [p["solved"] for p in result["per_task"].values()]
    return round(sum(scores) / len(scores), 4) if scores else None


def bench(args) -> dict:
    """`synth bench ablate`: the arms on the run `synth bench loop` left (its config's [run] out)."""
    from synth.settings.config import load_config
    from synth.lanes import LANES
    run = Path(load_config(CONFIG, LANES).run.out)
    for needed in ("train.jsonl.zst", "tasks/heldout.jsonl", "eval/sft.json", "eval/best_free.json", "sft/merged"):
        if not (run / needed).exists():
            raise FileNotFoundError(f"{run / needed}: run `synth bench loop` first (the arms compare against its SFT model)")
    loop = Loop(run, PROFILE.resolve(), args.seed, args.jobs)
    arms = tuple(a for a in (args.ablate or ARMS) if a not in ("mens", "reward"))
    result = run_ablations(loop, arms, args.steps, args.seed) if arms else {}
    if "reward" in (args.ablate or ()):  # both GRPO arms trained here, for --rl-steps each
        evals = {name: json.loads((run / "eval" / f"{name}.json").read_text())
                 for name in ("sft", "selfrepair_sft") if (run / "eval" / f"{name}.json").exists()}
        selfrepair = run / "tasks" / "selfrepair.jsonl"
        result["reward_tiers"] = ablate_reward(loop, evals, str(run / "sft" / "merged"), args.rl_steps,
                                               selfrepair if "selfrepair_sft" in evals else None, args.seed)
    return {**result, "seconds": {**loop.seconds, "total": round(sum(loop.seconds.values()), 1)}}


def ablate_mens(loop: Loop, evals: dict, sft_steps: int | None, seed: int) -> dict:
    """The same SFT on audit-style error-correction rows instead of synth's repair rows, both
    evaluated on the held-out repair tasks."""
    from benchmarks.mens_rows import write_mens_snapshot
    made = write_mens_snapshot(loop.out, loop.out / "mens", seed)
    steps = ["--max-steps", str(sft_steps)] if sft_steps else []
    if loop.train("mens_sft", "sft", loop.out / "mens_sft", "--data", loop.out / "mens", *steps) != 0:
        raise RuntimeError("synth train sft on the audit-style rows failed")
    mens = loop.eval("eval_mens", "mens_sft", "--model", loop.out / "mens_sft" / "merged", "--family", "repair")
    return {"rows": made, "repair_after_synth_rows": evals["sft"]["families"]["repair"]["compile_rate"],
            "repair_after_mens_rows": mens["families"]["repair"]["compile_rate"],
            "synth_vs_mens": paired(mens, evals["sft"], "repair", seed),
            "mens": family_rates(mens, "repair")}


REWARD_ARMS = {"binary": (), "layered": ("--reward", "compile=0", "--reward", "tests=0", "--reward", "layered=1")}


def ablate_reward(loop: Loop, evals: dict, sft_model: str, grpo_steps: int | None, selfrepair: Path | None,
                  seed: int, trained: dict | None = None) -> dict:
    """GRPO from the same SFT model, on the same tasks for the same steps, on the layered reward
    (how far each sample got: parses, compiles, counts, passes) and on the binary compile and
    tests ones; each against the SFT model, and layered against binary, per family. `trained`:
    an arm already trained and evaluated (the loop's own GRPO is the binary arm): its evaluation
    and run folder."""
    run, trained = loop.out, dict(trained or {})
    steps = ["--max-steps", str(grpo_steps)] if grpo_steps else []
    for name, flags in REWARD_ARMS.items():
        if name in trained:
            continue
        out = run / f"grpo_{name}"
        if loop.train(f"grpo_{name}", "grpo", out, "--model", sft_model, "--tasks", run / "tasks" / "rl.jsonl",
                      *flags, *steps) != 0:
            return {"error": f"GRPO on the {name} reward failed (see its output above)"}
        result = loop.eval(f"eval_grpo_{name}", f"grpo_{name}", "--model", sft_model, "--adapter", out / "adapter",
                           "--turns", "1")
        if selfrepair is not None:
            result = with_selfrepair(result, loop.eval(f"eval_selfrepair_grpo_{name}", f"selfrepair_grpo_{name}",
                                                       "--model", sft_model, "--adapter", out / "adapter",
                                                       "--turns", "1", tasks=selfrepair))
        trained[name] = (result, out)
    sft = with_selfrepair(evals["sft"], evals.get("selfrepair_sft"))
    families = sorted(set(sft["families"]) & set.intersection(*(set(r["families"]) for r, _ in trained.values())))
    out = {name: {"vs_sft": {f: paired(sft, r, f, seed) for f in families},
                  "frac_reward_zero_std": _read(folder / "run_manifest.json").get("frac_reward_zero_std", []),
                  "steps": _read(folder / "run_manifest.json").get("global_step")}
           for name, (r, folder) in trained.items()}
    out["layered_vs_binary"] = {f: paired(trained["binary"][0], trained["layered"][0], f, seed) for f in families}
    return out


def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}
