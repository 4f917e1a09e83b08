"""What a submission's source shows about the forbidden-call rule, read on the trusted side as text (never run).

    hiding, private = read(package_dir)     # two lists of "file:line: what" evidence
    flags = loaded_flags(package_dir)       # code run other than from this source, for the instructor

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

- loading: ways to run code that is not the package's source as it stands (zipimport, marshal, importlib's loaders
  of files, sys.path, ctypes, pickle, exec, eval or compile of any string): what runs then is nothing this
  reader read, so it is flagged for a human (loaded_flags); it costs nothing, as a correct solution may still be
  what runs.

What cannot be read does not run: the unpacking (grader/run/unpacking.py) lets nothing but source files reach a
box (is_source), and leaves out a source file this reader could not read as the box's Python would compile it
(unreadable: larger than MAX_FILE_BYTES, nested past the parser's depth, written in a codec only the box's own code
could register, or null bytes: a zip or marshalled code named .py).

A name assembled at run time (getattr(torch._C, "Disable" + "TorchFunction")) still shows as a reach into
torch._C; one taken from elsewhere (an attribute of an object found through gc) shows as nothing here, and
docs/testing.md says so (Fair points).
"""
from __future__ import annotations

import ast
import hashlib
import io
import pathlib
import tokenize

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
# Ways to run code that is not the package's source as it stands: archives and bytecode (zipimport, marshal, imp),
# importlib's loaders of files and the import system's search (sys.path, meta_path, path_hooks), native code
# (ctypes, cffi), code objects made or swapped, pickles (their loading calls what they name), runpy, and the
# builtins that run a string (a literal one too: this reader reads no string as code). Named in an import, an
# attribute, a name or a string.
LOADERS = frozenset({
    "zipimport", "zipimporter", "marshal", "imp", "runpy", "run_path", "ctypes", "_ctypes", "cffi", "CDLL", "PyDLL",
    "SourcelessFileLoader", "ExtensionFileLoader", "SourceFileLoader", "spec_from_file_location", "spec_from_loader",
    "module_from_spec", "exec_module", "load_module", "meta_path", "path_hooks", "path_importer_cache",
    "CodeType", "__code__", "co_code", "pickle", "_pickle", "dill", "cloudpickle", "shelve", "builtins",
    "__builtins__",
})
RUNNERS = frozenset({"exec", "eval", "compile"})   # as names only: a module's .eval() and torch.compile run no string
SOURCE_SUFFIX = ".py"      # what this reader reads, and all that the unpacking lets reach a box (is_source)
MAX_FILE_BYTES = 1 << 20   # a larger source file is left out at unpacking: every file that runs is read whole here


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
# once per run by the batch (evidence_by_digest) and carried to every worker (Settings.known_sources), so
# that a submission costs the reading of what its student wrote, not of the handout again; and what a process has
# read itself (the worker's unpacking reads the student's files, its trusted process inherits them). The same bytes
# give the same evidence: a file is taken from here only when its digest matches.
KINDS = ("hiding", "private", "loading")
Found = list[tuple[int, str, str]]   # (line, what, its kind: one of KINDS)
_known: dict[str, Found] = {}


def read(package: pathlib.Path) -> tuple[list[str], list[str]]:
    """(hiding, private): evidence in the .py files under package (sorted by path), each "file:line: what"."""
    found = _by_kind(package)
    return found["hiding"], found["private"]


def loaded_flags(package: pathlib.Path) -> list[str]:
    """The instructor's flag for code the package runs other than from its source (the `loading` evidence)."""
    loading = _by_kind(package)["loading"]
    if not loading:
        return []
    shown = "; ".join(loading[:3]) + (" ..." if len(loading) > 3 else "")
    return [f"runs code that is not its source as it stands, which the forbidden-call rule's reader cannot read "
            f"(a look, not a cost): {shown}"]


def _by_kind(package: pathlib.Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for path, text in _files(package):
        name = path.relative_to(package).as_posix()
        for line, what, kind in _evidence_of(text):
            found[kind].append(f"{name}:{line}: {what}")
    return found


def is_source(name: str) -> bool:
    """Whether a file of this name is source, which this reader reads (and the only kind a box gets)."""
    return name.endswith(SOURCE_SUFFIX)


def unreadable(text: bytes) -> str:
    """Why the box's Python could run a source file that this reader cannot read ("" when it can be read, or runs
    nowhere: a plain syntax error fails the import too). Its evidence is kept, so reading it again costs nothing."""
    if len(text) > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES} bytes, which is as far as the grader reads a source file"
    try:
        tokenize.detect_encoding(io.BytesIO(text).readline)
    except SyntaxError as error:
        if "unknown encoding" in str(error):   # a codec the box's own code could register before importing it
            return f"written in an encoding Python does not know ({error})"
    if b"\0" in text:   # never source, but a zip (zipimport) or marshalled code named .py is loaded all the same
        return "not Python source (it holds null bytes)"
    try:
        _evidence_of(text, strict=True)   # known already (the handout's own files, carried to the worker): readable
    except (RecursionError, MemoryError):   # the box's code could raise its own limit (sys.setrecursionlimit)
        return "nested deeper than the grader's parser reads"
    return ""


