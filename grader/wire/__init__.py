"""The wire between the trusted side and a sandbox: frames of plain data (protocol.py, layout.py), typed messages
(messages.py), and the sandbox's half of each call (executor.py, with the emulated second device, emulated.py;
checks_runner.py for the handout's public checks).
Nothing here knows how a box is contained.
"""
