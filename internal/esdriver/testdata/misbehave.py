#!/usr/bin/env python3
"""The reference adapter, broken on purpose for the driver's own tests: after
MISBEHAVE_AFTER appends (default 3) it does what MISBEHAVE says once:
"garbage" prints a line that is not a reply, "exit" writes a last word on
stderr and exits mid-rule, "silent" never answers again."""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples", "eventstore-driver", "python"))

import adapter  # noqa: E402  (the reference)

AFTER = int(os.environ.get("MISBEHAVE_AFTER", "3"))
HOW = os.environ.get("MISBEHAVE", "garbage")


class Misbehaving(adapter.Adapter):
    appends = 0
    lock = threading.Lock()

    def serve(self, req):
        if req.get("op") == "append":
            with self.lock:
                Misbehaving.appends += 1
                n = Misbehaving.appends
            if n == AFTER + 1:
                if HOW == "garbage":
                    print("misbehave: about to print garbage", file=sys.stderr, flush=True)
                    with self.out_lock:
                        sys.stdout.write("Traceback? no: this is not JSON\n")
                        sys.stdout.flush()
                    return
                if HOW == "exit":
                    print("misbehave: disk on fire, exiting", file=sys.stderr, flush=True)
                    os._exit(3)
                if HOW == "silent":
                    time.sleep(3600)
        super().serve(req)


if __name__ == "__main__":
    adapter.main(adapter_class=Misbehaving)
