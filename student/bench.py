"""How fast, and how much memory: your manual attention, your fused path, and PyTorch's SDPA.

    python -m student.bench                          # on a GPU if there is one, else on the CPU
    python -m student.bench --device cpu             # L = 128 ... 2048
    python -m student.bench --device cuda            # L = 128 ... 8192, float16
    python -m student.bench --lengths 256,1024 --causal --out my-plot.png
    python -m student.bench --quick                  # tiny sizes: a smoke test in a few seconds

For every sequence length L it runs three things on the same device and dtype:

    manual  your MultiHeadAttention(E, H, fused=False) on x (B, L, E): the four
            projections, your own scaled_dot_product_attention, out_proj
    fused   your MultiHeadAttention(E, H, fused=True), with the same weights: the
            same layer with F.scaled_dot_product_attention doing the attention
    SDPA    torch.nn.functional.scaled_dot_product_attention alone, on random heads
            q, k, v (B, H, L, D): the attention core without the four E x E
            projections that the two rows above include (a floor for "fused")

and prints a table (time in ms, peak memory in MiB, and manual/fused for both)
and saves a plot of both against L (log-log). The manual path builds the
(B, H, L, L) matrix of attention weights, so its memory grows with L squared;
the fused kernels never hold that matrix, so theirs grows with L.

Parts you have not written yet are reported (with the part's name) instead of
measured; the SDPA row always runs. Exit status 0 unless the arguments are wrong.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

PATHS = ("manual", "fused", "sdpa")
LABELS = {"manual": "manual", "fused": "fused", "sdpa": "SDPA"}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
CPU_LENGTHS = (128, 256, 512, 1024, 2048)
GPU_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192)
QUICK = {"lengths": (32, 64, 128, 256), "batch": 1, "heads": 2, "dim": 32, "repeat": 2}
DEFAULTS = {"batch": 2, "heads": 8, "dim": 512}
MIB = 2 ** 20
# fused and manual must compute the same layer: the largest difference allowed, relative to max |output|.
AGREEMENT = {torch.float64: 1e-9, torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}

CPU_MEMORY_METHOD = ("peak memory: the most memory torch's CPU allocator held at once during one call, beyond what was "
                     "allocated before it (inputs and weights are not counted), replayed from the allocation events "
                     "of torch.profiler (profile_memory=True), in a separate run from the timing")
CUDA_MEMORY_METHOD = ("peak memory: torch.cuda.max_memory_allocated() during one call minus torch.cuda.memory_allocated() "
                      "before it (inputs and weights are not counted), in a separate run from the timing")


@dataclass
class Cell:
    """One path at one length."""
    status: str                      # "ok", "OOM", "n/i" (not implemented yet) or "error"
    time_ms: float | None = None
    peak_bytes: int | None = None
    note: str = ""


@dataclass
class Config:
    device: torch.device
    dtype: torch.dtype
    lengths: tuple[int, ...]
    batch: int
    heads: int
    dim: int
    repeat: int
    causal: bool
    load: float | None = None        # the CPU's 1-minute load average when the run started (Unix only)

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads


@dataclass
class PathState:
    """What we know about one path so far: once it fails for a reason other than memory, it is not run again."""
    name: str
    problem: str = ""                # why it stopped running ("" while it runs)
    problem_status: str = ""         # the status its later cells get
    oom_at: int | None = None
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------- measuring

def is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryError":
        return True
    text = str(error).lower()
    return isinstance(error, RuntimeError) and ("out of memory" in text or "not enough memory" in text)


def synchronize(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_time_ms(fn, device: torch.device, repeat: int) -> float:
    """Median wall time of fn() over `repeat` calls (the caller has warmed it up)."""
    times = []
    for _ in range(repeat):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            fn()
            times.append((time.perf_counter() - begin) * 1e3)
    return statistics.median(times)


@contextlib.contextmanager
def native_stderr_silenced():
    """Hide what C++ code prints on stderr (the profiler announces its start and stop there)."""
    try:
        sys.stderr.flush()
        fd = sys.stderr.fileno()
        saved = os.dup(fd)
    except (AttributeError, OSError, ValueError):   # no real stderr (a notebook): nothing to hide
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    try:
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(devnull)


def cpu_peak_bytes(fn) -> int:
    """The peak of the bytes torch's CPU allocator held during fn(), above the level before it.

    torch keeps no allocator statistics on the CPU, but its profiler records every allocation
    and free (profile_memory=True); adding them up in time order gives the peak.
    """
    from torch.profiler import ProfilerActivity, profile

    profiler = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with native_stderr_silenced():
        profiler.__enter__()
    try:
        fn()
    finally:
        with native_stderr_silenced():
            profiler.__exit__(None, None, None)
    events = [event for event in profiler.profiler.kineto_results.events() if event.name() == "[memory]"]
    events.sort(key=lambda event: event.start_ns())
    held = peak = 0
    for event in events:
        held += event.nbytes()
        peak = max(peak, held)
    return peak


def cuda_peak_bytes(fn, device: torch.device) -> int:
    synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    fn()
    synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


def peak_bytes(fn, device: torch.device) -> int:
    return cuda_peak_bytes(fn, device) if device.type == "cuda" else cpu_peak_bytes(fn)


def available_bytes(device: torch.device) -> int | None:
    """Memory that could still be allocated on the device (None: unknown)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return free
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


