// SPDX-License-Identifier: Apache-2.0
// The strided kernels, over a coalesced layout and its plan (src/plan/layout.h): the rows kernel takes out dense
// over one or two dimensions in whole packs and reads each input whole (by bulk copies on sm_90 and later),
// as a scalar or along the row; the gather kernel walks out's flat index in packs (whole aligned packs where
// out is dense, and where an operand's pack lies along one of its rows) and reads each input as its access
// says; the tiled kernel gives each thread a block of elements over dimensions 0 and tile_dim and transposes
// it in registers, so that an input transposed against out is read along its own contiguous dimension.
// Offsets are 64-bit and elements of each operand's own type; the functors are the flat calls'. Each kernel
// is a body and a __global__ wrapper: NVRTC compiles the bodies too, for run-time compiled ops of up to four
// inputs (src/rtc/rtc.c).
#pragma once

#include "device/bulk.cuh"
#include "device/dependent.cuh"
#include "device/edges.cuh"
#include "plan/layout.h"
#include "device/pack.cuh"
#include "device/reduce.cuh"

namespace ew {

__device__ __forceinline__ uint64_t divide(const ew_divider_t &d, uint64_t n)
{
    return (__umul64hi(n, d.magic) + n) >> d.shift;
}

// Operands of F: out and the inputs it has.
template <typename F>
inline constexpr int kOperands = 2 + !kSame<typename F::In2, NoInput> + !kSame<In3<F>, NoInput> +
                                 !kSame<In4<F>, NoInput>;

// The arrays F writes (several: run-time compiled ops of up to EW_PLAN_MAX_OUTPUTS), and the layout's
// operand of output J: out (J = 0) first, the others after the inputs (src/plan/layout.h), so that input
// K is operand K whatever the outputs.
template <typename F> inline constexpr int kArrays = OutputsOf<typename F::Out>::kCount;
template <typename F, int J> inline constexpr int kOutputOperand = J == 0 ? 0 : kOperands<F> + J - 1;

// The element offsets of the first N operands at one flat index, walked forward one element at a time.
template <int N> struct Walker {
    int64_t inner;  // coordinate along dimension 0
    int64_t second; // along dimension 1
    int64_t off[EW_LAYOUT_MAX_OPERANDS]; // out's, then the inputs', in their own elements; 0 past N

    __device__ __forceinline__ void seek(const ew_strided_plan_t &plan, int64_t index)
    {
        uint64_t rest = static_cast<uint64_t>(index);
#pragma unroll
        for (int k = 0; k < EW_LAYOUT_MAX_OPERANDS; ++k)
            off[k] = 0;
#pragma unroll
        for (int d = 0; d < EW_MAX_DIMS; ++d) {
            if (d == plan.ndim)
                break;
            const uint64_t next = divide(plan.divider[d], rest);
            const int64_t coordinate =
                static_cast<int64_t>(rest - next * static_cast<uint64_t>(plan.shape[d]));
            if (d == 0)
                inner = coordinate;
            if (d == 1)
                second = coordinate;
#pragma unroll
            for (int k = 0; k < N; ++k)
                off[k] += coordinate * plan.stride[k][d];
            rest = next;
        }
    }

    // From index - 1 to index: a step along dimension 0, a carry into dimension 1 where it wraps, and
    // a division again only where that wraps too.
    __device__ __forceinline__ void step(const ew_strided_plan_t &plan, int64_t index)
    {
        if (++inner < plan.shape[0]) {
#pragma unroll
            for (int k = 0; k < N; ++k)
                off[k] += plan.stride[k][0];
        } else if (plan.ndim > 2 && ++second == plan.shape[1]) {
            seek(plan, index);
        } else {
            inner = 0;
#pragma unroll
            for (int k = 0; k < N; ++k)
                off[k] += plan.carry[k];
        }
    }
};

// One value per input of F (input K = 1 .. 4, NoInput's past F's arity), each of type Of<its type>:
// the inputs' pointers, their packs, their broadcast scalars.
template <typename F, template <typename> class Of> struct PerInput {
    Of<typename F::In1> v1;
    Of<typename F::In2> v2;
    Of<In3<F>> v3;
    Of<In4<F>> v4;

    template <int K> __device__ __forceinline__ auto &get()
    {
        if constexpr (K == 1)
            return v1;
        else if constexpr (K == 2)
            return v2;
        else if constexpr (K == 3)
            return v3;
        else
            return v4;
    }
};
template <typename T> using PointerTo = const T *;
template <typename F, int K>
using InputOf = Conditional<K == 1, typename F::In1,
                            Conditional<K == 2, typename F::In2, Conditional<K == 3, In3<F>, In4<F>>>>;
template <typename T> using ValueOf = T;

template <int K> struct InputIndex {
    static constexpr int value = K;
};
// fn(InputIndex<K>{}) for each input K that F has.
template <typename F, typename Fn> __device__ __forceinline__ void for_each_input(Fn fn)
{
    fn(InputIndex<1>{});
    if constexpr (kOperands<F> > 2)
        fn(InputIndex<2>{});
    if constexpr (kOperands<F> > 3)
        fn(InputIndex<3>{});
    if constexpr (kOperands<F> > 4)
        fn(InputIndex<4>{});
}

// The functor on every input's element at its offset in w.
template <typename F, int N>
__device__ __forceinline__ typename F::Out apply_at(const F &f, PerInput<F, PointerTo> &in, const Walker<N> &w)
{
    return apply(f, in.v1[w.off[1]], load(in.v2, w.off[2]), load(in.v3, w.off[3]), load(in.v4, w.off[4]));
}

// The broadcast scalar of every input whose access is SCALAR (the others' stay zero).
template <typename F>
__device__ __forceinline__ PerInput<F, ValueOf> scalars(const ew_strided_plan_t &plan, PerInput<F, PointerTo> &in)
{
    PerInput<F, ValueOf> s{};
    for_each_input<F>([&](auto k) {
        constexpr int K = decltype(k)::value;
        if (plan.access[K] == EW_ACCESS_SCALAR)
            s.template get<K>() = load(in.template get<K>(), 0);
    });
    return s;
}

// One element of an input: at flat index i (LINEAR), the broadcast scalar (SCALAR), or at its walked
// offset (INDEXED).
template <typename T>
__device__ __forceinline__ T element(const T *p, ew_access_t access, int64_t i, int64_t offset, T scalar)
{
    if constexpr (kSame<T, NoInput>)
        return {};
    else
        return access == EW_ACCESS_SCALAR ? scalar : p[access == EW_ACCESS_LINEAR ? i : offset];
}

// The whole aligned pack of P elements at p + i.
template <int P, typename T> __device__ __forceinline__ Pack<T, P> pack_at(const T *p, int64_t i)
{
    return load_pack(reinterpret_cast<const Pack<T, P> *>(p + i));
}

template <int P> struct PackOf {
    template <typename T> using Type = Pack<T, P>;
};

// Operands 0 .. N-1's access from the plan, read once into registers: read where used, they cost ptxas up
// to 4 more registers.
template <int N, int Size>
__device__ __forceinline__ void read_access(const ew_strided_plan_t &plan, ew_access_t (&access)[Size])
{
#pragma unroll
    for (int k = 0; k < N; ++k)
        access[k] = plan.access[k];
}

// Whether operand k's pack of P elements at offset, the walk at coordinate inner along dimension 0, is
// one vector access: contiguous along dimension 0, the pack within the row, its address aligned.
template <int P, typename T>
__device__ __forceinline__ bool along_row(const ew_strided_plan_t &plan, int k, const T *p, int64_t inner,
                                          int64_t offset)
{
    return plan.stride[k][0] == 1 && inner + P <= plan.shape[0] &&
           (reinterpret_cast<uintptr_t>(p + offset) & (sizeof(Pack<T, P>) - 1)) == 0;
}

// The packs at flat index i of the inputs that are neither PACKED nor loaded yet, w seeked to i where
// `walks`: a scalar's value repeated; an indexed input's pack whole where along_row allows; the rest
// (LINEAR, and indexed inputs across a row's end or at another phase) element by element as w walks on,
// so w ends past i.
template <typename F, int P, int N, typename Packs>
__device__ __forceinline__ void gather_inputs(const ew_strided_plan_t &plan, const ew_access_t *access,
                                              PerInput<F, PointerTo> &in, PerInput<F, ValueOf> &scalar,
                                              bool walks, Walker<N> &w, int64_t i, Packs &packs)
{
    unsigned rest = 0; // inputs left to load element by element
    for_each_input<F>([&](auto k) {
        constexpr int K = decltype(k)::value;
        auto &pack = packs.template get<K>();
        if (access[K] == EW_ACCESS_SCALAR) {
#pragma unroll
            for (int e = 0; e < P; ++e)
                pack.v[e] = scalar.template get<K>();
        } else if (access[K] == EW_ACCESS_INDEXED &&
                   along_row<P>(plan, K, in.template get<K>(), w.inner, w.off[K])) {
            pack = pack_at<P>(in.template get<K>(), w.off[K]);
        } else if (access[K] != EW_ACCESS_PACKED) {
            rest |= 1u << K;
        }
    });
    if (rest == 0)
        return;
#pragma unroll
    for (int e = 0; e < P; ++e) {
        for_each_input<F>([&](auto k) {
            constexpr int K = decltype(k)::value;
            if (rest >> K & 1u)
                packs.template get<K>().v[e] =
                    element(in.template get<K>(), access[K], i + e, w.off[K], scalar.template get<K>());
        });
        if (walks && e + 1 < P)
            w.step(plan, i + e + 1);
    }
}

// The gather kernel's walk: each thread takes Unroll packs of P elements of out's flat index at a time,
// from out's head on, has load(i, packs) fetch the inputs of every one (the pack at flat index i) before
// it computes any, then applies the functor to each and stores it whole at the offset load returned (a
// negative one: load wrote that pack's elements itself).
template <typename F, int P, int Unroll, typename Load>
__device__ __forceinline__ void walk_packs(const F &f, const ew_strided_plan_t &plan, int64_t thread,
                                           int64_t threads, typename F::Out *out, Load load)
{
    using Packs = PerInput<F, PackOf<P>::template Type>;
    for (int64_t first = thread; first < plan.packs; first += threads * Unroll) {
        Packs in[Unroll];
        int64_t to[Unroll];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t p = first + u * threads;
            to[u] = p < plan.packs ? load(plan.head + p * P, in[u]) : -1;
        }
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            if (to[u] >= 0) {
                Pack<typename F::Out, P> result;
                apply_pack(f, result, in[u].v1, in[u].v2, in[u].v3, in[u].v4);
                store_pack(reinterpret_cast<Pack<typename F::Out, P> *>(out + to[u]), result);
            }
        }
    }
}

