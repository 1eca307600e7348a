#!/usr/bin/env python3
"""A TCP forwarder that adds latency: every chunk read from one side is
written to the other DELAY ms later, in order, in both directions, so a
server on loopback behaves like one across a network (for bench/).

Usage: latency_proxy.py --listen 127.0.0.1:0 --to HOST:PORT --delay-ms 5
                        [--port-file F] [--max-seconds N]
Prints the port it listens on (and writes it to F). Stops after N seconds
(default 600) or when its parent process goes away.
"""
import argparse
import asyncio
import os
import sys


async def pipe(reader, writer, delay):
    """Forwards reader to writer, each chunk delay seconds after it arrived."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(65536)
            await queue.put((loop.time() + delay, data or None))
            if not data:
                break
        await sender
    except (ConnectionError, asyncio.CancelledError):
        sender.cancel()
        writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--to", required=True)
    ap.add_argument("--delay-ms", type=float, default=5.0)
    ap.add_argument("--port-file")
    ap.add_argument("--max-seconds", type=float, default=600)
    a = ap.parse_args()
    delay = a.delay_ms / 1000.0
    to_host, to_port = a.to.rsplit(":", 1)
    parent = os.getppid()

    async def handle(cr, cw):
        try:
            sr, sw = await asyncio.open_connection(to_host, int(to_port))
        except OSError:
            cw.close()
            return
        await asyncio.gather(pipe(cr, sw, delay), pipe(sr, cw, delay))

    host, port = a.listen.rsplit(":", 1)
    server = await asyncio.start_server(handle, host, int(port))
    real = server.sockets[0].getsockname()[1]
    print(real, flush=True)
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % real)
        os.rename(tmp, a.port_file)
    loop = asyncio.get_running_loop()
    end = loop.time() + a.max_seconds
    while loop.time() < end and os.getppid() == parent:
        await asyncio.sleep(0.5)
    server.close()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
