"""A CPU-bound pure-Python benchmark (n-body integration plus dict/str work)
for bench/py_stack. Prints READY, waits for GO on stdin, runs a fixed amount
of work, prints RESULT {"cpu": s, "wall": s} and exits."""
import json
import sys
import time

ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 200000

BODIES = [
    ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], 39.47),
    ([4.84, -1.16, -0.10], [0.606, 2.81, -0.02], 0.037),
    ([8.34, 4.12, -0.40], [-1.01, 1.82, 0.008], 0.011),
    ([12.89, -15.11, -0.22], [1.08, 0.86, -0.01], 0.0017),
    ([15.37, -25.91, 0.17], [0.97, 0.59, -0.03], 0.002),
]
PAIRS = [(BODIES[i], BODIES[j]) for i in range(len(BODIES)) for j in range(i + 1, len(BODIES))]


def advance(dt):
    for (r1, v1, m1), (r2, v2, m2) in PAIRS:
        dx, dy, dz = r1[0] - r2[0], r1[1] - r2[1], r1[2] - r2[2]
        mag = dt * ((dx * dx + dy * dy + dz * dz) ** -1.5)
        b1, b2 = m1 * mag, m2 * mag
        v1[0] -= dx * b2
        v1[1] -= dy * b2
        v1[2] -= dz * b2
        v2[0] += dx * b1
        v2[1] += dy * b1
        v2[2] += dz * b1
    for r, v, _ in BODIES:
        r[0] += dt * v[0]
        r[1] += dt * v[1]
        r[2] += dt * v[2]


def words(n):
    counts = {}
    for i in range(n):
        key = "w%d" % (i % 211)
        counts[key] = counts.get(key, 0) + 1
    return counts


def main():
    print("READY", flush=True)
    sys.stdin.readline()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for i in range(ITERATIONS):
        advance(0.01)
        if i % 100 == 0:
            words(200)
    print("RESULT " + json.dumps({"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - wall0}), flush=True)


main()