// The gather kernel. The head and the tail past the last whole pack go element by element first; then
// walk_packs over the packs of out's flat index. out dense (access PACKED, the head aligning it): each
// pack stored whole at its index, its packed inputs loaded whole and the others by gather_inputs. out
// indexed: a pack that lies in a row of out contiguous along dimension 0, aligned, as the dense one at
// its walked offset; any other one element by element at the walked offsets.
template <typename F, int P, int Unroll>
__device__ __forceinline__ void gather_body(const F &f, const ew_strided_plan_t &plan, typename F::Out *out,
                                            PerInput<F, PointerTo> in)
{
    constexpr int N = kOperands<F>;
    follow_previous_grid();
    const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
    PerInput<F, ValueOf> scalar = scalars(plan, in);
    ew_access_t access[EW_LAYOUT_MAX_OPERANDS] = {}; // element() takes all four inputs', NoInput's too
    read_access<N>(plan, access);

    const int64_t body_end = plan.head + plan.packs * P;
    const int64_t edges = plan.head + (plan.n - body_end);
    for (int64_t j = thread; j < edges; j += threads) {
        const int64_t i = j < plan.head ? j : body_end + (j - plan.head);
        Walker<N> w{};
        w.seek(plan, i);
        out[w.off[0]] = apply_at(f, in, w);
    }

    bool walks = access[0] == EW_ACCESS_INDEXED, packed = true;
    for_each_input<F>([&](auto k) {
        walks = walks || access[decltype(k)::value] == EW_ACCESS_INDEXED;
        packed = packed && access[decltype(k)::value] == EW_ACCESS_PACKED;
    });
    using Packs = PerInput<F, PackOf<P>::template Type>;
    if (access[0] == EW_ACCESS_INDEXED) { // one pack at a time: two kept the dense path's registers up
        walk_packs<F, P, 1>(f, plan, thread, threads, out, [&](int64_t i, Packs &packs) -> int64_t {
            Walker<N> w{};
            w.seek(plan, i);
            const int64_t to = w.off[0];
            if (along_row<P>(plan, 0, out, w.inner, to)) {
                gather_inputs<F, P>(plan, access, in, scalar, true, w, i, packs);
                return to;
            }
#pragma unroll
            for (int e = 0; e < P; ++e) {
                out[w.off[0]] = apply(f, element(in.v1, access[1], i + e, w.off[1], scalar.v1),
                                      element(in.v2, access[2], i + e, w.off[2], scalar.v2),
                                      element(in.v3, access[3], i + e, w.off[3], scalar.v3),
                                      element(in.v4, access[4], i + e, w.off[4], scalar.v4));
                if (e + 1 < P)
                    w.step(plan, i + e + 1);
            }
            return -1;
        });
        return;
    }

    walk_packs<F, P, Unroll>(f, plan, thread, threads, out, [&](int64_t i, Packs &packs) -> int64_t {
        for_each_input<F>([&](auto k) {
            constexpr int K = decltype(k)::value;
            if (access[K] == EW_ACCESS_PACKED)
                packs.template get<K>() = pack_at<P>(in.template get<K>(), i);
        });
        if (!packed) {
            Walker<N> w{}; // a scalar's offset stays 0
            if (walks)
                w.seek(plan, i);
            gather_inputs<F, P>(plan, access, in, scalar, walks, w, i, packs);
        }
        return i;
    });
}

