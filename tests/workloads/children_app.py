"""WSGI app for the children tests: every request burns CHILDREN_BURN_S of CPU in
serve_request, so each gunicorn worker that serves requests is sampled.

Importing it takes CHILDREN_LOAD_S, as a real application's import does: gunicorn
imports the app in each worker after the fork (unless --preload), so a fresh
worker serves nothing for that long. pyebpf attaches a forked worker's uprobes
one RCU grace period after the fork (10-50 ms here; bench/children): what
a worker serves before that is not seen, and the tests that count every request
are about following workers, not about that latency."""
import os
import time

import wl_common

BURN_S = float(os.environ.get("CHILDREN_BURN_S", "0.005"))
time.sleep(float(os.environ.get("CHILDREN_LOAD_S", "0.1")))


def serve_request():
    wl_common.burn_cpu(BURN_S)


def app(environ, start_response):
    serve_request()
    body = b"ok"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
