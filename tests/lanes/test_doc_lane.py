"""The doc lane, tasks from the data and the prompts that carry their context: real extraction of the
example crate, the real Rust oracle (check and test paths), the real tiny model for batched greedy
decoding. The loop itself (real model, minutes) is `synth bench loop`, not a test."""
import json
from pathlib import Path

import pytest
from conftest import EXAMPLE_CRATE

from oracles.verdict import Candidate
from synth.tasks.split import check_disjoint, row_group, split_rows, task_of, write_tasks
from synth.doctasks.documented import doc_lane, doc_prompt, reference_answer, summary, without_doc
from synth.extract.extract import ExtractOptions, extract_paths
from synth.extract.model import standalone_source
from synth.generation.backtranslate import _row
from synth.prompting.chat import render, row_messages, serve_prompt, with_system
from synth.assemble.answers import LeakedSplit
from synth.tasks.task import Task
from synth.rows.rowfile import read_rows


@pytest.fixture(scope="module")
def decls():
    return extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations


@pytest.fixture(scope="module")
def doc_rows(decls, rust_oracle):
    rows, rejected = doc_lane(decls, rust_oracle, seed=0)
    return [r.model_dump(mode="json") for r in rows], rejected


def _training_prompt(row: dict) -> str:
    """What training renders before the answer (training/data/encode.py renders the same way)."""
    return render(with_system(row_messages(row))[:-1], add_generation_prompt=True)


def test_codegen_row_prompt_carries_its_verified_context(decls, rust_oracle):
    decl = next(d for d in decls if d.kind == "fn" and d.context.strip() and d.references)
    verdict = rust_oracle.check([Candidate.of(standalone_source(decl))])[0]
    assert verdict.passed
    row = _row(decl, verdict, {"instruction": f"Write `{decl.name}`.", "rating": 5},
               "gpt-4o-mini", 0).model_dump(mode="json")
    assert decl.context.strip() in row["prompt"]
    assert all(ref in row["prompt"] for ref in decl.references)
    assert _training_prompt(row) == serve_prompt(row["prompt"])  # byte for byte what serving sends
    task = task_of(row)
    assert task is not None and task.context == decl.context and task.must_define == [decl.name]


def test_doc_rows_are_verified_answers_to_their_own_docs(doc_rows, rust_oracle):
    rows, rejected = doc_rows
    assert len(rows) >= 10, rejected
    for row in rows:
        assert row["verification"]["passed"]
        assert "///" not in row["response"].split("fn ", 1)[0]  # the doc is in the prompt, not the answer
        assert row["context"].strip() in row["prompt"]
        assert _training_prompt(row) == serve_prompt(row["prompt"])
    # what a task's check runs is exactly what was verified: the reference passes it again
    tasks = [task_of(r) for r in rows]
    verdicts = rust_oracle.check([Candidate.of(r["checked_source"]) for r in rows])
    assert all(t is not None for t in tasks) and all(v.passed for v in verdicts)


def test_doc_prompt_shows_summary_and_signature_and_the_answer_drops_the_doc(decls):
    decl = next(d for d in decls if d.kind == "method" and d.doc.strip())
    prompt = doc_prompt(decl, decl.context)
    assert decl.signature.strip() in prompt and summary(decl.doc).splitlines()[0] in prompt
    answer = reference_answer(decl)
    assert answer.startswith(decl.wrapper_head.splitlines()[0]) and "///" not in answer
    assert "/// " + summary(decl.doc).splitlines()[0] in reference_answer(decl, keep_doc=True)
    assert without_doc("/// a\n#[inline]\n/// b\nfn f() {\n    // c\n}") == "#[inline]\nfn f() {\n    // c\n}"
    assert summary("Adds.\n\n# Examples\n```\nlet x = 1;\n```") == "Adds."


def test_split_keeps_heldout_apart_and_refuses_a_planted_leak(doc_rows, tmp_path):
    rows = [dict(r) for r in doc_rows[0]]
    for i, row in enumerate(rows):
        row["crate"] = "held" if i % 3 == 0 else "train"
    twin = dict(rows[1], id="planted-twin", crate="held")  # a training answer planted in a held-out crate
    split = split_rows(rows + [twin], {"held"}, rl_share=0.3, seed=0)
    assert split.refused >= 1 and "planted-twin" not in {t.id for t in split.heldout_tasks}
    assert split.heldout_tasks and split.rl_tasks and split.sft_rows
    training = {row_group(r) for r in split.sft_rows} | {t.group for t in split.rl_tasks}
    assert not training & {t.group for t in split.heldout_tasks}
    stats = write_tasks(tmp_path, split)
    heldout = [json.loads(line) for line in (tmp_path / "tasks" / "heldout.jsonl").read_text().splitlines()]
    assert stats["heldout_tasks"] == len(heldout) and all(Task.model_validate(t) for t in heldout)
    leaked = Task(**{**split.rl_tasks[0].model_dump(), "id": "leak"})
    split.heldout_tasks.append(leaked)
    with pytest.raises(LeakedSplit, match="1 held-out tasks share an answer group"):
        write_tasks(tmp_path, split)
    with pytest.raises(LeakedSplit):
        check_disjoint(split.sft_rows, [], [Task(**{**task_of(split.sft_rows[0]).model_dump(), "id": "x"})])