// Output J of several: its pointer, and its value among the functor's values.
template <int J, typename O0, typename O1, typename O2, typename O3>
__device__ __forceinline__ auto output_pointer(const OutputPointers<O0, O1, O2, O3> &out)
{
    if constexpr (J == 0)
        return out.p0;
    else if constexpr (J == 1)
        return out.p1;
    else if constexpr (J == 2)
        return out.p2;
    else
        return out.p3;
}
template <int J, typename O0, typename O1, typename O2, typename O3>
__device__ __forceinline__ auto output_value(const Outputs<O0, O1, O2, O3> &values)
{
    if constexpr (J == 0)
        return values.v0;
    else if constexpr (J == 1)
        return values.v1;
    else if constexpr (J == 2)
        return values.v2;
    else
        return values.v3;
}

// fn(InputIndex<J>{}) for each output J of F.
template <typename F, typename Fn> __device__ __forceinline__ void for_each_output(Fn fn)
{
    constexpr int arrays = kArrays<F>;
    fn(InputIndex<0>{});
    fn(InputIndex<1>{});
    if constexpr (arrays > 2)
        fn(InputIndex<2>{});
    if constexpr (arrays > 3)
        fn(InputIndex<3>{});
}

// Every output's element of values at its offset in w (the walk at one index).
template <typename F, int N>
__device__ __forceinline__ void store_outputs_at(const OutPointer<F> &out, const Walker<N> &w,
                                                 const typename F::Out &values)
{
    for_each_output<F>([&](auto j) {
        constexpr int J = decltype(j)::value;
        output_pointer<J>(out)[w.off[kOutputOperand<F, J>]] = output_value<J>(values);
    });
}

// The pack of values at out's flat index i, each output's part where it lies: a whole pack where the
// output is packed or its pack lies along a row, aligned; else element by element at its offsets, at
// walks the walk at i (LINEAR outputs go by the index, so a walk is needed only for indexed ones).
template <typename F, int P, int N>
__device__ __forceinline__ void store_output_packs(const ew_strided_plan_t &plan, const ew_access_t *access,
                                                   const OutPointer<F> &out, bool walks, const Walker<N> &at,
                                                   int64_t i, const Pack<typename F::Out, P> &values)
{
    unsigned rest = 0; // outputs left to store element by element
    for_each_output<F>([&](auto j) {
        constexpr int J = decltype(j)::value, K = kOutputOperand<F, J>;
        auto *p = output_pointer<J>(out);
        using T = decltype(output_value<J>(values.v[0]));
        Pack<T, P> part;
#pragma unroll
        for (int e = 0; e < P; ++e)
            part.v[e] = output_value<J>(values.v[e]);
        if (access[K] == EW_ACCESS_PACKED)
            store_pack(reinterpret_cast<Pack<T, P> *>(p + i), part);
        else if (access[K] == EW_ACCESS_INDEXED && along_row<P>(plan, K, p, at.inner, at.off[K]))
            store_pack(reinterpret_cast<Pack<T, P> *>(p + at.off[K]), part);
        else
            rest |= 1u << J;
    });
    if (rest == 0)
        return;
    Walker<N> w = at;
#pragma unroll
    for (int e = 0; e < P; ++e) {
        for_each_output<F>([&](auto j) {
            constexpr int J = decltype(j)::value, K = kOutputOperand<F, J>;
            if (rest >> J & 1u)
                output_pointer<J>(out)[access[K] == EW_ACCESS_INDEXED ? w.off[K] : i + e] =
                    output_value<J>(values.v[e]);
        });
        if (walks && e + 1 < P)
            w.step(plan, i + e + 1);
    }
}

