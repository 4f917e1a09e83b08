"""Containment: what the kernel holds a sandbox to, one concern per module, and the limits measured from outside.

isolation.py plans and applies the layers (and probes which the machine allows) through kernel.py's system
calls, seccomp.py's filter and memcg.py's memory groups; limits.py, load_free.py and processes.py measure a box
from outside; tripwires.py notes what a box tried; disk.py and permissions.py stand in where a layer is missing.
Nothing here knows the wire or the hidden suite.
"""
