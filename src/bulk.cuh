// The bulk-copy kernel (ew_plan_make_bulk): each block stages one tile of every input in shared
// memory with cp.async.bulk, then computes whole packs out of shared memory and stores them to out,
// which the head made pack-aligned. Copies start at EW_PLAN_BULK_ALIGN-aligned addresses, so the
// inputs' phases relative to out cost only a byte permute in shared memory, not a second global
// load; the copy engine keeps a whole tile in flight without holding registers.
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
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

// Pack e / P of the tile out of shared memory. Aligned packs are one vector load; others are
// spliced from the two aligned packs around them (packs of whole words) or read element by element.
template <typename T, int P> __device__ __forceinline__ Pack<T, P> read_staged(const StagedInput &in, int e)
{
    if constexpr (std::is_same_v<T, NoInput>) {
        return {};
    } else {
        constexpr int kPackBytes = sizeof(Pack<T, P>);
        const int byte = in.offset + e * static_cast<int>(sizeof(T));
        const int shift = byte & (kPackBytes - 1);
        const unsigned char *aligned = in.slot + (byte - shift);
        if (shift == 0)
            return *reinterpret_cast<const Pack<T, P> *>(aligned);
        if constexpr (kPackBytes % 4 == 0) {
            constexpr int kWords = kPackBytes / 4;
            const auto *words = reinterpret_cast<const WordPack<kWords> *>(aligned);
            return splice_pack<T, P>(words[0], words[1], shift);
        } else {
            Pack<T, P> result;
#pragma unroll
            for (int k = 0; k < P; ++k)
                memcpy(&result.v[k], aligned + shift + k * sizeof(T), sizeof(T));
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

// The input's tile starts at `first`, `count` elements long; the slot gets the bytes from `first`
// rounded down to EW_PLAN_BULK_ALIGN. Returns the copy's byte count, 0 when that window would reach
// outside [begin, end) (the caller's range: nothing outside it is ever read) or there is no input.
template <typename T>
__device__ __forceinline__ uint32_t staged_window(const T *begin, const T *end, const T *first, int count,
                                                  const unsigned char **from, int *offset)
{
    if constexpr (std::is_same_v<T, NoInput>) {
        return 0;
    } else {
        const uintptr_t start = reinterpret_cast<uintptr_t>(first);
        const uintptr_t aligned = start & ~static_cast<uintptr_t>(EW_PLAN_BULK_ALIGN - 1);
        *offset = static_cast<int>(start - aligned);
        *from = reinterpret_cast<const unsigned char *>(aligned);
        const uintptr_t bytes = (start - aligned + count * sizeof(T) + 15) & ~static_cast<uintptr_t>(15);
        const bool inside = aligned >= reinterpret_cast<uintptr_t>(begin) &&
                            aligned + bytes <= reinterpret_cast<uintptr_t>(end);
        return inside ? static_cast<uint32_t>(bytes) : 0;
    }
}

// Edge tiles, whose aligned window would leave the caller's range, and GPUs without bulk copies:
// the block copies the tile element by element to the same place in the slot.
template <typename T>
__device__ __forceinline__ void stage_by_threads(const T *first, int count, const StagedInput &in)
{
    if constexpr (!std::is_same_v<T, NoInput>) {
        for (int k = threadIdx.x; k < count; k += blockDim.x)
            memcpy(const_cast<unsigned char *>(in.slot) + in.offset + k * sizeof(T), first + k, sizeof(T));
    }
}

struct BulkPlan {
    int64_t n, head;
    int tile_packs;
};

template <typename F, int P>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS)
    bulk_kernel(F f, BulkPlan plan, typename F::Out *out, const typename F::In1 *__restrict__ a,
                const typename F::In2 *__restrict__ b)
{
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    extern __shared__ __align__(EW_PLAN_BULK_ALIGN) unsigned char shared[];

    const int tile = EW_PLAN_BLOCK_THREADS * plan.tile_packs * P;
    const int64_t first = plan.head + static_cast<int64_t>(blockIdx.x) * tile;
    const int64_t left = plan.n - first;
    const int count = left < tile ? static_cast<int>(left) : tile;

    if (blockIdx.x == 0 && threadIdx.x < plan.head)
        out[threadIdx.x] = apply(f, a[threadIdx.x], load(b, threadIdx.x));
    if (count <= 0)
        return;

    StagedInput staged_a{shared, 0}, staged_b{shared + staged_slot_bytes<In1>(tile), 0};
    const unsigned char *from_a = nullptr, *from_b = nullptr;
    const uint32_t bytes_a = staged_window(a, a + plan.n, a + first, count, &from_a, &staged_a.offset);
    uint32_t bytes_b = 0;
    if constexpr (!std::is_same_v<In2, NoInput>)
        bytes_b = staged_window(b, b + plan.n, b + first, count, &from_b, &staged_b.offset);
    const bool by_copy_engine =
        EW_HAS_BULK_COPY && bytes_a != 0 && (std::is_same_v<In2, NoInput> || bytes_b != 0);

    if (by_copy_engine) {
#if EW_HAS_BULK_COPY
        namespace ptx = cuda::ptx;
        __shared__ uint64_t copies_done;
        if (threadIdx.x == 0) {
            ptx::mbarrier_init(&copies_done, 1);
            ptx::fence_proxy_async(ptx::space_shared);
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, const_cast<unsigned char *>(staged_a.slot),
                               from_a, bytes_a, &copies_done);
            if constexpr (!std::is_same_v<In2, NoInput>)
                ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global,
                                   const_cast<unsigned char *>(staged_b.slot), from_b, bytes_b, &copies_done);
            ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &copies_done,
                                           bytes_a + bytes_b);
        }
        __syncthreads(); // the barrier is initialised before anyone waits on it
        while (!ptx::mbarrier_try_wait_parity(&copies_done, 0))
            ;
#endif
    } else {
        stage_by_threads(a + first, count, staged_a);
        if constexpr (!std::is_same_v<In2, NoInput>)
            stage_by_threads(b + first, count, staged_b);
        __syncthreads();
    }

    auto *out_tile = out + first;
    for (int u = 0; u < plan.tile_packs; ++u) {
        const int e = (u * EW_PLAN_BLOCK_THREADS + static_cast<int>(threadIdx.x)) * P;
        if (e + P <= count) {
            Pack<typename F::Out, P> result;
            apply_pack(f, result, read_staged<In1, P>(staged_a, e), read_staged<In2, P>(staged_b, e));
            store_pack(reinterpret_cast<Pack<typename F::Out, P> *>(out_tile + e), result);
        } else {
            for (int k = e; k < count; ++k)
                out_tile[k] =
                    apply(f, read_staged_element<In1>(staged_a, k), read_staged_element<In2>(staged_b, k));
        }
    }
}

template <typename F, int P> cudaError_t launch_bulk(const ew_launch_args_t *args)
{
    F f = F::make(*args);
    const ew_plan_t &plan = args->plan;
    BulkPlan body{args->n, plan.head, plan.tile_packs};
    const int tile = EW_PLAN_BLOCK_THREADS * plan.tile_packs * P;
    const size_t shared_bytes =
        staged_slot_bytes<typename F::In1>(tile) + staged_slot_bytes<typename F::In2>(tile);
    auto *out = static_cast<typename F::Out *>(args->out);
    auto *a = static_cast<const typename F::In1 *>(args->in[0]);
    auto *b = static_cast<const typename F::In2 *>(args->in[1]);
    void *params[] = {&f, &body, &out, &a, &b};
    return cudaLaunchKernel(reinterpret_cast<const void *>(&bulk_kernel<F, P>), dim3(plan.blocks),
                            dim3(EW_PLAN_BLOCK_THREADS), params, shared_bytes, args->stream);
}

} // namespace ew
