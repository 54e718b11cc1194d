"""`synth report RUN_DIR`: one self-contained HTML file (plots embedded as PNG data URIs, no
external file or script) about a synthesis run and, optionally, training runs: the funnel per
lane, rejection reasons, diagnostic codes, cost by lane and model, token lengths against
`seq_len`, loss curves and the step-time distribution. Each plot records how many data points it
drew (`data-points`), so a test can tell a plot with data from an empty frame."""
from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from pathlib import Path

from oracles.errors import InputError



class ReportError(InputError):
    pass


def _figure():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 3.6), dpi=100)
    return plt, fig, ax


def _png(plt, fig) -> str:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


class Plots:
    def __init__(self):
        self.items: list[tuple[str, str, int, str]] = []  # title, png, points, note

    def add(self, title: str, draw, points: int, note: str = "") -> None:
        plt, fig, ax = _figure()
        if points:
            draw(ax)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title, fontsize=11)
        self.items.append((title, _png(plt, fig), points, note))


def _bars(ax, labels, values, color="#4c72b0", horizontal=False):
    if horizontal:
        ax.barh(range(len(values)), values, color=color)
        ax.set_yticks(range(len(values)), labels, fontsize=8)
        ax.invert_yaxis()
    else:
        ax.bar(range(len(values)), values, color=color)
        ax.set_xticks(range(len(values)), labels, rotation=45, ha="right", fontsize=8)


def _synthesis_plots(plots: Plots, run: Path, stats: dict) -> None:
    import numpy as np
    funnel = stats.get("funnel", {})
    lanes = list(funnel)

    def draw_funnel(ax):
        x = np.arange(len(lanes))
        for k, (key, color) in enumerate((("candidates", "#8da0cb"), ("gated", "#66c2a5"), ("kept", "#fc8d62"))):
            ax.bar(x + (k - 1) * 0.27, [funnel[s][key] for s in lanes], 0.27, label=key, color=color)
        ax.set_xticks(x, lanes)
        ax.legend(fontsize=8)
    plots.add("Funnel per lane: candidates -> gated -> kept", draw_funnel,
              sum(funnel[s]["candidates"] for s in lanes))

    reasons = Counter()
    for lane, by_reason in stats.get("rejections", {}).items():
        for reason, n in by_reason.items():
            reasons[f"{lane}: {reason}"] += n
    top = reasons.most_common(12)
    plots.add("Rejections by reason", lambda ax: _bars(ax, [k for k, _ in top], [v for _, v in top], "#e78ac3", True),
              sum(v for _, v in top))

    codes = Counter(stats.get("diagnostic_codes", {}))
    top_codes = codes.most_common(20)
    plots.add("Diagnostic codes of the kept repair rows",
              lambda ax: _bars(ax, [k for k, _ in top_codes], [v for _, v in top_codes], "#a6d854"),
              sum(v for _, v in top_codes))

    cost = [c for c in stats.get("cost", [])]
    labels = [f"{c['stage']}\n{c['model']}" for c in cost]
    plots.add("Cost by lane and model (USD)", lambda ax: _bars(ax, labels, [c["usd"] for c in cost], "#ffd92f"),
              sum(1 for c in cost if c["usd"] > 0),
              note="" if any(c["usd"] for c in cost) else "nothing was spent in this run")

    # The snapshot manifest already measured every row (same tokenizer and count as assembly).
    length = (json.loads((run / "manifest.json").read_text()).get("length") or {}) \
        if (run / "manifest.json").exists() else {}
    seq_len = length.get("seq_len")
    bins = dict(sorted((length.get("bins") or {}).items(),  # stored with sorted keys: order by bound
                       key=lambda kv: (kv[0].startswith(">"), int(kv[0].lstrip("<=>")))))

    def draw_lengths(ax):
        labels = list(bins)
        ax.bar(range(len(labels)), list(bins.values()),
               color=["#d62728" if k.startswith(">") else "#66c2a5" for k in labels])
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlabel(f"tokens per row ({length.get('tokenizer', '?')}); red: longer than seq_len {seq_len}")
    total = sum(bins.values())
    plots.add("Token length of the snapshot's rows", draw_lengths, total,
              note=f"{length.get('truncated', 0)} of {total} rows longer than seq_len {seq_len}")