def evidence_by_digest(package: pathlib.Path) -> dict[str, Found]:
    """The evidence of each .py file under package (the handout's own), by the SHA-256 of its bytes."""
    return {_digest(text): file_evidence(text) for _path, text in _files(package)}


def remember(known: dict[str, Found]) -> None:
    """Take this evidence (evidence_by_digest's, carried as JSON) for any file whose bytes have that digest."""
    _known.update({digest: [(int(line), str(what), str(kind)) for line, what, kind in found]
                   for digest, found in known.items()})


def file_evidence(text: bytes, strict: bool = False) -> Found:
    """(line, what, its kind) for one file's source; none where it does not parse (it cannot run either: its tests
    fail on their own; what the box could compile and this reader could not never reaches it: unreadable).
    strict: a file too deep for the parser raises RecursionError or MemoryError instead (unreadable says so)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    except (RecursionError, MemoryError):
        if strict:
            raise
        return []
    return list(_evidence(tree))


def _evidence_of(text: bytes, strict: bool = False) -> Found:
    """A file's evidence, read once per process: by its digest (the handout's files, or read at unpacking)."""
    digest = _digest(text)
    if digest not in _known:
        _known[digest] = file_evidence(text, strict)
    return _known[digest]


def _digest(text: bytes) -> str:
    """The key of a file's evidence: the SHA-256 of its bytes."""
    return hashlib.sha256(text).hexdigest()


def _files(package: pathlib.Path):
    """(path, its first MAX_FILE_BYTES) for each regular source file under package, sorted by path."""
    for path in sorted(package.rglob("*" + SOURCE_SUFFIX)):
        if not path.is_file() or path.is_symlink():
            continue
        with open(path, "rb") as handle:
            yield path, handle.read(MAX_FILE_BYTES)


def _evidence(tree: ast.AST):
    """(line, what, kind) for each reach into torch's mode machinery or private parts, and each loader."""
    nodes = list(ast.walk(tree))   # walked once: three passes over a list cost a third of three walks
    torch_names = _aliases(nodes, "torch", members=True)
    sys_names = _aliases(nodes, "sys")
    docstrings = {id(node.value) for node in nodes
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _imported_names(node):
                parts = name.split(".")
                if any(part in HIDING for part in parts):
                    yield node.lineno, f"imports {name}", "hiding"
                elif parts[0] == "torch" and any(_private(part) for part in parts):
                    yield node.lineno, f"imports {name}", "private"
                if any(part in LOADERS for part in parts) or name == "sys.path":
                    yield node.lineno, f"imports {name}", "loading"
        elif isinstance(node, ast.Attribute):
            if node.attr in HIDING:
                yield node.lineno, f"uses {node.attr}", "hiding"
            elif _private(node.attr) and _root(node) in torch_names:
                yield node.lineno, f"uses {_dotted(node)}", "private"
            if node.attr in LOADERS or (node.attr == "path" and _root(node) in sys_names):
                yield node.lineno, f"uses {_dotted(node)}", "loading"
        elif isinstance(node, ast.Name):
            if node.id in HIDING:
                yield node.lineno, f"uses {node.id}", "hiding"
            elif node.id in LOADERS | RUNNERS:
                yield node.lineno, f"uses {node.id}", "loading"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            named = [name for name in HIDING if name in node.value]
            if named:
                yield node.lineno, f"names {named[0]} in a string", "hiding"
            elif node.value.startswith("torch._"):
                yield node.lineno, f"names {node.value[:60]} in a string", "private"
            if any(part in LOADERS for part in node.value.split(".")):
                yield node.lineno, f"names {node.value[:60]} in a string", "loading"


def _aliases(nodes: list[ast.AST], module: str, members: bool = False) -> set[str]:
    """The names the module (all its nodes) binds to `module` (members: or to anything imported from it)."""
    names = {module}
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names
                      if alias.name.split(".")[0] == module}
        elif members and isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == module:
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
