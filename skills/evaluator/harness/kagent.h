// kagent.h: the only header every kernel source includes first (see docs/kernel-abi.md).
//
// It gives exported functions C linkage and default visibility, so the Python side can find
// them by their plain name with dlsym, and pulls in the fixed-width integer types the ABI's
// parameter types use. On CUDA it also brings in the runtime API and the half/bfloat16 types.
#ifndef KAGENT_H
#define KAGENT_H

#include <cstddef>
#include <cstdint>

// `.cu` files see __CUDACC__; `.cpp` files of the cuda backend are compiled with -DKAGENT_CUDA
// so host code may call the CUDA runtime and name __half / __nv_bfloat16 in signatures.
#if defined(__CUDACC__) || defined(KAGENT_CUDA)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

// Every function `ops.NAME` can call is declared `KAGENT_EXPORT void NAME(...)`.
#define KAGENT_EXPORT extern "C" __attribute__((visibility("default")))

#endif  // KAGENT_H
