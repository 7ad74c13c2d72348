# Source on the GPU machine (no network, no wheels built there) from the repository root:
# the carried wheels (.whl: torchao) into /tmp/site, the tcast engines registered through
# entry points (gpu_entry_points.py), the four packages' sources on PYTHONPATH.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl 2>/dev/null || true
python3 packages/tcast-torch/bench/gpu_entry_points.py /tmp/site >/dev/null
P=$PWD/packages
export PYTHONPATH=$P/tcast-spec/src:$P/tcast-ref/src:$P/tcast-torch/src:$P/tcast-triton/src
export PYTHONPATH=$PYTHONPATH:$P/tcast-torch/bench:/tmp/site
export PYTHONUNBUFFERED=1
PYTEST="python3 -m pytest -p no:benchmark -p no:cacheprovider -W ignore::DeprecationWarning"
