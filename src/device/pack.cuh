// SPDX-License-Identifier: Apache-2.0
// Packs and vector memory: P elements moved by one access of up to 16 bytes, runs of packs, the
// splice that shifts aligned words into place, and the functor applied to a pack or a run of them.
// The bottom layer of every kernel. NVRTC compiles it too (run-time compiled kernels run the direct
// kernel, src/device/direct.cuh): it needs nothing but the device header's own traits.
#pragma once

#include "device/ew_ops.cuh"

namespace ew {

// A functor's third and fourth inputs: F::In3 and F::In4 where it has them (run-time compiled ops of
// three or four inputs), else none. The catalogue's functors take one or two.
template <typename F, typename = void> struct In3Of {
    using Type = NoInput;
};
template <typename F> struct In3Of<F, typename VoidOf<typename F::In3>::Type> {
    using Type = typename F::In3;
};
template <typename F, typename = void> struct In4Of {
    using Type = NoInput;
};
template <typename F> struct In4Of<F, typename VoidOf<typename F::In4>::Type> {
    using Type = typename F::In4;
};
template <typename F> using In3 = typename In3Of<F>::Type;
template <typename F> using In4 = typename In4Of<F>::Type;

__host__ __device__ constexpr size_t widest(size_t a, size_t b) { return a > b ? a : b; }

// Several outputs of one pass (run-time compiled ops of up to EW_PLAN_MAX_OUTPUTS arrays): the values
// a functor returns, one of each output's storage type (NoInput past the last), and where they go. The
// kernels store each output as packs of its own at one index; the plan aligns them all there
// (src/plan/plan.c: the outputs' phases agree at the pack).
template <typename O0, typename O1, typename O2 = NoInput, typename O3 = NoInput> struct Outputs {
    O0 v0;
    O1 v1;
    O2 v2;
    O3 v3;
};
template <typename O0, typename O1, typename O2, typename O3> struct OutputPointers {
    O0 *p0;
    O1 *p1;
    O2 *p2;
    O3 *p3;
};

// What the kernels take for a functor's out: a pointer, or the pointers of several outputs (the launch
// passes EW_PLAN_MAX_OUTPUTS of them, those past the last NULL). kWidest: the widest element written;
// kCount: the arrays written.
template <typename T> struct OutputsOf {
    using Pointer = T *;
    static constexpr size_t kWidest = kStorageSize<T>;
    static constexpr int kCount = 1;
};
template <typename O0, typename O1, typename O2, typename O3> struct OutputsOf<Outputs<O0, O1, O2, O3>> {
    using Pointer = OutputPointers<O0, O1, O2, O3>;
    static constexpr size_t kWidest =
        widest(widest(kStorageSize<O0>, kStorageSize<O1>), widest(kStorageSize<O2>, kStorageSize<O3>));
    static constexpr int kCount = 2 + !kSame<O2, NoInput> + !kSame<O3, NoInput>;
};
template <typename F> using OutPointer = typename OutputsOf<typename F::Out>::Pointer;

// P elements moved by one vector access (P * sizeof(T) <= 16 bytes).
template <typename T, int P> struct alignas(sizeof(T) * P) Pack {
    T v[P];
};
template <int P> struct Pack<NoInput, P> {
    NoInput v[P];
};
template <typename O0, typename O1, typename O2, typename O3, int P> struct Pack<Outputs<O0, O1, O2, O3>, P> {
    Outputs<O0, O1, O2, O3> v[P]; // never moved as one: each output's part is stored as its own pack
};

// One element of the second input, or nothing for unary ops.
template <typename T> __device__ __forceinline__ T load(const T *p, int64_t i)
{
    if constexpr (kSame<T, NoInput>)
        return {};
    else
        return p[i];
}

// One result into out[i]; nothing where out is NoInput (an op whose result is its reduction alone).
template <typename T, typename Index> __device__ __forceinline__ void store(T *out, Index i, T value)
{
    if constexpr (!kSame<T, NoInput>)
        out[i] = value;
}
template <typename O0, typename O1, typename O2, typename O3, typename Index>
__device__ __forceinline__ void store(const OutputPointers<O0, O1, O2, O3> &out, Index i,
                                      const Outputs<O0, O1, O2, O3> &value)
{
    store(out.p0, i, value.v0);
    store(out.p1, i, value.v1);
    store(out.p2, i, value.v2);
    store(out.p3, i, value.v3);
}

// Out moved on by i elements.
template <typename T> __device__ __forceinline__ T *out_at(T *out, int64_t i) { return out + i; }
template <typename O0, typename O1, typename O2, typename O3>
__device__ __forceinline__ OutputPointers<O0, O1, O2, O3> out_at(const OutputPointers<O0, O1, O2, O3> &out,
                                                                 int64_t i)
{
    return {out.p0 + i, out.p1 + i, out.p2 + i, out.p3 + i};
}

// The functor on one element of each input it has.
template <typename F>
__device__ __forceinline__ typename F::Out apply(const F &f, typename F::In1 a, typename F::In2 b, In3<F> c = {},
                                                 In4<F> d = {})
{
    if constexpr (kSame<typename F::In2, NoInput>)
        return f(a);
    else if constexpr (kSame<In3<F>, NoInput>)
        return f(a, b);
    else if constexpr (kSame<In4<F>, NoInput>)
        return f(a, b, c);
    else
        return f(a, b, c, d);
}

template <typename F, int P>
__device__ __forceinline__ void apply_pack(const F &f, Pack<typename F::Out, P> &out,
                                           const Pack<typename F::In1, P> &a, const Pack<typename F::In2, P> &b,
                                           const Pack<In3<F>, P> &c = {}, const Pack<In4<F>, P> &d = {})
{
    if constexpr (P % 2 == 0 && F::kHasPair) {
#pragma unroll
        for (int i = 0; i < P; i += 2) {
            if constexpr (kSame<typename F::In2, NoInput>)
                f.pair(&out.v[i], &a.v[i]);
            else
                f.pair(&out.v[i], &a.v[i], &b.v[i]);
        }
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i)
            out.v[i] = apply(f, a.v[i], b.v[i], c.v[i], d.v[i]);
    }
}

