# The DTensor checks on a machine of several GPUs, in one device call (kind nvidia-h200-x2, or
# nvidia-h100-x2), from the repository root (no wheels needed; .whl is used if carried):
#
#   bash packages/tcast-torch/bench/gpu2_check.sh [WORLD] [all|bench|worlds] [JOBS]
#
# The second argument runs part 1 only (bench) or part 2 only (worlds). Each run has a time
# limit of its own (100 s per benchmark, 300 s for the worlds), so that a call of 600 s
# always comes back with every part's output; all is also written to $OUT/gpu2_check.log.
# 1. bench/dtensor_gpus.py (first, on GPUs nothing else uses): bits of MXFP8/MXFP4/NVFP4
#    DTensor casts against torch:eager's whole-tensor cast, then the sharded cast against the
#    cast of one shard (timing), for a 16384 x 16384 tensor (host-bound shards) and a
#    65536 x 16384 one (shards whose kernels outlast the host work).
# 2. the DTensor worker's cases (every group: the conformance sample, placements, whole-tensor
#    layouts, dual casts, collective counts, refusals, views, gradients, the FSDP2 step) in
#    WORLD processes, one a GPU over NCCL, for the torch and the Triton engine
#    (bench/dtensor_worlds.py: JOBS worlds at once, default 12, as the first casts compile
#    kernels; report under $OUT as dtensor_worlds.json).
# NVLink multicast stays off (the device's KINDS.md: it can take the host's GPUs out of
# service); the variables are set again here so that no child process turns it on.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source packages/tcast-triton/bench/gpu_env.sh
world=${1:-2}
part=${2:-all}
jobs=${3:-12}
out=${OUT:-/tmp}
exec > >(tee -a "$out/gpu2_check.log") 2>&1
nvidia-smi -L
date
if [ "$part" != worlds ]; then
    for rows in 16384 65536; do
        timeout 100 python3 packages/tcast-torch/bench/dtensor_gpus.py --world "$world" \
            --rows $rows --size 16384
        echo "dtensor_gpus --rows $rows exit $?"
        date
    done
fi
[ "$part" = bench ] && exit 0
timeout 300 python3 packages/tcast-torch/bench/dtensor_worlds.py --world "$world" \
    --device cuda --backend nccl --parts 8 --jobs "$jobs" --timeout 240 \
    --report "$out/dtensor_worlds.json"
echo "dtensor_worlds exit $?"
date
