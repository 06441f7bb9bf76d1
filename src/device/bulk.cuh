// SPDX-License-Identifier: Apache-2.0
// The bulk-copy kernel (ew_plan_make_bulk): each block stages one tile of every input in shared
// memory with cp.async.bulk, then computes whole packs out of shared memory and stores them to out,
// which the head made pack-aligned. Copies start at EW_PLAN_BULK_ALIGN-aligned addresses, so the
// inputs' phases relative to out cost only a byte permute in shared memory, not a second global
// load; the copy engine keeps a whole tile in flight without holding registers. Only GPUs of
// cc >= 9.0 have the copies: below, the kernel is empty and the policy never plans it. NVRTC compiles
// it too: run-time compiled ops of up to four inputs take it where the plan does (src/rtc/rtc.c).
#pragma once

#include "device/dependent.cuh"
#include "device/edges.cuh"
#include "device/pack.cuh"
#include "device/reduce.cuh"
#include "plan/plan.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define EW_HAS_BULK_COPY 1
#else
#define EW_HAS_BULK_COPY 0
#endif

namespace ew {

#if EW_HAS_BULK_COPY
// The copy engine's instructions as PTX (the same CCCL's cuda::ptx emits), written out here so that
// NVRTC, which has no CCCL, compiles this file as nvcc does: the bulk copy into shared memory that
// completes on an mbarrier, and the barrier's setup, arrival and wait.
__device__ __forceinline__ uint32_t shared_address(const void *p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void barrier_init(uint64_t *barrier, uint32_t arrivals)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(shared_address(barrier)), "r"(arrivals) : "memory");
}

// Makes the barrier's initialisation visible to the copy engine (the async proxy).
__device__ __forceinline__ void fence_barrier_init() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ __forceinline__ void bulk_copy(void *to, const void *from, uint32_t bytes, uint64_t *barrier)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_address(to)),
                 "l"(static_cast<uint64_t>(__cvta_generic_to_global(from))), "r"(bytes),
                 "r"(shared_address(barrier))
                 : "memory");
}

// Thread 0's arrival, telling the barrier how many bytes the copies bring.
__device__ __forceinline__ void arrive_expecting(uint64_t *barrier, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(barrier)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ bool barrier_try_wait(uint64_t *barrier, uint32_t parity)
{
    uint32_t done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.b32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(shared_address(barrier)), "r"(parity)
                 : "memory");
    return done != 0;
}
#endif

// Where one input's part of the tile lies in shared memory.
struct StagedInput {
    const unsigned char *slot; // EW_PLAN_BULK_ALIGN-aligned
    int offset;                // bytes from slot to the tile's first element (< EW_PLAN_BULK_ALIGN)
};

// One staged input's slot (EW_PLAN_BULK_SLOT_BYTES); none for an input the functor lacks.
template <typename T> __host__ __device__ constexpr int staged_slot_bytes(int tile)
{
    if constexpr (kSame<T, NoInput>)
        return 0;
    else
        return EW_PLAN_BULK_SLOT_BYTES(tile, static_cast<int>(sizeof(T)));
}

