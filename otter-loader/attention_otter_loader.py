"""Loads the Otter plugin of the autograder.zip that `otter run` is running, from that zip.

otter imports the plugins named in otter_config.json by module path, and the `otter` console command
sees only installed packages, not the folder where it unpacked autograder.zip. This installed module is
the name otter_config.json gives ("attention_otter_loader.EngineGradingPlugin"): otter passes the path
of the submission it grades (ROOT/submission/<notebook>), so ROOT/source is the unpacked zip; this puts
that folder first on the path and returns the zip's own plugin, so the plugin, the engine and the hidden
suite that grade are the ones shipped in that zip, whichever folder the command runs from.
"""
from __future__ import annotations

import importlib
import pathlib
import sys

PLUGIN_MODULE = "grader.gradescope.plugin"
PLUGIN_CLASS = "EngineGradingPlugin"


class LoaderError(RuntimeError):
    """The zip being run carries no plugin, or another copy of the grader was imported first."""


def _source_folder(submission_path: str) -> pathlib.Path:
    source = pathlib.Path(submission_path).resolve().parent.parent / "source"
    if not (source / PLUGIN_MODULE.replace(".", "/")).with_suffix(".py").is_file():
        raise LoaderError(f"{source} holds no {PLUGIN_MODULE}: is this the attention assignment's autograder.zip?")
    return source


def _from(source: pathlib.Path, module):
    location = pathlib.Path(module.__file__).resolve()
    if not location.is_relative_to(source):
        raise LoaderError(f"{module.__name__} was already imported from {location}, not from the zip at {source}")
    return module


class EngineGradingPlugin:
    """Stands for the zip's plugin: otter creates it with (submission_path, metadata, config), and gets
    an instance of the plugin class of the zip instead."""

    def __new__(cls, submission_path, submission_metadata, plugin_config):
        source = _source_folder(submission_path)
        sys.path.insert(0, str(source))
        module = _from(source, importlib.import_module(PLUGIN_MODULE))
        return getattr(module, PLUGIN_CLASS)(submission_path, submission_metadata, plugin_config)
