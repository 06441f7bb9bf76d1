// The elementwise kernel, its launch function per pack width, and the table rows built from them.
#pragma once

#include <algorithm>
#include <cstring>
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

// One element of the second input, or nothing for unary ops.
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
                                           const Pack<typename F::In1, P> &a,
                                           const Pack<typename F::In2, P> &b)
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

// Functors with a per-block table (Cast's kByteTable) have it filled before any pack is computed.
template <typename F, typename = void> inline constexpr bool kHasTable = false;
template <typename F>
inline constexpr bool kHasTable<F, std::void_t<decltype(F::kByteTable)>> = F::kByteTable;

template <typename F>
inline constexpr size_t kWidestElement =
    std::max({kStorageSize<typename F::Out>, kStorageSize<typename F::In1>, kStorageSize<typename F::In2>});

#ifndef EW_TUNE_MIN_BLOCKS
#define EW_TUNE_MIN_BLOCKS 1 /* resident blocks per SM the compiler must allow (caps registers) */
#endif

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
// bytes, 72 without (bench/NOTES.md §18). Narrower packs take the scalar form.
template <typename F, int P> inline constexpr bool kWordwise = P % 4 == 0 && F::kHasQuad;

// Only the word form looks codes up in a per-block table (kHasTable): those kernels fill it first.
template <typename F, int P> inline constexpr bool kFillsTable = kHasTable<F> &&kWordwise<F, P>;

// What a thread holds of A packs of an input or of out: words for wordwise functors, else the packs.
template <typename T, int P, int A> constexpr int run_words()
{
    return static_cast<int>(P * A * kStorageSize<T> / 4);
}
template <typename F, int P, int A, typename T>
using RunOf = std::conditional_t<kWordwise<F, P> && !std::is_same_v<T, NoInput>,
                                 WordPack<run_words<T, P, A>()>, PackRun<T, P, A>>;

