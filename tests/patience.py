"""How long the project's tests wait for a child process (a command, a kernel, a batch) before calling it hung.

A safety net, never a budget: the suite must pass on a 2-core machine at a load average of 30, where a command
that takes 20 s on a quiet machine can take ten minutes. A test that waits for something asserts what it
produced, never how long it took (speed is measured by benchmarks/, side by side).
"""
SAFETY_NET_S = 3600
