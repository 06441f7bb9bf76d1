// SPDX-License-Identifier: Apache-2.0
// The direct kernel: each thread loads whole packs of every input straight from global memory (a few
// independent runs in flight), applies the functor and stores whole packs of out; the plan's head
// makes out (or, out-shifted, the input) aligned, and inputs at other phases are read through shifted
// windows. Runs on every GPU. NVRTC compiles it too: run-time compiled ops run this kernel, with up
// to four inputs (src/rtc/rtc.c).
#pragma once

#include "device/dependent.cuh"
#include "device/edges.cuh"
#include "device/pack.cuh"
#include "device/reduce.cuh"
#include "plan/plan.h"

namespace ew {

// How the direct kernel reaches its pointers (plan.kernel, src/plan/plan.h): Aligned, every pointer at one phase
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
        if constexpr (kSame<T, NoInput>) {
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

// An input at the body's first element; for shifted windows, rounded down to a pack (shift_bytes
// before it). NoInput pointers stay as they are.
template <typename T> __device__ __forceinline__ const T *input_body(const T *p, int64_t head, int shift_bytes)
{
    if constexpr (kSame<T, NoInput>)
        return p;
    else
        return p + head - shift_bytes / static_cast<int>(kStorageSize<T>);
}

// Where the body of a call lies (src/plan/plan.h, which the launch fills).
using BodyPlan = ew_body_plan_t;

// A run of out at an address aligned to its element only (out-shifted plans). Four 1-byte elements
// (f32 -> fp8) go as 16-bit stores where the address allows (two at phase 2, a byte, a half and a
// byte at odd phases; measured 2.6 to 3.4 % faster than four byte stores); others one element a
// store, each moved as an integer of its size: ptxas 13.0 compiles byte stores of an f16 or bf16
// result (a memcpy's lowering) wrong, for f16 as a conversion of the value to u8 instead of its low
// byte (tests/repro/f16_byte_store.cu).
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
// element by element. Inputs F lacks are NoInput pointers, never read.
template <typename F, int P, int Unroll, Window W, int A = 1>
__device__ __forceinline__ void
direct_body(const F &f, const BodyPlan &body, OutPointer<F> out, const typename F::In1 *__restrict__ a,
            const typename F::In2 *__restrict__ b, const In3<F> *__restrict__ c, const In4<F> *__restrict__ d)
{
    static_assert(A == 1 || W == Window::Aligned); // runs of several packs only where every pointer allows
    using Out = typename F::Out;
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    const int64_t head = body.head, runs = body.packs / A, tail = ew_body_tail(&body, P, A);
    const unsigned edge_block = ew_body_edge_blocks(&body, P, A);
    follow_previous_grid();
    if (edge_block && blockIdx.x == gridDim.x - 1) {
        edge_elements(
            f, out, a, b, head + (body.n - tail), [=](int64_t j) { return j < head ? j : tail + (j - head); }, c,
            d);
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
    using In3Run = RunOf<F, P, A, In3<F>>;
    using In4Run = RunOf<F, P, A, In4<F>>;
    const auto out_body = out_at(out, head); // run-aligned but where the head aligned the input (OutShifted)
    constexpr bool kShifted = W == Window::Shifted;
    const PackReader<In1, P, kShifted, A, In1Run> read_a{input_body(a, head, body.shift_bytes[0]),
                                                         body.shift_bytes[0]};
    const PackReader<In2, P, kShifted, A, In2Run> read_b{input_body(b, head, body.shift_bytes[1]),
                                                         body.shift_bytes[1]};
    const PackReader<In3<F>, P, kShifted, A, In3Run> read_c{input_body(c, head, body.shift_bytes[2]),
                                                            body.shift_bytes[2]};
    const PackReader<In4<F>, P, kShifted, A, In4Run> read_d{input_body(d, head, body.shift_bytes[3]),
                                                            body.shift_bytes[3]};
    for (int64_t first = thread; first < runs; first += threads * Unroll) {
        In1Run a_in[Unroll];
        In2Run b_in[Unroll];
        In3Run c_in[Unroll];
        In4Run d_in[Unroll];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t i = first + u * threads;
            a_in[u] = read_a(i, runs);
            b_in[u] = read_b(i, runs);
            c_in[u] = read_c(i, runs);
            d_in[u] = read_d(i, runs);
        }
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t i = first + u * threads;
            if (i < runs) {
                OutRun result;
                apply_run<F, P, A>(f, result, a_in[u], b_in[u], c_in[u], d_in[u]);
                if constexpr (W == Window::OutShifted)
                    store_unaligned(out_body + i * P * A, result);
                else
                    store_run(out_body, i, result);
            }
        }
    }
}

// Packs per thread per step of the direct kernel for F at pack P (EW_PLAN_UNROLL), and the same in
// runs of A packs an access.
template <typename F, int P, Window W>
inline constexpr int kDirectUnroll = EW_PLAN_UNROLL(P * kWidestElement<F>, W == Window::Shifted);
template <typename F, int P, int A>
inline constexpr int kRunsUnroll = kDirectUnroll<F, P, Window::Aligned> > A ? kDirectUnroll<F, P, Window::Aligned> / A : 1;

// The direct kernel. The launch bounds' one block per SM is the register budget these kernels were
// measured with.
template <typename F, int P, int Unroll, Window W, int A = 1>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS, 1)
    elementwise_kernel(F f, BodyPlan body, OutPointer<F> out, const typename F::In1 *__restrict__ a,
                       const typename F::In2 *__restrict__ b, const In3<F> *__restrict__ c,
                       const In4<F> *__restrict__ d)
{
    reducing(f, [&](const F &g) { direct_body<F, P, Unroll, W, A>(g, body, out, a, b, c, d); });
}

} // namespace ew
