"""What `synth` prints for people (rich tables, progress bars, verdicts); `--json` bypasses all of it."""
from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


def print_verdict(path: str, verdict) -> None:
    console = Console(highlight=False)
    mark = "[green]passed[/]" if verdict.passed else ("[red]timed out[/]" if verdict.timed_out else "[red]failed[/]")
    errors = sum(d.severity == "error" for d in verdict.diagnostics)
    warnings = len(verdict.diagnostics) - errors
    sandbox = verdict.sandbox.get("isolation") or "unknown"
    console.print(f"{escape(path)}: {mark} ({errors} errors, {warnings} warnings; {escape(verdict.toolchain)}; "
                  f"sandbox: {sandbox})")
    for d in verdict.diagnostics:
        console.print("  " + escape(d.render()).replace("\n", "\n  "))


def print_extract_summary(summary: dict, out: str) -> None:
    console = Console(highlight=False)
    console.print(f"read {summary['files_read']} files ({summary['bytes_read']} bytes); "
                  f"{summary['declarations']} declarations -> {escape(out)}")
    for key, count in summary["by_lang_kind"].items():
        console.print(f"  {key:<22} {count}")
    for reason, count in summary["declarations_left_out"].items():
        console.print(f"  left out ({reason}): {count}")
    for skip in summary["skipped"]:
        console.print(f"  skipped {escape(skip['path'])}: {escape(skip['reason'])}")


def print_plan(plan: dict) -> None:
    table = Table("lane", "model", "items", "calls", "cache hits", "input tok", "output tok", "expected $",
                  "worst $", "rows", "compile (s)", "sampling (s)", "attrition", title="plan: what `synth run` would do (no call made)")
    for r in plan["stages"] + [{**plan["total"], "stage": "total", "model": "", "attrition": ""}]:
        table.add_row(r["stage"], r["model"], str(r["items"]), f"{r['calls']:g}", str(r["cache_hits"]),
                      str(int(r["input_tokens"])), f"{r['expected_output_tokens']:.0f}", f"{r['expected_cost_usd']:.4f}",
                      f"{r['worst_case_usd']:.4f}", f"{r['expected_rows']:.0f}", f"{r['compiler_s']:.2f}",
                      f"{r['sampling_s']:.0f}",
                      r["attrition"])
    console = Console(width=max(140, Console().width), highlight=False)
    console.print(table)
    seconds = plan["seconds"]
    console.print(f"expected wall: {seconds['total']:.0f} s (start {seconds['setup']:.0f} s, lanes {seconds['lanes']:.0f} s, "
                  f"rows written {seconds['write']:.0f} s; at the last run's rates here, else a 2-core reference)")
    for name, why in plan["skipped"].items():
        console.print(f"skipped: {name}: {escape(why)}")
    for note in plan["notes"]:
        console.print(f"note: {escape(note)}")


def print_request_plan(plan: dict) -> None:
    table = Table("lane", "model", "items", "calls", "cache hits", "input tokens", "expected output", "expected $",
                  "worst case $", title="plan (no call made)")
    for r in plan["rows"]:
        table.add_row(r["stage"], r["model"], str(r["items"]), str(r["calls"]), str(r["cache_hits"]),
                      str(r["input_tokens"]), f"{r['expected_output_tokens']:.0f}" + ("" if r["history"] else " (max)"),
                      f"{r['expected_cost_usd']:.4f}", f"{r['worst_case_usd']:.4f}")
    Console(width=max(120, Console().width)).print(table)
    print(f"expected ${plan['expected_cost_usd']:.4f}, worst case ${plan['worst_case_usd']:.4f}")


