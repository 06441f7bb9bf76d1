// SPDX-License-Identifier: Apache-2.0
// The bulk-copy kernel (ew_plan_make_bulk): each block stages one tile of every input in shared
// memory with cp.async.bulk, then computes whole packs out of shared memory and stores them to out,
// which the head made pack-aligned. Copies start at EW_PLAN_BULK_ALIGN-aligned addresses, so the
// inputs' phases relative to out cost only a byte permute in shared memory, not a second global
// load; the copy engine keeps a whole tile in flight without holding registers. Only GPUs of
// cc >= 9.0 have the copies: below, the kernel is empty and the policy never plans it. So it is where
// the toolkit's CCCL lacks the cuda::ptx calls (CUDA 12.4: EW_HAS_BULK_COPY_CALLS is 0).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda/version> // CCCL_VERSION

#include "edges.cuh"
#include "pack.cuh"
#include "plan.h"

// cuda::ptx has cp_async_bulk, fence_proxy_async and mbarrier_init from CCCL 2.4.0 (CUDA 12.5) on;
// CCCL 2.3 (CUDA 12.4) has only mbarrier_arrive_expect_tx and mbarrier_try_wait_parity. CMake made the
// same verdict from the same headers (cmake/toolkit.cmake) for the host's policy (src/policy.c).
#if CCCL_VERSION >= 2004000
#define EW_CCCL_HAS_BULK_COPY_CALLS 1
#else
#define EW_CCCL_HAS_BULK_COPY_CALLS 0
#endif
#if !defined(EW_HAS_BULK_COPY_CALLS) || EW_HAS_BULK_COPY_CALLS != EW_CCCL_HAS_BULK_COPY_CALLS
#error "EW_HAS_BULK_COPY_CALLS (cmake/toolkit.cmake) disagrees with the CCCL_VERSION of the headers compiled"
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && EW_HAS_BULK_COPY_CALLS
#include <cuda/ptx>
#define EW_HAS_BULK_COPY 1
#else
#define EW_HAS_BULK_COPY 0
#endif