def _training_plots(plots: Plots, manifest: dict, label: str) -> None:
    history = manifest.get("log_history", [])
    loss = [(h["step"], h["loss"]) for h in history if "loss" in h]
    evals = [(h["step"], h["eval_loss"]) for h in history if "eval_loss" in h]

    def draw_loss(ax):
        ax.plot([s for s, _ in loss], [v for _, v in loss], marker=".", label="train loss")
        if evals:
            ax.plot([s for s, _ in evals], [v for _, v in evals], "o", label="eval loss")
        ax.set_xlabel("optimizer step")
        ax.legend(fontsize=8)
    plots.add(f"{label}: loss", draw_loss, len(loss))
    durations = manifest.get("step_durations", [])[1:]  # the first step is excluded, as in the stats

    def draw_steps(ax):
        ax.hist(durations, bins=min(30, max(5, len(durations) // 2)), color="#8da0cb")
        ax.set_xlabel("seconds per optimizer step")
    stats = manifest.get("step_times", {})
    plots.add(f"{label}: step-time distribution", draw_steps, len(durations),
              note=", ".join(f"{k} {v}" for k, v in stats.items()))


def write_report(run_dir: str | Path, out: str | Path | None = None, train_dirs: list | None = None) -> Path:
    run = Path(run_dir)
    if not run.is_dir():
        raise ReportError(f"{run}: no such run directory")
    stats_path = run / "stats" / "run.json"
    own_training = (run / "run_manifest.json").exists()
    if not stats_path.exists() and not own_training and not train_dirs:
        raise ReportError(f"{run}: neither stats/run.json (a synthesis run) nor run_manifest.json (a training run)")
    plots = Plots()
    summary = {}
    if stats_path.exists():
        stats = json.loads(stats_path.read_text())
        summary = stats.get("summary", {})
        _synthesis_plots(plots, run, stats)
    for directory in ([run] if own_training else []) + [Path(d) for d in train_dirs or []]:
        manifest_path = directory / "run_manifest.json"
        if not manifest_path.exists():
            raise ReportError(f"{directory}: no run_manifest.json")
        manifest = json.loads(manifest_path.read_text())
        _training_plots(plots, manifest, f"{manifest.get('kind', 'train')} ({directory.name})")
    target = Path(out) if out else run / "report.html"
    target.write_text(_html(run, summary, plots))
    return target


def _html(run: Path, summary: dict, plots: Plots) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td>" + "".join(f"<td>{lane.get(k, '')}</td>" for k in
                                                        ("items", "reused", "processed", "undone", "rows", "rejected"))
        + f"<td>${lane.get('spent_usd', 0):.4f}</td></tr>"
        for name, lane in summary.get("stages", {}).items())
    facts = ""
    if summary:
        diff = summary.get("diff", {}).get("total", {})
        facts = (f"<p>Spent <b>${summary.get('spent_usd', 0):.4f}</b> of a ${summary.get('cap_usd', 0):.2f} cap; "
                 f"{summary.get('llm_calls', 0)} LLM calls ({summary.get('llm_cache_hits', 0)} answered by the cache); "
                 f"{summary.get('compiler_runs', 0)} compiler runs ({summary.get('candidates_compiled', 0)} candidates). "
                 f"Snapshot <code>{html.escape(Path(summary.get('snapshot', '')).name)}</code>: "
                 f"+{diff.get('added', 0)} / -{diff.get('removed', 0)} / ~{diff.get('changed', 0)} rows.</p>")
        facts += ("<table><tr><th>lane</th><th>items</th><th>reused</th><th>processed</th><th>undone</th>"
                  f"<th>rows</th><th>rejected</th><th>spent</th></tr>{rows}</table>")
        facts += "".join(f"<p class=warn>needs attention: {html.escape(a)}</p>" for a in summary.get("attention", []))
    figures = "".join(
        f'<figure data-points="{points}"><img alt="{html.escape(title)}" src="data:image/png;base64,{png}">'
        f"<figcaption>{html.escape(title)}{(' - ' + html.escape(note)) if note else ''}</figcaption></figure>"
        for title, png, points, note in plots.items)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>synth report: {html.escape(run.name)}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; margin: 8px 0 16px; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
.grid {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 16px; }}
figure {{ margin: 0; border: 1px solid #eee; padding: 6px; }}
img {{ width: 100%; }}
.warn {{ color: #a33; }}
</style></head>
<body><h1>synth report: {html.escape(str(run))}</h1>{facts}
<div class="grid">{figures}</div></body></html>
"""
