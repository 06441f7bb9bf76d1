// The elementwise kernel, its launch function per pack width, and the table rows built from them.
#pragma once

#include <algorithm>
#include <utility>

#include "functors.cuh"
#include "rows.h"

namespace ew {

// P elements moved by one vector access (P * sizeof(T) <= 16 bytes).
template <typename T, int P> struct alignas(sizeof(T) * P) Pack {
    T v[P];
};
template <int P> struct Pack<NoInput, P> {
    NoInput v[P];
};

template <typename T, int P> __device__ __forceinline__ Pack<T, P> load(const Pack<T, P> *p, int64_t i)
{
    if constexpr (std::is_same_v<T, NoInput>)
        return {};
    else
        return p[i];
}
template <typename T> __device__ __forceinline__ T load(const T *p, int64_t i)
{
    if constexpr (std::is_same_v<T, NoInput>)
        return {};
    else
        return p[i];
}

template <typename F>
__device__ __forceinline__ typename F::Out apply(const F &f, typename F::In1 a, typename F::In2 b)
{
    if constexpr (std::is_same_v<typename F::In2, NoInput>)
        return f(a);
    else
        return f(a, b);
}

template <typename F, int P>
__device__ __forceinline__ void apply_pack(const F &f, Pack<typename F::Out, P> &out,
                                           const Pack<typename F::In1, P> &a, const Pack<typename F::In2, P> &b)
{
    if constexpr (P % 2 == 0 && F::kHasPair) {
#pragma unroll
        for (int i = 0; i < P; i += 2) {
            if constexpr (std::is_same_v<typename F::In2, NoInput>)
                f.pair(&out.v[i], &a.v[i]);
            else
                f.pair(&out.v[i], &a.v[i], &b.v[i]);
        }
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i)
            out.v[i] = apply(f, a.v[i], b.v[i]);
    }
}

template <typename F> inline constexpr size_t kWidestElement =
    std::max({kStorageSize<typename F::Out>, kStorageSize<typename F::In1>, kStorageSize<typename F::In2>});

// Elements [0, head) one by one, so that every pointer is pack-aligned after them; then whole
// packs, each thread loading `unroll` independent packs before computing any (bytes in flight);
// then the tail past the last whole pack, one by one, with the same functor.
template <typename F, int P, int Unroll>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS)
    elementwise_kernel(F f, int64_t n, int64_t head, typename F::Out *out,
                       const typename F::In1 *__restrict__ a, const typename F::In2 *__restrict__ b)
{
    using Out = typename F::Out;
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;

    if (thread < head)
        out[thread] = apply(f, a[thread], load(b, thread));

    const int64_t packs = (n - head) / P;
    auto *out_packs = reinterpret_cast<Pack<Out, P> *>(out + head);
    const auto *a_packs = reinterpret_cast<const Pack<In1, P> *>(a + head);
    const auto *b_packs = reinterpret_cast<const Pack<In2, P> *>(b + (std::is_same_v<In2, NoInput> ? 0 : head));
    for (int64_t first = thread; first < packs; first += threads * Unroll) {
        Pack<In1, P> a_in[Unroll];
        Pack<In2, P> b_in[Unroll];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t i = first + u * threads;
            if (i < packs) {
                a_in[u] = a_packs[i];
                b_in[u] = load(b_packs, i);
            }
        }
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t i = first + u * threads;
            if (i < packs) {
                Pack<Out, P> result;
                apply_pack(f, result, a_in[u], b_in[u]);
                out_packs[i] = result;
            }
        }
    }

    const int64_t tail = head + packs * P;
    if (thread < n - tail)
        out[tail + thread] = apply(f, a[tail + thread], load(b, tail + thread));
}

template <typename F, int P> cudaError_t launch(const ew_launch_args_t *args)
{
    constexpr int unroll = P * kWidestElement<F> >= EW_PLAN_MAX_PACK_BYTES
                               ? 1
                               : static_cast<int>(EW_PLAN_MAX_PACK_BYTES / (P * kWidestElement<F>));
    F f = F::make(*args);
    int64_t n = args->n, head = args->plan.head;
    auto *out = static_cast<typename F::Out *>(args->out);
    auto *a = static_cast<const typename F::In1 *>(args->in[0]);
    auto *b = static_cast<const typename F::In2 *>(args->in[1]);
    void *params[] = {&f, &n, &head, &out, &a, &b};
    return cudaLaunchKernel(reinterpret_cast<const void *>(&elementwise_kernel<F, P, unroll>),
                            dim3(args->plan.blocks), dim3(EW_PLAN_BLOCK_THREADS), params, 0, args->stream);
}

// One kernel per legal pack width; NULL past 16 bytes.
template <typename F> constexpr ew_launcher_t make_launcher()
{
    ew_launcher_t launcher{};
    if constexpr (F::kSupported) {
        launcher.by_pack[0] = &launch<F, 1>;
        launcher.by_pack[1] = &launch<F, 2>;
        if constexpr (4 * kWidestElement<F> <= EW_PLAN_MAX_PACK_BYTES)
            launcher.by_pack[2] = &launch<F, 4>;
        if constexpr (8 * kWidestElement<F> <= EW_PLAN_MAX_PACK_BYTES)
            launcher.by_pack[3] = &launch<F, 8>;
    }
    return launcher;
}

// Row of an op over dtypes, indexed by the dtype's enum value (0 stays empty).
template <template <typename> class Op, size_t... D> constexpr DispatchRow op_row(std::index_sequence<D...>)
{
    return DispatchRow{{ew_launcher_t{}, make_launcher<Op<TypeOf<static_cast<ew_dtype_t>(D + 1)>>>()...}};
}
template <template <typename> class Op> constexpr DispatchRow op_row()
{
    return op_row<Op>(std::make_index_sequence<EW_DTYPE_END - 1>{});
}

// Row of casts from one dtype, indexed by the target dtype.
template <ew_dtype_t From, size_t... D> constexpr DispatchRow cast_row(std::index_sequence<D...>)
{
    return DispatchRow{{ew_launcher_t{}, make_launcher<Cast<TypeOf<static_cast<ew_dtype_t>(D + 1)>, TypeOf<From>>>()...}};
}
template <ew_dtype_t From> constexpr DispatchRow cast_row()
{
    return cast_row<From>(std::make_index_sequence<EW_DTYPE_END - 1>{});
}

} // namespace ew
