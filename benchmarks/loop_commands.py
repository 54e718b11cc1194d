"""The loop's run directory and its phases, each one a `synth` command as a user runs it, timed
(benchmarks/loop_bench.py drives them; benchmarks/ablations.py trains and evaluates its arms the same
way); the paired difference of two evaluations, and of the draws of one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from synth.rows.jsonl import read_jsonl
from synth.rows.rowfile import existing_rows, read_rows

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "examples" / "loop" / "synth.toml"
PROFILE = REPO / "examples" / "loop" / "profile.toml"
KEYS = {"compile_rate": "solved", "pass_at_1": "pass@1"}  # per-task scores behind each rate


class Loop:
    """The run directory and its phases: each one a `synth` command, timed."""

    def __init__(self, out: Path, profile: Path, seed: int, threads: int | None = None):
        self.out, self.profile, self.seed = out, profile, seed
        # on a crowded machine one torch thread beats two that wait for each other at every op
        self.env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
        self.seconds: dict[str, float] = {}
        self.report: dict = {}

    def synth(self, phase: str, *argv: str) -> int:
        """One `synth` command, as a user runs it (its printed output goes to stderr: stdout is the JSON)."""
        start = time.perf_counter()
        code = subprocess.run([sys.executable, "-m", "synth.cli.main", *map(str, argv)], stdout=sys.stderr,
                              env=self.env).returncode
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + time.perf_counter() - start, 1)
        (self.out / "progress.json").write_text(json.dumps({"seconds": self.seconds, **self.report}, indent=1))
        return code

    def data(self, phase: str, config: Path) -> dict:
        """`synth run`: the rows, the tasks and a snapshot; its summary."""
        if self.synth(phase, "run", "--config", config, "--out", self.out, "--json") != 0:
            raise RuntimeError(f"synth run failed (see {self.out}/stats/run.json)")
        data = json.loads((self.out / "stats" / "run.json").read_text())["summary"]
        self.report["data"] = data_figures(self.out, data)
        return data

    def eval(self, phase: str, name: str, *argv: str, baseline: str | None = None, tasks: Path | None = None) -> dict:
        path = self.out / "eval" / f"{name}.json"
        code = self.synth(phase, "eval", "--profile", self.profile, "--tasks", tasks or self.out / "tasks" / "heldout.jsonl",
                          "--examples", self.out / "tasks" / "rl.jsonl", "--out", path, "--json", *argv,
                          *(["--baseline", self.out / "eval" / f"{baseline}.json"] if baseline else []))
        if code not in (0, 1):  # 1: the gate says it regressed, which is a result
            raise RuntimeError(f"synth eval ({name}) failed with exit code {code}")
        result = json.loads(path.read_text())
        if "draws" in result:  # drawn again (`--draws`): draws 1.. lie beside it
            result["draw_results"] = [json.loads((path.parent / f).read_text()) for f in result["draws"]["files"][1:]]
        return result

    def train(self, phase: str, stage: str, out: Path, *argv: str) -> int:
        return self.synth(phase, "train", stage, "--profile", self.profile, "--out", out, "--json", *argv)


def data_figures(run: Path, data: dict) -> dict:
    rows = read_rows(existing_rows(run, "train"))
    tasks = {name: [json.loads(line) for line in (run / "tasks" / f"{name}.jsonl").read_text().splitlines()]
             for name in ("heldout", "rl")}
    by = lambda items, key: {k: sum(1 for i in items if key(i) == k) for k in sorted({key(i) for i in items})}  # noqa: E731
    return {"train_rows": len(rows), "rl_tasks": len(tasks["rl"]),
            "train_by_task_and_scope": by(rows, lambda r: f"{r['task']}/{r['verification']['scope']}"),
            "heldout_by_family": by(tasks["heldout"], lambda t: t["family"]),
            "heldout_repair_in_crate": sum(1 for t in tasks["heldout"] if t.get("in_crate")),
            "rl_by_family": by(tasks["rl"], lambda t: t["family"]),
            "heldout_crates": sorted({t["crate"] for t in tasks["heldout"]}),
            "training_crates": sorted({r.get("crate") for r in rows if r.get("crate")}),
            "over_token_limits": {path.stem: window_figures(read_jsonl(path))
                                  for path in sorted((run / "rejected").glob("*.jsonl"))},
            "stages": data.get("stages"), "notes": data.get("notes")}


def window_figures(rejections: list[dict]) -> dict:
    """What [tokens] turned away in one lane: whole declarations (their shortest prompt is over)
    and single rows, over by the prompt or by the answer, the median prompt of those over, and how
    many would fit with the prompt limit 2x and 4x: the window, not the crates, bounds the rows."""
    from oracles.errors import InputError
    from synth.settings.fit import TOO_LONG, Fit
    over = [(r, Fit.measured(r["reason"])) for r in rejections if r["kind"] == TOO_LONG]
    unread = next((r["reason"] for r, said in over if said is None), None)
    if unread is not None:  # written by another `Fit.over` than the one that reads it here
        raise InputError(f"a rejection {TOO_LONG!r} whose reason says no token counts: {unread!r}")
    prompts = sorted(n for _, (part, n, _) in over if part == "prompt")
    limit = next((cap for _, (part, _, cap) in over if part == "prompt"), 0)
    return {"rejected": len(over), "declarations": sum(1 for r, _ in over if "row_id" not in r),
            "rows": sum(1 for r, _ in over if "row_id" in r), "by_answer": len(over) - len(prompts),
            "prompt_median": prompts[len(prompts) // 2] if prompts else None,
            "fit_at_prompt_limit": {f"{k}x": sum(1 for n in prompts if n <= k * limit) for k in (2, 4)}}


def turn_gain(result: dict, family: str, seed: int) -> dict | None:
    """Within one evaluation with compile-feedback turns: the last turn's compile rate against the
    first's, paired by task (clustered by declaration); None without turns."""
    from synth.tasks.passk import compare_results
    from training.run.profile import EvalSettings
    mine = {t: p for t, p in result["per_task"].items() if p["family"] == family and "solved_by_turn" in p}
    if not mine:
        return None
    first, last = ({"per_task": {t: {**p, "turn": p["solved_by_turn"][at]} for t, p in mine.items()}} for at in (0, -1))
    settings = EvalSettings()
    gate = compare_results(first, last, settings.bootstrap, settings.confidence, seed, family, "turn")
    return {"delta": round(gate["delta"], 4), "ci95": [round(gate["ci"][0], 4), round(gate["ci"][1], 4)]}