// Functors with a per-block table (Cast's kByteTable) have it filled before any pack is computed.
template <typename F, typename = void> inline constexpr bool kHasTable = false;
template <typename F>
inline constexpr bool kHasTable<F, typename VoidOf<decltype(F::kByteTable)>::Type> = F::kByteTable;

template <typename F>
inline constexpr size_t kWidestElement =
    widest(widest(OutputsOf<typename F::Out>::kWidest, kStorageSize<typename F::In1>),
           widest(kStorageSize<typename F::In2>, widest(kStorageSize<In3<F>>, kStorageSize<In4<F>>)));

// A whole pack moved as one vector access of its size.
template <size_t Bytes> struct VectorOf;
template <> struct VectorOf<1> {
    using Type = unsigned char;
};
template <> struct VectorOf<2> {
    using Type = unsigned short;
};
template <> struct VectorOf<4> {
    using Type = unsigned;
};
template <> struct VectorOf<8> {
    using Type = uint2;
};
template <> struct VectorOf<16> {
    using Type = uint4;
};

// Through the vector type rather than the struct, so the compiler moves whole registers instead of
// assembling small elements one by one (measured: 1-byte packs ran at 60% of memcpy through structs).
template <typename PackT> __device__ __forceinline__ PackT load_pack(const PackT *p)
{
    using Vector = typename VectorOf<sizeof(PackT)>::Type;
    return bits_as<PackT>(__ldg(reinterpret_cast<const Vector *>(p)));
}

template <typename PackT> __device__ __forceinline__ void store_pack(PackT *p, const PackT &value)
{
    using Vector = typename VectorOf<sizeof(PackT)>::Type;
    *reinterpret_cast<Vector *>(p) = bits_as<Vector>(value);
}

// A packs of P elements each, moved by one access: 1-byte types' 8-byte packs go two to 16 bytes.
template <typename T, int P, int A> struct alignas(sizeof(Pack<T, P>) * A) PackRun {
    Pack<T, P> pack[A];
};
template <typename O0, typename O1, typename O2, typename O3, int P, int A>
struct PackRun<Outputs<O0, O1, O2, O3>, P, A> {
    Pack<Outputs<O0, O1, O2, O3>, P> pack[A];
};

// Run i of out, which the plan aligned to runs: one access, or one an output; nothing where out is
// NoInput (as store() does).
template <typename T, typename Run>
__device__ __forceinline__ void store_run(T *out, int64_t i, const Run &run)
{
    if constexpr (!kSame<T, NoInput>)
        store_pack(reinterpret_cast<Run *>(out) + i, run);
}

// One output's part of a run of several outputs' values, stored as its own run.
template <typename T, int P, int A, typename Values, typename Member>
__device__ __forceinline__ void store_part(T *out, int64_t i, const PackRun<Values, P, A> &run, Member member)
{
    if constexpr (!kSame<T, NoInput>) {
        PackRun<T, P, A> part;
#pragma unroll
        for (int j = 0; j < A; ++j)
#pragma unroll
            for (int k = 0; k < P; ++k)
                part.pack[j].v[k] = member(run.pack[j].v[k]);
        store_run(out, i, part);
    }
}

