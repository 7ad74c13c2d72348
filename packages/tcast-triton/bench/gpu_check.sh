# The Triton engine's GPU verification in two device calls (not a benchmark), from the
# repository root on the GPU machine, carrying .whl (torchao):
#
#   bash packages/tcast-triton/bench/gpu_check.sh [smoke|fast|full] [DATATYPE-GLOB] [all|tests|verify]
#
# The third argument runs part 1 only (tests) or parts 2 and 3 only (verify): with the Gluon
# dual kernel's tests the three together take more than a device call's 600 s on an H200,
# so send `tests` and `verify` as two calls.
#
# 1. the package's tests on CUDA (every kernel path, 2**32 FP8 inputs, > 2**31 elements);
# 2. `tcast verify` of every committed golden set through the engine;
# 3. `tcast conformance` of the engine against tcast_ref at the tier given (default smoke),
#    its Markdown report under $OUT (or /tmp) as conformance.md.
# Kernels compile per datatype and mode (the fast tier is compile-bound: 25-50 s for a cold
# uint datatype); Triton's cache (~/.triton/cache) lives only while the machine stays warm,
# so a tier split over several calls should be sent without a pause between them, each
# call with its own --datatypes glob.
set -u
source packages/tcast-triton/bench/gpu_env.sh
tier=${1:-smoke}
glob=${2:-*}
part=${3:-all}
out=${OUT:-/tmp}
nvidia-smi -L
date
if [ "$part" != verify ]; then
    $PYTEST packages/tcast-triton/tests -n 14 -q 2>&1 | tail -4
    date
fi
[ "$part" = tests ] && exit 0
for s in tests/golden/*; do
    python3 -m tcast.cli verify "$s" --engine triton --device cuda --quiet 2>&1 | tail -1
done
date
python3 -m tcast.cli conformance --engine triton --device cuda --tier "$tier" \
    --datatypes "$glob" --jobs 14 --quiet --report "$out/conformance.md"
echo "conformance exit $?"
date