def test_batched_greedy_equals_one_prompt_at_a_time(tmp_path, monkeypatch):
    """Batched decoding (left padding, prompts prefilled in parts, a start shared with an earlier
    prompt computed once, finished rows leaving the batch and its KV cache) gives each prompt what
    transformers' own greedy generate gives it alone."""
    import torch
    from benchmarks.fixtures.tiny_model import build_tiny_model, pretrain
    from synth.llm import local

    answers = {"Write add.": "fn add(a: u32) -> u32 { a + 1 }", "Write a struct.": "struct Point { x: i32, y: i32 }",
               "Point?": "a struct with two fields"}
    model = build_tiny_model(tmp_path / "tiny", list(answers.values()) * 20)
    pretrain(model, [[{"role": "user", "content": q}, {"role": "assistant", "content": a}] for q, a in answers.items()],
             steps=40)
    sampler = local.LocalSampler(model, "float32", max_new_tokens=12)
    prompts = [serve_prompt("Write add."), serve_prompt("Write a much longer thing: a struct Point with x, y."),
               serve_prompt("Write a struct."), serve_prompt("Point?"),
               serve_prompt("Write a much longer thing: a struct Point with x, y, and add.")]  # shares 20 tokens more

    def alone(prompt: str, stop=None) -> str:
        ids = sampler.tokenizer(prompt, return_tensors="pt")
        with torch.no_grad():
            out = sampler.model.generate(**ids, max_new_tokens=12, do_sample=False, stop_strings=stop,
                                         tokenizer=sampler.tokenizer, pad_token_id=sampler.tokenizer.pad_token_id)
        return sampler.tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)

    monkeypatch.setattr(local, "PREFILL_ROWS", 3)  # the prompts' KV caches made in parts, then merged
    batched = sampler.greedy(prompts, batch_size=5)
    assert batched == [alone(p) for p in prompts]
    tokens = [len(sampler.tokenizer(p)["input_ids"]) for p in prompts]
    starts = local.shared_starts([sampler.tokenizer(p)["input_ids"] for p in sorted(prompts, key=len)])
    assert sampler.prefill_tokens == sum(tokens) - sum(n for _, n in starts) < sum(tokens) - 4 * local.MIN_SHARED
    assert max(n for _, n in starts) > min(n for _, n in starts if n) + 10  # the long shared start, beyond the template
    assert all(batched) and len(set(batched)) > 1
    # `until` ends each completion once it says done: a prefix of the full one, the rest not generated;
    # rows done at different steps leave the batch, and the others go on as they would alone
    def until(text: str) -> bool:
        return len(text) >= 6
    cut = sampler.greedy(prompts, batch_size=5, until=until)
    assert all(full.startswith(c) and len(c) < len(full) for c, full in zip(cut, batched)), cut
    assert len({len(sampler.tokenizer(c)["input_ids"]) for c in cut}) > 1, cut  # done at different steps
    assert cut == [sampler.greedy([p], batch_size=1, until=until)[0] for p in prompts]
    # sampling k per prompt near temperature 0 is greedy, each prompt's samples in its own place
    cold = local.LocalSampler(model, "float32", max_new_tokens=12, temperature=1e-4)
    assert cold.complete(prompts, k=2, greedy=False, batch_size=5) == [[b, b] for b in batched]


def test_a_prompt_reuses_the_longest_start_an_earlier_one_shares():
    from synth.llm.local import MIN_SHARED, shared_starts
    head = list(range(MIN_SHARED))
    rows = [head + [1, 2], head + [1, 2, 3], head + [1, 2, 3, 4], head + [9], head + [1, 2], [7] + head]
    assert shared_starts(rows) == [(None, 0), (0, MIN_SHARED + 2), (1, MIN_SHARED + 3), (0, MIN_SHARED),
                                   (0, MIN_SHARED + 1), (None, 0)]  # a copy keeps its last token to compute
    assert shared_starts([head[:-1] + [1], head[:-1] + [2]]) == [(None, 0), (None, 0)]  # too short a start


def _crate(root, name: str, body: str):
    (root / name / "src").mkdir(parents=True)
    (root / name / "Cargo.toml").write_text(f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / name / "src" / "lib.rs").write_text(body)


def _two_crates_config(tmp_path, tasks: str, repair: bool = True) -> Path:
    fns = "".join(f"/// Returns {i} more than `x`.\npub fn plus_{i}(x: u64) -> u64 {{\n    let y = x + {i};\n    y\n}}\n\n"
                  for i in range(6))
    _crate(tmp_path, "alpha", fns)
    _crate(tmp_path, "beta", fns.replace("plus_", "add_"))
    (tmp_path / "synth.toml").write_text(
        '[run]\nout = "run"\ncache_dir = "cache"\n\n[[sources]]\npath = "alpha"\nlang = "rust"\n\n'
        f'[[sources]]\npath = "beta"\nlang = "rust"\n\n[lanes.repair]\nenabled = {str(repair).lower()}\n\n'
        f'[lanes.doclane]\nenabled = true\n{tasks}')
    return tmp_path / "synth.toml"