template <typename O0, typename O1, typename O2, typename O3, int P, int A>
__device__ __forceinline__ void store_run(const OutputPointers<O0, O1, O2, O3> &out, int64_t i,
                                          const PackRun<Outputs<O0, O1, O2, O3>, P, A> &run)
{
    using Values = Outputs<O0, O1, O2, O3>;
    store_part(out.p0, i, run, [](const Values &v) { return v.v0; });
    store_part(out.p1, i, run, [](const Values &v) { return v.v1; });
    store_part(out.p2, i, run, [](const Values &v) { return v.v2; });
    store_part(out.p3, i, run, [](const Values &v) { return v.v3; });
}

// Four-byte words of a pack, for shifting packs into place.
template <int Words> struct alignas(4 * Words) WordPack {
    uint32_t w[Words];
};

// The Result (a pack, or packs, of T) that starts shift_bytes into the aligned words lo and runs on
// into hi: the words moved down by shift_bytes / 4 one bit of it at a time (a select per word and
// bit, no run-time register indexing), then byte permutes, which types of whole words never need.
template <typename Result, typename T, int Words>
__device__ __forceinline__ Result splice_words(const WordPack<Words> &lo, const WordPack<Words> &hi,
                                               int shift_bytes)
{
    constexpr bool kWholeWordShift = kStorageSize<T> % 4 == 0;
    static_assert(sizeof(Result) == sizeof(WordPack<Words>));
    uint32_t joined[2 * Words];
#pragma unroll
    for (int k = 0; k < Words; ++k) {
        joined[k] = lo.w[k];
        joined[Words + k] = hi.w[k];
    }
    const int word_shift = shift_bytes >> 2;
#pragma unroll
    for (int bit = Words / 2; bit >= 1; bit /= 2) {
#pragma unroll
        for (int k = 0; k + bit < 2 * Words; ++k)
            joined[k] = (word_shift & bit) ? joined[k + bit] : joined[k];
    }
    const unsigned selector = 0x3210u + 0x1111u * static_cast<unsigned>(shift_bytes & 3);
    WordPack<Words> spliced;
#pragma unroll
    for (int k = 0; k < Words; ++k)
        spliced.w[k] = kWholeWordShift ? joined[k] : __byte_perm(joined[k], joined[k + 1], selector);
    Result result;
    memcpy(&result, &spliced, sizeof result);
    return result;
}

// Functors with a quad form (four 1-byte inputs of a word at once) at packs of whole words: their
// runs stay in word registers from load to store. Through the packs' byte arrays the compiler split
// each word into bytes and joined them again: add bool's bulk step took 210 instructions per 16
// bytes, 72 without. Narrower packs take the scalar form.
template <typename F, int P> inline constexpr bool kWordwise = P % 4 == 0 && F::kHasQuad;

// Only the word form looks codes up in a per-block table (kHasTable): those kernels fill it first.
template <typename F, int P> inline constexpr bool kFillsTable = kHasTable<F> &&kWordwise<F, P>;

// What a thread holds of A packs of an input or of out: words for wordwise functors, else the packs.
template <typename T, int P, int A> __host__ __device__ constexpr int run_words()
{
    return static_cast<int>(P * A * kStorageSize<T> / 4);
}
template <typename F, int P, int A, typename T>
using RunOf = Conditional<kWordwise<F, P> && !kSame<T, NoInput>, WordPack<run_words<T, P, A>()>, PackRun<T, P, A>>;

// The functor on one run of A packs.
template <typename F, int P, int A>
__device__ __forceinline__ void apply_run(const F &f, RunOf<F, P, A, typename F::Out> &out,
                                          const RunOf<F, P, A, typename F::In1> &a,
                                          const RunOf<F, P, A, typename F::In2> &b,
                                          const RunOf<F, P, A, In3<F>> &c = {}, const RunOf<F, P, A, In4<F>> &d = {})
{
    if constexpr (kWordwise<F, P>) {
        static_assert(kStorageSize<typename F::In1> == 1 && kStorageSize<typename F::In2> == 1);
#pragma unroll
        for (int k = 0; k < P * A / 4; ++k) {
            const auto result = [&] {
                if constexpr (kSame<typename F::In2, NoInput>)
                    return f.quad(a.w[k]);
                else
                    return f.quad(a.w[k], b.w[k]);
            }();
            static_assert(sizeof result == 4 * sizeof(typename F::Out)); // a word, or two for 2-byte outs
            memcpy(&out.w[k * sizeof(typename F::Out)], &result, sizeof result);
        }
    } else {
#pragma unroll
        for (int j = 0; j < A; ++j)
            apply_pack(f, out.pack[j], a.pack[j], b.pack[j], c.pack[j], d.pack[j]);
    }
}

} // namespace ew
