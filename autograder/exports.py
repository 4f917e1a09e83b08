"""The metadata of a Gradescope export (submission_metadata.yml), read for the grader's batch.

    read_metadata(folder) -> {submission folder name: its entry (submitters, score, created_at, ...)}

Gradescope writes it as YAML, some of it Ruby-tagged (`!ruby/object:...`, as Rails writes). Reading it is the
instructor's tools' job (`python -m autograder grade` hands this reader to the runtime's batch): the runtime that
ships to Gradescope grades uploads, never exports, so PyYAML stays out of its image and out of what students may
import.
"""
from __future__ import annotations

import pathlib

from grader.run.unpacking import METADATA


def read_metadata(folder: pathlib.Path) -> dict:
    """The export's metadata, as plain data ({} where it is unreadable or not a mapping)."""
    import yaml

    class Loader(yaml.SafeLoader):
        """Safe, and reads a Ruby-tagged node as plain data."""

    def untagged(loader, _suffix, node):
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node)
        return loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else loader.construct_scalar(node)

    Loader.add_multi_constructor("!", untagged)
    try:
        metadata = yaml.load((folder / METADATA).read_text(errors="replace"), Loader=Loader) or {}
    except yaml.YAMLError:
        metadata = {}
    return metadata if isinstance(metadata, dict) else {}
