"""Abuse (issue 48, class 5): a file planted without a write. bind() of one end of a socket pair to a path makes a
socket file there, in the folder of the class's submissions (a later run would see a submission nobody sent).
Refused where writing is: by the box's own user, its private mounts, Landlock, or the seccomp filter, which refuses
bind() wherever it refuses every write.
"""
import os
import socket

PLANTED = "planted-by-bind"


def run():
    end, other = socket.socketpair()
    try:
        end.bind(os.path.join("@ZOO@", PLANTED))
        print(f"PLANTED {PLANTED}")
    except OSError as error:
        print(f"no socket file: {type(error).__name__}")
    finally:
        end.close()
        other.close()
