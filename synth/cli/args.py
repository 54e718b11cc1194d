"""The arguments of every `synth` verb (argparse). `synth/cli/main.py` runs the verb they name."""
from __future__ import annotations

import argparse
import typing
from pathlib import Path

from oracles.settings import OracleSettings
from synth.mutate.settings import RepairSettings

# Flags that set a config knob take their default from the knob's settings class (written once there).
ORACLE, REPAIR = OracleSettings(), RepairSettings()


def arms_among(*choices: str):
    """An argparse type: comma-separated arms, each one of `choices`."""
    def arms(text: str) -> tuple[str, ...]:
        picked = tuple(a.strip() for a in text.split(",") if a.strip())
        unknown = [a for a in picked if a not in choices]
        if unknown or not picked:
            raise argparse.ArgumentTypeError(f"unknown arm {unknown[0] if unknown else text!r}: "
                                             f"{', '.join(choices[:-1])} or {choices[-1]} (comma-separated)")
        return picked
    return arms


ablation_arms = arms_among("gate", "diagnostics", "operators", "mens", "reward")
night_arms = arms_among("killed", "ray", "crates")


def build_parser(benches: dict) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="synth", description="Compiler-verified training data for code models.")
    sub = parser.add_subparsers(dest="verb", required=True)

    def executor(p, default=None):
        p.add_argument("--executor", choices=["local", "ray"], default=default,
                       help="where compiler checks and model calls run: here, or on a Ray cluster"
                            + ("" if default else " (default: [run] executor of the config)"))
        p.add_argument("--ray-address", help="the Ray cluster (\"auto\", ray://HOST:PORT; default: a local one)")

    def common(p, cache=(str(Path("cache") / "verdicts"), "verdict cache folder")):
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--cache-dir", default=cache[0], help=cache[1])
        p.add_argument("--no-cache", action="store_true", help="always run the compiler")
        p.add_argument("--vox", default=ORACLE.vox, help="path to the `vox` binary (default: vox on PATH)")

    check = sub.add_parser("check", help="oracle verdict per file")
    common(check)
    check.add_argument("files", nargs="+", metavar="FILE")
    check.add_argument("--lang", choices=["rust", "vox"])
    check.add_argument("--edition", default=ORACLE.edition, choices=["2015", "2018", "2021", "2024"])
    check.add_argument("--jobs", type=int, default=ORACLE.jobs)
    check.set_defaults(command="check")

    bench = sub.add_parser("bench", help="print the figures the issues ask for")
    common(bench)
    bench.add_argument("what", choices=sorted(benches))
    bench.add_argument("--out", help="crates: run directory for the rows and stats/ (default runs/bench-crates); "
                       "loop: not used (the loop config's [run] out)")
    bench.add_argument("--in-crate", choices=["fallback", "always"], default="always",
                       help="crates: verify in the crate only where the standalone file fails, or always")
    bench.add_argument("--steps", type=int, help="train: optimizer steps per measured run (12); loop: SFT steps (the profile's)")
    bench.add_argument("--n", type=int, default=500,
                       help="oracle: candidates; refresh: declarations (300); crates: side-by-side sample (300); "
                            "sampler: held-out prompts (96)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--repeats", type=int, default=5)
    bench.add_argument("--jobs", type=int, help="workers (oracle: 1, the same for both sides; extract: all cores; "
                       "loop: torch threads)")
    bench.add_argument("--crates", nargs="+", metavar="PATH",
                       help="oracle: Rust sources for the pipeline stream (default examples/rust); "
                            "extract: real sources to measure (and a crate among them to scale); crates: the crate "
                            "folders (default the pinned corpus)")
    bench.add_argument("--rounds", type=int, help="loop: rounds of expert iteration (round 2 samples the round-1 "
                       "model on the RL tasks and trains on what passes with the round-1 data)")
    bench.add_argument("--ablate", type=ablation_arms, metavar="ARM[,ARM...]",
                       help="loop: also train the ablation arms (gate, diagnostics, operators; mens: audit-style "
                            "rows in place of synth's repair rows; reward: GRPO on the layered reward beside the "
                            "binary one) and compare; ablate: the arms to run on the run the loop left (default all three)")
    bench.add_argument("--draws", type=int, help="loop: draws of the picked repairer's samples (`synth eval --draws`), "
                       "their means beside each draw (1)")
    bench.add_argument("--rl-steps", type=int, help="loop: GRPO steps (the profile's)")
    bench.add_argument("--tasks", help="judge: a tasks JSONL to attack (the loop profile's held-out tasks)")
    bench.add_argument("--crate-tests", action="store_true", help="judge: run the crates' own tests too")
    bench.add_argument("--mb", type=float, default=20.0, help="extract: size of the generated corpus")
    bench.add_argument("--config", help="night: the night's synth.toml (examples/night/synth.toml)")
    bench.add_argument("--nodes", type=int, default=8, help="night: nodes of the projected cluster")
    bench.add_argument("--cores", type=int, default=16, help="night: cores a node of the projected cluster")
    bench.add_argument("--skip", type=night_arms, default=(), metavar="ARM[,ARM...]",
                       help="night: arms to leave out (killed, ray, crates), for a night longer than one sitting; "
                            "their figures print as null")
    executor(bench, "local")
    bench.set_defaults(command="bench")

    extract = sub.add_parser("extract", help="declarations JSONL from Rust and Vox sources")
    extract.add_argument("--json", action="store_true", help="print the summary as JSON")
    extract.add_argument("paths", nargs="+", metavar="PATH")
    extract.add_argument("--out", required=True, help="declarations JSONL to write")
    extract.add_argument("--include-tests", action="store_true", help="keep test and example code (test functions, "
                         "`#[cfg(test)]` modules, tests/, benches/, examples/)")
    extract.add_argument("--max-bytes", type=int, default=1_000_000, help="skip larger files")
    extract.add_argument("--max-context-bytes", type=int,
                         help="a Rust context's size budget, nearest items first (default 16000; 0: none)")
    extract.add_argument("--vox-grammar", help="compiled tree-sitter grammar for Vox (shared library)")
    extract.add_argument("--jobs", type=int, help="worker processes (default: all cores; 1: in this process)")
    extract.set_defaults(command="extract")

    mutate = sub.add_parser("mutate", help="repair rows from compiler-rejected mutants (no LLM, no spend)")
    common(mutate, ("cache", "the run's cache folder (verdicts/, items/), as [run] cache_dir of a config"))
    mutate.add_argument("paths", nargs="+", metavar="PATH")
    mutate.add_argument("--out", required=True, help="run directory, as `synth run` writes it (rows/, rejected/, "
                        "train.jsonl.zst, val.jsonl.zst, manifest.json, snapshots/, stats/)")
    mutate.add_argument("--seed", type=int, default=0)
    mutate.add_argument("--diff", action="store_true", default=REPAIR.diff, help="answer with a unified diff")
    mutate.add_argument("--max-share", type=float, default=REPAIR.max_share, help="cap per operator and per error code")
    mutate.add_argument("--jobs", type=int, default=ORACLE.jobs)
    mutate.add_argument("--in-crate", choices=typing.get_args(RepairSettings.model_fields["in_crate"].annotation),
                        default=REPAIR.in_crate,
                        help="Rust: verify in the real crate where the standalone file fails (or always, or never)")
    mutate.add_argument("--include-tests", action="store_true", help="keep test and example code (tests/, benches/, "
                        "examples/, `#[cfg(test)]` modules)")
    executor(mutate, "local")
    mutate.set_defaults(command="mutate")

    plan = sub.add_parser("plan", help="dry run: what the calls would cost (makes no call)")
    plan.add_argument("--json", action="store_true")
    plan.add_argument("--config", help="synth.toml: plan what `synth run` would do")
    plan.add_argument("--max-spend", type=float, help="the cap to plan under (default: [budget] of the config)")
    plan.add_argument("--out", help="run directory (default: [run] out of the config)")
    plan.add_argument("--requests", help="JSONL of requests to price")
    plan.add_argument("--batch", action="store_true", help="price at batch (50%%) rates")
    plan.add_argument("--prices", help="price override file (else SYNTH_PRICES, else the shipped table)")
    plan.add_argument("--llm-cache", default=str(Path("cache") / "llm"), help="response cache (history, hits)")
    plan.set_defaults(command="plan")

    assemble = sub.add_parser("assemble", help="rows from runs -> a dataset snapshot (train/val/manifest)")
    assemble.add_argument("--mix", required=True, help="mix file (TOML)")
    assemble.add_argument("--out", required=True, help="snapshot folder")
    assemble.add_argument("--seed", type=int)
    assemble.add_argument("--strict", action="store_true", help="a lane below its readiness thresholds fails")
    assemble.add_argument("--no-parquet", action="store_true")
    assemble.add_argument("--json", action="store_true")
    assemble.set_defaults(command="assemble")

    for verb, helptext in (("run", "every enabled lane, under the spending cap, then a snapshot"),
                           ("refresh", "nightly: incremental run under a lock, new snapshot and diff (for cron)")):
        p = sub.add_parser(verb, help=helptext)
        p.add_argument("--config", required=True, help="synth.toml")
        p.add_argument("--out", help="run directory (default: [run] out of the config)")
        p.add_argument("--max-spend", type=float, help="USD cap for this run (default: [budget] max_spend_usd)")
        p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
        if verb == "refresh":
            p.add_argument("--batch", action="store_true", help="LLM calls through the batch APIs (half price)")
        executor(p)
        p.set_defaults(command=verb)

    report = sub.add_parser("report", help="one self-contained HTML report of a run directory")
    report.add_argument("run_dir")
    report.add_argument("--out", help="HTML file (default: RUN_DIR/report.html)")
    report.add_argument("--train", action="append", help="a training output directory to include (repeatable)")
    report.add_argument("--json", action="store_true")
    report.set_defaults(command="report")

    train = sub.add_parser("train", help="LoRA SFT or GRPO on a snapshot (see docs in README)")
    train.add_argument("stage", choices=["sft", "grpo"])
    train.add_argument("--profile", help="training profile (TOML, or synth.toml with [train])")
    train.add_argument("--model", help="local model directory (overrides the profile's)")
    train.add_argument("--data", help="run directory or snapshot with train.jsonl.zst/val.jsonl.zst (overrides the profile's)")
    train.add_argument("--out", help="output directory (overrides the profile's output_dir)")
    train.add_argument("--tasks", help="grpo: the RL tasks JSONL (overrides the profile's [grpo] tasks)")
    train.add_argument("--max-steps", type=int, help="stop after N optimizer steps")
    train.add_argument("--reward", action="append", default=[], metavar="NAME=WEIGHT",
                       help="grpo: a reward component's weight (compile, tests, format, layered), over the profile's")
    train.add_argument("--resume", action="store_true", help="resume the latest checkpoint (same data only)")
    train.add_argument("--json", action="store_true")
    train.set_defaults(command="train")

    evaluate = sub.add_parser("eval", help="pass@k and compile rate on held-out tasks, with a regression gate")
    evaluate.add_argument("--profile", required=True)
    evaluate.add_argument("--model", help="model directory (default: the profile's model)")
    evaluate.add_argument("--adapter", help="LoRA adapter directory to apply")
    evaluate.add_argument("--tasks", help="tasks JSONL (default: [eval] tasks of the profile)")
    evaluate.add_argument("--baseline", help="an earlier eval JSON: fail (exit 1) on a significant regression")
    evaluate.add_argument("--decoding", choices=["greedy", "sample"], help="default: [eval] decoding of the profile")
    evaluate.add_argument("--dtype", choices=["float32", "bfloat16"],
                          help="the weights while decoding (default: [eval] dtype of the profile); in bfloat16 a "
                          "task's answer can depend on the tasks batched with it, in float32 it does not")
    evaluate.add_argument("--shots", type=int, help="worked examples per family shown before each task (from --examples)")
    evaluate.add_argument("--examples", help="tasks file the worked examples come from (e.g. RUN/tasks/rl.jsonl)")
    evaluate.add_argument("--turns", type=int, help="answers in all per sample: one the compiler rejects goes back "
                          "with its errors for another (compile@1, compile@2, ... per family)")
    evaluate.add_argument("--samples", type=int, help="N sampled answers per task at the profile's temperature "
                          "(default: [eval] decoding and samples of the profile)")
    evaluate.add_argument("--pick", choices=["all", "compiled"], help="all: every sample counts (pass@1, pass@k); "
                          "compiled: rejection sampling, one answer a task, the first sample rustc accepts that is not "
                          "hollow, adds no attribute and defines what was asked (any_sample_rate: a perfect picker)")
    evaluate.add_argument("--draws", type=int, help="sampled answers: the samples drawn N times, a seed each; draws "
                          "1.. written beside OUT as OUT.drawN.json, and the rates of all with their mean in `draws` "
                          "(default: [eval] draws)")
    evaluate.add_argument("--retries", type=int, help="a greedy reply that gives back the broken code it was shown is "
                          "sampled again, up to N replies, the first that changes the code taken (default: [eval] retries)")
    evaluate.add_argument("--crate-tests", action="store_true", default=None,
                          help="a repair answer that counts also runs its crate's own tests where they pass on the "
                          "original; pass@1 needs them (default: [eval] crate_tests)")
    evaluate.add_argument("--family", choices=["codegen", "repair", "selfrepair"], help="only the tasks of this family")
    evaluate.add_argument("--answers", metavar="BASELINE|FILE",
                          help="no model: judge a baseline's answers (unchanged: the broken code; rustc: its "
                               "machine-applicable fixes; rustc_all: every suggestion without placeholders; "
                               "compiler_words: rules on its diagnostics; best_free: the better of those two; "
                               "free_search: up to 8 of the ways its words allow, the compiler picking; "
                               "reference: the tasks' own answers), or a JSONL file of {\"id\", \"answer\"} lines")
    evaluate.add_argument("--after", metavar="BASELINE", help="the model with this baseline (e.g. best_free) around it: "
                          "its answer stands where it counts (free_search: the first of its tries that does), "
                          "elsewhere the model gets its code and errors, and it mends the model's answer in turn")
    evaluate.add_argument("--out", required=True, help="where to write the evaluation JSON")
    evaluate.add_argument("--json", action="store_true")
    evaluate.set_defaults(command="eval")

    selfrepair = sub.add_parser("selfrepair", help="tasks of a model's own failing answers, sent back with rustc's errors")
    selfrepair.add_argument("--profile", required=True, help="the eval profile (its oracle settings)")
    selfrepair.add_argument("--tasks", required=True, help="the held-out tasks the models answered (RUN/tasks/heldout.jsonl)")
    selfrepair.add_argument("--answers", action="append", required=True, metavar="NAME=FILE",
                            help="a model's answers (the NAME.answers.jsonl `synth eval` writes); repeatable")
    selfrepair.add_argument("--out", required=True, help="where the tasks go (e.g. RUN/tasks/selfrepair.jsonl)")
    selfrepair.add_argument("--json", action="store_true")
    selfrepair.set_defaults(command="selfrepair")

    tools = sub.add_parser("tools", help="MCP tool definitions: `tools list --server CMD ...`")
    tools.add_argument("action", choices=["list"])
    tools.add_argument("--name", help="the server's name (default: from the command)")
    tools.add_argument("--out", default="tools.json", help="where the kept tools are saved (default tools.json)")
    tools.add_argument("--env", nargs="*", default=[], metavar="NAME", help="environment variables to pass through")
    tools.add_argument("--json", action="store_true", help="machine-readable output")
    tools.add_argument("--server", nargs=argparse.REMAINDER, required=True, help="the server's command and arguments (last)")
    tools.set_defaults(command="tools")

    demo = sub.add_parser("demo", help="the offline job on the bundled examples (spends nothing)")
    common(demo)
    demo.set_defaults(command="demo")
    return parser