namespace ew {

// Where one input's part of the tile lies in shared memory.
struct StagedInput {
    const unsigned char *slot; // EW_PLAN_BULK_ALIGN-aligned
    int offset;                // bytes from slot to the tile's first element (< EW_PLAN_BULK_ALIGN)
};

// One staged input's slot: the tile, its head padding (< EW_PLAN_BULK_ALIGN), its tail rounding
// (< 16) and one more pack for the splice of the last one.
template <typename T> __host__ __device__ constexpr int staged_slot_bytes(int tile)
{
    if constexpr (std::is_same_v<T, NoInput>)
        return 0;
    else
        return (tile * static_cast<int>(sizeof(T)) + 2 * EW_PLAN_BULK_ALIGN + EW_PLAN_BULK_ALIGN - 1) /
               EW_PLAN_BULK_ALIGN * EW_PLAN_BULK_ALIGN;
}

// Packs from shared memory as one vector access (the compiler splits the spliced word packs otherwise).
template <typename Run> __device__ __forceinline__ Run load_staged(const unsigned char *p)
{
    using Vector = typename VectorOf<sizeof(Run)>::Type;
    const Vector v = *reinterpret_cast<const Vector *>(p); // one vector load, then the bytes
    return bits_as<Run>(v);
}

// The run of A packs at element e of the tile out of shared memory. Aligned runs are one vector
// load; others are spliced from the two aligned runs around them (runs of whole words) or read
// element by element.
template <typename T, int P, int A, typename Run>
__device__ __forceinline__ Run read_staged(const StagedInput &in, int e)
{
    static_assert(sizeof(Run) == sizeof(PackRun<T, P, A>));
    if constexpr (std::is_same_v<T, NoInput>) {
        return {};
    } else {
        constexpr int kRunBytes = sizeof(Run);
        // e is a whole number of runs: the shift is the input's alone, the same in every thread.
        const int shift = in.offset & (kRunBytes - 1);
        const unsigned char *aligned = in.slot + (in.offset - shift) + e * static_cast<int>(sizeof(T));
        if (shift == 0)
            return load_staged<Run>(aligned);
        if constexpr (kRunBytes % 4 == 0) {
            using Words = WordPack<kRunBytes / 4>;
            return splice_words<Run, T>(load_staged<Words>(aligned), load_staged<Words>(aligned + kRunBytes),
                                        shift);
        } else {
            Run result;
            auto *bytes = reinterpret_cast<unsigned char *>(&result);
#pragma unroll
            for (int k = 0; k < P * A; ++k)
                memcpy(bytes + k * sizeof(T), aligned + shift + k * sizeof(T), sizeof(T));
            return result;
        }
    }
}

template <typename T> __device__ __forceinline__ T read_staged_element(const StagedInput &in, int e)
{
    if constexpr (std::is_same_v<T, NoInput>) {
        return {};
    } else {
        T x;
        memcpy(&x, in.slot + in.offset + e * static_cast<int>(sizeof(T)), sizeof(T));
        return x;
    }
}

// How one input's tile reaches its slot. The slot holds the bytes from `first` rounded down to
// EW_PLAN_BULK_ALIGN. Inner tiles take that whole window (rounded up to 16 bytes) in one copy. Edge
// tiles, whose window would reach outside [begin, end) (nothing outside the caller's range is ever
// read), copy only the 16-byte granules inside the tile, and their threads the few elements around.
struct StagingCopy {
    const unsigned char *from; // 16-byte aligned
    int to;                    // bytes into the slot (16-byte aligned)
    uint32_t bytes;            // a multiple of 16; 0: nothing for the copy engine
    int before, after;         // edge tiles: elements at the start and end left to the threads
};

template <typename T>
__device__ __forceinline__ StagingCopy plan_staging(const T *begin, const T *end, const T *first, int count,
                                                    int *offset)
{
    StagingCopy copy{};
    if constexpr (!std::is_same_v<T, NoInput>) {
        const uintptr_t start = reinterpret_cast<uintptr_t>(first);
        const uintptr_t stop = start + static_cast<uintptr_t>(count) * sizeof(T);
        const uintptr_t window = start & ~static_cast<uintptr_t>(EW_PLAN_BULK_ALIGN - 1);
        *offset = static_cast<int>(start - window);
        const uintptr_t window_end = (stop + 15) & ~static_cast<uintptr_t>(15);
        if (window >= reinterpret_cast<uintptr_t>(begin) && window_end <= reinterpret_cast<uintptr_t>(end)) {
            copy.from = reinterpret_cast<const unsigned char *>(window);
            copy.bytes = static_cast<uint32_t>(window_end - window);
            return copy;
        }
        const uintptr_t inner = (start + 15) & ~static_cast<uintptr_t>(15);
        const uintptr_t inner_end = stop & ~static_cast<uintptr_t>(15);
        if (inner_end <= inner) { // no whole granule: the threads take it all
            copy.before = count;
            return copy;
        }
        copy.from = reinterpret_cast<const unsigned char *>(inner);
        copy.to = static_cast<int>(inner - window);
        copy.bytes = static_cast<uint32_t>(inner_end - inner);
        copy.before = static_cast<int>((inner - start) / sizeof(T));
        copy.after = static_cast<int>((stop - inner_end) / sizeof(T));
    }
    return copy;
}

// The elements of an edge tile the copy engine leaves.
template <typename T>
__device__ __forceinline__ void stage_by_threads(const T *first, int count, const StagingCopy &copy,
                                                 const StagedInput &in)
{
    if constexpr (!std::is_same_v<T, NoInput>) {
        unsigned char *slot = const_cast<unsigned char *>(in.slot) + in.offset;
        const int before = copy.before;
        const int after = copy.after;
        for (int k = threadIdx.x; k < before + after; k += blockDim.x) {
            const int e = k < before ? k : count - after + (k - before);
            memcpy(slot + e * sizeof(T), first + e, sizeof(T));
        }
    }
}

struct BulkPlan {
    int64_t n, head;
    int tile_packs;
};

// The head is done one by one in an extra block, the grid's last, as the direct kernel's edges are;
// the tiles end with n, so there is no tail.
__host__ __device__ __forceinline__ unsigned edge_blocks(const BulkPlan &plan) { return plan.head > 0; }

template <typename F, int P>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS)
    bulk_kernel(F f, BulkPlan plan, typename F::Out *out, const typename F::In1 *__restrict__ a,
                const typename F::In2 *__restrict__ b)
{
#if EW_HAS_BULK_COPY
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    extern __shared__ __align__(EW_PLAN_BULK_ALIGN) unsigned char shared[];

    // Everything up to the copies depends on the parameters only, not on memory the stream's previous
    // kernel writes: it runs before the dependent launch's wait, which stands right before the first
    // read of the inputs (the copies, the edge block's loads).
    const int tile = EW_PLAN_BLOCK_THREADS * plan.tile_packs * P;
    const int64_t first = plan.head + static_cast<int64_t>(blockIdx.x) * tile;
    const int64_t left = plan.n - first;
    const int count = left < tile ? static_cast<int>(left) : tile;

    if (edge_blocks(plan) && blockIdx.x == gridDim.x - 1) {
        follow_previous_grid();
        edge_elements(f, out, a, b, plan.head, [](int64_t j) { return j; });
        return;
    }

    StagedInput staged_a{shared, 0}, staged_b{shared + staged_slot_bytes<In1>(tile), 0};
    const StagingCopy copy_a = plan_staging(a, a + plan.n, a + first, count, &staged_a.offset);
    StagingCopy copy_b{};
    if constexpr (!std::is_same_v<In2, NoInput>)
        copy_b = plan_staging(b, b + plan.n, b + first, count, &staged_b.offset);

    namespace ptx = cuda::ptx;
    __shared__ uint64_t copies_done;
    const uint32_t engine_bytes = copy_a.bytes + copy_b.bytes;
    // Thread 0 sets up the barrier and, once the previous kernel is done, sends the copies.
    const bool sends_copies = engine_bytes != 0 && threadIdx.x == 0;
    if (sends_copies) {
        ptx::mbarrier_init(&copies_done, 1);
        ptx::fence_proxy_async(ptx::space_shared);
    }
    follow_previous_grid();
    if (sends_copies) {
        if (copy_a.bytes != 0)
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global,
                               const_cast<unsigned char *>(staged_a.slot) + copy_a.to, copy_a.from,
                               copy_a.bytes, &copies_done);
        if (copy_b.bytes != 0)
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global,
                               const_cast<unsigned char *>(staged_b.slot) + copy_b.to, copy_b.from,
                               copy_b.bytes, &copies_done);
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &copies_done,
                                       engine_bytes);
    }
    stage_by_threads(a + first, count, copy_a, staged_a);
    if constexpr (!std::is_same_v<In2, NoInput>)
        stage_by_threads(b + first, count, copy_b, staged_b);
    if constexpr (kFillsTable<F, P>)
        F::fill_table(); // while the copies fly
    __syncthreads();     // the threads' elements and the table are in place, the barrier initialised

    // A packs per access; the plan makes tile_packs a multiple of A and aligns out to the access.
    constexpr int A = EW_PLAN_ACCESS_PACKS(kWidestElement<F>);
    using OutRun = RunOf<F, P, A, typename F::Out>;
    using In1Run = RunOf<F, P, A, In1>;
    using In2Run = RunOf<F, P, A, In2>;
    auto *out_tile = out + first;
    for (int u = 0; u < plan.tile_packs / A; ++u) {
        // The wait stands at the first read of the tile, inside the loop: the compiler then works out
        // the run's addresses before it, while the copies fly, where a wait before the loop kept that
        // work after it (grids of one wave: +1 to +4.6 %).
        if (u == 0 && engine_bytes != 0)
            while (!ptx::mbarrier_try_wait_parity(&copies_done, 0))
                ;
        const int e = (u * EW_PLAN_BLOCK_THREADS + static_cast<int>(threadIdx.x)) * P * A;
        if (e + P * A <= count) {
            const In1Run x = read_staged<In1, P, A, In1Run>(staged_a, e);
            const In2Run y = read_staged<In2, P, A, In2Run>(staged_b, e);
            OutRun result;
            apply_run<F, P, A>(f, result, x, y);
            store_pack(reinterpret_cast<OutRun *>(out_tile + e), result);
        } else {
#pragma unroll 1
            for (int k = e; k < count; ++k)
                out_tile[k] =
                    apply(f, read_staged_element<In1>(staged_a, k), read_staged_element<In2>(staged_b, k));
        }
    }
#endif
}

} // namespace ew
