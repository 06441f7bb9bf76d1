// SPDX-License-Identifier: Apache-2.0
// The tensor-list kernel: each block runs one chunk of one row of a descriptor block (src/plan/batched.h),
// which travels as a kernel parameter. A row whose pointers share a phase runs as the direct kernel's
// aligned body: its head element by element, then whole runs of packs (A packs an access), the tail
// element by element; a row at other phases runs element by element.
#pragma once

#include "device/dependent.cuh"
#include "device/direct.cuh"
#include "device/edges.cuh"
#include "device/pack.cuh"
#include "device/reduce.cuh"
#include "plan/batched.h"

namespace ew {

// The descriptor block as the kernel takes it: src/plan/batched.h's layout at Bytes.
template <int Bytes> struct alignas(8) BatchedBlock {
    uint32_t rows, chunk, blocks, reserved;
    unsigned char data[Bytes - EW_BATCHED_HEADER];
};
static_assert(sizeof(BatchedBlock<EW_BATCHED_LARGE_BLOCK>) == sizeof(ew_batched_desc_t));

// A row's columns: F's arrays (out, or each output of several), its inputs, then the entry's own
// parameters in device memory, for run-time compiled ops of parameters (F::kParams doubles; NULL: the
// functor's own) and for the scaled casts (F::scale, the entry's float), then, for a functor that
// reduces, the entry's scalar, into which the row's blocks commit.
template <typename T> inline constexpr int kPresent = kSame<T, NoInput> ? 0 : 1;
template <typename T> struct ArraysOf {
    static constexpr int kCount = 1;
};
template <typename O0, typename O1, typename O2, typename O3> struct ArraysOf<Outputs<O0, O1, O2, O3>> {
    static constexpr int kCount = 2 + kPresent<O2> + kPresent<O3>;
};
template <typename F, typename = void> inline constexpr int kEntryParams = 0;
template <typename F>
inline constexpr int kEntryParams<F, typename VoidOf<decltype(F::kParams)>::Type> = F::kParams > 0;
template <typename F, typename = void> inline constexpr int kEntryScale = 0;
template <typename F> inline constexpr int kEntryScale<F, typename VoidOf<decltype(F::scale)>::Type> = 1;
template <typename F> inline constexpr int kBatchedArrays = ArraysOf<typename F::Out>::kCount;
template <typename F>
inline constexpr int kBatchedPointers = kBatchedArrays<F> + 1 + kPresent<typename F::In2> + kPresent<In3<F>> +
                                        kPresent<In4<F>> + kEntryParams<F> + kEntryScale<F> +
                                        (kReduces<F> ? 1 : 0);

__device__ __forceinline__ int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }

template <typename T> __device__ __forceinline__ unsigned element_phase(const T *p, unsigned run)
{
    return static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) / kStorageSize<T> % run);
}

// Whether every pointer of an operand (none for NoInput, each output of several) is at `phase`.
template <typename T> __device__ __forceinline__ bool at_phase(const T *p, unsigned run, unsigned phase)
{
    return kSame<T, NoInput> || element_phase(p, run) == phase;
}
template <typename O0, typename O1, typename O2, typename O3>
__device__ __forceinline__ bool at_phase(const OutputPointers<O0, O1, O2, O3> &out, unsigned run,
                                         unsigned phase)
{
    return at_phase(out.p0, run, phase) && at_phase(out.p1, run, phase) && at_phase(out.p2, run, phase) &&
           at_phase(out.p3, run, phase);
}

// out, or the first output of several.
template <typename T> __device__ __forceinline__ T *first_output(T *out) { return out; }
template <typename O0, typename O1, typename O2, typename O3>
__device__ __forceinline__ O0 *first_output(const OutputPointers<O0, O1, O2, O3> &out)
{
    return out.p0;
}

// The pointers of one row, read from the block's columns.
template <typename F, int Capacity> struct BatchedRow {
    const uint64_t *column; // the first pointer column: column j of the row at column[j * Capacity]

    template <typename T> __device__ __forceinline__ T *at(int j) const
    {
        if constexpr (kSame<T, NoInput>)
            return nullptr;
        else
            return reinterpret_cast<T *>(column[j * Capacity]);
    }
    __device__ __forceinline__ OutPointer<F> out() const;
    template <int Input, typename T> __device__ __forceinline__ const T *input() const
    {
        return at<T>(kBatchedArrays<F> + Input);
    }
    template <typename T> __device__ __forceinline__ const T *params() const
    {
        return at<const T>(kBatchedPointers<F> - 1 - (kReduces<F> ? 1 : 0));
    }
    template <typename T> __device__ __forceinline__ T *scalar() const
    {
        return at<T>(kBatchedPointers<F> - 1);
    }
};

