#!/usr/bin/env python3
"""faultproxy.py: an HTTP proxy that drops and lies, for fault-injection tests.

Usage: faultproxy.py PORT UPSTREAM-PORT [--fault KIND:N ...] [--meta-fault KIND:N ...]
                     [--stall-seconds S] [--max-requests N] [--lifetime SECONDS] [--log FILE]

Listens on 127.0.0.1:PORT (never any other address) and forwards each
request (GET or HEAD; Range, If-None-Match and If-Modified-Since passed on)
to http://127.0.0.1:UPSTREAM-PORT, the real server (lighttpd, started by
tests/integration/lib/httpd.sh). Answers that pass unharmed are relayed as
the upstream sent them (status, ETag, Last-Modified, Content-Range).

--fault KIND:N applies to paths under /objects/ and /deltas/, --meta-fault
KIND:N to every other path (manifest, signature, timestamp, root). Each
option may repeat. A request takes the first fault, in command-line order,
whose count is not used up and that fits the request (the Range faults only
fit Range requests; the body faults only fit a 200 or 206 upstream answer),
and uses one of its N; so every schedule ends and later requests pass.
KIND is one of:
  reset-mid-body         the full Content-Length, half the body, then a TCP
                         reset (SO_LINGER 0, no FIN) once the client's kernel
                         has acknowledged that half (at most 2 s): the cut
                         is at half the body, not wherever the reset found
                         the socket buffers
  stall                  the full Content-Length, half the body, then nothing
                         for --stall-seconds (default 30; ends early when the
                         client goes away): longer than the agent's low-speed
                         timeout
  truncate-right-length  the full Content-Length, half the body, clean close
  truncate-wrong-length  Content-Length of the half that is sent, clean
                         close: the body looks complete but is short
  5xx                    503, 500, 502, 503, ... (a burst), upstream not asked
  ignore-range           a Range request answered 200 with the whole body
  wrong-206              a Range request answered 206 from another offset
                         than the asked one, saying so in Content-Range:
                         half the asked offset the first time (a longer
                         body), half-way to the end the next (a shorter
                         one), and so on by turns; the body follows only
                         when the client has not hung up on the headers
                         within 0.5 s
  wrong-206-bytes        a Range request answered 206 with the asked
                         Content-Range but bytes from another offset: only
                         the hash can tell
  redirect-loop          302 to the same URL
Bounded lifetime: exits after N requests (default 500) or SECONDS (default
120), whichever comes first. Exit status 3 when PORT cannot be bound, so a
caller can pick another port.
Each request is logged to FILE (flushed at once) as
  METHOD PATH STATUS BODY-BYTES RANGE-HEADER [FAULT]
("-" when there is no Range header), the format of badhttp.py and of
httpd.sh's access log, plus the fault's name when one was injected.
BODY-BYTES are the body bytes written to the client's socket (for a reset,
what was written before it). A stall's line is written when the stall
begins.
"""
import argparse
import fcntl
import http.client
import http.server
import re
import select
import socket
import struct
import sys
import termios
import threading
import time

KINDS = ["reset-mid-body", "stall", "truncate-right-length", "truncate-wrong-length", "5xx",
         "ignore-range", "wrong-206", "wrong-206-bytes", "redirect-loop"]
RANGE_ONLY = {"ignore-range", "wrong-206", "wrong-206-bytes"}
BODY = {"reset-mid-body", "stall", "truncate-right-length", "truncate-wrong-length"}
PASS_HEADERS = ["Range", "If-None-Match", "If-Modified-Since", "User-Agent"]
RELAY_HEADERS = ["Content-Type", "ETag", "Last-Modified", "Content-Range", "Accept-Ranges"]
CHUNK = 65536


