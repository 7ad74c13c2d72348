"""A DataType's hash is computed once, and an unpickled one hashes as its new process does.

String hashes differ between processes (``PYTHONHASHSEED``): a hash carried in a pickle would
put an unpickled datatype in the wrong bucket of every cache keyed by datatypes there.
"""

import os
import pickle
import subprocess
import sys

import tcast

_CHILD = """
import pickle, sys
import tcast
dt = pickle.loads(sys.stdin.buffer.read())
fresh = tcast.DataType(tcast.number("e4m3fn"), tcast.scale("e8m0_t32"))
print(hash(dt) == hash(fresh), {fresh: "found"}.get(dt), dt == fresh)
"""


def test_hash_is_the_specs_hash_and_ignores_the_name():
    a = tcast.datatype("e4m3fn", "e8m0_t32", name="first")
    b = tcast.DataType(tcast.number("e4m3fn"), tcast.scale("e8m0_t32"), "second")
    assert a == b and hash(a) == hash(b) == hash((a.nspec, a.sspec))


def test_an_unpickled_datatype_hashes_as_its_process_does():
    dt = tcast.datatype("e4m3fn", "e8m0_t32")
    env = dict(os.environ, PYTHONHASHSEED="12345")  # not this process's string hashes
    out = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=pickle.dumps(dt),
        capture_output=True,
        env=env,
        check=True,
    )
    assert out.stdout.decode().split() == ["True", "found", "True"]