def run_with_progress(config, max_spend, run_pipeline, lanes: dict):
    """`synth run` with live bars: lanes done, items of the LLM lanes, money spent of the cap."""
    console = Console(highlight=False)
    cap = config.budget.max_spend_usd if max_spend is None else max_spend
    settings = config.lane_settings()
    enabled = [name for name in lanes if settings[name].enabled]
    paid = [name for name in enabled if lanes[name].pays(settings[name], config.models)]
    if cap <= 0 and paid:
        console.print(f"spending cap is $0: only lanes that spend nothing run (skipped: {', '.join(paid)})")
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[status]}"))
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("lanes", total=len(enabled), status="extracting...")
        items: dict[str, int] = {}

        def on_item(lane, note, spent):  # an item of an LLM lane finished
            if lane not in items:
                items[lane] = bar.add_task(lane, total=None, status="")
            bar.update(items[lane], advance=1, status=f"last: {note}; spent ${spent:.4f} of ${cap:.2f}")

        def progress(name, output, spent):
            reasons = ", ".join(f"{k} {v}" for k, v in output.reasons().most_common(3)) or "none"
            bar.update(task, advance=1, status=f"{name}: kept {len(output.rows)}, rejected {len(output.rejected)} "
                                               f"({reasons}); spent ${spent:.4f} of ${cap:.2f}")
        summary = run_pipeline(config, max_spend, progress=progress, on_item=on_item)
        bar.update(task, completed=len(enabled))
    return summary


def print_run(result: dict, refresh: bool) -> None:
    for name, lane in result["stages"].items():
        print(f"{name:>14}: {lane['items']} items ({lane['reused']} reused, {lane['processed']} processed, "
              f"{lane['undone']} undone) -> {lane['rows']} rows, {lane['rejected']} rejected, "
              f"${lane['spent_usd']:.4f}")
    for name, why in result["skipped"].items():
        print(f"{name:>14}: skipped ({why})")
    diff = result["diff"]["total"]
    print(f"spent ${result['spent_usd']:.4f} of ${result['cap_usd']:.2f}; {result['llm_calls']} LLM calls "
          f"({result['llm_cache_hits']} cache hits); {result['compiler_runs']} compiler runs "
          f"({result['candidates_compiled']} candidates compiled)")
    print(f"snapshot {result['snapshot']}: +{diff['added']} -{diff['removed']} ~{diff['changed']} rows vs the previous one")
    if result.get("batch_submitted"):
        print(f"batch mode: {result['batch_submitted']} request(s) submitted; their answers are used by the next refresh")
    for note in result.get("notes", []):
        print(note)
    for item in result["attention"]:
        print(f"needs attention: {item}")


KEPT = "kept"


def operator_funnel(kept: dict[str, int], rejected: list[dict]) -> dict[str, Counter]:
    """Per operator, its mutants by outcome: kept as rows (`kept`: rows by operator), or the kind of
    check that refused them (the run's rejected lines: the same whether items were made now or reused)."""
    funnel: dict[str, Counter] = {operator: Counter({KEPT: n}) for operator, n in kept.items()}
    for rejection in rejected:
        operator = rejection.get("operator")
        if operator:  # a declaration refused whole (its original fails, too long) has no operator
            funnel.setdefault(operator, Counter())[rejection["kind"]] += 1
    return dict(sorted(funnel.items()))


def print_mutate(result: dict) -> None:
    """A repair-only run: its mutants by operator and outcome, then the run."""
    from synth.rows.jsonl import read_jsonl

    by_operator = result["stages"].get("repair", {}).get("mix", {}).get("by_operator", {})  # the lane's own count
    rejected = [r for path in result["paths"]["rejected"] for r in read_jsonl(path)]
    funnel = operator_funnel({op: counts["rows"] for op, counts in by_operator.items()}, rejected)
    kinds = sorted({kind for outcomes in funnel.values() for kind in outcomes if kind != KEPT})
    table = Table("operator", KEPT, *kinds, title="mutants by operator and outcome")
    for operator, outcomes in funnel.items():
        table.add_row(operator, *(str(outcomes[k]) for k in (KEPT, *kinds)))
    Console(highlight=False, width=max(120, Console().width)).print(table)
    print_run(result, refresh=False)