# ---------------------------------------------------------------- the three paths

def build_modules(config: Config, states: dict[str, PathState]):
    """Your MultiHeadAttention twice (fused=False and fused=True) with the same weights; None where it fails."""
    try:
        from student import MultiHeadAttention
    except Exception as error:  # noqa: BLE001 - a broken package is reported, the SDPA row still runs
        for name in ("manual", "fused"):
            stop(states[name], error)
        return {}
    modules = {}
    for name, fused in (("manual", False), ("fused", True)):
        torch.manual_seed(0)
        try:
            module = MultiHeadAttention(config.dim, config.heads, fused=fused)
            module.to(device=config.device, dtype=config.dtype).eval()
        except Exception as error:  # noqa: BLE001
            stop(states[name], error)
            continue
        modules[name] = module
    if "manual" in modules and "fused" in modules:
        try:
            modules["fused"].load_state_dict(modules["manual"].state_dict())
        except Exception as error:  # noqa: BLE001 - both keep their own (equally seeded) weights
            states["fused"].extra["weights"] = f"could not share the manual path's weights ({error})"
    return modules


def stop(state: PathState, error: BaseException):
    if isinstance(error, NotImplementedError):
        state.problem_status = "n/i"
        state.problem = f"not implemented yet: {error}" if str(error) else "not implemented yet"
    else:
        state.problem_status = "error"
        state.problem = f"raised {type(error).__name__}: {error}"


def make_call(name: str, config: Config, modules: dict, length: int):
    """A function that runs one forward of this path at this length (inputs made once, outside it)."""
    generator = torch.Generator().manual_seed(length)
    B, H, L, E, D = config.batch, config.heads, length, config.dim, config.head_dim

    def random(*shape):
        return torch.randn(*shape, generator=generator).to(config.device, config.dtype)

    if name == "sdpa":
        q, k, v = random(B, H, L, D), random(B, H, L, D), random(B, H, L, D)
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=config.causal)
    module, x = modules[name], random(B, L, E)
    if config.causal:
        return lambda: module(x, is_causal=True)
    return lambda: module(x)


def estimated_manual_bytes(config: Config, length: int) -> int:
    """At least three (B, H, L, L) tensors: scores, scaled or masked scores, weights."""
    itemsize = torch.empty((), dtype=config.dtype).element_size()
    return 3 * config.batch * config.heads * length * length * itemsize


def measure(name: str, config: Config, modules: dict, length: int, state: PathState, outputs: dict) -> Cell:
    if state.problem:
        return Cell(state.problem_status)
    if state.oom_at is not None:
        return Cell("OOM", note=f"not tried: out of memory already at L={state.oom_at}")
    if name == "manual" and config.device.type == "cpu":
        need, have = estimated_manual_bytes(config, length), available_bytes(config.device)
        if have is not None and need > 0.8 * have:
            state.oom_at = length
            return Cell("OOM", note=f"not run: its L x L matrices alone need about {need / 2**30:.1f} GiB "
                                    f"and about {have / 2**30:.1f} GiB is free")
    try:
        with torch.no_grad():
            call = make_call(name, config, modules, length)
            output = call()                      # warm-up, and the output the agreement check uses
            synchronize(config.device)
            if name in ("manual", "fused") and isinstance(output, torch.Tensor):
                outputs[name] = output
            del output
            time_ms = median_time_ms(call, config.device, config.repeat)
            peak = peak_bytes(call, config.device)
        return Cell("ok", time_ms=time_ms, peak_bytes=peak)
    except Exception as error:  # noqa: BLE001 - everything a student's code raises is reported, not fatal
        outputs.pop(name, None)
        if is_out_of_memory(error):
            state.oom_at = length
            return Cell("OOM", note=str(error).strip().splitlines()[0] if str(error).strip() else "")
        stop(state, error)
        return Cell(state.problem_status)
    finally:
        if config.device.type == "cuda":
            torch.cuda.empty_cache()


