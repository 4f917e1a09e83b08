"""A copy disguised as a copier disguises it: local variables renamed, functions and methods reordered,
comments and layout gone (the module is written back from its syntax tree). Behaviour is unchanged:
parameters keep their names (callers pass them by keyword), and so do globals, attributes and imports.

    disguise(source, seed) -> source
"""
from __future__ import annotations

import ast
import random

WORDS = ("acc", "buf", "cur", "tmp", "res", "val", "mat", "aux", "blk", "arr", "vec", "obj")


def _locals(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function binds itself (not its parameters, not declared global or nonlocal)."""
    arguments = function.args
    params = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                              *filter(None, [arguments.vararg, arguments.kwarg])]}
    declared = {name for node in ast.walk(function) if isinstance(node, (ast.Global, ast.Nonlocal))
                for name in node.names}
    bound = {node.id for node in ast.walk(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    return bound - params - declared


def _rename_locals(tree: ast.Module, rng: random.Random) -> None:
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in functions:
        names = sorted(_locals(function))
        mapping = {name: f"{rng.choice(WORDS)}_{index}" for index, name in enumerate(names)}
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and node.id in mapping:
                node.id = mapping[node.id]


def _shuffle_definitions(body: list[ast.stmt], rng: random.Random) -> list[ast.stmt]:
    """body with each run of consecutive function definitions in a new order (other statements stay put)."""
    result, run = [], []
    for statement in [*body, None]:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            run.append(statement)
            continue
        rng.shuffle(run)
        result += run
        run = []
        if statement is not None:
            result.append(statement)
    return result


def disguise(source: str, seed: int = 0) -> str:
    rng = random.Random(seed)
    tree = ast.parse(source)
    _rename_locals(tree, rng)
    tree.body = _shuffle_definitions(tree.body, rng)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            node.body = _shuffle_definitions(node.body, rng)
    return ast.unparse(tree) + "\n"
