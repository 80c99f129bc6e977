"""Burns CPU for a while after GO, then exits on its own."""
import sys

from wl_common import burn_cpu, native_id, ready, wait_go

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5

ready(tid=native_id())
wait_go()
burn_cpu(SECONDS)
