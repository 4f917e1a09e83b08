"""Cheat: skip the sandbox's sender and write pickles straight into its socket (fd 3).

Each call first sends a frame whose payload runs code on load, then behaves like the stub.
The grader reads every frame with torch.load(weights_only=True), which refuses it.
"""
from ._common import evil_frames, install_sending_first


def install(api):
    install_sending_first(api, evil_frames())
