"""A stand-in for ``rsim_env.kinds.rg_worker``: a scorer that hangs on ``"SLOW"`` and scores 1.0 otherwise."""

import json
import sys
import time


def main() -> None:
    """Serve requests until stdin closes."""
    sys.stdout.write('{"ready": true}\n')
    sys.stdout.flush()
    for line in sys.stdin:
        if json.loads(line).get("answer") == "SLOW":
            time.sleep(3600)  # a scorer stuck on a hostile answer
        sys.stdout.write(json.dumps({"score": 1.0, "reason": "ok"}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