// The gather kernel of several outputs (run-time compiled ops; the layout puts outputs past the first
// after the inputs): out's flat index in packs after the head, as gather_body walks it, one pack a
// thread at a time; the inputs as gather_body reads them, each output stored as store_output_packs says.
// The head and the tail element by element at the walked offsets.
template <typename F, int P>
__device__ __forceinline__ void gather_outputs_body(const F &f, const ew_strided_plan_t &plan,
                                                    const OutPointer<F> &out, PerInput<F, PointerTo> in)
{
    constexpr int N = kOperands<F> + kArrays<F> - 1;
    follow_previous_grid();
    const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
    PerInput<F, ValueOf> scalar = scalars(plan, in);
    ew_access_t access[EW_LAYOUT_MAX_OPERANDS] = {};
    read_access<N>(plan, access);

    const int64_t body_end = plan.head + plan.packs * P;
    const int64_t edges = plan.head + (plan.n - body_end);
    for (int64_t j = thread; j < edges; j += threads) {
        const int64_t i = j < plan.head ? j : body_end + (j - plan.head);
        Walker<N> w{};
        w.seek(plan, i);
        store_outputs_at<F>(out, w, apply_at(f, in, w));
    }

    bool walks = false;
#pragma unroll
    for (int k = 0; k < N; ++k)
        walks = walks || access[k] == EW_ACCESS_INDEXED;
    for (int64_t p = thread; p < plan.packs; p += threads) {
        const int64_t i = plan.head + p * P;
        PerInput<F, PackOf<P>::template Type> packs;
        for_each_input<F>([&](auto k) {
            constexpr int K = decltype(k)::value;
            if (access[K] == EW_ACCESS_PACKED)
                packs.template get<K>() = pack_at<P>(in.template get<K>(), i);
        });
        Walker<N> w{}; // offsets 0 where nothing walks
        if (walks)
            w.seek(plan, i);
        const Walker<N> at = w;
        gather_inputs<F, P>(plan, access, in, scalar, walks, w, i, packs);
        Pack<typename F::Out, P> values;
        apply_pack(f, values, packs.v1, packs.v2, packs.v3, packs.v4);
        store_output_packs<F, P>(plan, access, out, walks, at, i, values);
    }
}

// One input's pack at out's flat index i = r * C + c (rows of C = plan.shape[0] elements; r = 0 over one
// dimension), for an input neither packed nor a scalar: one vector access where the pack lies in the
// row, contiguous and aligned; Spliced, where it lies in the row contiguous at another phase and the
// two aligned packs around it lie in the row too, those two spliced; one load where the input is
// broadcast along the row; else element by element, carried into the next row where the row ends.
template <typename T, int P, bool Spliced>
__device__ __forceinline__ Pack<T, P> load_along_row(const ew_strided_plan_t &plan, int k, const T *p,
                                                     int64_t c, int64_t r)
{
    Pack<T, P> in;
    const int64_t row = plan.shape[0], step = plan.stride[k][0];
    int64_t offset = c * step + (plan.ndim > 1 ? r * plan.stride[k][1] : 0);
    if (c + P <= row) {
        const int shift = static_cast<int>(reinterpret_cast<uintptr_t>(p + offset) & (sizeof(Pack<T, P>) - 1));
        if (step == 1 && shift == 0)
            return pack_at<P>(p, offset);
        if constexpr (Spliced) {
            constexpr int kWords = sizeof(Pack<T, P>) / 4;
            const int64_t first = c - shift / static_cast<int>(sizeof(T)); // the lower aligned pack's
            if (step == 1 && first >= 0 && first + 2 * P <= row) {
                const auto *words = reinterpret_cast<const WordPack<kWords> *>(p + (offset - (c - first)));
                return splice_words<Pack<T, P>, T>(load_pack(words), load_pack(words + 1), shift);
            }
        }
        if (step == 0) {
            const T value = p[offset];
#pragma unroll
            for (int e = 0; e < P; ++e)
                in.v[e] = value;
            return in;
        }
    }
#pragma unroll
    for (int e = 0; e < P; ++e) {
        in.v[e] = p[offset];
        if (++c == row) {
            c = 0;
            offset += plan.carry[k];
        } else {
            offset += step;
        }
    }
    return in;
}

// The same where the plan found every pack of the input whole in its row (plan.rows_whole): one vector
// access along the row, or the row's one element repeated (the input broadcast along the row).
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> load_whole_along_row(const ew_strided_plan_t &plan, int k, const T *p,
                                                           int64_t c, int64_t r)
{
    const int64_t row = plan.ndim > 1 ? r * plan.stride[k][1] : 0;
    if (plan.stride[k][0] != 0)
        return pack_at<P>(p, row + c);
    Pack<T, P> in;
    const T value = p[row];
#pragma unroll
    for (int e = 0; e < P; ++e)
        in.v[e] = value;
    return in;
}

// The rows kernel's loops over its tiles: the general one; where the plan found every input read along
// the row whole (plan.rows_whole); where it splices an input running along the row (plan.rows_spliced);
// where an input's packs come from a table of the row's phases (plan.rows_table).
enum class RowsLoop { General, Whole, Spliced, Table };

// A loop as a type: which one rows_body's generic lambda is compiled as.
template <RowsLoop Loop> struct RowsLoopConstant {
    static constexpr RowsLoop value = Loop;
};

template <typename T, int P, RowsLoop Loop>
__device__ __forceinline__ Pack<T, P> load_row_input(const ew_strided_plan_t &plan, int k, const T *p,
                                                     int64_t i, int64_t c, int64_t r, T scalar,
                                                     const unsigned char *table)
{
    Pack<T, P> in{};
    if constexpr (!kSame<T, NoInput>) {
        if (plan.access[k] == EW_ACCESS_PACKED)
            return pack_at<P>(p, i);
        if (plan.access[k] != EW_ACCESS_SCALAR) {
            if constexpr (Loop == RowsLoop::Table) {
                if (plan.rows_table >> k & 1u) {
                    const int slot = __popc(plan.rows_table & ((1u << k) - 1u));
                    return load_staged<Pack<T, P>>(table + (slot * plan.shape[0] + c) * 16);
                }
            }
            if constexpr (Loop == RowsLoop::Whole)
                return load_whole_along_row<T, P>(plan, k, p, c, r);
            else
                return load_along_row<T, P, Loop == RowsLoop::Spliced>(plan, k, p, c, r);
        }
#pragma unroll
        for (int e = 0; e < P; ++e)
            in.v[e] = scalar;
    }
    return in;
}