// The shared memory of a tile of F's inputs, one slot after another.
template <typename F> __host__ __device__ constexpr int bulk_shared_bytes(int tile)
{
    return staged_slot_bytes<typename F::In1>(tile) + staged_slot_bytes<typename F::In2>(tile) +
           staged_slot_bytes<In3<F>>(tile) + staged_slot_bytes<In4<F>>(tile);
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
    if constexpr (kSame<T, NoInput>) {
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
    if constexpr (kSame<T, NoInput>) {
        return {};
    } else {
        T x;
        memcpy(&x, in.slot + in.offset + e * static_cast<int>(sizeof(T)), sizeof(T));
        return x;
    }
}

// How one input's tile reaches its slot. The slot holds the bytes from the tile's first element
// rounded down to EW_PLAN_BULK_ALIGN. Inner tiles take that whole window (rounded up to 16 bytes) in
// one copy. Edge tiles, whose window would reach outside the input's n elements (nothing outside the
// caller's range is ever read), copy only the 16-byte granules inside the tile, and their threads the
// few elements around. An input the functor lacks has nothing to copy.
struct StagingCopy {
    const unsigned char *from; // 16-byte aligned
    int to;                    // bytes into the slot (16-byte aligned)
    uint32_t bytes;            // a multiple of 16; 0: nothing for the copy engine
    int before, after;         // edge tiles: elements at the start and end left to the threads
};

template <typename T>
__device__ __forceinline__ StagingCopy plan_staging(const T *input, int64_t n, int64_t first, int count,
                                                    int *offset)
{
    StagingCopy copy{};
    if constexpr (!kSame<T, NoInput>) {
        const uintptr_t begin = reinterpret_cast<uintptr_t>(input);
        const uintptr_t end = reinterpret_cast<uintptr_t>(input + n);
        const uintptr_t start = reinterpret_cast<uintptr_t>(input + first);
        const uintptr_t stop = start + static_cast<uintptr_t>(count) * sizeof(T);
        const uintptr_t window = start & ~static_cast<uintptr_t>(EW_PLAN_BULK_ALIGN - 1);
        *offset = static_cast<int>(start - window);
        const uintptr_t window_end = (stop + 15) & ~static_cast<uintptr_t>(15);
        if (window >= begin && window_end <= end) {
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
__device__ __forceinline__ void stage_by_threads(const T *input, int64_t first, int count, const StagingCopy &copy,
                                                 const StagedInput &in)
{
    if constexpr (!kSame<T, NoInput>) {
        unsigned char *slot = const_cast<unsigned char *>(in.slot) + in.offset;
        const T *tile = input + first;
        const int before = copy.before;
        const int after = copy.after;
        for (int k = threadIdx.x; k < before + after; k += blockDim.x) {
            const int e = k < before ? k : count - after + (k - before);
            memcpy(slot + e * sizeof(T), tile + e, sizeof(T));
        }
    }
}

// The tiles and the head (src/plan/plan.h, which the launch fills): the head is done one by one in an extra
// block, the grid's last, as the direct kernel's edges are; the tiles end with n, so there is no tail.
using BulkPlan = ew_bulk_plan_t;

// One tile of every input F has (one or two for the catalogue, up to four for run-time compiled ops).
template <typename F, int P>
__device__ __forceinline__ void
bulk_body(const F &f, const BulkPlan &plan, OutPointer<F> out, const typename F::In1 *__restrict__ a,
          const typename F::In2 *__restrict__ b, const In3<F> *__restrict__ c, const In4<F> *__restrict__ d)
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

    if (ew_bulk_edge_blocks(&plan) && blockIdx.x == gridDim.x - 1) {
        follow_previous_grid();
        edge_elements(f, out, a, b, plan.head, [](int64_t j) { return j; }, c, d);
        return;
    }

    // The inputs' slots one after another; an input F lacks has none and copies nothing.
    constexpr int kInputs = 4;
    StagedInput staged[kInputs];
    staged[0] = {shared, 0};
    staged[1] = {staged[0].slot + staged_slot_bytes<In1>(tile), 0};
    staged[2] = {staged[1].slot + staged_slot_bytes<In2>(tile), 0};
    staged[3] = {staged[2].slot + staged_slot_bytes<In3<F>>(tile), 0};
    const StagingCopy copies[kInputs] = {plan_staging(a, plan.n, first, count, &staged[0].offset),
                                         plan_staging(b, plan.n, first, count, &staged[1].offset),
                                         plan_staging(c, plan.n, first, count, &staged[2].offset),
                                         plan_staging(d, plan.n, first, count, &staged[3].offset)};

    __shared__ uint64_t copies_done;
    const uint32_t engine_bytes = copies[0].bytes + copies[1].bytes + copies[2].bytes + copies[3].bytes;
    // Thread 0 sets up the barrier and, once the previous kernel is done, sends the copies.
    const bool sends_copies = engine_bytes != 0 && threadIdx.x == 0;
    if (sends_copies) {
        barrier_init(&copies_done, 1);
        fence_barrier_init();
    }
    follow_previous_grid();
    if (sends_copies) {
#pragma unroll
        for (int k = 0; k < kInputs; ++k)
            if (copies[k].bytes != 0)
                bulk_copy(const_cast<unsigned char *>(staged[k].slot) + copies[k].to, copies[k].from, copies[k].bytes,
                          &copies_done);
        arrive_expecting(&copies_done, engine_bytes);
    }
    stage_by_threads(a, first, count, copies[0], staged[0]);
    stage_by_threads(b, first, count, copies[1], staged[1]);
    stage_by_threads(c, first, count, copies[2], staged[2]);
    stage_by_threads(d, first, count, copies[3], staged[3]);
    if constexpr (kFillsTable<F, P>)
        F::fill_table(); // while the copies fly
    __syncthreads();     // the threads' elements and the table are in place, the barrier initialised

    // A packs per access; the plan makes tile_packs a multiple of A and aligns out to the access.
    constexpr int A = EW_PLAN_ACCESS_PACKS(kWidestElement<F>);
    using OutRun = RunOf<F, P, A, typename F::Out>;
    using In1Run = RunOf<F, P, A, In1>;
    using In2Run = RunOf<F, P, A, In2>;
    using In3Run = RunOf<F, P, A, In3<F>>;
    using In4Run = RunOf<F, P, A, In4<F>>;
    const auto out_tile = out_at(out, first);
    for (int u = 0; u < plan.tile_packs / A; ++u) {
        // The wait stands at the first read of the tile, inside the loop: the compiler then works out
        // the run's addresses before it, while the copies fly, where a wait before the loop kept that
        // work after it (grids of one wave: +1 to +4.6 %).
        if (u == 0 && engine_bytes != 0)
            while (!barrier_try_wait(&copies_done, 0))
                ;
        const int e = (u * EW_PLAN_BLOCK_THREADS + static_cast<int>(threadIdx.x)) * P * A;
        if (e + P * A <= count) {
            OutRun result;
            apply_run<F, P, A>(f, result, read_staged<In1, P, A, In1Run>(staged[0], e),
                               read_staged<In2, P, A, In2Run>(staged[1], e),
                               read_staged<In3<F>, P, A, In3Run>(staged[2], e),
                               read_staged<In4<F>, P, A, In4Run>(staged[3], e));
            store_run(out_at(out_tile, e), 0, result);
        } else {
#pragma unroll 1
            for (int k = e; k < count; ++k)
                store(out_tile, k,
                      apply(f, read_staged_element<In1>(staged[0], k), read_staged_element<In2>(staged[1], k),
                            read_staged_element<In3<F>>(staged[2], k), read_staged_element<In4<F>>(staged[3], k)));
        }
    }
#endif
}

template <typename F, int P>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS)
    bulk_kernel(F f, BulkPlan plan, OutPointer<F> out, const typename F::In1 *__restrict__ a,
                const typename F::In2 *__restrict__ b, const In3<F> *__restrict__ c,
                const In4<F> *__restrict__ d)
{
    reducing(f, [&](const F &g) { bulk_body<F, P>(g, plan, out, a, b, c, d); });
}

} // namespace ew