def paired(before: dict, after: dict, family: str, seed: int) -> dict:
    """The change from one evaluation to another on `family`'s tasks, per rate: delta and ci95 (as
    `synth eval --baseline` computes it, with the eval profile's default resamples and confidence)."""
    from synth.tasks.passk import compare_results
    from training.run.profile import EvalSettings
    settings = EvalSettings()
    out = {}
    for rate, key in KEYS.items():
        gate = compare_results(before, after, settings.bootstrap, settings.confidence, seed, family, key)
        out[rate] = {"delta": round(gate["delta"], 4), "ci95": [round(gate["ci"][0], 4), round(gate["ci"][1], 4)]}
    return out


def draws_figures(free: dict, draws: list[dict], family: str, seed: int, name: str = "best_free") -> dict:
    """One sampled evaluation drawn several times (`synth eval --draws`) against the compiler's
    help (`name`: best_free, or free_search): per draw its pass rate, its paired difference with
    the help and its rate on the tasks the help fails (beyond the compiler), and the mean of each
    over the draws: a bar decided before the draws is read on the means, not on the draw that came out."""
    fixed = {t for t, p in free["per_task"].items() if p["pass@1"]}
    tasks = [t for t, p in draws[0]["per_task"].items() if p["family"] == family and t not in fixed]
    each = []
    for result in draws:
        beyond = [result["per_task"][t]["pass@1"] for t in tasks]
        each.append({"pass_at_1": result["families"][family]["pass_at_1"],
                     f"vs_{name}": paired(free, result, family, seed)["pass_at_1"],
                     "beyond_compiler": round(sum(beyond) / len(beyond), 4) if beyond else None})
    mean = lambda key: round(sum(key(e) for e in each) / len(each), 4)  # noqa: E731
    return {"draws": len(each), "beyond_compiler_tasks": len(tasks), "each": each,
            "mean": {"pass_at_1": mean(lambda e: e["pass_at_1"]), f"vs_{name}": mean(lambda e: e[f"vs_{name}"]["delta"]),
                     "beyond_compiler": mean(lambda e: e["beyond_compiler"] or 0.0)}}


def family_rates(result: dict, family: str) -> dict:
    """The rates of one family an evaluation reports (and its failures and samples)."""
    fam = result["families"].get(family, {})
    keep = ("compile_rate", "pass_at_1", "tests_pass_rate", "tasks_with_tests", "exact_rate", "deleted_rate",
            "failures", "samples")
    return {k: fam[k] for k in keep if k in fam}


def with_selfrepair(heldout: dict, selfrepair: dict | None) -> dict:
    """One model's held-out evaluation with its self-repair evaluation beside it (families, per task)."""
    if selfrepair is None:
        return heldout
    return {**heldout, "families": {**heldout["families"], **selfrepair["families"]},
            "per_task": {**heldout["per_task"], **selfrepair["per_task"]}}
