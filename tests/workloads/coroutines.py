"""Coroutine and generator frames, spinning on known lines. Since 3.11 a
running function's frame lives on its thread's own stack, but a coroutine's
or a generator's lives in its heap object: the walk leaves the thread's
stack at the first one and comes back to it past the last.

Async: asyncio.run(outer()), outer awaits middle, middle awaits inner, which
       spins (LINE:coro_spin)
Gen:   consume() iterates produce(), which spins before each yield
       (LINE:gen_spin)
RESULT: {"threads": {name: native id}, "file": path, "lines": {marker: line}}.
"""
import asyncio
import sys
import threading
import time

from wl_common import line_of, native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
SLICE = 0.02  # seconds produce() spins per item
ids = {}


async def inner(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end: pass  # LINE:coro_spin


async def middle(seconds):
    await inner(seconds)  # LINE:coro_middle


async def outer(seconds):
    await middle(seconds)  # LINE:coro_outer


def produce(items):
    for _ in range(items):
        end = time.monotonic() + SLICE
        while time.monotonic() < end: pass  # LINE:gen_spin
        yield 1


def consume(seconds):
    total = 0
    for item in produce(int(seconds / SLICE)):  # LINE:gen_next
        total += item
    return total


def run(name, body):
    ids[name] = native_id()
    body()


ready()
wait_go()
threads = [threading.Thread(target=run, args=("Async", lambda: asyncio.run(outer(SECONDS))), name="Async"),
           threading.Thread(target=run, args=("Gen", lambda: consume(SECONDS)), name="Gen")]
for t in threads:
    t.start()
for t in threads:
    t.join()
result(threads=ids, file=__file__,
       lines={m: line_of(m) for m in ("coro_spin", "coro_middle", "coro_outer", "gen_spin", "gen_next")})
linger()
