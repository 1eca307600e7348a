#!/usr/bin/env python3
"""badhttp.py: a misbehaving HTTP server for fault-injection tests.

Usage: badhttp.py MODE PORT DIR [--max-requests N] [--lifetime SECONDS] [--log FILE]
                  [--rate BYTES-PER-SECOND]

Serves the files under DIR on 127.0.0.1:PORT (never any other address),
misbehaving as MODE says:
  truncate      the first GET of each path declares the full Content-Length
                but sends half the body and closes; later GETs behave,
                Range requests included (206)
  more          sends the file plus 1000 extra bytes, without Content-Length,
                closing the connection at the end
  slow          declares the full length, sends one byte every 3 s
  stall         the first GET of each /objects/ or /deltas/ path declares
                the full length, sends half the body and then sends
                nothing more for 60 s (a device losing power mid-download
                is cut at this point); its log line ends in " stalled" and
                is written when the stall begins. Later GETs behave.
  flaky         the first GET of each path answers 503, later ones behave
  ignore-range  answers every GET with 200 and the whole file, Range or not
  ok            behaves (Range supported)
  trickle       declares the full length, sends 2 bytes a second (above a
                1 byte/s low-speed limit, far below any sane minimum rate)
  endless-error answers 503 with a body that never ends (no length)
  redirect      answers every GET with 302 to --redirect-to + the path
--rate sends the bodies of /objects/ and /deltas/ at about that speed when
the mode behaves (ok, and the behaving requests of other modes), like a
device's slow uplink.
Bounded lifetime: exits after N requests (default 100) or SECONDS (default
120), whichever comes first. Exit status 3 when PORT cannot be bound, so a
caller can pick another port.
Each request is logged to FILE (flushed at once) as
  METHOD PATH STATUS BODY-BYTES RANGE-HEADER   ("-" when absent)
the format of tests/integration/lib/httpd.sh's access log.
"""
import argparse
import http.server
import os
import re
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["truncate", "more", "slow", "stall", "flaky", "ignore-range", "ok",
                                         "trickle", "endless-error", "redirect"])
    ap.add_argument("port", type=int)
    ap.add_argument("dir")
    ap.add_argument("--max-requests", type=int, default=100)
    ap.add_argument("--lifetime", type=float, default=120.0)
    ap.add_argument("--log", default=None)
    ap.add_argument("--redirect-to", default="")
    ap.add_argument("--rate", type=int, default=0)
    a = ap.parse_args()
    root = os.path.realpath(a.dir)
    lock = threading.Lock()
    state = {"requests": 0, "seen": set()}
    logf = open(a.log, "a", buffering=1) if a.log else None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10  # idle keep-alive connections end on their own

        def log_message(self, fmt, *args):
            pass

        def record(self, status, sent, note=""):
            if logf:
                with lock:
                    logf.write("%s %s %d %d %s%s\n" % (self.command, self.path, status, sent,
                                                       self.headers.get("Range") or "-", note))

        def send_body(self, body):
            """Writes body, throttled to --rate for objects and deltas;
            returns the bytes written before the client went away."""
            if not a.rate or not self.path.startswith(("/objects/", "/deltas/")):
                self.wfile.write(body)
                return len(body)
            sent, step = 0, max(1, a.rate // 20)
            try:
                while sent < len(body):
                    self.wfile.write(body[sent:sent + step])
                    self.wfile.flush()
                    sent += min(step, len(body) - sent)
                    time.sleep(step / a.rate)
            except OSError:
                self.close_connection = True
            return sent

        def send_plain(self, status, body=b""):
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.record(status, self.send_body(body))

        def do_GET(self):
            with lock:
                state["requests"] += 1
                first = self.path not in state["seen"]
                state["seen"].add(self.path)
            if a.mode == "redirect":
                self.send_response(302)
                self.send_header("Location", a.redirect_to + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.record(302, 0)
                return
            if a.mode == "endless-error":
                self.send_response(503)
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                sent, chunk = 0, b"e" * 65536
                try:
                    while time.monotonic() < state["end"]:
                        self.wfile.write(chunk)
                        sent += len(chunk)
                except OSError:
                    pass
                self.record(503, sent)
                return
            path = os.path.realpath(os.path.join(root, self.path.lstrip("/")))
            if not path.startswith(root + os.sep) or not os.path.isfile(path):
                return self.send_plain(404, b"not found\n")
            with open(path, "rb") as f:
                data = f.read()
            mode = a.mode
            if mode == "flaky" and first:
                return self.send_plain(503, b"try again\n")
            if mode == "truncate" and first:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                half = data[: len(data) // 2]
                self.wfile.write(half)
                self.wfile.flush()
                self.close_connection = True
                self.record(200, len(half))
                return
            if mode == "stall" and first and self.path.startswith(("/objects/", "/deltas/")):
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                half = data[: len(data) // 2]
                try:
                    self.wfile.write(half)
                    self.wfile.flush()
                except OSError:
                    pass
                self.record(200, len(half), " stalled")
                time.sleep(60)
                self.close_connection = True
                return
            if mode == "more":
                body = data + b"x" * 1000
                self.send_response(200)
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    self.wfile.write(body)
                except OSError:
                    pass
                self.record(200, len(body))
                return
            if mode == "trickle":
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                sent = 0
                try:
                    while sent < len(data) and time.monotonic() < state["end"]:
                        self.wfile.write(data[sent:sent + 2])
                        self.wfile.flush()
                        sent += 2
                        time.sleep(1)
                except OSError:
                    pass
                self.close_connection = True
                self.record(200, sent)
                return
            if mode == "slow":
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                sent = 0
                deadline = time.monotonic() + 30
                try:
                    while sent < len(data) and time.monotonic() < deadline:
                        self.wfile.write(data[sent:sent + 1])
                        self.wfile.flush()
                        sent += 1
                        time.sleep(3)
                except OSError:
                    pass
                self.close_connection = True
                self.record(200, sent)
                return
            m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            if m and mode != "ignore-range":
                start = int(m.group(1))
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % len(data))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    self.record(416, 0)
                    return
                body = data[start:]
                self.send_response(206)
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.record(206, self.send_body(body))
                return
            self.send_plain(200, data)

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = False

    try:
        srv = Server(("127.0.0.1", a.port), Handler)
    except OSError as e:
        print("badhttp: cannot bind 127.0.0.1:%d: %s" % (a.port, e), file=sys.stderr)
        return 3
    srv.timeout = 0.2
    deadline = time.monotonic() + a.lifetime
    state["end"] = deadline
    while time.monotonic() < deadline and state["requests"] < a.max_requests:
        srv.handle_request()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
