# Issue 15's run on a machine of several GPUs, in one device call (kind nvidia-h200-x2, or
# nvidia-h100-x2), from the repository root (no wheels needed; .whl is used if carried):
#
#   bash packages/tcast-torch/bench/gpu2_check.sh [WORLD] [all|worlds|bench]
#
# The second argument runs part 1 only (worlds) or part 2 only (bench), should the two
# together not fit one 600 s call (each world has a 400 s limit of its own).
# 1. the DTensor worker's cases (every group: placements, the conformance sample,
#    collective counts, refusals, dual casts, whole-tensor layouts, views, gradients, the
#    FSDP2 step) in WORLD processes, one a GPU over NCCL, for the torch and the Triton
#    engine (bench/dtensor_worlds.py; report under $OUT as dtensor_worlds.json);
# 2. bench/dtensor_gpus.py: bits of MXFP8/MXFP4/NVFP4 DTensor casts against torch:eager's
#    whole-tensor cast, then the sharded cast against the cast of one shard (timing).
# NVLink multicast stays off (the device's KINDS.md: it can take the host's GPUs out of
# service); the variables are set again here so that no child process turns it on.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source packages/tcast-triton/bench/gpu_env.sh
world=${1:-2}
part=${2:-all}
out=${OUT:-/tmp}
nvidia-smi -L
date
if [ "$part" != bench ]; then
    python3 packages/tcast-torch/bench/dtensor_worlds.py --world "$world" --device cuda \
        --backend nccl --report "$out/dtensor_worlds.json"
    echo "dtensor_worlds exit $?"
    date
fi
[ "$part" = worlds ] && exit 0
python3 packages/tcast-torch/bench/dtensor_gpus.py --world "$world"
echo "dtensor_gpus exit $?"
date
