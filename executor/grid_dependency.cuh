// Programmatic Dependent Launch, the device half. A kernel launched with the programmatic
// stream serialization attribute may start while the kernel before it in the stream still runs;
// it must not touch memory that kernel writes or reads before wait_for_prior_grids() returns,
// which happens once the kernel before has completed and its writes are visible. Every kernel we
// launch calls it first, with all threads, before any global access: then a kernel's completion
// implies its predecessor's, so a chain of early launches never lets a kernel pass a grid it
// did not wait for. allow_dependent_launch() lets the next kernel in the stream launch early
// (once every CTA of this one has called it or exited); it promises nothing about memory.
//
// Without the attribute, or before sm_90, both do nothing, so they are always compiled in.
// Included by the conventional kernels and by the generated megakernel regions (NVRTC).
#pragma once

namespace megacut::executor {

__device__ __forceinline__ void wait_for_prior_grids() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace megacut::executor