def compare(outputs: dict, config: Config, length: int, disagreements: list, worst: list):
    """fused and manual compute the same layer with the same weights: their outputs must agree."""
    manual, fused = outputs.pop("manual", None), outputs.pop("fused", None)
    if manual is None or fused is None:
        return
    if manual.shape != fused.shape:
        disagreements.append(f"L={length}: fused output shape {tuple(fused.shape)}, manual {tuple(manual.shape)}")
        return
    difference = (fused.double() - manual.double()).abs().max().item()
    relative = difference / max(manual.double().abs().max().item(), 1e-30)
    worst.append(relative)
    if not relative <= AGREEMENT[config.dtype]:
        disagreements.append(f"L={length}: max |fused - manual| = {difference:.3g} "
                             f"({relative:.2g} of max |manual|)")


def run(config: Config) -> tuple[dict, dict, list, list]:
    states = {name: PathState(name) for name in PATHS}
    modules = build_modules(config, states)
    results = {name: {} for name in PATHS}
    disagreements, worst = [], []
    for length in config.lengths:
        outputs = {}
        for name in PATHS:
            results[name][length] = measure(name, config, modules, length, states[name], outputs)
        compare(outputs, config, length, disagreements, worst)
        print(f"  L={length}: " + ", ".join(f"{LABELS[n]} {describe_cell(results[n][length])}" for n in PATHS),
              file=sys.stderr, flush=True)
    return results, states, disagreements, worst


# ---------------------------------------------------------------- reporting