// The functor on one run of A packs.
template <typename F, int P, int A>
__device__ __forceinline__ void apply_run(const F &f, RunOf<F, P, A, typename F::Out> &out,
                                          const RunOf<F, P, A, typename F::In1> &a,
                                          const RunOf<F, P, A, typename F::In2> &b)
{
    if constexpr (kWordwise<F, P>) {
        static_assert(kStorageSize<typename F::In1> == 1 && kStorageSize<typename F::In2> == 1);
#pragma unroll
        for (int k = 0; k < P * A / 4; ++k) {
            const auto result = [&] {
                if constexpr (std::is_same_v<typename F::In2, NoInput>)
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
            apply_pack(f, out.pack[j], a.pack[j], b.pack[j]);
    }
}

// How the direct kernel reaches its pointers (plan.kernel, src/plan.h): Aligned, every pointer at one phase
// after the head (EW_PLAN_KERNEL_ALIGNED); Shifted, out aligned and the inputs read through shifted
// windows (EW_PLAN_KERNEL_SHIFTED); OutShifted, the input aligned and out's runs stored element by
// element (EW_PLAN_KERNEL_OUT_SHIFTED). One value, since the three exclude each other.
enum class Window { Aligned, Shifted, OutShifted };

// Reads input runs of A packs (A > 1 only unshifted). Aligned: run i of the input. Shifted: the
// pack that starts shift bytes into aligned pack i, spliced from aligned packs i and i + 1 with byte
// permutes, so that every memory access stays a whole aligned pack whatever the input's misalignment
// relative to out.
template <typename T, int P, bool Shifted, int A, typename Run> struct PackReader {
    static_assert(A == 1 || !Shifted);
    static_assert(sizeof(Run) == sizeof(PackRun<T, P, A>));
    static constexpr int kWords = (sizeof(Run) + 3) / 4;
    const T *base; // the input at the body's first element; for Shifted, rounded down to a pack
    int shift_bytes;

    // Run i when i < runs; past the end, loads nothing.
    __device__ __forceinline__ Run operator()(int64_t i, int64_t runs) const
    {
        const auto *aligned = reinterpret_cast<const Run *>(base);
        if constexpr (std::is_same_v<T, NoInput>) {
            return {};
        } else if constexpr (!Shifted || sizeof(Run) % 4 != 0) {
            return i < runs ? load_pack(aligned + i) : Run{};
        } else {
            if (shift_bytes == 0)
                return i < runs ? load_pack(aligned + i) : Run{};
            const auto *words = reinterpret_cast<const WordPack<kWords> *>(base);
            WordPack<kWords> lo{}, hi{};
            if (i < runs) {
                lo = load_pack(words + i);
                hi = load_pack(words + i + 1); // the plan keeps it inside the input
            }
            return splice_words<Run, T>(lo, hi, shift_bytes);
        }
    }
};

// Where the body of a call lies: elements [0, head) and [body_tail, n) are done one by one.
struct BodyPlan {
    int64_t n, head, packs;
    int shift_bytes[2];
};

// The end of the last whole run of A packs: the body's threads stop there.
template <int P, int A> __host__ __device__ __forceinline__ int64_t body_tail(const BodyPlan &body)
{
    return body.head + body.packs / A * A * P;
}

// 1 where the call has elements to do one by one (the head, the tail), 0 else. Both kernels put them
// in an extra block, the grid's last, which the host counts into the grid by this same function.
template <int P, int A> __host__ __device__ __forceinline__ unsigned edge_blocks(const BodyPlan &body)
{
    return body.head > 0 || body.n > body_tail<P, A>(body);
}

// The head and the tail, element by element, in a block of their own after the body's: done by
// body threads before or after their packs, their round trips to memory would add to those
// threads' time, which in a one-wave grid is the kernel's. index(j) is edge j's element.
template <typename F, typename Index>
__device__ __forceinline__ void edge_elements(const F &f, typename F::Out *out, const typename F::In1 *a,
                                              const typename F::In2 *b, int64_t edges, Index index)
{
    for (int64_t j = threadIdx.x; j < edges; j += blockDim.x)
        out[index(j)] = apply(f, a[index(j)], load(b, index(j)));
}

// First thing in every kernel. A dependent launch (cc >= 9.0) lets this grid start while the
// stream's previous kernel finishes: the wait holds every thread until that kernel has completed
// and its writes are visible, so nothing is read or written early; once every block of this grid
// has started, the stream's next dependent kernel may take the SM slots this one frees. Both are
// no-ops in an ordinary launch.
__device__ __forceinline__ void follow_previous_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// A run of out at an address aligned to its element only (out-shifted plans). Four 1-byte elements
// (f32 -> fp8) go as 16-bit stores where the address allows (two at phase 2, a byte, a half and a
// byte at odd phases; measured 2.6 to 3.4 % faster than four byte stores, bench/NOTES.md §29); others
// one element a store, each moved as an integer of its size: ptxas 13.0 compiles byte stores of an
// f16 or bf16 result (a memcpy's lowering) wrong, for f16 as a conversion of the value to u8 instead
// of its low byte (scripts/gpu/repro/f16_byte_store.cu).
template <typename Out, typename Run> __device__ __forceinline__ void store_unaligned(Out *p, const Run &run)
{
    if constexpr (sizeof(Run) == 4 && sizeof(Out) == 1) {
        const uint32_t word = bits_as<uint32_t>(run);
        auto *bytes = reinterpret_cast<unsigned char *>(p);
        if ((reinterpret_cast<uintptr_t>(p) & 1) == 0) {
            *reinterpret_cast<uint16_t *>(bytes) = static_cast<uint16_t>(word);
            *reinterpret_cast<uint16_t *>(bytes + 2) = static_cast<uint16_t>(word >> 16);
        } else {
            bytes[0] = static_cast<unsigned char>(word);
            *reinterpret_cast<uint16_t *>(bytes + 1) = static_cast<uint16_t>(word >> 8);
            bytes[3] = static_cast<unsigned char>(word >> 24);
        }
    } else {
        using Unit = typename VectorOf<sizeof(Out)>::Type;
        constexpr int kUnits = static_cast<int>(sizeof(Run) / sizeof(Out));
        const auto units = bits_as<Pack<Unit, kUnits>>(run);
#pragma unroll
        for (int k = 0; k < kUnits; ++k)
            reinterpret_cast<Unit *>(p)[k] = units.v[k];
    }
}

// Whole runs of A packs after the head's elements, which leave out pack-aligned (one vector access
// each), each thread loading `Unroll` independent runs before computing any (bytes in flight); the
// head and the tail past the last whole run one by one, with the same functor, in the last block.
// Window::OutShifted (EW_PLAN_SHIFTS_OUT): the head aligned the input instead, and out's runs are written
// element by element.
template <typename F, int P, int Unroll, Window W, int A = 1>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS, EW_TUNE_MIN_BLOCKS)
    elementwise_kernel(F f, BodyPlan body, typename F::Out *out, const typename F::In1 *__restrict__ a,
                       const typename F::In2 *__restrict__ b)
{
    static_assert(A == 1 || W == Window::Aligned); // runs of several packs only where every pointer allows
    using Out = typename F::Out;
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    const int64_t head = body.head, runs = body.packs / A, tail = body_tail<P, A>(body);
    const unsigned edge_block = edge_blocks<P, A>(body);
    follow_previous_grid();
    if (edge_block && blockIdx.x == gridDim.x - 1) {
        edge_elements(f, out, a, b, head + (body.n - tail),
                      [=](int64_t j) { return j < head ? j : tail + (j - head); });
        return;
    }
    const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t threads = static_cast<int64_t>(gridDim.x - edge_block) * blockDim.x;
    if constexpr (kFillsTable<F, P>) {
        F::fill_table();
        __syncthreads();
    }

    using OutRun = RunOf<F, P, A, Out>;
    using In1Run = RunOf<F, P, A, In1>;
    using In2Run = RunOf<F, P, A, In2>;
    Out *const out_body = out + head; // run-aligned but where the head aligned the input (OutShifted)
    constexpr bool kShifted = W == Window::Shifted;
    const PackReader<In1, P, kShifted, A, In1Run> read_a{a + head - body.shift_bytes[0] / kStorageSize<In1>,
                                                         body.shift_bytes[0]};
    const PackReader<In2, P, kShifted, A, In2Run> read_b{
        std::is_same_v<In2, NoInput> ? b : b + head - body.shift_bytes[1] / kStorageSize<In2>,
        body.shift_bytes[1]};
    for (int64_t first = thread; first < runs; first += threads * Unroll) {
        In1Run a_in[Unroll];
        In2Run b_in[Unroll];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t i = first + u * threads;
            a_in[u] = read_a(i, runs);
            b_in[u] = read_b(i, runs);
        }
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t i = first + u * threads;
            if (i < runs) {
                OutRun result;
                apply_run<F, P, A>(f, result, a_in[u], b_in[u]);
                if constexpr (W == Window::OutShifted)
                    store_unaligned(out_body + i * P * A, result);
                else
                    store_pack(reinterpret_cast<OutRun *>(out_body) + i, result);
            }
        }
    }
}

