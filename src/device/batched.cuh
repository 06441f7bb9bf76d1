// SPDX-License-Identifier: Apache-2.0
// The tensor-list kernel: each block runs one chunk of one row of a descriptor block (src/plan/batched.h),
// which travels as a kernel parameter. A row whose pointers share a phase runs as the direct kernel's
// aligned body: its head element by element, then whole runs of packs (A packs an access), the tail
// element by element; a row at other phases runs element by element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "plan/batched.h"
#include "device/dependent.cuh"
#include "device/edges.cuh"
#include "device/pack.cuh"
#include "device/reduce.cuh"

namespace ew {

// The descriptor block as the kernel takes it: src/plan/batched.h's layout at Bytes.
template <int Bytes> struct alignas(8) BatchedBlock {
    uint32_t rows, chunk, blocks, reserved;
    unsigned char data[Bytes - EW_BATCHED_HEADER];
};
static_assert(sizeof(BatchedBlock<EW_BATCHED_LARGE_BLOCK>) == sizeof(ew_batched_desc_t));
static_assert(sizeof(BatchedBlock<EW_BATCHED_SMALL_BLOCK>) + 16 <= EW_BATCHED_SMALL_PARAMS);
static_assert(sizeof(BatchedBlock<EW_BATCHED_LARGE_BLOCK>) + 16 <= EW_BATCHED_LARGE_PARAMS);

template <typename F> inline constexpr int kBatchedPointers = std::is_same_v<typename F::In2, NoInput> ? 2 : 3;

__device__ __forceinline__ int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }

template <typename T> __device__ __forceinline__ unsigned element_phase(const T *p, unsigned run)
{
    return static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) / kStorageSize<T> % run);
}

// Elements [begin, end) one by one, K independent loads in flight per thread (out may alias an input,
// so the compiler would not move a load above the store before it).
template <typename F, int K>
__device__ __forceinline__ void batched_elements(const F &f, typename F::Out *out, const typename F::In1 *a,
                                                 const typename F::In2 *b, int64_t begin, int64_t end)
{
    for (int64_t i0 = begin + threadIdx.x; i0 < end; i0 += EW_PLAN_BLOCK_THREADS * K) {
        typename F::In1 a_in[K];
        typename F::In2 b_in[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int64_t i = i0 + k * EW_PLAN_BLOCK_THREADS;
            if (i < end) {
                a_in[k] = a[i];
                b_in[k] = load(b, i);
            }
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int64_t i = i0 + k * EW_PLAN_BLOCK_THREADS;
            if (i < end)
                out[i] = apply(f, a_in[k], b_in[k]);
        }
    }
}

// Block b runs chunk c of the row whose first block is the last <= b. Chunks of an aligned row start
// at multiples of the chunk past the row's head (the first chunk takes the head too), so every chunk's
// body is whole aligned runs; an unaligned row's chunks are plain multiples of the chunk.
template <typename F, int P, int Bytes>
__device__ __forceinline__ void batched_body(const F &f, const BatchedBlock<Bytes> &block)
{
    using Out = typename F::Out;
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    constexpr int kCapacity = EW_BATCHED_CAPACITY(Bytes, kBatchedPointers<F>);
    constexpr int A = EW_PLAN_ACCESS_PACKS(kWidestElement<F>);
    constexpr int kPacks = EW_PLAN_UNROLL(P * kWidestElement<F>, 0);
    constexpr int U = kPacks / A > 0 ? kPacks / A : 1; // runs each thread loads before computing
    constexpr int kRun = P * A;                         // elements per access
    static_assert(EW_BATCHED_STEP(kWidestElement<F>) == EW_PLAN_BLOCK_THREADS * U * kRun);

    const auto *first = reinterpret_cast<const uint32_t *>(block.data + EW_BATCHED_FIRST_AT(kCapacity));
    const auto *lengths = reinterpret_cast<const uint32_t *>(block.data + EW_BATCHED_LENGTH_AT(kCapacity));
    const auto *pointer = reinterpret_cast<const uint64_t *>(block.data + EW_BATCHED_POINTER_AT(kCapacity, 0));
    uint32_t lo = 0, hi = block.rows; // first[lo] <= blockIdx.x < first[hi], first[rows] read as infinite
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (first[mid] <= blockIdx.x)
            lo = mid;
        else
            hi = mid;
    }
    const int64_t n = lengths[lo], chunk = block.chunk, c = blockIdx.x - first[lo];
    auto *out = reinterpret_cast<Out *>(pointer[lo]);
    const auto *a = reinterpret_cast<const In1 *>(pointer[kCapacity + lo]);
    const In2 *b = nullptr;
    if constexpr (kBatchedPointers<F> == 3)
        b = reinterpret_cast<const In2 *>(pointer[2 * kCapacity + lo]);
    const unsigned phase = element_phase(out, kRun);
    const bool aligned =
        element_phase(a, kRun) == phase && (kBatchedPointers<F> == 2 || element_phase(b, kRun) == phase);
    follow_previous_grid();

    if (!aligned) {
        const int64_t begin = c * chunk;
        batched_elements<F, 8>(f, out, a, b, begin, min64(n, begin + chunk));
        return;
    }
    if constexpr (kFillsTable<F, P>) {
        F::fill_table();
        __syncthreads();
    }
    const int64_t head = (kRun - phase) % kRun;
    const int64_t begin = c == 0 ? 0 : min64(n, c * chunk + head);
    const int64_t end = min64(n, (c + 1) * chunk + head);
    const int64_t body = c == 0 ? min64(n, head) : begin;
    const int64_t runs = (end - body) / kRun, body_end = body + runs * kRun;

    using OutRun = RunOf<F, P, A, Out>;
    using In1Run = RunOf<F, P, A, In1>;
    using In2Run = RunOf<F, P, A, In2>;
    auto *out_runs = reinterpret_cast<OutRun *>(out + body);
    const auto *a_runs = reinterpret_cast<const In1Run *>(a + body);
    const auto *b_runs = reinterpret_cast<const In2Run *>(std::is_same_v<In2, NoInput> ? b : b + body);
    for (int64_t i0 = threadIdx.x; i0 < runs; i0 += EW_PLAN_BLOCK_THREADS * U) {
        In1Run a_in[U];
        In2Run b_in[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t i = i0 + u * EW_PLAN_BLOCK_THREADS;
            a_in[u] = i < runs ? load_pack(a_runs + i) : In1Run{};
            if constexpr (std::is_same_v<In2, NoInput>)
                b_in[u] = {};
            else
                b_in[u] = i < runs ? load_pack(b_runs + i) : In2Run{};
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t i = i0 + u * EW_PLAN_BLOCK_THREADS;
            if (i < runs) {
                OutRun result;
                apply_run<F, P, A>(f, result, a_in[u], b_in[u]);
                store_pack(out_runs + i, result);
            }
        }
    }
    // The head and the tail: fewer than kRun elements each.
    const int64_t head_elements = body - begin;
    edge_elements(f, out, a, b, head_elements + (end - body_end),
                  [=](int64_t j) { return j < head_elements ? begin + j : body_end + (j - head_elements); });
}

template <typename F, int P, int Bytes>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS, 1)
    batched_kernel(F f, const __grid_constant__ BatchedBlock<Bytes> block)
{
    reducing(f, [&](const F &g) { batched_body<F, P, Bytes>(g, block); });
}

} // namespace ew