// out's pointers from a row's first columns: one, or each output's of several.
template <typename Pointer> struct OutColumns;
template <typename T> struct OutColumns<T *> {
    template <typename Row> __device__ __forceinline__ static T *read(const Row &row)
    {
        return row.template at<T>(0);
    }
};
template <typename O0, typename O1, typename O2, typename O3>
struct OutColumns<OutputPointers<O0, O1, O2, O3>> {
    template <typename Row>
    __device__ __forceinline__ static OutputPointers<O0, O1, O2, O3> read(const Row &row)
    {
        return {row.template at<O0>(0), row.template at<O1>(1), row.template at<O2>(2),
                row.template at<O3>(3)};
    }
};
template <typename F, int Capacity>
__device__ __forceinline__ OutPointer<F> BatchedRow<F, Capacity>::out() const
{
    return OutColumns<OutPointer<F>>::read(*this);
}

// Elements [begin, end) one by one, K independent loads in flight per thread (out may alias an input,
// so the compiler would not move a load above the store before it).
template <typename F, int K>
__device__ __forceinline__ void batched_elements(const F &f, OutPointer<F> out, const typename F::In1 *a,
                                                 const typename F::In2 *b, const In3<F> *c, const In4<F> *d,
                                                 int64_t begin, int64_t end)
{
    for (int64_t i0 = begin + threadIdx.x; i0 < end; i0 += EW_PLAN_BLOCK_THREADS * K) {
        typename F::In1 a_in[K];
        typename F::In2 b_in[K];
        In3<F> c_in[K];
        In4<F> d_in[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int64_t i = i0 + k * EW_PLAN_BLOCK_THREADS;
            if (i < end) {
                a_in[k] = a[i];
                b_in[k] = load(b, i);
                c_in[k] = load(c, i);
                d_in[k] = load(d, i);
            }
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int64_t i = i0 + k * EW_PLAN_BLOCK_THREADS;
            if (i < end)
                store(out, i, apply(f, a_in[k], b_in[k], c_in[k], d_in[k]));
        }
    }
}