// Launches Kernel straight through the driver with its context-independent handle: the runtime's
// own launch path measured about 0.3 us more per call from inside this library (bench/NOTES.md).
// A dependent launch may start while the stream's previous kernel finishes (follow_previous_grid
// keeps the order). Any failure is retried through the runtime, so errors read as the runtime's.
template <auto Kernel>
cudaError_t launch_kernel(unsigned blocks, size_t shared_bytes, cudaStream_t stream, void **params,
                          bool dependent)
{
    static const cudaKernel_t handle = [] {
        cudaKernel_t found = nullptr;
        if (cudaGetKernel(&found, reinterpret_cast<const void *>(Kernel)) != cudaSuccess) {
            cudaGetLastError();
            found = nullptr;
        }
        return found;
    }();
    // The dependent launch's one attribute; a plain launch passes none, where cuLaunchKernelEx does
    // what cuLaunchKernel does.
    const unsigned attributes = dependent ? 1u : 0u;
    CUlaunchAttribute driver_attribute{};
    driver_attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    driver_attribute.value.programmaticStreamSerializationAllowed = 1;
    const CUlaunchConfig driver_config{blocks,
                                       1,
                                       1,
                                       EW_PLAN_BLOCK_THREADS,
                                       1,
                                       1,
                                       static_cast<unsigned>(shared_bytes),
                                       reinterpret_cast<CUstream>(stream),
                                       &driver_attribute,
                                       attributes};
    const DriverLaunch driver = driver_launch();
    if (handle != nullptr && driver != nullptr && driver(&driver_config, handle, params, nullptr) == 0)
        return cudaSuccess;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    const cudaLaunchConfig_t config{
        dim3(blocks), dim3(EW_PLAN_BLOCK_THREADS), shared_bytes, stream, &attribute, attributes};
    return cudaLaunchKernelExC(&config, reinterpret_cast<const void *>(Kernel), params);
}

