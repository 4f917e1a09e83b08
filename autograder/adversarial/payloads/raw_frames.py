"""Cheat: skip the sandbox's sender and write pickles straight into its socket (fd 3).

Each call first sends a frame whose payload runs code on load, then behaves like the stub.
The grader reads every frame with torch.load(weights_only=True), which refuses it.
"""
import os

from ._common import FUNCTIONS, evil_frames, stub

SOCKET_FD = 3


def _sending(stub, frame):
    def call(*args, **kwargs):
        try:
            os.write(SOCKET_FD, frame)
        except OSError as error:
            print(f"could not write to the socket: {error}")
        return stub(*args, **kwargs)
    return call


def install(api):
    frames = evil_frames()
    for index, name in enumerate(FUNCTIONS):
        api[name] = _sending(stub(api, name), frames[index % len(frames)])
