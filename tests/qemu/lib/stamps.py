#!/usr/bin/env python3
"""stamps.py LOG OUT: follows a QEMU serial log while the guest runs and
writes to OUT, for each line as it arrives, the seconds since this program
started and the line ("12.34 EQTEST plan ..."). Lines are split at \\n and
\\r (eqota's progress rewrites one line with \\r). Stops when the file OUT
names gets a sibling OUT.stop, or after 1,800 s. The power-cut campaign
(tests/qemu/scenarios.sh) measures its phases from these times.
"""
import os
import sys
import time


def main():
    log, out = sys.argv[1], sys.argv[2]
    t0 = time.monotonic()
    pos = 0
    pending = b""
    with open(out, "w", buffering=1) as o:
        while time.monotonic() - t0 < 1800:
            stop = os.path.exists(out + ".stop")
            try:
                with open(log, "rb") as f:
                    f.seek(pos)
                    data = f.read()
            except FileNotFoundError:
                data = b""
            if data:
                pos += len(data)
                now = time.monotonic() - t0
                parts = (pending + data).replace(b"\r", b"\n").split(b"\n")
                pending = parts.pop()
                for p in parts:
                    if p.strip():
                        o.write("%.2f %s\n" % (now, p.decode("utf-8", "replace")))
            if stop:
                if pending.strip():
                    o.write("%.2f %s\n" % (time.monotonic() - t0, pending.decode("utf-8", "replace")))
                return 0
            time.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main())
