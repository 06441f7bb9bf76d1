// SPDX-License-Identifier: Apache-2.0
// The programmatic dependent launch, as every kernel takes part in it (src/launch/launch.c launches
// them so where the policy says).
#pragma once

namespace ew {

// First thing in every kernel. A dependent launch (cc >= 9.0) lets this grid start while the
// stream's previous kernel finishes: the wait holds every thread until that kernel has completed
// and its writes are visible, so nothing is read or written early; once every block of this grid
// has started, the stream's next dependent kernel may take the SM slots this one frees. Both are
// no-ops in an ordinary launch.
__device__ __forceinline__ void follow_previous_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#if defined(__CUDACC_RTC__) // the runtime's device functions are toolkit headers, which NVRTC lacks
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" :::);
#else
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
#endif
#endif
}

} // namespace ew
