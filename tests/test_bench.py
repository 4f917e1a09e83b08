"""handout/bench.py (`python bench.py` in the handout): runs on a full solution, on the stubs and on half-done work.

Each run is `--quick` (tiny sizes) in a child process whose cwd and PYTHONPATH are a submission
folder, as a student runs it. Nothing here asserts a wall-clock time: only that every cell is
there, and that memory behaves as the lesson says (the manual path's grows faster than L).
"""
import importlib.util
import json
import os
import subprocess
import sys
import zipfile

import pytest
import torch

from autograder import build_cli
from autograder.samples import edited_reference, write_submission
from grader.paths import REPO
from tests.patience import SAFETY_NET_S

BENCH = REPO / "handout" / "bench.py"
FUSED_CALL = ("        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, "
              "is_causal=is_causal)")
FUSED_STUB = '        raise NotImplementedError("Part 6: MultiHeadAttention._fused_attention is not implemented yet")'
INIT_STUB = "Part 5: MultiHeadAttention.__init__ is not implemented yet"
COLUMNS = ("L", "manual ms", "fused ms", "SDPA ms", "time manual/fused",
           "manual MiB", "fused MiB", "SDPA MiB", "memory manual/fused")


def bench_module():
    spec = importlib.util.spec_from_file_location("handout_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_bench(folder, tmp_path, *extra):
    plot, figures = tmp_path / "plot.png", tmp_path / "figures.json"
    env = dict(os.environ, PYTHONPATH=str(folder))
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--device", "cpu", "--out", str(plot), "--json", str(figures), *extra],
        cwd=folder, env=env, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "no PNG plot was written"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout, json.loads(figures.read_text())


def number(cell: str) -> float:
    """A time cell's number: a busy machine marks a time it could not measure reliably with *."""
    return float(cell.removesuffix("*"))


def table_rows(stdout):
    """L -> {column: cell text} from the printed table (markdown pipes)."""
    rows = {}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].isdigit():
            assert len(cells) == len(COLUMNS), line
            rows[int(cells[0])] = dict(zip(COLUMNS, cells, strict=True))
    return rows


@pytest.mark.slow
def test_quick_run_on_the_reference_shows_the_manual_paths_quadratic_memory(tmp_path):
    folder = write_submission(tmp_path / "reference", solution=True)
    stdout, figures = run_bench(folder, tmp_path)
    lengths = list(bench_module().QUICK["lengths"])
    rows = table_rows(stdout)
    assert sorted(rows) == lengths, stdout
    for row in rows.values():
        for column in COLUMNS[1:]:
            number(row[column])   # every cell is a number: nothing failed, nothing is missing
    first, last = lengths[0], lengths[-1]
    manual = {length: float(rows[length]["manual MiB"]) for length in lengths}
    fused = {length: float(rows[length]["fused MiB"]) for length in lengths}
    assert manual[last] > fused[last], stdout
    # The lesson: the manual path holds (B, H, L, L) matrices, so its memory grows faster than L.
    assert manual[last] / manual[first] > last / first, stdout
    assert float(rows[last]["memory manual/fused"]) > 1
    # The JSON carries the same figures, unrounded.
    assert figures["lengths"] == lengths and not figures["problems"] and not figures["disagreements"]
    exact = {length: figures["results"]["manual"][str(length)]["peak_mib"] for length in lengths}
    assert exact[last] / exact[first] > last / first
    assert "peak memory:" in stdout and "torch.autograd.profiler" in stdout, "the output must say how it measures"
    assert "fused and manual agree" in stdout


@pytest.mark.slow
def test_quick_run_on_the_stubs_names_what_is_missing_and_still_measures_sdpa(tmp_path):
    folder = write_submission(tmp_path / "stubs", solution=False)
    stdout, figures = run_bench(folder, tmp_path)
    rows = table_rows(stdout)
    assert sorted(rows) == list(bench_module().QUICK["lengths"]), stdout
    assert INIT_STUB in stdout
    for row in rows.values():
        assert row["manual ms"] == row["fused ms"] == row["manual MiB"] == row["fused MiB"] == "n/i"
        assert number(row["SDPA ms"]) > 0 and float(row["SDPA MiB"]) > 0
    assert set(figures["problems"]) == {"manual", "fused"}
    assert "fused and manual agree" not in stdout


@pytest.mark.slow
def test_half_done_work_runs_the_finished_path_and_names_the_missing_part(tmp_path):
    folder = write_submission(tmp_path / "no-part6", overrides=edited_reference("multihead.py", FUSED_CALL, FUSED_STUB))
    stdout, figures = run_bench(folder, tmp_path, "--lengths", "32,128")
    rows = table_rows(stdout)
    assert sorted(rows) == [32, 128]
    assert "fused: not implemented yet: Part 6: MultiHeadAttention._fused_attention is not implemented yet" in stdout
    for row in rows.values():
        assert row["fused ms"] == "n/i" and row["time manual/fused"] == "-"
        assert number(row["manual ms"]) > 0 and float(row["manual MiB"]) > 0 and float(row["SDPA MiB"]) > 0
    assert set(figures["problems"]) == {"fused"}


