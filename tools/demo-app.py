"""The sample service tools/demo profiles: a small order-pricing "server"
with a thread pool handling requests, a background metrics flusher that
holds the GIL in pure-Python loops, and cyclic garbage that keeps the
collector busy. Runs until killed; prints READY once started."""
import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

rng = random.Random(42)
CATALOG = {"sku-%d" % i: round(rng.uniform(1, 100), 2) for i in range(2000)}


class Order:
    def __init__(self, lines):
        self.lines = lines
        self.parent = self  # a reference cycle: garbage for the GC


def parse_request(raw):
    return json.loads(raw)


def price_order(order):
    total = 0.0
    for sku, qty in order.lines:
        total += CATALOG[sku] * qty
    return round(total * 1.2, 2)


def handle_request(raw):
    order = Order(parse_request(raw)["lines"])
    price = price_order(order)
    time.sleep(0.002)  # a downstream call
    return price


def flush_metrics():
    while True:
        histogram = {}
        for i in range(200000):
            histogram[i % 97] = histogram.get(i % 97, 0) + 1
        time.sleep(0.05)


def main():
    threading.Thread(target=flush_metrics, name="MetricsFlusher", daemon=True).start()
    skus = list(CATALOG)
    print("READY", flush=True)
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="RequestWorker") as pool:
        while True:
            batch = [json.dumps({"lines": [(rng.choice(skus), rng.randint(1, 5)) for _ in range(50)]})
                     for _ in range(40)]
            list(pool.map(handle_request, batch))


if __name__ == "__main__":
    main()