// Threads an SM holds, by the architecture compiled for: 2,048 on sm_70, sm_72, sm_80, sm_90, sm_100
// and sm_103, 1,024 on Turing, and 1,536 (no SM holds fewer but Turing's) on the others (sm_86, sm_87,
// sm_89, sm_120, ...). A minimum of resident blocks beyond the SM's threads is an error of ptxas.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 700 || __CUDA_ARCH__ == 720 || __CUDA_ARCH__ == 800 || \
                               __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000 || __CUDA_ARCH__ == 1030)
inline constexpr int kSmThreads = 2048;
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
inline constexpr int kSmThreads = 1024;
#else
inline constexpr int kSmThreads = 1536;
#endif

template <typename T> inline constexpr bool kFourBytesOrNone = kSame<T, NoInput> || kStorageSize<T> == 4;
// The rows kernel's launch bounds, packs ahead and loops of its own (src/plan/tuning.h).
template <typename F>
inline constexpr int kRowsMinBlocks =
    EW_ROWS_MIN_BLOCKS(kStorageSize<typename F::Out> == 4 && kStorageSize<typename F::In1> == 4 &&
                           kFourBytesOrNone<typename F::In2> && kFourBytesOrNone<In3<F>> && kFourBytesOrNone<In4<F>>,
                       kSmThreads);
template <typename F> inline constexpr int kRowsAhead = EW_ROWS_AHEAD(kWidestElement<F>);
template <typename F> inline constexpr bool kRowsLoops = EW_ROWS_LOOPS(kWidestElement<F>);

// The rows kernel's inputs staged in shared memory (plan.staged, sm_90 and later): an input packed with
// out, in 16-byte packs, comes by one bulk copy a tile, one slot of the tile's packs after another in
// input order; the copy engine keeps the tile in flight without registers, which the inputs read along
// the row need. Other inputs, and every input below sm_90, are loaded by the threads.
template <typename T, int P> __device__ __forceinline__ bool is_staged(unsigned staged, int k)
{
    if constexpr (kSame<T, NoInput> || sizeof(Pack<T, P>) != 16 || !EW_HAS_BULK_COPY)
        return false;
    else
        return (staged >> k & 1u) != 0;
}

// fn(InputIndex<K>{}, slot) for each staged input K of F, slot its place in shared memory.
template <typename F, int P, typename Fn>
__device__ __forceinline__ void for_each_staged(unsigned staged, Fn fn)
{
    int slot = 0;
    for_each_input<F>([&](auto k) {
        if (is_staged<InputOf<F, decltype(k)::value>, P>(staged, decltype(k)::value))
            fn(k, slot++);
    });
}

// The tables of plan.rows_table, one after another from `table`: for each such input, the C packs of
// its row (rows of C = plan.shape[0] elements, the same row for every r), the one at phase c holding
// the row's elements from c on, carried round its end; 16 bytes a pack. Every thread of the block helps.
template <typename F, int P>
__device__ __forceinline__ void build_row_tables(const ew_strided_plan_t &plan, PerInput<F, PointerTo> in,
                                                 unsigned char *table)
{
    const int64_t row = plan.shape[0];
    int slot = 0;
    for_each_input<F>([&](auto k) {
        constexpr int K = decltype(k)::value;
        using T = InputOf<F, K>;
        if constexpr (!kSame<T, NoInput>) {
            if (plan.rows_table >> K & 1u) {
                for (int j = threadIdx.x; j < row * P; j += blockDim.x) {
                    const int c = j / P, e = j % P;
                    T *to = reinterpret_cast<T *>(table + (slot * row + c) * 16) + e;
                    *to = in.template get<K>()[(c + e) % row * plan.stride[K][0]];
                }
                ++slot;
            }
        }
    });
    __syncthreads();
}

