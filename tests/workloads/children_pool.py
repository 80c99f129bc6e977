"""multiprocessing.Pool whose workers are replaced after every MAXTASKS tasks.

usage: children_pool.py START_METHOD TASKS MAXTASKS

On GO, maps TASKS tasks over Pool(2, maxtasksperchild=MAXTASKS) started with
START_METHOD (fork: workers are copies of this process; spawn: fresh
interpreters exec'd); each task burns 0.4 s of CPU in pool_task. RESULT lists
the pid each task ran in.
"""
import multiprocessing
import os
import sys

import wl_common


def pool_task(i):
    wl_common.burn_cpu(0.4)
    return os.getpid()


def main():
    method, tasks, maxtasks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    wl_common.ready()
    wl_common.wait_go()
    with multiprocessing.get_context(method).Pool(2, maxtasksperchild=maxtasks) as pool:
        pids = pool.map(pool_task, range(tasks), chunksize=1)
    wl_common.result(task_pids=pids)
    wl_common.linger()


if __name__ == "__main__":
    main()
