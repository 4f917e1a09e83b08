"""How fast, and how much memory: your manual attention, your fused path, and PyTorch's SDPA.

Not graded, and not part of your submission: run it once Parts 5 and 6 pass their checks.

    python bench.py                         # on a GPU if there is one, else on the CPU
    python bench.py --device cpu            # L = 128 ... 2048, float32
    python bench.py --device cuda           # L = 128 ... 8192, float16
    python bench.py --lengths 256,1024 --causal --out my-plot.png
    python bench.py --quick                 # tiny sizes: a smoke test in a few seconds

For every sequence length L it runs, on the same device and dtype:

    manual  your MultiHeadAttention(E, H, fused=False) on x (B, L, E)
    fused   your MultiHeadAttention(E, H, fused=True), with the same weights
    SDPA    F.scaled_dot_product_attention alone on random heads (B, H, L, D): the attention
            without the four projections, a floor for "fused"

and prints time and peak memory, then plots both against L. The manual path holds the
(B, H, L, L) attention weights, so its memory grows like L squared; the fused kernels never
hold them, so theirs grows like L.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

PATHS = ("manual", "fused", "sdpa")
LABELS = {"manual": "manual", "fused": "fused", "sdpa": "SDPA"}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
LENGTHS = {"cpu": (128, 256, 512, 1024, 2048), "cuda": (128, 256, 512, 1024, 2048, 4096, 8192)}
QUICK = {"lengths": (32, 64, 128, 256), "batch": 1, "heads": 2, "dim": 32, "repeat": 2}
DEFAULTS = {"batch": 2, "heads": 8, "dim": 512}
MIB = 2 ** 20
# The largest |fused - manual| allowed, relative to max |manual|: both compute the same layer.
AGREEMENT = {torch.float64: 1e-9, torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}
MEMORY_METHOD = {
    "cuda": "peak memory: torch.cuda.max_memory_allocated() during one call, minus what was allocated before it",
    "cpu": "peak memory: the most that tensors created during one call held at once, from torch.autograd.profiler's "
           "per-operation memory records (profile_memory=True); scratch memory an operation frees before it "
           "returns is not seen",
}


@dataclass
class Config:
    device: torch.device
    dtype: torch.dtype
    lengths: tuple
    batch: int
    heads: int
    dim: int
    repeat: int
    causal: bool


@dataclass
class Cell:
    """One path at one length: status "ok", "OOM", "n/i" (not implemented yet) or "error"."""
    status: str
    time_ms: float | None = None
    peak_bytes: int | None = None
    slowest_ms: float | None = None   # the slowest and fastest of its timed calls: how far to trust the median
    fastest_ms: float | None = None

    @property
    def noisy(self) -> bool:
        """Its calls varied too much for the median to mean much: something else took the machine meanwhile."""
        return self.status == "ok" and self.slowest_ms > NOISY * max(self.fastest_ms, 1e-6)


NOISY = 3.0   # slowest / fastest timed call of one cell beyond which its median is not trusted
BUSY = 0.75   # load average per core beyond which the machine was busy with something else


def is_out_of_memory(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, (MemoryError, torch.OutOfMemoryError)) or "out of memory" in text


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_ms(fn, device, repeat: int) -> tuple[float, float, float]:
    """(median, slowest, fastest) of repeat timed calls, in milliseconds."""
    times = []
    for _ in range(repeat):
        synchronize(device)
        begin = time.perf_counter()
        fn()
        synchronize(device)
        times.append((time.perf_counter() - begin) * 1e3)
    return statistics.median(times), max(times), min(times)


def peak_bytes(fn, device) -> int:
    if device.type == "cuda":
        synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    os.environ.setdefault("KINETO_LOG_LEVEL", "99")   # the profiler's start/stop lines on stderr
    # The profiler that torch.profiler.profile wraps: the same records, without the wrapper's first start, which
    # imports torch's compiler stack (1.4 s, a quarter of a --quick run).
    with torch.autograd.profiler.profile(use_cpu=True, profile_memory=True) as profiler:
        fn()
    # Each top-level operation records what it allocated minus what it freed; "[memory]" events
    # are frees between operations. Their running total, in time order, peaks at the most held.
    events = sorted((e for e in profiler.function_events if e.cpu_parent is None), key=lambda e: e.time_range.start)
    held = peak = 0
    for event in events:
        held += event.cpu_memory_usage
        peak = max(peak, held)
    return peak


def problem(error: BaseException) -> tuple[str, str]:
    """(cell status, one line for the notes) for an error your code raised."""
    from student.parts import is_stub_error

    if is_stub_error(error):
        return "n/i", f"not implemented yet: {error}"
    return "error", f"raised {type(error).__name__}: {error}"


def build_modules(config: Config, problems: dict) -> dict:
    """Your module twice, fused=False and fused=True, with the same weights; a failing one is left out."""
    modules = {}
    for name, fused in (("manual", False), ("fused", True)):
        torch.manual_seed(0)
        try:
            from student import MultiHeadAttention

            modules[name] = MultiHeadAttention(config.dim, config.heads, fused=fused).to(config.device, config.dtype)
            modules[name].eval()
        except Exception as error:  # noqa: BLE001 - your code's error is reported; the SDPA row still runs
            problems[name] = problem(error)
    return modules


def make_call(name: str, config: Config, modules: dict, length: int):
    """One forward of this path at this length; the inputs are made once, outside the call."""
    generator = torch.Generator().manual_seed(length)
    B, H, L, E = config.batch, config.heads, length, config.dim

    def random(*shape):
        return torch.randn(*shape, generator=generator).to(config.device, config.dtype)

    if name == "sdpa":
        q, k, v = (random(B, H, L, E // H) for _ in range(3))
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=config.causal)
    module, x = modules[name], random(B, L, E)
    return lambda: module(x, is_causal=config.causal)


def too_big_for_this_cpu(config: Config, length: int) -> bool:
    """The manual path's three (B, H, L, L) matrices would not fit in the memory that is free."""
    try:
        with open("/proc/meminfo") as meminfo:
            free = next(int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return False
    itemsize = torch.empty((), dtype=config.dtype).element_size()
    return 3 * config.batch * config.heads * length ** 2 * itemsize > 0.8 * free


def measure(name, config: Config, modules: dict, length: int, problems: dict, outputs: dict) -> Cell:
    if name in problems:
        return Cell(problems[name][0])
    if name == "manual" and config.device.type == "cpu" and too_big_for_this_cpu(config, length):
        return Cell("OOM")
    try:
        with torch.no_grad():
            call = make_call(name, config, modules, length)
            outputs[name] = call()          # the warm-up, and the output the agreement check uses
            median, slowest, fastest = timed_ms(call, config.device, config.repeat)
            return Cell("ok", median, peak_bytes(call, config.device), slowest, fastest)
    except Exception as error:  # noqa: BLE001 - whatever your code raises is reported, not fatal
        outputs.pop(name, None)
        # Out of memory here means out of memory at every longer length too: do not try them.
        problems[name] = ("OOM", f"out of memory from L={length} on") if is_out_of_memory(error) else problem(error)
        return Cell(problems[name][0])
    finally:
        if config.device.type == "cuda":
            torch.cuda.empty_cache()


def disagreement(outputs: dict, config: Config) -> tuple[str, float | None]:
    """('', relative difference) when fused and manual agree, else (what is wrong, None)."""
    manual, fused = outputs.get("manual"), outputs.get("fused")
    if not isinstance(manual, torch.Tensor) or not isinstance(fused, torch.Tensor):
        return "", None
    if manual.shape != fused.shape:
        return f"fused output shape {tuple(fused.shape)}, manual {tuple(manual.shape)}", None
    difference = (fused.double() - manual.double()).abs().max().item()
    relative = difference / max(manual.double().abs().max().item(), 1e-30)
    if not relative <= AGREEMENT[config.dtype]:
        return f"max |fused - manual| = {difference:.3g} ({relative:.2g} of max |manual|)", None
    return "", relative


def run(config: Config):
    """results[path][L] = Cell; problems[path] = (status, why); disagreements; the worst agreement seen."""
    problems, results, disagreements, worst = {}, {name: {} for name in PATHS}, [], None
    modules = build_modules(config, problems)
    for length in config.lengths:
        outputs = {}
        for name in PATHS:
            results[name][length] = measure(name, config, modules, length, problems, outputs)
        wrong, relative = disagreement(outputs, config)
        if wrong:
            disagreements.append(f"L={length}: {wrong}")
        elif relative is not None:
            worst = relative if worst is None else max(worst, relative)
        print(f"  L={length} done", file=sys.stderr, flush=True)
    return results, problems, disagreements, worst


def number(value: float) -> str:
    for floor, digits in ((100, 0), (10, 1), (1, 2)):
        if value >= floor:
            return f"{value:.{digits}f}"
    return f"{value:.3g}"


def table(config: Config, results: dict) -> str:
    """A markdown table: time and memory of each path, and manual/fused for both."""
    def cell(result: Cell, memory: bool) -> str:
        if result.status != "ok":
            return result.status
        return number(result.peak_bytes / MIB) if memory else number(result.time_ms) + "*" * result.noisy

    def ratio(manual: Cell, fused: Cell, memory: bool) -> str:
        if manual.status != "ok" or fused.status != "ok":
            return "-"
        top, bottom = (manual.peak_bytes, fused.peak_bytes) if memory else (manual.time_ms, fused.time_ms)
        unsure = not memory and (manual.noisy or fused.noisy)
        return number(top / bottom) + "*" * unsure if bottom else "-"

    header = ["L", "manual ms", "fused ms", "SDPA ms", "manual/fused", "manual MiB", "fused MiB", "SDPA MiB",
              "manual/fused"]
    rows = [header]
    for length in config.lengths:
        cells = [results[name][length] for name in PATHS]
        rows.append([str(length), *(cell(c, False) for c in cells), ratio(cells[0], cells[1], False),
                     *(cell(c, True) for c in cells), ratio(cells[0], cells[1], True)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(text.rjust(width) for text, width in zip(row, widths, strict=True)) + " |"
             for row in rows]
    lines.insert(1, "|" + "|".join("-" * (width + 1) + ":" for width in widths) + "|")
    return "\n".join(lines)


def reliability(results: dict, load: tuple[float, float]) -> list[str]:
    """Lines that say which timings not to trust, and why: a cell whose calls varied more than NOISY times, and a
    machine whose load average (before and after the run) says something else was running."""
    noisy = [f"{LABELS[name].strip()} at L={length} ({number(c.fastest_ms)} to {number(c.slowest_ms)} ms)"
             for name in PATHS for length, c in results[name].items() if c.noisy]
    cores, busiest = os.cpu_count() or 1, max(load)
    lines = []
    if noisy:
        lines.append(f"* unreliable: its timed calls varied more than {NOISY:g} times: {'; '.join(noisy)}")
    if busiest > BUSY * cores:
        lines.append(f"the machine was busy (load average {busiest:.1f} on {cores} core(s)): the times above are "
                     f"not the code's alone; close other programs and run again")
    return lines


def report(config: Config, results: dict, problems: dict, disagreements: list, worst: float | None,
           load: tuple[float, float] = (0.0, 0.0)) -> str:
    dtype = str(config.dtype).removeprefix("torch.")
    lines = [f"Attention on {config.device.type}, torch {torch.__version__}, {dtype}, B={config.batch}, "
             f"H={config.heads}, E={config.dim} (D={config.dim // config.heads}), "
             f"{'causal' if config.causal else 'no mask'}, forward only", "", table(config, results), "",
             f"time: median of {config.repeat} calls after a warm-up call; {MEMORY_METHOD[config.device.type]}",
             "OOM: out of memory at this length; n/i: not implemented yet; error: your code raised (see below)",
             *reliability(results, load)]
    for name in PATHS:
        grown = [(length, c.peak_bytes) for length, c in results[name].items() if c.status == "ok" and c.peak_bytes]
        if len(grown) > 1:
            (first, low), (last, high) = grown[0], grown[-1]
            lines.append(f"{LABELS[name]:6} memory grew {high / low:.1f}x from L={first} to L={last} "
                         f"(L grew {last / first:.0f}x, L^2 {(last / first) ** 2:.0f}x)")
    # "  manual: ..." lines are your code's problems; running out of memory is not one.
    notes = [f"  {LABELS[name]}{' ' if status == 'OOM' else ': '}{why}" for name, (status, why) in problems.items()]
    if disagreements:
        notes.append("  fused and manual DISAGREE, so one of them is wrong (`python -m student.check --part 6` "
                     "says which): " + "; ".join(disagreements))
    elif worst is not None:
        notes.append(f"  fused and manual agree: max |fused - manual| is {worst:.2g} of max |manual|")
    return "\n".join([*lines, "", "Notes:", *notes])


def plot(config: Config, results: dict, path: pathlib.Path) -> None:
    import matplotlib.pyplot as plt

    figure = plot_figure(config, results)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_figure(config: Config, results: dict):
    """The plot: time and memory of each path that measured anything, by L; a time the report calls unreliable
    is circled in red. The title names the paths drawn, and those that are not."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    drawn = []
    for axis, memory in ((axes[0], False), (axes[1], True)):
        circled = False
        for name, marker in zip(PATHS, "os^", strict=True):
            cells = [(length, c) for length, c in results[name].items()
                     if c.status == "ok" and (c.peak_bytes / MIB if memory else c.time_ms) > 0]
            if not cells:
                continue
            drawn += [name] if name not in drawn else []
            axis.plot([length for length, _ in cells], [c.peak_bytes / MIB if memory else c.time_ms for _, c in cells],
                      marker=marker, label=LABELS[name])
            noisy = [(length, c.time_ms) for length, c in cells if c.noisy and not memory]
            if noisy:
                axis.plot([x for x, _ in noisy], [y for _, y in noisy], linestyle="none", marker="o", markersize=14,
                          markerfacecolor="none", markeredgecolor="red",
                          label=None if circled else f"unreliable (calls varied > {NOISY:g}x)")
                circled = True
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("sequence length L")
        axis.set_ylabel("peak memory (MiB)" if memory else "time per call (ms)")
        axis.grid(True, which="both", alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend()
    missing = [LABELS[name] for name in PATHS if name not in drawn]
    figure.suptitle(f"{' vs '.join(LABELS[name] for name in drawn) or 'nothing measured'} on {config.device.type} "
                    f"({str(config.dtype).removeprefix('torch.')})"
                    + (f"; not drawn: {', '.join(missing)} (see the notes)" if missing else ""))
    figure.tight_layout()
    return figure


def as_json(config: Config, results: dict, problems: dict, disagreements: list) -> dict:
    return {"device": config.device.type, "dtype": str(config.dtype).removeprefix("torch."),
            "batch": config.batch, "heads": config.heads, "dim": config.dim, "causal": config.causal,
            "lengths": list(config.lengths), "memory_method": MEMORY_METHOD[config.device.type],
            "results": {name: {str(length): {"status": c.status, "time_ms": c.time_ms, "noisy": c.noisy,
                                             "peak_mib": None if c.peak_bytes is None else c.peak_bytes / MIB}
                               for length, c in results[name].items()} for name in PATHS},
            "problems": {name: why for name, (_status, why) in problems.items()},
            "disagreements": disagreements}


def positive_lengths(text: str) -> tuple:
    try:
        lengths = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not lengths or lengths[0] < 1:
        raise argparse.ArgumentTypeError(f"expected positive lengths, got {text!r}")
    return lengths


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python bench.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when there is a GPU, else cpu")
    parser.add_argument("--lengths", type=positive_lengths, help="comma-separated sequence lengths")
    parser.add_argument("--batch", type=int, help=f"batch size B (default {DEFAULTS['batch']})")
    parser.add_argument("--heads", type=int, help=f"number of heads H (default {DEFAULTS['heads']})")
    parser.add_argument("--dim", type=int, help=f"embedding size E (default {DEFAULTS['dim']})")
    parser.add_argument("--dtype", choices=sorted(DTYPES), help="default: float32 on cpu, float16 on cuda")
    parser.add_argument("--repeat", type=int, help="timed calls per cell (default: 5 on cpu, 20 on cuda)")
    parser.add_argument("--causal", action="store_true", help="causal self-attention (is_causal=True)")
    parser.add_argument("--out", default="bench.png", help="where to save the plot (default: bench.png)")
    parser.add_argument("--no-plot", action="store_true", help="print the table only")
    parser.add_argument("--json", help="also write the figures as JSON to this file")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that everything runs")
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is False here (no GPU, or a CPU-only torch build)")

    def pick(given, key, normal):
        return given if given is not None else QUICK[key] if args.quick else normal

    config = Config(torch.device(device),
                    DTYPES[args.dtype] if args.dtype else torch.float32 if device == "cpu" else torch.float16,
                    pick(args.lengths, "lengths", LENGTHS[device]), pick(args.batch, "batch", DEFAULTS["batch"]),
                    pick(args.heads, "heads", DEFAULTS["heads"]), pick(args.dim, "dim", DEFAULTS["dim"]),
                    pick(args.repeat, "repeat", 5 if device == "cpu" else 20), args.causal)
    for name in ("batch", "heads", "dim", "repeat"):
        if getattr(config, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if config.dim % config.heads:
        parser.error(f"--dim {config.dim} is not divisible by --heads {config.heads}")
    return config, args


def main(argv=None) -> int:
    config, args = parse_args(argv)
    # Your student/ package: the one next to this file comes first on the path, then the current folder's.
    sys.path.insert(1, os.getcwd())
    print(f"Running on {config.device.type}, L = {', '.join(map(str, config.lengths))} ...", file=sys.stderr)
    before = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0   # not on Windows
    results, problems, disagreements, worst = run(config)
    after = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    print(report(config, results, problems, disagreements, worst, (before, after)))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(as_json(config, results, problems, disagreements), indent=1))
    if not args.no_plot:
        plot(config, results, pathlib.Path(args.out))
        print(f"\nPlot saved to {pathlib.Path(args.out).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
