"""A standalone Rust repair task from its original and broken declaration, placed after `before`."""
from synth.tasks.task import Task


def repair_task(name: str, original: str, broken: str, before: str) -> Task:
    fn = original.split("(")[0].split()[-1]
    return Task(id=name, lang="rust", family="repair", prompt="fix", must_define=[f"fn {fn}"], reference=original,
                broken=broken, signature=original.split(" {")[0], kind="fn", before=before, after="\n")