def _lines(path: Path) -> list[dict]:
    return read_rows(path) if path.exists() else []


def test_the_pipeline_writes_tasks_and_keeps_heldout_answers_out_of_training(tmp_path):
    """Doc and repair lanes together: the held-out crate's rows of both lanes become held-out tasks
    of both families and nothing of it reaches rows/, train.jsonl or val.jsonl."""
    from synth.settings.config import load_config
    from synth.lanes import LANES
    from synth.pipeline.run import run_pipeline

    config = _two_crates_config(tmp_path, '\n[tasks]\nheldout_crates = ["beta"]\nrl_share = 0.3\n')
    summary = run_pipeline(load_config(config, LANES))
    run = tmp_path / "run"
    heldout = [Task.model_validate_json(line) for line in (run / "tasks" / "heldout.jsonl").read_text().splitlines()]
    rl = [Task.model_validate_json(line) for line in (run / "tasks" / "rl.jsonl").read_text().splitlines()]
    codegen = [t for t in heldout if t.family == "codegen"]
    repair = [t for t in heldout if t.family == "repair"]
    assert len(codegen) == 6 and all("add_" in t.must_define[0] for t in codegen), summary.notes
    assert repair and all(t.crate == "beta" and "add_" in t.signature for t in repair), summary.notes
    # functions of plain values: each task has tests of its reference's values (the run checked them)
    assert all("__synth_same_values" in t.tests for t in heldout + rl), summary.notes
    sft = _lines(run / "rows" / "codegen.jsonl.zst") + _lines(run / "rows" / "repair.jsonl.zst")
    trained = _lines(run / "train.jsonl.zst") + _lines(run / "val.jsonl.zst")
    assert rl and sft and trained and {r["task"] for r in trained} == {"codegen", "repair"}
    assert not [r for r in sft + trained if r["crate"] == "beta" or "add_" in r["response"]]
    assert not {t.group for t in heldout} & ({t.group for t in rl} | {row_group(r) for r in sft})
    assert not {t.id for t in rl} & {r["id"] for r in sft}  # RL tasks are not trained on by SFT
    # every declaration is on one side: an RL task's function has no SFT row of either lane
    rl_functions = {t.reference.split("(")[0].split()[-1] for t in rl}
    assert not [r for r in sft if r["response"].split("(")[0].split()[-1] in rl_functions]


def test_the_doc_lanes_old_task_keys_are_still_read_with_a_note(tmp_path):
    from synth.settings.config import load_config
    from synth.lanes import LANES

    config = load_config(_two_crates_config(tmp_path, 'heldout_crates = ["beta"]\nrl_share = 0.3\n', repair=False),
                         LANES)
    assert config.tasks.heldout_crates == ["beta"] and config.tasks.rl_share == 0.3
    assert any("[lanes.doclane] heldout_crates, rl_share: deprecated" in n for n in config.notes), config.notes


def test_make_model_refuses_a_gguf_that_is_not_the_pinned_one(tmp_path, monkeypatch):
    from training import base_model

    fake = tmp_path / base_model.GGUF_NAME
    fake.write_bytes(b"GGUF not the pinned weights")
    monkeypatch.setattr(base_model, "gguf_path", lambda: fake)
    with pytest.raises(ValueError, match="is not the pinned"):
        base_model.convert(tmp_path / "model")
    assert not (tmp_path / "model").exists()
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / base_model.STAMP).write_text(json.dumps({"gguf_sha256": base_model.GGUF_SHA256}))
    assert base_model.convert(tmp_path / "done") == tmp_path / "done"  # converted once: nothing redone


def test_a_function_configured_out_of_the_check_is_no_row(tmp_path, rust_oracle):
    """`#[cfg(windows)]` compiles to nothing on Linux: checked as written, this answer would pass
    unseen. The answer is checked (and shown) without its own cfg lines, so it fails and is rejected."""
    crate = tmp_path / "winonly"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "winonly"\nversion = "0.1.0"\nedition = "2021"\n')
    (crate / "src" / "lib.rs").write_text(
        "/// The Windows build number.\n#[cfg(windows)]\npub fn build() -> u32 {\n    windows_only::build()\n}\n\n"
        "/// Twice `x`.\npub fn double(x: u32) -> u32 {\n    x * 2\n}\n")
    decls = extract_paths([str(crate)], ExtractOptions(jobs=1)).declarations
    rows, rejected = doc_lane(decls, rust_oracle, seed=0)
    assert [r.must_define for r in rows] == [["double"]]
    assert [(r.about["name"], r.kind) for r in rejected] == [("build", "reference not verified (own #[cfg])")]
