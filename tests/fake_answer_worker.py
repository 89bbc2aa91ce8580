"""A stand-in for ``rsim_env.answers.worker`` that tests the pool's scheduling and failure paths.

Requests: ``{"mode": "ok"}`` answers at once; ``"sleep"`` blocks (an expression bomb that uses no
CPU); ``"garbage"`` answers a line that is not JSON; ``"die"`` exits without answering; ``"slow"``
is a long but finite check: it answers once the pool has lowered its CPU priority (at most 30 s), with its pid
and that priority (waiting for the demotion, not for a fixed time, keeps the test right on a loaded machine).
"""

import json
import os
import sys
import time


def main() -> None:
    """Serve requests until stdin closes."""
    sys.stdout.write('{"ready": true}\n')
    sys.stdout.flush()
    for line in sys.stdin:
        mode = json.loads(line).get("mode")
        if mode == "sleep":
            time.sleep(3600)
        elif mode == "garbage":
            sys.stdout.write("Traceback (most recent call last):\n")
        elif mode == "die":
            os._exit(3)
        elif mode == "slow":  # a long but finite check: reports the priority it ended with
            start, end = os.getpriority(os.PRIO_PROCESS, 0), time.monotonic() + 30
            while os.getpriority(os.PRIO_PROCESS, 0) == start and time.monotonic() < end:
                time.sleep(0.01)
            reply = {"correct": True, "reason": "ok", "pid": os.getpid(), "nice": os.getpriority(os.PRIO_PROCESS, 0)}
            sys.stdout.write(json.dumps(reply) + "\n")
        else:
            sys.stdout.write(json.dumps({"correct": True, "reason": "ok", "pid": os.getpid()}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
