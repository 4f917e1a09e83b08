"""What a submission's source shows about the forbidden-call rule, read on the trusted side as text (never run).

    hiding, private = read(package_dir)     # two lists of "file:line: what" evidence

The rule (gateway.note_path) is checked by watches in the process that runs the student's code: a torch
function mode and a dispatch mode note every call of torch's attention. Code in that process can switch such
modes off (torch._C.DisableTorchFunction, torch.utils._python_dispatch._disable_current_modes, popping the mode
stacks) and then call what it likes unseen; what the watches report then proves nothing. The source cannot hide
from this reader: it is the data the submission consists of.

- hiding: names of torch's machinery for switching its function and dispatch modes off, or popping them, used in
  code (not in a docstring): no attention code needs them. The rule cannot be checked where that code runs, so
  every test of the parts that run the file holding it (parts_running) counts as breaking it (suite.py), and it
  is flagged.
- private: other reaches into torch's private modules and attributes (torch._C, a `_name` of a torch module).
  Correct code may use one (F._canonical_mask, say), so these are flagged for a human, and cost nothing.

A name assembled at run time (getattr(torch._C, "Disable" + "TorchFunction")) still shows as a reach into
torch._C; one taken from elsewhere (an attribute of an object found through gc) shows as nothing here, and
docs/testing.md says so (Fair points).
"""
from __future__ import annotations

import ast
import hashlib
import pathlib

from assignment.spec import SPEC

# torch's ways to switch its function and dispatch modes off, or to take them off their stacks: what it takes to
# call torch's attention where the watches cannot see it. Reading the stacks, or pushing a mode of one's own (a
# student's test that fails on F.scaled_dot_product_attention does), hides nothing: a mode's own call of a
# function reaches the modes beneath it.
HIDING = frozenset({
    "DisableTorchFunction", "DisableTorchFunctionSubclass", "_disable_current_modes", "_DisableTorchDispatch",
    "_pop_torch_function_stack", "_pop_mode", "_pop_mode_temporarily", "_unset_dispatch_mode",
    "_set_dispatch_mode", "_ExcludeDispatchKeyGuard", "_DisableFuncTorch",
})
MAX_FILE_BYTES = 1 << 20   # a larger file is read this far (a hostile one must not cost the trusted side more)


def parts_running(evidence: list[str]) -> set[int]:
    """The parts whose tests run the files named in evidence ("file:line: what"): a graded module's own parts and
    the parts that build on them; any other file may be imported by any module, so every part."""
    parts: set[int] = set()
    for line in evidence:
        module = line.split(":", 1)[0].removesuffix(".py")
        names = {name for name, home in SPEC.exports.items() if home == module}
        if not names:
            return set(SPEC.numbers)
        own = {part.number for part in SPEC.parts if any(qualname.split(".")[0] in names for qualname in part.names)}
        for number in own:
            parts |= {number, *SPEC.parts_using(number)}
    return parts


# Evidence already read, by the SHA-256 of a file's bytes: the handout's own files (check.py, the public checks), read
# once per run by the batch (evidence_by_digest) and carried to every trusted process (Settings.known_sources), so
# that a submission costs the reading of what its student wrote, not of the handout again. The same bytes give the
# same evidence: a file is taken from here only when its digest matches.
Found = list[tuple[int, str, bool]]   # (line, what, whether it hides calls)
_known: dict[str, Found] = {}


def read(package: pathlib.Path) -> tuple[list[str], list[str]]:
    """(hiding, private): evidence in the .py files under package (sorted by path), each "file:line: what"."""
    hiding: list[str] = []
    private: list[str] = []
    for path, text in _files(package):
        name = path.relative_to(package).as_posix()
        digest = _digest(text)
        found = _known[digest] if digest in _known else file_evidence(text)
        for line, what, hides in found:
            (hiding if hides else private).append(f"{name}:{line}: {what}")
    return hiding, private


def evidence_by_digest(package: pathlib.Path) -> dict[str, Found]:
    """The evidence of each .py file under package (the handout's own), by the SHA-256 of its bytes."""
    return {_digest(text): file_evidence(text) for _path, text in _files(package)}


def remember(known: dict[str, Found]) -> None:
    """Take this evidence (evidence_by_digest's, carried as JSON) for any file whose bytes have that digest."""
    _known.update({digest: [(int(line), str(what), bool(hides)) for line, what, hides in found]
                   for digest, found in known.items()})


def file_evidence(text: bytes) -> Found:
    """(line, what, whether it hides calls) for one file's source; none where it does not parse (it cannot run
    either: its tests fail on their own)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return list(_evidence(tree))


def _digest(text: bytes) -> str:
    """The key of a file's evidence: the SHA-256 of its bytes."""
    return hashlib.sha256(text).hexdigest()


def _files(package: pathlib.Path):
    """(path, its first MAX_FILE_BYTES) for each regular .py file under package, sorted by path."""
    for path in sorted(package.rglob("*.py")):
        if not path.is_file() or path.is_symlink():
            continue
        with open(path, "rb") as handle:
            yield path, handle.read(MAX_FILE_BYTES)


def _evidence(tree: ast.AST):
    """(line, what, whether it hides calls) for each reach into torch's mode machinery or private parts."""
    nodes = list(ast.walk(tree))   # walked once: three passes over a list cost a third of three walks
    torch_names = _torch_aliases(nodes)
    docstrings = {id(node.value) for node in nodes
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _imported_names(node):
                parts = name.split(".")
                if any(part in HIDING for part in parts):
                    yield node.lineno, f"imports {name}", True
                elif parts[0] == "torch" and any(_private(part) for part in parts):
                    yield node.lineno, f"imports {name}", False
        elif isinstance(node, ast.Attribute):
            if node.attr in HIDING:
                yield node.lineno, f"uses {node.attr}", True
            elif _private(node.attr) and _root(node) in torch_names:
                yield node.lineno, f"uses {_dotted(node)}", False
        elif isinstance(node, ast.Name) and node.id in HIDING:
            yield node.lineno, f"uses {node.id}", True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            named = [name for name in HIDING if name in node.value]
            if named:
                yield node.lineno, f"names {named[0]} in a string", True
            elif node.value.startswith("torch._"):
                yield node.lineno, f"names {node.value[:60]} in a string", False


def _torch_aliases(nodes: list[ast.AST]) -> set[str]:
    """The names the module (all its nodes) binds to torch or to anything imported from it."""
    names = {"torch"}
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names
                      if alias.name.split(".")[0] == "torch"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _imported_names(node) -> list[str]:
    """What an import statement names, dotted in full (`from torch._C import X` -> torch._C.X)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [f"{node.module or ''}.{alias.name}" for alias in node.names]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _root(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "…")
    return ".".join(reversed(parts))