// The row block b runs: the last whose first block is <= b.
template <typename F, int Bytes>
__device__ __forceinline__ uint32_t batched_row(const BatchedBlock<Bytes> &block)
{
    constexpr int kCapacity = EW_BATCHED_CAPACITY(Bytes, kBatchedPointers<F>);
    const auto *first = reinterpret_cast<const uint32_t *>(block.data + EW_BATCHED_FIRST_AT(kCapacity));
    uint32_t lo = 0, hi = block.rows; // first[lo] <= blockIdx.x < first[hi], first[rows] read as infinite
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (first[mid] <= blockIdx.x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

template <typename F, int Bytes>
__device__ __forceinline__ BatchedRow<F, EW_BATCHED_CAPACITY(Bytes, kBatchedPointers<F>)>
batched_columns(const BatchedBlock<Bytes> &block, uint32_t row)
{
    constexpr int kCapacity = EW_BATCHED_CAPACITY(Bytes, kBatchedPointers<F>);
    return {reinterpret_cast<const uint64_t *>(block.data + EW_BATCHED_POINTER_AT(kCapacity, 0)) + row};
}

// Block b runs chunk c of its row. Chunks of an aligned row start at multiples of the chunk past the
// row's head (the first chunk takes the head too), so every chunk's body is whole aligned runs; an
// unaligned row's chunks are plain multiples of the chunk.
template <typename F, int P, int Bytes>
__device__ __forceinline__ void batched_body(const F &f, const BatchedBlock<Bytes> &block, uint32_t row)
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

    const auto *lengths = reinterpret_cast<const uint32_t *>(block.data + EW_BATCHED_LENGTH_AT(kCapacity));
    const auto *first = reinterpret_cast<const uint32_t *>(block.data + EW_BATCHED_FIRST_AT(kCapacity));
    const int64_t n = lengths[row], chunk = block.chunk, c = blockIdx.x - first[row];
    const auto columns = batched_columns<F>(block, row);
    const OutPointer<F> out = columns.out();
    const In1 *a = columns.template input<0, In1>();
    const In2 *b = columns.template input<1, In2>();
    const In3<F> *c3 = columns.template input<2, In3<F>>();
    const In4<F> *d = columns.template input<3, In4<F>>();
    const unsigned phase = element_phase(first_output(out), kRun);
    const bool aligned = at_phase(out, kRun, phase) && at_phase(a, kRun, phase) && at_phase(b, kRun, phase) &&
                         at_phase(c3, kRun, phase) && at_phase(d, kRun, phase);
    follow_previous_grid();

    if (!aligned) {
        const int64_t begin = c * chunk;
        batched_elements<F, 8>(f, out, a, b, c3, d, begin, min64(n, begin + chunk));
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
    const PackReader<In1, P, false, A, RunOf<F, P, A, In1>> read_a{a + body, 0};
    const PackReader<In2, P, false, A, RunOf<F, P, A, In2>> read_b{input_body(b, body, 0), 0};
    const PackReader<In3<F>, P, false, A, RunOf<F, P, A, In3<F>>> read_c{input_body(c3, body, 0), 0};
    const PackReader<In4<F>, P, false, A, RunOf<F, P, A, In4<F>>> read_d{input_body(d, body, 0), 0};
    const auto out_body = out_at(out, body);
    for (int64_t i0 = threadIdx.x; i0 < runs; i0 += EW_PLAN_BLOCK_THREADS * U) {
        RunOf<F, P, A, In1> a_in[U];
        RunOf<F, P, A, In2> b_in[U];
        RunOf<F, P, A, In3<F>> c_in[U];
        RunOf<F, P, A, In4<F>> d_in[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t i = i0 + u * EW_PLAN_BLOCK_THREADS;
            a_in[u] = read_a(i, runs);
            b_in[u] = read_b(i, runs);
            c_in[u] = read_c(i, runs);
            d_in[u] = read_d(i, runs);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t i = i0 + u * EW_PLAN_BLOCK_THREADS;
            if (i < runs) {
                OutRun result;
                apply_run<F, P, A>(f, result, a_in[u], b_in[u], c_in[u], d_in[u]);
                store_run(out_body, i, result);
            }
        }
    }
    // The head and the tail: fewer than kRun elements each.
    const int64_t head_elements = body - begin;
    edge_elements(
        f, out, a, b, head_elements + (end - body_end),
        [=](int64_t j) { return j < head_elements ? begin + j : body_end + (j - head_elements); }, c3, d);
}

// A functor of entry parameters runs each row with its entry's, where the launch gives them; they are
// read after the previous grid, which may have written them (a scale is read by the body, after it
// too). A functor that reduces commits each block's fold into its row's entry's scalar.
template <typename F, int P, int Bytes>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS, 1)
    batched_kernel(F f, const __grid_constant__ BatchedBlock<Bytes> block)
{
    static_assert(sizeof(F) + sizeof(block) <=
                  (Bytes == EW_BATCHED_LARGE_BLOCK ? EW_BATCHED_LARGE_PARAMS : EW_BATCHED_SMALL_PARAMS));
    const uint32_t row = batched_row<F>(block);
    if constexpr (kEntryParams<F> || kEntryScale<F> || kReduces<F>) {
        F g = f;
        const auto columns = batched_columns<F>(block, row);
        if constexpr (kEntryScale<F>)
            g.scale = columns.template params<float>();
        if constexpr (kEntryParams<F>) {
            const double *params = columns.template params<double>();
            if (params != nullptr) {
                follow_previous_grid();
#pragma unroll
                for (int k = 0; k < F::kParams; ++k)
                    g.p[k] = params[k];
            }
        }
        if constexpr (kReduces<F>)
            g.reduction.target = columns.template scalar<typename decltype(F::reduction)::Value>();
        reducing(g, [&](const F &h) { batched_body<F, P, Bytes>(h, block, row); });
    } else {
        reducing(f, [&](const F &g) { batched_body<F, P, Bytes>(g, block, row); });
    }
}

} // namespace ew
