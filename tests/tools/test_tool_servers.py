"""The tool-call stage on live MCP servers named in synth.toml: the reference servers from PyPI
(mcp-server-git on a scratch repository made here, mcp-server-time) and a bare stub server,
with the real openai SDK on the loopback provider. Each server is listed at the start of the
run, its list saved with its hash; rows trace to it; only read-only calls run; a server that
fails is named and the others' rows are still made; a changed list re-verifies only its server."""
import pytest
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
from conftest import ROOT
from benchmarks.fixtures.llm_server import FakeLLMServer

from synth.cli.main import main
from synth.settings.config import load_config
from synth.lanes import LANES
from synth.pipeline.run import run_pipeline
from synth.tools.groups import stem_groups
from synth.rows.rowfile import read_rows

BIN = Path(sys.executable).parent
STUB = ROOT / "tests" / "helpers" / "mcp_stub_server.py"
ECHO = {"name": "stub_echo", "description": "Echo a word.",
        "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}}}
MUTATING = {"git_commit", "git_add", "git_reset", "git_create_branch", "git_checkout"}

CONFIG = """
[run]
out = "run"
cache_dir = "cache"

[[sources]]
path = "lib.rs"
lang = "rust"

[models.writer]
provider = "openai"
model = "gpt-4o-mini"
base_url = "{base_url}/v1"
free = true

[lanes.repair]
enabled = false

[lanes.toolcalls]
enabled = true
model = "writer"
per_tool = 2
k = 10
"""


def server_entry(name: str, *command) -> str:
    return f"\n[[lanes.toolcalls.servers]]\nname = \"{name}\"\ncommand = {json.dumps([str(c) for c in command])}\n"


def workspace(tmp: Path, base_url: str, servers: str) -> Path:
    (tmp / "lib.rs").write_text("pub fn one() -> i32 { 1 }\n")
    (tmp / "synth.toml").write_text(CONFIG.format(base_url=base_url) + servers)
    return tmp / "synth.toml"


def scratch_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    (repo / "a.txt").write_text("two\n")  # a change a mutating call would stage, commit or reset
    (repo / "notes.txt").write_text("untracked\n")
    return repo


def repo_state(repo: Path) -> str:
    out = [subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout
           for args in (["status", "--porcelain"], ["log", "--all", "--format=%H %s"], ["branch", "-a"],
                        ["diff", "--cached"])]
    return "\n--\n".join(out)


def arguments_for(description: str, variant: int, repo: str) -> dict:
    """What a writer model would answer; git_show's and get_current_time's second variants are wrong."""
    table = {
        "Shows the working tree status": {"repo_path": repo},
        "Shows changes in the working directory": {"repo_path": repo},
        "Shows changes that are staged": {"repo_path": repo},
        "Shows differences between": {"repo_path": repo, "target": "HEAD"},
        "Records changes": {"repo_path": repo, "message": "must never be committed"},
        "Adds file contents": {"repo_path": repo, "files": ["a.txt", "notes.txt"]},
        "Unstages all": {"repo_path": repo},
        "Shows the commit logs": {"repo_path": repo, "max_count": 5},
        "Creates a new branch": {"repo_path": repo, "branch_name": "never-created"},
        "Switches branches": {"repo_path": repo, "branch_name": "never-created"},
        "Shows the contents of a commit": {"repo_path": repo,
                                           "revision": "HEAD" if variant == 1 else "no-such-revision"},
        "List Git branches": {"repo_path": repo, "branch_type": "local"},
        "Get current time": {"timezone": "Europe/Warsaw" if variant == 1 else "Mars/Olympus_Mons"},
        "Convert time": {"source_timezone": "America/New_York", "time": "16:30", "target_timezone": "Asia/Tokyo"},
        "Echo a word": {"word": "hello"},
    }
    return next((args for start, args in table.items() if description.startswith(start)), {})


def writer(repo: str = ""):
    def respond(body):
        prompt = body["messages"][-1]["content"]
        description = re.search(r"Tool description: (.*?)\nInput schema", prompt, re.S).group(1)
        variant = int(re.search(r"variant (\d+)", prompt).group(1))
        own_words = {"Get current time": "what is the hour in that city right now?",
                     "Convert time": "if it is half past four in New York, what is the hour in Tokyo?"}
        said = next((v for k, v in own_words.items() if description.startswith(k)),
                    description.lower().replace("git ", ""))
        task = f"({variant}) I would like this done: {said}"
        return json.dumps({"task": task, "arguments": arguments_for(description, variant, repo)})
    return respond


def todays_share(tool_names: list[str], all_names: list[str], k: int) -> float:
    """The figure before this change: groups were a name's first two segments (git_diff, git_log...)."""
    def group(name):
        return "_".join(name.split("_")[:2])
    negatives = min(k, len(all_names)) - 1
    good = [2 * min(negatives, sum(group(o) == group(n) for o in all_names if o != n)) >= negatives
            for n in tool_names]
    return sum(good) / len(good)


@pytest.mark.slow
def test_reference_servers_live_rows_trace_to_their_lists_and_nothing_mutates(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    repo = scratch_repo(tmp_path)
    before = repo_state(repo)
    with FakeLLMServer(responder=writer(str(repo))) as llm:
        config = workspace(tmp_path, llm.base_url, server_entry("git", BIN / "mcp-server-git", "--repository", repo)
                           + server_entry("time", BIN / "mcp-server-time"))
        summary = run_pipeline(load_config(config, LANES))
    assert repo_state(repo) == before  # no mutating tool ran: status, log, branches and index as they were
    assert summary.attention == []
    out = tmp_path / "run"
    manifest = json.loads((out / "manifest.json").read_text())
    saved = {}
    for server in ("git", "time"):
        record = json.loads((out / "tools" / f"{server}.json").read_text())
        assert record["sha256"] == hashlib.sha256(json.dumps(record["tools"], sort_keys=True).encode()).hexdigest()
        assert manifest["tool_lists"][server] == record["sha256"]
        assert (out / "snapshots" / "0001" / "tools" / f"{server}.json").read_text() == \
            (out / "tools" / f"{server}.json").read_text()
        saved[server] = record
    assert len(saved["git"]["tools"]) == 12 and len(saved["time"]["tools"]) == 2
    selection = read_rows(out / "rows" / "tool_selection.jsonl.zst")
    arguments = read_rows(out / "rows" / "argument_generation.jsonl.zst")
    seen = set()
    for row in selection:  # each row re-validated against the list saved for its server
        call = json.loads(row["response"])
        server, name = call["name"].split("__", 1)
        definition = next(t for t in saved[server]["tools"] if t["name"] == name)
        jsonschema.Draft202012Validator(definition["inputSchema"]).validate(call["arguments"])
        assert row["tool_list"] == {"server": server, "sha256": saved[server]["sha256"]}
        assert call["name"] in row["tools_offered"] and len(row["tools_offered"]) == 10
        seen.add(server)
    assert seen == {"git", "time"} and len(arguments) == len(selection)
    # a live server's tools are not Vox: the rows say JSON, and their lanes name no language
    assert {(r["lang"], r["lane"]) for r in selection + arguments} == {("json", "tool_selection"),
                                                                      ("json", "argument_generation")}
    toolcalls = summary.lanes["toolcalls"]
    executed = set(toolcalls["executed"])
    read_only = {t["name"] for s in saved.values() for t in s["tools"] if t["annotations"]["readOnlyHint"]}
    assert {"git_status", "git_log", "git_show", "get_current_time", "convert_time"} <= executed <= read_only
    assert not executed & MUTATING
    mutating_rows = [r for r in selection if json.loads(r["response"])["name"].split("__")[1] in MUTATING]
    assert mutating_rows and all(r["checks"]["execution"].startswith("not run") for r in mutating_rows)
    rejected = read_rows(out / "rejected" / "toolcalls.jsonl")
    failed = {r["tool"]: r["reason"] for r in rejected if r["kind"] == "execution"}
    assert set(failed) == {"git__git_show", "time__get_current_time"}
    assert "no-such-revision" in failed["git__git_show"] and "Mars/Olympus_Mons" in failed["time__get_current_time"]
    assert len(selection) == 2 * 14 - 2
    git_rows = [r for r in selection if r["tool_list"]["server"] == "git"]
    share = sum(2 * r["negatives_in_group"] >= r["negatives"] for r in git_rows) / len(git_rows)
    names = [json.loads(r["response"])["name"].split("__")[1] for r in git_rows]
    before_share = todays_share(names, [t["name"] for s in saved.values() for t in s["tools"]], 10)
    with capsys.disabled():
        print(f"\ngit server: {share:.0%} of {len(git_rows)} selection rows draw >= half their negatives from "
              f"the tool's own group (the rule before this change: {before_share:.0%}); executed {sorted(executed)}")
    assert share >= 0.8


def test_a_failing_server_is_named_and_the_others_rows_are_still_made(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    (tmp_path / "bad_schema.json").write_text(json.dumps([{"name": "stub_bad", "description": "Bad.", "inputSchema": {
        "type": "object", "properties": {"x": {"type": "nope"}}}}]))
    (tmp_path / "no_schema.json").write_text(json.dumps([{"name": "stub_none", "description": "No schema."}]))
    (tmp_path / "good.json").write_text(json.dumps([ECHO]))
    servers = (server_entry("good", sys.executable, STUB, tmp_path / "good.json")
               + server_entry("exits", sys.executable, "-c", "import sys; print('missing config', file=sys.stderr); "
                                                             "sys.exit(3)")
               + server_entry("bad-schema", sys.executable, STUB, tmp_path / "bad_schema.json")
               + server_entry("no-schema", sys.executable, STUB, tmp_path / "no_schema.json"))
    with FakeLLMServer(responder=writer()) as llm:
        config = workspace(tmp_path, llm.base_url, servers)
        code = main(["run", "--config", str(config)])
    printed = capsys.readouterr().out
    assert code == 1
    assert re.search(r"MCP server `exits` \(.*\): tools/list failed: it closed the connection \(exited\?\); "
                     r"its stderr: missing config", printed)
    assert "MCP server `bad-schema`: none of its 1 tools is valid (tool #0 (stub_bad): inputSchema is not a valid " \
           "JSON Schema" in printed
    assert re.search(r"MCP server `no-schema` \(.*\): tools/list failed: its answer is not a valid MCP result: "
                     r"tools.0.inputSchema: Field required", printed)
    selection = read_rows(tmp_path / "run" / "rows" / "tool_selection.jsonl.zst")
    assert {json.loads(r["response"])["name"] for r in selection} == {"good__stub_echo"} and len(selection) == 2
    rejected = read_rows(tmp_path / "run" / "rejected" / "toolcalls.jsonl")
    assert {r["server"] for r in rejected if r["kind"] == "server"} == {"exits", "bad-schema", "no-schema"}


def test_a_changed_list_reverifies_only_its_server_and_clashes_are_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    tools_a, tools_b = tmp_path / "a.json", tmp_path / "b.json"
    tools_a.write_text(json.dumps([ECHO]))
    tools_b.write_text(json.dumps([ECHO]))
    servers = server_entry("stub-a", sys.executable, STUB, tools_a) + server_entry("stub-b", sys.executable, STUB, tools_b)
    with FakeLLMServer(responder=writer()) as llm:
        config = load_config(workspace(tmp_path, llm.base_url, servers), LANES)
        first = run_pipeline(config).lanes["toolcalls"]
        unchanged = run_pipeline(config).lanes["toolcalls"]
        tools_a.write_text(json.dumps([ECHO, {**ECHO, "name": "stub_shout", "description": "Echo a word loudly."}]))
        changed = run_pipeline(config).lanes["toolcalls"]
    assert (first["processed"], first["reused"]) == (2, 0)
    assert (unchanged["processed"], unchanged["reused"]) == (0, 2)
    assert (changed["processed"], changed["reused"]) == (2, 1)  # stub-a's two tools verified, stub-b's one reused
    assert first["name_clashes"] == ["tool `stub_echo` is offered by MCP server `stub-a` and MCP server `stub-b` "
                                     "(rows name them `stub-a__stub_echo`, `stub-b__stub_echo`)"]
    assert changed["rows"] == 2 * 2 * 3  # two rows for each of 2 variants of 3 tools


def test_tools_list_prints_kept_and_refused_and_saves_a_usable_file(tmp_path, capsys):
    from synth.tools.definitions import load_tools_file, validate_definitions
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([
        {"name": "stub_echo", "description": "Echo.", "inputSchema": {"type": "object"}},
        {"name": "stub_bad", "description": "Bad.", "inputSchema": {"type": "object", "properties": {"x": {"type": 3}}}}]))
    out = tmp_path / "saved.json"
    assert main(["tools", "list", "--out", str(out), "--server", sys.executable, str(STUB), str(listed)]) == 1
    printed = capsys.readouterr().out
    assert "kept 1 tool(s), refused 1" in printed and "stub_echo" in printed
    assert "refused: MCP server `mcp-stub-server`: tool #1 (stub_bad): inputSchema is not a valid JSON Schema" in printed
    assert [t.name for t in validate_definitions(load_tools_file(out))[0]] == ["stub_echo"]
    assert main(["tools", "list", "--json", "--out", str(tmp_path / "time.json"),
                 "--server", str(BIN / "mcp-server-time")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in result["kept"]] == ["get_current_time", "convert_time"] and not result["refused"]


def test_groups_split_by_shared_stems_only_where_most_tools_share_one():
    git = ["git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_commit", "git_add", "git_reset",
           "git_log", "git_create_branch", "git_checkout", "git_show", "git_branch"]
    assert set(stem_groups(git).values()) == {"git"}
    lanes = stem_groups(["vox_app_list", "vox_app_add", "vox_data_read", "vox_data_drop", "vox_misc"])
    assert lanes == {"vox_app_list": "vox_app", "vox_app_add": "vox_app", "vox_data_read": "vox_data",
                     "vox_data_drop": "vox_data", "vox_misc": "vox"}