def number(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def describe_cell(cell: Cell) -> str:
    if cell.status != "ok":
        return cell.status
    return f"{number(cell.time_ms)} ms, {number(cell.peak_bytes / MIB)} MiB"


def value(cell: Cell, what: str) -> str:
    if cell.status != "ok":
        return cell.status
    return number(cell.time_ms) if what == "time" else number(cell.peak_bytes / MIB)


def ratio(manual: Cell, fused: Cell, what: str) -> str:
    if manual.status != "ok" or fused.status != "ok":
        return "-"
    top, bottom = (manual.time_ms, fused.time_ms) if what == "time" else (manual.peak_bytes, fused.peak_bytes)
    return f"{top / bottom:.1f}" if bottom > 0 else "-"


def table(config: Config, results: dict) -> str:
    header = ["L", "manual ms", "fused ms", "SDPA ms", "manual/fused",
              "manual MiB", "fused MiB", "SDPA MiB", "manual/fused"]
    rows = []
    for length in config.lengths:
        cells = {name: results[name][length] for name in PATHS}
        rows.append([str(length)] + [value(cells[n], "time") for n in PATHS] + [ratio(cells["manual"], cells["fused"], "time")]
                    + [value(cells[n], "memory") for n in PATHS] + [ratio(cells["manual"], cells["fused"], "memory")])
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
    line = lambda row: "| " + " | ".join(cell.rjust(width) for cell, width in zip(row, widths)) + " |"
    rule = "|" + "|".join("-" * (width + 1) + ":" for width in widths) + "|"
    return "\n".join([line(header), rule] + [line(row) for row in rows])


def device_description(device: torch.device) -> str:
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        return f"{properties.name} ({properties.total_memory / 2**30:.0f} GiB)"
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        model = names[0] if names else model
    except OSError:
        pass
    return f"CPU {model}, {os.cpu_count()} logical cores, torch uses {torch.get_num_threads()} threads"


def heading(config: Config) -> str:
    dtype = str(config.dtype).removeprefix("torch.")
    mask = "causal mask (is_causal=True)" if config.causal else "no mask"
    return (f"Attention benchmark on {config.device.type}: {device_description(config.device)}\n"
            f"torch {torch.__version__}, {dtype}, batch B={config.batch}, heads H={config.heads}, "
            f"embed dim E={config.dim} (head dim D={config.head_dim}), self-attention, {mask}, "
            f"forward only (torch.no_grad, eval mode)"
            + (f"\nload average {config.load:.1f} at the start (other busy programs slow the timings)"
               if config.device.type == "cpu" and config.load is not None else ""))


def legend(config: Config) -> str:
    method = CUDA_MEMORY_METHOD if config.device.type == "cuda" else CPU_MEMORY_METHOD
    return "\n".join([
        "What each column measures:",
        f"  manual  your MultiHeadAttention({config.dim}, {config.heads}, fused=False) on x (B, L, E): "
        "projections + your scaled_dot_product_attention + out_proj",
        f"  fused   your MultiHeadAttention({config.dim}, {config.heads}, fused=True), same weights: "
        "projections + F.scaled_dot_product_attention + out_proj",
        "  SDPA    F.scaled_dot_product_attention alone on random heads q, k, v (B, H, L, D): the attention core "
        "without the four E x E projections (a floor for fused)",
        f"  time: median of {config.repeat} calls after a warm-up call, in milliseconds",
        f"  {method}; MiB = 2^20 bytes",
        "  OOM: out of memory at this length; n/i: not implemented yet; error: your code raised (see below)",
    ])


def growth(config: Config, results: dict) -> list[str]:
    """How each path's memory grew from the shortest to the longest length it ran at."""
    lines = []
    for name in PATHS:
        measured = [(length, results[name][length].peak_bytes) for length in config.lengths
                    if results[name][length].status == "ok" and results[name][length].peak_bytes]
        if len(measured) < 2:
            continue
        (first, low), (last, high) = measured[0], measured[-1]
        lines.append(f"  {LABELS[name]:6} memory grew {high / low:.1f}x from L={first} to L={last} "
                     f"(L grew {last / first:.0f}x, L^2 {(last / first) ** 2:.0f}x)")
    if lines:
        lines.insert(0, "Memory growth:")
    return lines


def report(config: Config, results: dict, states: dict, disagreements: list, worst: list) -> str:
    parts = [heading(config), "", table(config, results), "", legend(config)]
    parts += [""] + growth(config, results) if growth(config, results) else []
    notes = []
    for name in PATHS:
        state = states[name]
        if state.problem:
            notes.append(f"  {LABELS[name]}: {state.problem}")
        for text in state.extra.values():
            notes.append(f"  {LABELS[name]}: {text}")
        for length in config.lengths:
            cell = results[name][length]
            if cell.status == "OOM" and cell.note:
                notes.append(f"  {LABELS[name]} at L={length}: out of memory ({cell.note})")
    if any(state.problem_status == "n/i" for state in states.values()):
        notes.append("  (`python -m student.check` shows which parts pass their checks)")
    if disagreements:
        notes.append("  fused and manual DISAGREE, so one of them is wrong (try `python -m student.check --part 6`): "
                     + "; ".join(disagreements))
    elif worst:
        notes.append(f"  fused and manual agree: max |fused - manual| is {max(worst):.2g} of max |manual|")
    if notes:
        parts += ["", "Notes:"] + notes
    return "\n".join(parts)


def plot(config: Config, results: dict, path: pathlib.Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    markers = {"manual": "o", "fused": "s", "sdpa": "^"}
    for axis, what, unit in ((axes[0], "time", "time per call (ms)"), (axes[1], "memory", "peak memory (MiB)")):
        for name in PATHS:
            points = [(length, cell.time_ms if what == "time" else cell.peak_bytes / MIB)
                      for length, cell in results[name].items() if cell.status == "ok"]
            points = [(length, y) for length, y in points if y > 0]
            if points:
                axis.plot(*zip(*points), marker=markers[name], label=LABELS[name])
        if what == "memory":
            anchor = [(length, cell.peak_bytes / MIB) for length, cell in results["manual"].items()
                      if cell.status == "ok" and cell.peak_bytes]
            if anchor:
                first, y0 = anchor[0]
                xs = list(config.lengths)
                axis.plot(xs, [y0 * (x / first) ** 2 for x in xs], ":", color="gray", label="∝ L²")
                axis.plot(xs, [y0 * (x / first) for x in xs], "--", color="lightgray", label="∝ L")
        axis.set_xscale("log", base=2)
        axis.set_xticks(list(config.lengths), [str(length) for length in config.lengths])
        axis.minorticks_off()
        axis.set_yscale("log")
        axis.set_xlabel("sequence length L")
        axis.set_ylabel(unit)
        axis.grid(True, which="both", alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend()
    dtype = str(config.dtype).removeprefix("torch.")
    figure.suptitle(f"Attention on {config.device.type} ({dtype}, B={config.batch}, H={config.heads}, "
                    f"E={config.dim}): manual vs fused vs SDPA")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def as_json(config: Config, results: dict, states: dict, disagreements: list) -> dict:
    return {
        "device": config.device.type,
        "device_description": device_description(config.device),
        "dtype": str(config.dtype).removeprefix("torch."),
        "batch": config.batch, "heads": config.heads, "dim": config.dim, "repeat": config.repeat,
        "causal": config.causal, "lengths": list(config.lengths), "load_average": config.load,
        "memory_method": CUDA_MEMORY_METHOD if config.device.type == "cuda" else CPU_MEMORY_METHOD,
        "results": {name: {str(length): {"status": cell.status, "time_ms": cell.time_ms,
                                         "peak_mib": None if cell.peak_bytes is None else cell.peak_bytes / MIB,
                                         "note": cell.note}
                           for length, cell in results[name].items()} for name in PATHS},
        "problems": {name: state.problem for name, state in states.items() if state.problem},
        "disagreements": disagreements,
    }


# ---------------------------------------------------------------- command line

def parse_lengths(text: str) -> tuple[int, ...]:
    try:
        lengths = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not lengths or min(lengths) < 1:
        raise argparse.ArgumentTypeError(f"expected positive lengths, got {text!r}")
    return tuple(sorted(set(lengths)))


def parse_args(argv=None) -> tuple[Config, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m student.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="where to run (default: cuda when available, else cpu)")
    parser.add_argument("--lengths", type=parse_lengths, default=None,
                        help="comma-separated sequence lengths (default: 128..2048 on cpu, 128..8192 on cuda)")
    parser.add_argument("--batch", type=int, default=None, help=f"batch size B (default {DEFAULTS['batch']})")
    parser.add_argument("--heads", type=int, default=None, help=f"number of heads H (default {DEFAULTS['heads']})")
    parser.add_argument("--dim", type=int, default=None,
                        help=f"embedding dim E, split into H heads of E/H (default {DEFAULTS['dim']})")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default=None,
                        help="default: float32 on cpu, float16 on cuda")
    parser.add_argument("--repeat", type=int, default=None, help="timed calls per cell (default: 5 on cpu, 20 on cuda)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice)")
    parser.add_argument("--causal", action="store_true", help="use a causal mask (is_causal=True)")
    parser.add_argument("--out", default="bench.png", help="where to save the plot (default: bench.png here)")
    parser.add_argument("--no-plot", action="store_true", help="print the table only")
    parser.add_argument("--json", default=None, help="also write the figures as JSON to this file")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (L=32..256, B=1, H=2, E=32, 2 calls): checks that everything runs")
    args = parser.parse_args(argv)

    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is False here (no GPU, or a CPU-only torch build)")
    device = torch.device(args.device)
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be at least 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    pick = lambda given, key, normal: given if given is not None else (QUICK[key] if args.quick else normal)
    lengths = pick(args.lengths, "lengths", CPU_LENGTHS if device.type == "cpu" else GPU_LENGTHS)
    batch = pick(args.batch, "batch", DEFAULTS["batch"])
    heads = pick(args.heads, "heads", DEFAULTS["heads"])
    dim = pick(args.dim, "dim", DEFAULTS["dim"])
    repeat = pick(args.repeat, "repeat", 5 if device.type == "cpu" else 20)
    dtype = DTYPES[args.dtype] if args.dtype else (torch.float32 if device.type == "cpu" else torch.float16)
    for name, given in (("--batch", batch), ("--heads", heads), ("--dim", dim), ("--repeat", repeat)):
        if given < 1:
            parser.error(f"{name} must be at least 1, got {given}")
    if dim % heads:
        parser.error(f"--dim {dim} is not divisible by --heads {heads}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return Config(device, dtype, tuple(lengths), batch, heads, dim, repeat, args.causal, load), args


def main(argv=None) -> int:
    config, args = parse_args(argv)
    print(f"Running on {config.device.type}, L = {', '.join(map(str, config.lengths))} ...", file=sys.stderr, flush=True)
    results, states, disagreements, worst = run(config)
    print(report(config, results, states, disagreements, worst))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(as_json(config, results, states, disagreements), indent=1))
    if not args.no_plot:
        out = pathlib.Path(args.out)
        try:
            plot(config, results, out)
        except ImportError as error:
            print(f"\nNo plot: matplotlib is missing ({error}); `pip install matplotlib` for one.")
        else:
            print(f"\nPlot saved to {out.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
