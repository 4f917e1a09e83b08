"""The runtime that grades (what autograder.zip ships whole): hidden tests in a trusted process, student code in a
sandbox the kernel encloses.

It stands in floors, imports running downward only (an import-linter contract in pyproject.toml):

    run/  gradescope/      the processes of a batch; the Gradescope runtime (one submission, results.json)
    suite.py               the hidden suite's pytest plugin: points, parts, the forbidden-call rule
    gateway/               the one door to student code: Gateway, SandboxGateway (gateway/client.py), LocalGateway,
                           the answers' checks (gateway/replies.py) and the fused path's SDPA call (sdpa_calls.py)
    wire/  contain/        the frames and messages to a sandbox; the kernel's containment of it
    row.py                 one submission's gradebook row, typed once
    scoring.py  sanitize.py  paths.py      shared leaves; source_rules.py: the forbidden-call rule's evidence, read
                           from the source as text (torch-free: the batch reads the handout's once)

The instructor's tools (autograder/) import this package, never the reverse; the hidden suite imports gateway/.

Processes (the shape of a zygote sandbox: a warm template, forked, locked down before untrusted code):
- batch (the command, run/batch.py): probes the kernel's isolation layers (isolation.probe) while the
  template imports torch, finds submissions, hands them out, writes the gradebook (run/gradebook.py;
  text made safe by sanitize.py). It never imports torch.
- template (run/pool.py): started (fork, then exec of a fresh Python with an environment of its own) before
  the batch reads anything about the class, so no byte of the grader's environment or command line is in
  it or in anything it forks; imports torch and warms it up; forks one worker per submission, so a
  worker that dies costs only its own submission. Before the second worker (before the first, where more
  follow) it also loads pytest and the emulated second device, so every later process starts warm.
- worker (run/worker.py): unpacks one submission (run/unpacking.py: no links, nothing but source the rule's
  reader can read, every oddity an error row), forks its trusted process and, on request, sandboxes (the first
  one before it is asked); when a sandbox ends it makes sure nothing of it is left.
- trusted (run/trusted.py): runs pytest on grading_tests with SandboxGateway (gateway/client.py) as the
  `student` fixture; times each call by the sandbox's CPU time; checks every answer (gateway/replies.py)
  before a test sees it; has rlimits of its own (contain/limits.py); returns an Outcome (run/outcome.py).
  Told to (--public-checks, Gradescope's run), it first has the handout's public checks run in a sandbox of
  their own (run/public_checks.py, wire/checks_runner.py), keeping only what it knows of their report, for no
  points.
- sandbox (run/sandbox.py): applies the run's plan (contain/isolation.py, contain/kernel.py), says `locked` (or
  `broken`, the engine's failure: only ever first, before any student code runs), waits until the trusted side
  takes it over (`go`), imports the student's code, answers typed messages (wire/messages.py over
  wire/protocol.py; each tensor in the layout the test gave it, wire/layout.py) by running wire/executor.py; its
  tripwires (contain/tripwires.py) note escape attempts and tampering for the flags column, never for points.
  A worker keeps sandboxes waiting, locked down and without student code, so that none is waited for:
  in the worker of a run's only submission one warms up the second device while the first serves the CPU tests,
  and takes over at the first call on that device (the engine runs those tests last); one waits for
  the suite's second opinions (start_afresh). The sandbox a new one replaces is killed first: no two
  sandboxes of a submission run student code at the same time.

Which kernel layer stops what, and what stands in for a missing one, is contain/isolation.py's TABLE (docs/design.md
shows it). What else stops an attack:

    attack                                         stopped by
    processes that outlive it, where pid is        kill(-1) as its uid; else the worker's subreaper sweep
      missing
    CPU and wall time, memory, files, processes    contain/limits.py: CPU-time limits measured from outside,
                                                     a cap on load-free time (contain/load_free.py), rlimits,
                                                     the tmpfs bound
    a sandbox passing what it saw to another       one sandbox of a submission runs student code at a
                                                     time (spares wait for `go`; the replaced one dies);
                                                     a later one's import report is a fixed text (gateway/client.py);
                                                     seccomp refuses file locks and leases
    forged or oversized answers                    wire/protocol.py: no pickle, sizes checked first, every
                                                     decoding error a refusal; gateway/replies.py: facts derived
                                                     from data; `broken` refused after `locked`
    the grader's environment and command line      run/pool.py: the template is a fresh program
    text that stops an output file (not UTF-8)     sanitize.valid_text; files.atomic_write
Clean-up never acts as root on a path a sandbox could write: with private mounts there is nothing
to clean; otherwise a child that has become the sandbox's user does it.
"""
