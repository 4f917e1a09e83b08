"""Mutants of the reference's graded solution code, made by mutmut's mutation operators.

    mutants(spec) -> [Mutant, ...]    every distinct, compilable mutant, in the order of the parts

A mutant is the reference with one small change inside one graded `# BEGIN SOLUTION` block (the operators
of mutmut 3.8.1, pinned: a number off by one, an operator or a comparison swapped, a `~` or `not` dropped,
an argument dropped or set to None, a variable set to None, a string changed, ...). Only mutmut's mutation
visitor is used: mutmut's own runner copies the tree and runs pytest in place, while these mutants are
graded as submissions, by the engine (autograder/adequacy/report.py). A mutant's key names its module, its
function and its change, and not its line, so it survives edits elsewhere in the reference.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from mutmut.mutation.file_mutation import MutationVisitor, deep_replace
from mutmut.mutation.mutators import mutation_operators
from mutmut.mutation.pragma_handling import IgnoredCode

from assignment.spec import SPEC, Spec
from autograder.stubs import solution_blocks
from grader.paths import REFERENCE_DIR


@dataclass(frozen=True)
class Mutant:
    key: str          # "masking.apply_mask: '~mask' -> 'mask'" (+ " #2" when a function has the same change twice)
    module: str       # "masking.py"
    function: str     # "apply_mask"
    part: int         # the part that grades that function
    line: int
    text: str         # the whole mutated module

    @property
    def slug(self) -> str:
        """A folder name for it: short, unique, safe."""
        return f"mutant-{self.function.split('.')[-1]}-{hashlib.sha1(self.key.encode()).hexdigest()[:8]}"


def _changes(source: str, lines: set[int]):
    """(line, before, after, mutated source) for each of mutmut's mutations starting on one of `lines`."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    # An IgnoredCode of our own: mutmut's reads its configuration file, which this project has no need of.
    visitor = MutationVisitor(mutation_operators, IgnoredCode(set(), set(), set()), covered_lines=lines)
    module = wrapper.visit(visitor)
    positions = wrapper.resolve(PositionProvider)
    for mutation in visitor.mutations:
        yield (positions[mutation.original_node].start.line, module.code_for_node(mutation.original_node),
               module.code_for_node(mutation.mutated_node),
               deep_replace(module, mutation.original_node, mutation.mutated_node).code)


def module_mutants(module: str, spec: Spec = SPEC) -> list[Mutant]:
    source = (REFERENCE_DIR / module).read_text()
    owners = {}
    for block in solution_blocks(source, spec):
        if block.part is not None:
            owners.update({line: block for line in range(block.first + 1, block.last)})
    found, texts, keys = [], {source}, set()
    for line, before, after, text in _changes(source, set(owners)):
        if text in texts:
            continue   # the same text twice (dropping either of two equal arguments), or no change
        try:
            compile(text, module, "exec")
        except SyntaxError:
            continue
        block = owners[line]
        key = f"{module.removesuffix('.py')}.{block.function}: {before.strip()!r} -> {after.strip()!r}"
        number = 2
        while key in keys:
            key = f"{key.split(' #')[0]} #{number}"
            number += 1
        texts.add(text)
        keys.add(key)
        found.append(Mutant(key, module, block.function, block.part, line, text))
    return found


def mutants(spec: Spec = SPEC) -> list[Mutant]:
    return [mutant for module in spec.modules for mutant in module_mutants(f"{module}.py", spec)]
