"""Functions and a file path whose names need every CPython string kind:
Latin-1 (1 byte, non-ASCII), UCS-2 (2 bytes) and UCS-4 (4 bytes)."""
import importlib.util
import os
import sys
import tempfile

from wl_common import native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
SOURCE = '''
from wl_common import burn_cpu

def función(seconds):
    burn_cpu(seconds)

def 計算する(seconds):
    función(seconds)
'''

directory = os.path.join(tempfile.mkdtemp(prefix="pyebpf-"), "données_🐍")
os.makedirs(directory)
path = os.path.join(directory, "módulo_名前.py")
with open(path, "w", encoding="utf-8") as f:
    f.write(SOURCE)
spec = importlib.util.spec_from_file_location("modulo_unicode", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

ready(tid=native_id())
wait_go()
getattr(module, "計算する")(SECONDS)
result(tid=native_id(), file=path, functions=["計算する", "función"])
linger()
