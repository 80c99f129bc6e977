"""WSGI app for the handoff tests: every request sleeps HANDOFF_SLEEP_S seconds
(so a gthread worker with N threads serves at most N / sleep requests a second)."""
import os
import time

SLEEP_S = float(os.environ.get("HANDOFF_SLEEP_S", "0"))


def app(environ, start_response):
    if SLEEP_S:
        time.sleep(SLEEP_S)
    body = b"ok"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