// The rows kernel: out dense over at most two dimensions. The head and the tail past the last whole pack
// go element by element in one extra block at the end of the grid. The other blocks take tiles of
// plan.block_packs packs (the policy's): thread 0 sends the staged inputs' copies, and each thread loads
// the other inputs of kAhead packs at a time (load_row_input) before it computes them, reading the
// staged ones out of shared memory once their copy is in.
template <typename F, int P>
__device__ __forceinline__ void rows_body(const F &f, const ew_strided_plan_t &plan, typename F::Out *out,
                                          PerInput<F, PointerTo> in)
{
    constexpr int N = kOperands<F>;
    constexpr int kAhead = kRowsAhead<F>;
    static_assert(EW_ROWS_GROUP % (kAhead * EW_PLAN_BLOCK_THREADS) == 0, "whole groups of packs ahead");
    const int tile = EW_ROWS_TILE_FROM_PLAN(kWidestElement<F>) ? plan.block_packs : EW_ROWS_GROUP;
    follow_previous_grid();
    const int64_t body_end = plan.head + plan.packs * P;
    const int64_t edges = plan.head + (plan.n - body_end);
    if (edges > 0 && blockIdx.x == gridDim.x - 1) {
        for (int64_t j = threadIdx.x; j < edges; j += blockDim.x) {
            const int64_t i = j < plan.head ? j : body_end + (j - plan.head);
            Walker<N> w{};
            w.seek(plan, i);
            out[i] = apply_at(f, in, w);
        }
        return;
    }
    bool along_rows = false;
    for_each_input<F>([&](auto k) {
        const ew_access_t access = plan.access[decltype(k)::value];
        along_rows = along_rows || (access != EW_ACCESS_PACKED && access != EW_ACCESS_SCALAR);
    });
    PerInput<F, ValueOf> scalar = scalars(plan, in);
    const unsigned staged = plan.staged;
    extern __shared__ __align__(EW_PLAN_BULK_ALIGN) unsigned char shared[];
#if EW_HAS_BULK_COPY
    __shared__ uint64_t copied;
    if (staged != 0 && threadIdx.x == 0) {
        barrier_init(&copied, 1);
        fence_barrier_init();
    }
#endif

    using Packs = PerInput<F, PackOf<P>::template Type>;
    const int64_t body_blocks = gridDim.x - (edges > 0);
    // The tiles. For 2-byte elements their loop is compiled four times: where every input read along
    // the row takes its packs whole (plan.rows_whole), one loads them without the general one's tests;
    // where the plan splices an input along the row (plan.rows_spliced), one does; where an input's
    // packs come from a table (plan.rows_table), one builds it first and reads it.
    auto tiles = [&](auto loop) {
        unsigned char *table = nullptr; // the Table loop's, past the staged slots
        if constexpr (decltype(loop)::value == RowsLoop::Table) {
            table = shared + __popc(staged) * tile * 16;
            build_row_tables<F, P>(plan, in, table);
        }
        for (int64_t first = blockIdx.x * int64_t{tile}, round = 0; first < plan.packs;
             first += body_blocks * tile, ++round) {
            const int count = plan.packs - first < tile ? static_cast<int>(plan.packs - first) : tile;
#if EW_HAS_BULK_COPY
            if (staged != 0 && threadIdx.x == 0) {
                uint32_t bytes = 0;
                for_each_staged<F, P>(staged, [&](auto k, int slot) {
                    const auto *from = in.template get<decltype(k)::value>() + plan.head + first * P;
                    bulk_copy(shared + slot * tile * 16, from, count * 16, &copied);
                    bytes += count * 16;
                });
                arrive_expecting(&copied, bytes);
            }
#endif
#pragma unroll 1
            for (int group = 0; group < tile / EW_PLAN_BLOCK_THREADS; group += kAhead) {
                Packs packs[kAhead];
#pragma unroll
                for (int u = 0; u < kAhead; ++u) {
                    const int q = (group + u) * EW_PLAN_BLOCK_THREADS + static_cast<int>(threadIdx.x);
                    if (q < count) {
                        const int64_t i = plan.head + (first + q) * P;
                        int64_t r = 0, c = i;
                        if (along_rows) {
                            r = static_cast<int64_t>(divide(plan.divider[0], static_cast<uint64_t>(i)));
                            c = i - r * plan.shape[0];
                        }
                        for_each_input<F>([&](auto k) {
                            constexpr int K = decltype(k)::value;
                            using T = InputOf<F, K>;
                            if (!is_staged<T, P>(staged, K))
                                packs[u].template get<K>() = load_row_input<T, P, decltype(loop)::value>(
                                    plan, K, in.template get<K>(), i, c, r, scalar.template get<K>(), table);
                        });
                    }
                }
#if EW_HAS_BULK_COPY
                if (staged != 0 && group == 0) {
                    if (round == 0)
                        __syncthreads(); // the barrier initialised
                    while (!barrier_try_wait(&copied, static_cast<uint32_t>(round & 1)))
                        ;
                }
#endif
#pragma unroll
                for (int u = 0; u < kAhead; ++u) {
                    const int q = (group + u) * EW_PLAN_BLOCK_THREADS + static_cast<int>(threadIdx.x);
                    if (q < count) {
#if EW_HAS_BULK_COPY
                        for_each_staged<F, P>(staged, [&](auto k, int slot) {
                            constexpr int K = decltype(k)::value;
                            packs[u].template get<K>() =
                                load_staged<Pack<InputOf<F, K>, P>>(shared + slot * tile * 16 + q * 16);
                        });
#endif
                        Pack<typename F::Out, P> result;
                        apply_pack(f, result, packs[u].v1, packs[u].v2, packs[u].v3, packs[u].v4);
                        auto *to = out + plan.head + (first + q) * P;
                        store_pack(reinterpret_cast<Pack<typename F::Out, P> *>(to), result);
                    }
                }
            }
#if EW_HAS_BULK_COPY
            if (staged != 0 && first + body_blocks * tile < plan.packs)
                __syncthreads(); // every thread done with the slots before the next copies
#endif
        }
    };
    if constexpr (kRowsLoops<F>) {
        if (plan.rows_whole) {
            tiles(RowsLoopConstant<RowsLoop::Whole>{});
            return;
        }
        if (plan.rows_spliced) {
            tiles(RowsLoopConstant<RowsLoop::Spliced>{});
            return;
        }
        if (plan.rows_table != 0) {
            tiles(RowsLoopConstant<RowsLoop::Table>{});
            return;
        }
    }
    tiles(RowsLoopConstant<RowsLoop::General>{});
}

