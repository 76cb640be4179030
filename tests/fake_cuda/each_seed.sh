#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs one test on the test double of the CUDA driver in deferred mode once per seed:
#   each_seed.sh "SEED..." EXECUTABLE TEST
# Each seed is another order of the queued work (tests/fake_cuda/fake_cuda.h). Stops at the first
# failure and names its seed, so that `CBLOB_FAKE_CUDA_DEFERRED=<seed> EXECUTABLE TEST` repeats it. A
# test that skips (77) skips for every seed: the reason does not depend on the order.
seeds=$1
shift
for seed in $seeds; do
    CBLOB_FAKE_CUDA_DEFERRED=$seed "$@"
    status=$?
    if [ "$status" -eq 77 ]; then
        exit 77
    elif [ "$status" -ne 0 ]; then
        echo "each_seed.sh: failed with CBLOB_FAKE_CUDA_DEFERRED=$seed (exit $status)" >&2
        exit "$status"
    fi
done