def fault_spec(text):
    kind, sep, n = text.rpartition(":")
    if not sep or kind not in KINDS or not n.isdigit():
        raise argparse.ArgumentTypeError("'%s': expected KIND:N with KIND one of %s" % (text, ", ".join(KINDS)))
    return [kind, int(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("upstream", type=int)
    ap.add_argument("--fault", type=fault_spec, action="append", default=[])
    ap.add_argument("--meta-fault", type=fault_spec, action="append", default=[])
    ap.add_argument("--stall-seconds", type=float, default=30.0)
    ap.add_argument("--max-requests", type=int, default=500)
    ap.add_argument("--lifetime", type=float, default=120.0)
    ap.add_argument("--log", default=None)
    a = ap.parse_args()
    lock = threading.Lock()
    state = {"requests": 0, "5xx": 0, "wrong-206": 0}
    logf = open(a.log, "a", buffering=1) if a.log else None

    def take_fault(path, has_range):
        """The fault this request gets (one use of it taken), or None."""
        sched = a.fault if path.startswith(("/objects/", "/deltas/")) else a.meta_fault
        with lock:
            for f in sched:
                if f[1] > 0 and (has_range or f[0] not in RANGE_ONLY):
                    f[1] -= 1
                    return f[0]
        return None

    def give_back(fault):
        # a body fault that found no body to harm stays for the next request
        with lock:
            for sched in (a.fault, a.meta_fault):
                for f in sched:
                    if f[0] == fault:
                        f[1] += 1
                        return

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10  # idle keep-alive connections end on their own

        def log_message(self, fmt, *args):
            pass

        def record(self, status, sent, fault=None):
            if logf:
                with lock:
                    logf.write("%s %s %d %d %s%s\n" % (self.command, self.path, status, sent,
                                                       self.headers.get("Range") or "-",
                                                       " " + fault if fault else ""))

        def upstream(self, with_range):
            """(status, headers dict, body) of the request sent upstream."""
            c = http.client.HTTPConnection("127.0.0.1", a.upstream, timeout=30)
            try:
                hdrs = {h: self.headers[h] for h in PASS_HEADERS if self.headers.get(h)}
                if not with_range:
                    hdrs.pop("Range", None)
                c.request(self.command, self.path, headers=hdrs)
                r = c.getresponse()
                body = r.read() if self.command != "HEAD" else b""
                return r.status, {h: r.getheader(h) for h in RELAY_HEADERS if r.getheader(h)}, body, r.getheader(
                    "Content-Length")
            finally:
                c.close()

        def send_body(self, body):
            """Writes @body, returns the bytes written (the socket may break)."""
            sent = 0
            try:
                while sent < len(body):
                    n = self.connection.send(body[sent:sent + CHUNK])
                    sent += n
            except OSError:
                self.close_connection = True
            return sent

        def client_gone(self, seconds):
            """Whether the client closed its side within @seconds."""
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                r, _, _ = select.select([self.connection], [], [], 0.05)
                if r:
                    try:
                        return not self.connection.recv(4096, socket.MSG_PEEK)
                    except OSError:
                        return True
            return False

        def head(self, status, hdrs, length, close=False):
            self.send_response(status)
            for k, v in hdrs.items():
                self.send_header(k, v)
            if length is not None:
                self.send_header("Content-Length", str(length))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()

        def reply(self, status, hdrs, body, fault=None):
            self.head(status, hdrs, len(body))
            sent = self.send_body(body) if self.command != "HEAD" else 0
            self.record(status, sent, fault)

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            with lock:
                state["requests"] += 1
            rng = self.headers.get("Range")
            fault = take_fault(self.path, bool(rng))
            if fault == "5xx":
                with lock:
                    code = (503, 500, 502)[state["5xx"] % 3]
                    state["5xx"] += 1
                return self.reply(code, {}, b"try again\n", fault)
            if fault == "redirect-loop":
                return self.reply(302, {"Location": "http://127.0.0.1:%d%s" % (a.port, self.path)}, b"", fault)
            if fault in RANGE_ONLY:
                m = re.fullmatch(r"bytes=(\d+)-", rng or "")
                status, hdrs, data, _ = self.upstream(False)
                start = int(m.group(1)) if m else -1
                if status != 200 or self.command == "HEAD" or not 0 <= start < len(data):
                    give_back(fault)
                    status, hdrs, body, _ = self.upstream(True)
                    return self.reply(status, hdrs, body)
                hdrs.pop("Content-Range", None)
                if fault == "ignore-range":
                    return self.reply(200, hdrs, data, fault)
                # another offset: half the asked one (1 when that is 0), or
                # for every other wrong-206 half-way from it to the end
                other = start // 2 if start > 0 else 1
                if fault == "wrong-206":
                    with lock:
                        later = state["wrong-206"] % 2 == 1
                        state["wrong-206"] += 1
                    if later:
                        other = start + max(1, (len(data) - start) // 2)
                    hdrs["Content-Range"] = "bytes %d-%d/%d" % (other, len(data) - 1, len(data))
                    body = data[other:]
                    self.head(206, hdrs, len(body))
                    # A client that refuses the range hangs up on the
                    # headers: what it would have discarded is not sent
                    # (and not counted) when that happens within 0.5 s.
                    if self.client_gone(0.5):
                        self.close_connection = True
                        return self.record(206, 0, fault)
                    return self.record(206, self.send_body(body), fault)
                hdrs["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
                body = (data[other:] + data)[: len(data) - start]
                return self.reply(206, hdrs, body, fault)
            status, hdrs, body, length = self.upstream(True)
            if fault in BODY and (status not in (200, 206) or self.command == "HEAD" or len(body) < 2):
                give_back(fault)
                fault = None
            if fault is None:
                if self.command == "HEAD":
                    self.head(status, hdrs, length)
                    return self.record(status, 0)
                return self.reply(status, hdrs, body)
            half = body[: len(body) // 2]
            if fault == "truncate-wrong-length":
                self.head(status, hdrs, len(half), close=True)
                return self.record(status, self.send_body(half), fault)
            self.head(status, hdrs, len(body), close=True)
            sent = self.send_body(half)
            if fault == "reset-mid-body":
                # TIOCOUTQ is SIOCOUTQ: bytes sent but not yet acknowledged
                end = time.monotonic() + 2
                try:
                    while time.monotonic() < end:
                        if struct.unpack("i", fcntl.ioctl(self.connection, termios.TIOCOUTQ, b"\0" * 4))[0] == 0:
                            break
                        time.sleep(0.01)
                except OSError:
                    pass
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.server.resets.add(self.connection)
            self.record(status, sent, fault)
            if fault == "stall":
                self.client_gone(a.stall_seconds)

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = False
        resets = set()

        def handle_error(self, request, client_address):
            # a client that cuts a connection is what these tests are about
            if not isinstance(sys.exc_info()[1], OSError):
                super().handle_error(request, client_address)

        def shutdown_request(self, request):
            # no shutdown(SHUT_WR) (a FIN) before a reset: close() with
            # SO_LINGER 0 alone sends the RST
            if request in self.resets:
                self.resets.discard(request)
                request.close()
                return
            super().shutdown_request(request)

    try:
        srv = Server(("127.0.0.1", a.port), Handler)
    except OSError as e:
        print("faultproxy: cannot bind 127.0.0.1:%d: %s" % (a.port, e), file=sys.stderr)
        return 3
    srv.timeout = 0.2
    deadline = time.monotonic() + a.lifetime
    while time.monotonic() < deadline and state["requests"] < a.max_requests:
        srv.handle_request()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
