"""The installed loader (otter-loader/) hands otter the plugin of the autograder.zip being run, and refuses
a zip without one or a grader already imported from elsewhere. Fast: no grading."""
import subprocess
import sys
import textwrap

import attention_otter_loader as loader
import pytest

from autograder.otter import config
from tests.patience import SAFETY_NET_S


def fake_layout(root, plugin_source: str | None):
    """ROOT/source (with a plugin module when given) and ROOT/submission/attention.ipynb, as otter lays them out."""
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "attention.ipynb").write_text("{}")
    package = root / "source" / "zipgrader" / "otter"
    package.mkdir(parents=True)
    if plugin_source is not None:
        (package.parent / "__init__.py").write_text("")
        (package / "__init__.py").write_text("")
        (package / "plugin.py").write_text(plugin_source)
    return root / "submission" / "attention.ipynb"


def test_the_config_names_the_loader_and_the_loader_is_installed():
    module, name = config.LOADER_PLUGIN.rsplit(".", 1)
    assert module == loader.__name__ and hasattr(loader, name)
    assert loader.PLUGIN_MODULE == "grader.gradescope.plugin"


def test_a_zip_without_the_plugin_is_refused(tmp_path):
    notebook = fake_layout(tmp_path, None)
    with pytest.raises(loader.LoaderError, match=r"holds no grader\.gradescope\.plugin"):
        loader.EngineGradingPlugin(str(notebook), {}, {})


RUN = textwrap.dedent("""
    import sys
    import attention_otter_loader as loader
    loader.PLUGIN_MODULE = "zipgrader.otter.plugin"
    {prelude}
    plugin = loader.EngineGradingPlugin(sys.argv[1], {{"id": 7}}, {{"k": 1}})
    print(type(plugin).__module__, plugin.args)
""")
PLUGIN = "class EngineGradingPlugin:\n    def __init__(self, *args):\n        self.args = args\n"


def test_the_plugin_comes_from_the_zip_being_run(tmp_path):
    notebook = fake_layout(tmp_path / "run", PLUGIN)
    proc = subprocess.run([sys.executable, "-c", RUN.format(prelude=""), str(notebook)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 1) == ["zipgrader.otter.plugin", f"({str(notebook)!r}, {{'id': 7}}, {{'k': 1}})\n"]


def test_a_grader_imported_from_elsewhere_first_is_refused(tmp_path):
    notebook = fake_layout(tmp_path / "run", PLUGIN)
    elsewhere = fake_layout(tmp_path / "other", PLUGIN).parent.parent / "source"
    prelude = f"sys.path.insert(0, {str(elsewhere)!r}); import zipgrader.otter.plugin"
    proc = subprocess.run([sys.executable, "-c", RUN.format(prelude=prelude), str(notebook)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode != 0 and "LoaderError: zipgrader.otter.plugin was already imported from" in proc.stderr
