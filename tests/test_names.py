"""One name per concept: no two module-level classes of the project's code share a name, so a reader who meets
`Settings` or `Outcome` knows which one it is without reading the import."""
from __future__ import annotations

import ast
import collections
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parent.parent
# Names that are one concept in several files, on purpose.
SAME_CONCEPT = {
    "MultiHeadAttention",    # the graded class: the handout's, the reference's, and each hand-written solution's
    "EngineGradingPlugin",   # otter-loader's stand-in hands otter the zip's own plugin under otter's configured name
}


def module_classes() -> dict[str, list[str]]:
    """Class name -> the tracked .py files that define it at module level."""
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    where = collections.defaultdict(list)
    for name in files:
        path = REPO / name
        if not path.is_file():   # deleted in the working tree, not yet in the index
            continue
        for node in ast.parse(path.read_text(), filename=name).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(name)
    return where


def test_no_two_concepts_share_a_class_name():
    shared = {name: files for name, files in module_classes().items() if len(files) > 1 and name not in SAME_CONCEPT}
    assert not shared, "class names defined in more than one module (name each concept once): " + "; ".join(
        f"{name} in {', '.join(files)}" for name, files in sorted(shared.items()))
