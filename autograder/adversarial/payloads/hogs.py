"""Abuse (issue 11, class 4): detached busy processes that keep loading the machine after the sandbox is gone.

At import it starts four processes that leave the sandbox's session (double fork, setsid) and spin
forever, marked by their command line. With its own PID namespace every one of them dies with the
box; and since calls are timed by CPU time, other submissions graded meanwhile lose nothing.
"""
import os
import sys

MARK = "@MARK@"


def run():
    for _ in range(4):
        try:
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    try:
                        os.execv(sys.executable, [sys.executable, "-c", "while True: pass", MARK])
                    except OSError:
                        while True:
                            pass
                os._exit(0)
        except OSError as error:
            print(f"fork refused: {error}")
            return
