"""WSGI app for the children tests: every request burns CHILDREN_BURN_S of CPU in
serve_request, so each gunicorn worker that serves requests is sampled."""
import os

import wl_common

BURN_S = float(os.environ.get("CHILDREN_BURN_S", "0.005"))


def serve_request():
    wl_common.burn_cpu(BURN_S)


def app(environ, start_response):
    serve_request()
    body = b"ok"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
