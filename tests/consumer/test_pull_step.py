"""Every PULL_MESSAGE is built by the one pull step (``producer.consumer._pull_step``): the
push consumer's queue loop, the pull consumer (and Spark's reads through it) and the
dead-letter tool each describe their pull (a ``PullRequest``) and let the step build,
send and decode it, codecs included (issue 33 item 2). A reader that builds its own
``PullParams`` again would decode without the step's size cap, codecs, namespace or tag
filter; this finds one."""

from __future__ import annotations

import ast
from pathlib import Path

import producer

PACKAGE = Path(producer.__file__).parent
STEP = PACKAGE / "consumer" / "_pull_step.py"


def _builds_a_pull(path: Path) -> bool:
    """``path`` calls ``PullParams(...)``: it makes a PULL_MESSAGE of its own."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "PullParams":
                return True
    return False


def test_only_the_pull_step_builds_a_pull() -> None:
    builders = {
        str(path.relative_to(PACKAGE.parent))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.parent.name != "_remoting" and _builds_a_pull(path)  # the codec defines it
    }
    assert builders == {str(STEP.relative_to(PACKAGE.parent))}