// Launches Kernel(f, body, out, a, b) on the plan's grid and `extra_blocks` after it (the kernel's edge
// block: edge_blocks), with f built from the call's run-time values. Only a direct grid reaches the
// limit (bulk plans leave room), and its grid-stride loop covers the cut.
template <auto Kernel, typename F, typename Body>
cudaError_t launch_with(const ew_launch_args_t *args, Body body, unsigned extra_blocks, size_t shared_bytes)
{
    F f = F::make(*args);
    auto *out = static_cast<typename F::Out *>(args->out);
    auto *a = static_cast<const typename F::In1 *>(args->in[0]);
    auto *b = static_cast<const typename F::In2 *>(args->in[1]);
    void *params[] = {&f, &body, &out, &a, &b};
    const unsigned blocks = std::min<unsigned>(args->plan.blocks, INT32_MAX - extra_blocks) + extra_blocks;
    return launch_kernel<Kernel>(blocks, shared_bytes, args->stream, params, args->dependent_launch);
}

template <typename F, int P, Window W> cudaError_t launch(const ew_launch_args_t *args)
{
    constexpr int unroll = EW_PLAN_UNROLL(P * kWidestElement<F>, W == Window::Shifted);
    const ew_plan_t &plan = args->plan;
    const BodyPlan body{args->n,
                        plan.head,
                        plan.packs,
                        {plan.shift[0] * static_cast<int>(kStorageSize<typename F::In1>),
                         plan.shift[1] * static_cast<int>(kStorageSize<typename F::In2>)}};
    // The same bytes in flight per thread, moved A packs to an access where the plan allows it.
    constexpr int A = EW_PLAN_DIRECT_ACCESS_PACKS(kWidestElement<F>);
    if constexpr (A > 1 && W == Window::Aligned && P == EW_PLAN_MAX_PACK(kWidestElement<F>))
        if (plan.access_packs == A)
            return launch_with<&elementwise_kernel<F, P, (unroll > A ? unroll / A : 1), Window::Aligned, A>,
                               F>(args, body, edge_blocks<P, A>(body), 0);
    return launch_with<&elementwise_kernel<F, P, unroll, W>, F>(args, body, edge_blocks<P, 1>(body), 0);
}

} // namespace ew

#include "bulk.cuh"

namespace ew {

// One kernel per legal pack width, the shifted-window (or out-shifted) kernel and the bulk-copy kernel for
// the widest: a launcher slot per plan.kernel (ew_launcher_pick).
template <typename F> constexpr ew_launcher_t make_launcher()
{
    ew_launcher_t launcher{};
    if constexpr (F::kSupported) {
        constexpr int widest_pack = EW_PLAN_MAX_PACK(kWidestElement<F>);
        launcher.by_pack[0] = &launch<F, 1, Window::Aligned>;
        launcher.by_pack[1] = &launch<F, 2, Window::Aligned>;
        if constexpr (widest_pack >= 4)
            launcher.by_pack[2] = &launch<F, 4, Window::Aligned>;
        if constexpr (widest_pack >= 8)
            launcher.by_pack[3] = &launch<F, 8, Window::Aligned>;
        constexpr bool words_in = EW_PLAN_WHOLE_WORDS(widest_pack, kStorageSize<typename F::In1>) &&
                                  (std::is_same_v<typename F::In2, NoInput> ||
                                   EW_PLAN_WHOLE_WORDS(widest_pack, kStorageSize<typename F::In2>));
        constexpr int pointers = std::is_same_v<typename F::In2, NoInput> ? 2 : 3;
        if constexpr (EW_PLAN_SHIFTS_OUT(pointers, kStorageSize<typename F::Out>,
                                         kStorageSize<typename F::In1>))
            launcher.out_shifted = &launch<F, widest_pack, Window::OutShifted>;
        else if constexpr (words_in)
            launcher.shifted = &launch<F, widest_pack, Window::Shifted>;
        launcher.bulk = &launch_bulk<F, widest_pack>;
        launcher.block_table = kHasTable<F>;
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
    return DispatchRow{
        {ew_launcher_t{}, make_launcher<Cast<TypeOf<static_cast<ew_dtype_t>(D + 1)>, TypeOf<From>>>()...}};
}
template <ew_dtype_t From> constexpr DispatchRow cast_row()
{
    return cast_row<From>(std::make_index_sequence<EW_DTYPE_END - 1>{});
}

} // namespace ew
