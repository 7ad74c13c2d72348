# Issue 15's run on a machine of several GPUs, in one device call (kind nvidia-h200-x2, or
# nvidia-h100-x2), from the repository root (no wheels needed; .whl is used if carried):
#
#   bash packages/tcast-torch/bench/gpu2_check.sh [WORLD] [all|bench|worlds] [JOBS]
#
# The second argument runs part 1 only (bench) or part 2 only (worlds). Each part has a time
# limit of its own (150 s and 400 s), so that a call of 600 s always comes back with both
# parts' output; everything is also written to $OUT/gpu2_check.log.
# 1. bench/dtensor_gpus.py (first, on GPUs nothing else uses): bits of MXFP8/MXFP4/NVFP4
#    DTensor casts against torch:eager's whole-tensor cast, then the sharded cast against the
#    cast of one shard (timing).
# 2. the DTensor worker's cases (every group: the conformance sample, placements, whole-tensor
#    layouts, dual casts, collective counts, refusals, views, gradients, the FSDP2 step) in
#    WORLD processes, one a GPU over NCCL, for the torch and the Triton engine
#    (bench/dtensor_worlds.py: JOBS worlds at once, default 8, as the first casts compile
#    kernels; report under $OUT as dtensor_worlds.json).
# NVLink multicast stays off (the device's KINDS.md: it can take the host's GPUs out of
# service); the variables are set again here so that no child process turns it on.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source packages/tcast-triton/bench/gpu_env.sh
world=${1:-2}
part=${2:-all}
jobs=${3:-8}
out=${OUT:-/tmp}
exec > >(tee -a "$out/gpu2_check.log") 2>&1
nvidia-smi -L
date
if [ "$part" != worlds ]; then
    timeout 150 python3 packages/tcast-torch/bench/dtensor_gpus.py --world "$world"
    echo "dtensor_gpus exit $?"
    date
fi
[ "$part" = bench ] && exit 0
timeout 400 python3 packages/tcast-torch/bench/dtensor_worlds.py --world "$world" \
    --device cuda --backend nccl --jobs "$jobs" --timeout 380 \
    --report "$out/dtensor_worlds.json"
echo "dtensor_worlds exit $?"
date