def test_out_of_memory_is_a_table_cell_not_a_crash():
    bench = bench_module()
    config = bench.Config(torch.device("cpu"), torch.float32, (8, 16, 32), 1, 2, 8, 1, False)

    class RunsOutAt16(torch.nn.Module):
        def forward(self, x, is_causal=False):
            if x.size(1) >= 16:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return x * 2

    problems, results = {}, {name: {} for name in bench.PATHS}
    modules = {"manual": RunsOutAt16(), "fused": RunsOutAt16()}
    for length in config.lengths:
        for name in bench.PATHS:
            results[name][length] = bench.measure(name, config, modules, length, problems, {})
    assert [results["manual"][length].status for length in config.lengths] == ["ok", "OOM", "OOM"]
    assert results["sdpa"][32].status == "ok"
    rows = table_rows(bench.table(config, results))
    assert rows[16]["manual ms"] == rows[32]["fused MiB"] == "OOM" and rows[16]["memory manual/fused"] == "-"
    text = bench.report(config, results, problems, [], None)
    assert "manual out of memory from L=16 on" in text
    assert "\n  manual: " not in text, "running out of memory is not a problem of the student's code"


def test_timings_a_busy_machine_spoiled_are_marked_and_the_report_says_why():
    bench = bench_module()
    config = bench.Config(torch.device("cpu"), torch.float32, (64, 128), 1, 2, 8, 5, False)
    steady = bench.Cell("ok", 0.25, 1 << 20, 0.3, 0.2)
    results = {"manual": {64: bench.Cell("ok", 3.0, 1 << 20, 3.3, 2.9), 128: bench.Cell("ok", 9.0, 1 << 22, 9.5, 8.8)},
               "fused": {64: bench.Cell("ok", 172.0, 1 << 20, 400.0, 0.2), 128: steady},   # one call waited
               "sdpa": {64: steady, 128: steady}}
    rows = table_rows(bench.table(config, results))
    assert rows[64]["fused ms"] == "172*" and rows[64]["time manual/fused"].endswith("*")
    assert rows[128]["fused ms"] == "0.25" and rows[128]["time manual/fused"] == "36.0"   # not "0.0"
    busy = round(bench.BUSY * os.cpu_count() + 1, 1)   # whatever this machine's core count
    text = bench.report(config, results, {}, [], None, load=(0.4, busy))
    assert "* unreliable: its timed calls varied more than 3 times: fused at L=64 (0.2 to 400 ms)" in text
    assert f"the machine was busy (load average {busy:.1f} on {os.cpu_count()} core(s))" in text
    assert "unreliable" not in bench.report(config, {**results, "fused": {64: steady, 128: steady}}, {}, [], None)


def test_the_plot_names_the_paths_it_draws_and_circles_an_unreliable_time():
    """Issue 49: bench.png was titled "manual vs fused vs SDPA" with only SDPA drawn (the stubs), and the time the
    report called unreliable was not marked."""
    bench = bench_module()
    config = bench.Config(torch.device("cpu"), torch.float32, (64, 128), 1, 2, 8, 5, False)
    steady = bench.Cell("ok", 0.25, 1 << 20, 0.3, 0.2)
    missing = {64: bench.Cell("n/i"), 128: bench.Cell("n/i")}
    results = {"manual": missing, "fused": missing, "sdpa": {64: bench.Cell("ok", 172.0, 1 << 20, 400.0, 0.2),
                                                           128: steady}}
    figure = bench.plot_figure(config, results)
    assert figure._suptitle.get_text() == "SDPA on cpu (float32); not drawn: manual, fused (see the notes)"
    times = figure.axes[0]
    circled = [line for line in times.get_lines() if line.get_markeredgecolor() == "red"]
    assert [list(line.get_xdata()) for line in circled] == [[64]]
    assert "unreliable" in " ".join(text.get_text() for text in times.get_legend().get_texts())
    import matplotlib.pyplot as plt
    plt.close(figure)


def test_pytorchs_own_not_implemented_error_is_an_error_not_a_missing_part():
    bench = bench_module()
    try:
        torch.ones(2) & torch.ones(2)   # PyTorch: "bitwise_and_cpu" not implemented for 'Float'
    except NotImplementedError as error:
        status, why = bench.problem(error)
    assert status == "error" and why.startswith("raised NotImplementedError"), why
    assert bench.problem(NotImplementedError("Part 6: MultiHeadAttention._fused_attention is not implemented yet"))[0] \
        == "n/i"


@pytest.mark.slow
def test_asking_for_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = subprocess.run([sys.executable, str(BENCH), "--device", "cuda", "--no-plot"],
                          capture_output=True, text=True, timeout=SAFETY_NET_S, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(write_submission(tmp_path / "stubs", solution=False))))
    assert proc.returncode == 2 and "torch.cuda.is_available() is False" in proc.stderr


def test_handout_carries_the_benchmark_beside_student_and_the_graded_package_does_not(dist):
    with zipfile.ZipFile(dist / build_cli.HANDOUT_NAME) as zf:
        names = zf.namelist()
        assert zf.read("bench.py") == BENCH.read_bytes()
    assert not [name for name in names if name.startswith("student/") and "bench" in name], names