// A run of R elements of p from offset, step apart, of which the first `count` are wanted: whole
// aligned vectors of up to 16 bytes where the plan found the operand's runs aligned (`vector`) and the
// run is whole, else element by element. The elements past count are left as they are.
template <int R, typename T>
__device__ __forceinline__ void load_run(Pack<T, R> &run, const T *p, int64_t offset, int64_t step, int count,
                                         bool vector)
{
    constexpr int V = 16 / sizeof(T) < R ? 16 / sizeof(T) : R; // elements a vector
    if (vector && count >= R) {
#pragma unroll
        for (int i = 0; i < R; i += V) {
            const Pack<T, V> part = pack_at<V>(p, offset + i);
#pragma unroll
            for (int e = 0; e < V; ++e)
                run.v[i + e] = part.v[e];
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < R; ++i)
        if (i < count)
            run.v[i] = p[offset + i * step];
}

template <int R, typename T>
__device__ __forceinline__ void store_run(T *p, int64_t offset, int64_t step, int count, bool vector,
                                          const Pack<T, R> &run)
{
    constexpr int V = 16 / sizeof(T) < R ? 16 / sizeof(T) : R;
    if (vector && count >= R) {
#pragma unroll
        for (int i = 0; i < R; i += V) {
            Pack<T, V> part;
#pragma unroll
            for (int e = 0; e < V; ++e)
                part.v[e] = run.v[i + e];
            store_pack(reinterpret_cast<Pack<T, V> *>(p + offset + i), part);
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < R; ++i)
        if (i < count)
            p[offset + i * step] = run.v[i];
}

// A thread's block of one operand in the tiled kernel, R x R elements as 4-byte words: R rows along
// dimension 0, or, as a tiled input's runs are loaded, R runs along t (transposed as rows are read).
// Words, so that transposing 1- and 2-byte elements is byte permutes of whole registers.
template <typename T, int R> struct Block {
    static constexpr int kWords = kSame<T, NoInput> ? 1 : R * static_cast<int>(sizeof(T)) / 4; // a run's
    uint32_t w[R * kWords];

    // Run (or row) `at`.
    __device__ __forceinline__ void put(int at, const Pack<T, R> &run)
    {
        const auto words = bits_as<WordPack<kWords>>(run);
#pragma unroll
        for (int q = 0; q < kWords; ++q)
            w[at * kWords + q] = words.w[q];
    }

    // Row r of the block as loaded in runs (a tiled input's): words moved for 4- and 8-byte elements,
    // byte permutes for narrower ones (one a word for 2 bytes, three for 1).
    __device__ __forceinline__ Pack<T, R> row_of_runs(int r) const
    {
        constexpr int S = sizeof(T);
        WordPack<kWords> words;
        if constexpr (S >= 4) {
#pragma unroll
            for (int i = 0; i < R; ++i)
#pragma unroll
                for (int q = 0; q < S / 4; ++q)
                    words.w[i * (S / 4) + q] = w[i * kWords + r * (S / 4) + q];
        } else if constexpr (S == 2) {
            // the word of elements i, i + 1: element r of runs i and i + 1, the low or high halves
#pragma unroll
            for (int i = 0; i < R; i += 2)
                words.w[i / 2] =
                    __byte_perm(w[i * kWords + r / 2], w[(i + 1) * kWords + r / 2], r % 2 ? 0x7632 : 0x5410);
        } else {
            // the word of elements i .. i + 3: byte r % 4 of word r / 4 of runs i .. i + 3
            constexpr unsigned kPick[] = {0x40, 0x51, 0x62, 0x73};
#pragma unroll
            for (int i = 0; i < R; i += 4) {
                const uint32_t low = __byte_perm(w[i * kWords + r / 4], w[(i + 1) * kWords + r / 4], kPick[r % 4]);
                const uint32_t high =
                    __byte_perm(w[(i + 2) * kWords + r / 4], w[(i + 3) * kWords + r / 4], kPick[r % 4]);
                words.w[i / 4] = __byte_perm(low, high, 0x5410);
            }
        }
        return bits_as<Pack<T, R>>(words);
    }
    __device__ __forceinline__ Pack<T, R> row(int r, bool runs) const
    {
        if constexpr (kSame<T, NoInput>) {
            return {};
        } else {
            if (runs)
                return row_of_runs(r);
            WordPack<kWords> words;
#pragma unroll
            for (int q = 0; q < kWords; ++q)
                words.w[q] = w[r * kWords + q];
            return bits_as<Pack<T, R>>(words);
        }
    }
};
template <int R> struct BlockOf {
    template <typename T> using Type = Block<T, R>;
};

// A thread's runs in the tiled kernel, along 0 and along t alike, as the plan counts them
// (ew_strided_plan_make): square blocks ran faster than 16-byte runs of every operand (NCHW f32 ->
// NHWC f16 4 x 4 0.956x the flat cast, 8 x 4 0.927x; the f16 transpose 8 x 8 0.944x the flat add,
// 8 x 4 0.930x, 4 x 8 0.922x).
template <typename F> inline constexpr int kTileRun = EW_TILE_RUN(kWidestElement<F>);

// fn(Constant<M>) where M is the bit mask of the tiled inputs (`tiled`, bit k for input k), a constant
// for each mask one or two inputs can have, so that the rows are read without a choice of layout in
// registers (a choice per row kept both layouts' registers live: the f16 add took 144 registers, 106
// without); kTiledAtRunTime for three or four inputs, read from `tiled` as the rows are.
inline constexpr unsigned kTiledAtRunTime = ~0u;
template <unsigned M> struct Constant {
    static constexpr unsigned value = M;
};
template <typename F, typename Fn> __device__ __forceinline__ void with_tiled(unsigned tiled, Fn fn)
{
    if constexpr (kOperands<F> == 2) {
        fn(Constant<2>{});
    } else if constexpr (kOperands<F> == 3) {
        if (tiled == 2)
            fn(Constant<2>{});
        else if (tiled == 4)
            fn(Constant<4>{});
        else
            fn(Constant<6>{});
    } else {
        fn(Constant<kTiledAtRunTime>{});
    }
}

// The tiled kernel: a block per tile of EW_TILE_THREADS x EW_TILE_THREADS threads over dimensions 0
// and t (tile_dim), each thread a block of R x R elements of every operand: out and the inputs read as
// they lie (indexed) as R runs along 0, the tiled inputs as R runs along t, transposed in the thread's
// registers. Where every operand's runs are aligned vectors (tile_vector), a run is one or two vector
// accesses, and all of a thread's loads are in flight before it computes; the other blocks, and those
// across the tensor's edge, go a row at a time. A warp's threads lie 8 along 0 and 4 along t: each
// access covers 8 runs of a row of out and of the indexed inputs, 4 of a tiled input's. No shared
// memory and no barrier.
template <typename F>
__device__ __forceinline__ void tiled_body(const F &f, const ew_strided_plan_t &plan, typename F::Out *out,
                                           PerInput<F, PointerTo> in)
{
    constexpr int N = kOperands<F>, R = kTileRun<F>, kTile = EW_TILE_THREADS * R;
    static_assert(EW_TILE_THREADS * EW_TILE_THREADS == EW_PLAN_BLOCK_THREADS);
    follow_previous_grid();
    const int t = plan.tile_dim;
    // 8 x 4 lanes a warp, 2 x 4 warps a tile
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int first0 = ((warp & 1) * 8 + lane % 8) * R, firstt = ((warp >> 1) * 4 + lane / 8) * R;
    PerInput<F, ValueOf> scalar = scalars(plan, in);
    ew_access_t access[N];
    read_access<N>(plan, access);
    int64_t lead[N];
    unsigned tiled = 0; // bit k: input k is tiled
    bool whole = true;  // every operand's runs aligned vectors (a scalar's aside)
#pragma unroll
    for (int k = 0; k < N; ++k) {
        lead[k] = first0 * plan.stride[k][0] + firstt * plan.stride[k][t];
        tiled |= (access[k] == EW_ACCESS_TILED ? 1u : 0u) << k;
        whole = whole && (access[k] == EW_ACCESS_SCALAR || (plan.tile_vector >> k & 1u) != 0);
    }

#pragma unroll 1
    for (int64_t tile = blockIdx.x; tile < plan.tiles; tile += gridDim.x) {
        uint64_t rest = static_cast<uint64_t>(tile);
        int64_t x0 = 0, y0 = 0, at[N] = {};
#pragma unroll
        for (int e = 0; e < EW_MAX_DIMS; ++e) {
            if (e == plan.ndim)
                break;
            const uint64_t next = divide(plan.tile_divider[e], rest);
            const int64_t c = static_cast<int64_t>(rest - next * static_cast<uint64_t>(plan.tile_extent[e]));
            rest = next;
            if (e == 0) {
                x0 = c * kTile;
            } else if (e == 1) {
                y0 = c * kTile;
            } else {
#pragma unroll
                for (int k = 0; k < N; ++k)
                    at[k] += c * plan.stride[k][plan.tile_order[e]];
            }
        }
#pragma unroll
        for (int k = 0; k < N; ++k)
            at[k] += x0 * plan.stride[k][0] + y0 * plan.stride[k][t] + lead[k];
        // this thread's elements along 0 and along t
        const int64_t x = plan.shape[0] - x0 - first0, y = plan.shape[t] - y0 - firstt;
        const int count0 = x < R ? static_cast<int>(x) : R, countt = y < R ? static_cast<int>(y) : R;
        if (count0 == R && countt == R && whole) {
            with_tiled<F>(tiled, [&](auto which) {
                constexpr unsigned M = decltype(which)::value;
                const auto runs = [&](int k) {
                    return M == kTiledAtRunTime ? (tiled >> k & 1u) != 0 : (M >> k & 1u) != 0;
                };
                PerInput<F, BlockOf<R>::template Type> v;
                // every load in flight first
                for_each_input<F>([&](auto k) {
                    constexpr int K = decltype(k)::value;
                    using T = InputOf<F, K>;
                    auto &b = v.template get<K>();
                    const T *p = in.template get<K>();
                    if (runs(K)) {
#pragma unroll
                        for (int i = 0; i < R; ++i) {
                            Pack<T, R> run;
                            load_run<R>(run, p, at[K] + i * plan.stride[K][0], plan.stride[K][t], R, true);
                            b.put(i, run);
                        }
                    } else if (access[K] == EW_ACCESS_INDEXED) {
#pragma unroll
                        for (int r = 0; r < R; ++r) {
                            Pack<T, R> run;
                            load_run<R>(run, p, at[K] + r * plan.stride[K][t], plan.stride[K][0], R, true);
                            b.put(r, run);
                        }
                    } else {
                        Pack<T, R> run;
#pragma unroll
                        for (int i = 0; i < R; ++i)
                            run.v[i] = scalar.template get<K>();
#pragma unroll
                        for (int r = 0; r < R; ++r)
                            b.put(r, run);
                    }
                });
                // the rows computed and stored, the tiled inputs' transposed as they are read
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    Pack<typename F::Out, R> result;
                    apply_pack(f, result, v.v1.row(r, runs(1)), v.v2.row(r, runs(2)), v.v3.row(r, runs(3)),
                               v.v4.row(r, runs(4)));
                    store_run<R>(out, at[0] + r * plan.stride[0][t], plan.stride[0][0], R, true, result);
                }
            });
        } else if (count0 > 0 && countt > 0) {
            // A block across the tensor's edge, or an operand's runs not aligned vectors: a row at a
            // time, the tiled inputs' elements one by one. Its registers are a row's, where the whole
            // block's elements loaded one by one would take a register and an address each.
#pragma unroll 1
            for (int r = 0; r < countt; ++r) {
                PerInput<F, PackOf<R>::template Type> row;
                for_each_input<F>([&](auto k) {
                    constexpr int K = decltype(k)::value;
                    auto &run = row.template get<K>();
                    const int64_t offset = at[K] + r * plan.stride[K][t];
                    if (access[K] == EW_ACCESS_INDEXED) {
                        load_run<R>(run, in.template get<K>(), offset, plan.stride[K][0], count0,
                                     plan.tile_vector >> K & 1);
                    } else {
#pragma unroll
                        for (int i = 0; i < R; ++i)
                            run.v[i] = access[K] == EW_ACCESS_SCALAR
                                           ? scalar.template get<K>()
                                           : in.template get<K>()[offset + (i < count0 ? i : 0) * plan.stride[K][0]];
                    }
                });
                Pack<typename F::Out, R> result;
                apply_pack(f, result, row.v1, row.v2, row.v3, row.v4);
                store_run<R>(out, at[0] + r * plan.stride[0][t], plan.stride[0][0], count0, plan.tile_vector & 1u,
                              result);
            }
        }
    }
}

// The kernels: the bodies behind __restrict__ pointers, up to four inputs (NoInput's past F's arity).
// Only the gather kernel takes several outputs.
#define EW_STRIDED_PARAMETERS(F)                                                               \
    F f, ew_strided_plan_t plan, ew::OutPointer<F> out, const typename F::In1 *__restrict__ a, \
        const typename F::In2 *__restrict__ b, const ew::In3<F> *__restrict__ c,               \
        const ew::In4<F> *__restrict__ d

template <typename F, int P, int Unroll>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS) gather_kernel(EW_STRIDED_PARAMETERS(F))
{
    constexpr bool several = kArrays<F> != 1;
    reducing(f, [&](const F &g) {
        if constexpr (several)
            gather_outputs_body<F, P>(g, plan, out, {a, b, c, d});
        else
            gather_body<F, P, Unroll>(g, plan, out, {a, b, c, d});
    });
}

template <typename F, int P>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS, kRowsMinBlocks<F>) rows_kernel(EW_STRIDED_PARAMETERS(F))
{
    reducing(f, [&](const F &g) { rows_body<F, P>(g, plan, out, {a, b, c, d}); });
}

template <typename F>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS) tiled_kernel(EW_STRIDED_PARAMETERS(F))
{
    reducing(f, [&](const F &g) { tiled_body<F>(g, plan, out, {a, b, c, d}); });
}

} // namespace ew
