// SPDX-License-Identifier: Apache-2.0
// The strided kernels, over a coalesced layout and its plan (src/layout.h): the rows kernel takes out
// dense over one or two dimensions in whole packs and reads each input whole, as a scalar or along the
// row; the gather kernel walks out's flat index in packs (whole aligned packs where out is dense) and
// reads each input as its access says; the tiled kernel moves tiles of dimensions 0 and tile_dim through
// shared memory so that an input transposed against out is read along its own contiguous dimension. Offsets
// are 64-bit and elements of each operand's own type; the functors are the flat calls'.
#pragma once

#include <cstdint>
#include <type_traits>

#include "edges.cuh"
#include "launch.cuh"
#include "layout.h"
#include "pack.cuh"
#include "strided.h"

namespace ew {

__device__ __forceinline__ uint64_t divide(const ew_divider_t &d, uint64_t n)
{
    return (__umul64hi(n, d.magic) + n) >> d.shift;
}

// The element offsets of every operand at one flat index, walked forward one element at a time.
struct Walker {
    int64_t inner;  // coordinate along dimension 0
    int64_t second; // along dimension 1
    int64_t off[3]; // out's, then the inputs', in their own elements

    __device__ __forceinline__ void seek(const ew_strided_plan_t &plan, int64_t index)
    {
        uint64_t rest = static_cast<uint64_t>(index);
        off[0] = off[1] = off[2] = 0;
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
            for (int k = 0; k < 3; ++k)
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
            for (int k = 0; k < 3; ++k)
                off[k] += plan.stride[k][0];
        } else if (plan.ndim > 2 && ++second == plan.shape[1]) {
            seek(plan, index);
        } else {
            inner = 0;
#pragma unroll
            for (int k = 0; k < 3; ++k)
                off[k] += plan.carry[k];
        }
    }
};

// One element of an input: at flat index i (LINEAR), the broadcast scalar (SCALAR), or at its walked
// offset (INDEXED).
template <typename T>
__device__ __forceinline__ T element(const T *p, ew_access_t access, int64_t i, int64_t offset, T scalar)
{
    if constexpr (std::is_same_v<T, NoInput>)
        return {};
    else
        return access == EW_ACCESS_SCALAR ? scalar : p[access == EW_ACCESS_LINEAR ? i : offset];
}

// The dense-out body of the gather and rows kernels: each thread takes Unroll packs of P elements at a
// time from out's head on, has load(i, a_pack, b_pack) fetch the inputs of every one (the pack at flat
// index i) before it computes any, then applies the functor to each and stores it whole.
template <typename F, int P, int Unroll, typename Load>
__device__ __forceinline__ void dense_packs(const F &f, const ew_strided_plan_t &plan, int64_t thread,
                                            int64_t threads, typename F::Out *out, Load load)
{
    for (int64_t first = thread; first < plan.packs; first += threads * Unroll) {
        Pack<typename F::In1, P> a_in[Unroll];
        Pack<typename F::In2, P> b_in[Unroll];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t p = first + u * threads;
            if (p < plan.packs)
                load(plan.head + p * P, a_in[u], b_in[u]);
        }
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const int64_t p = first + u * threads;
            if (p < plan.packs) {
                Pack<typename F::Out, P> result;
                apply_pack(f, result, a_in[u], b_in[u]);
                store_pack(reinterpret_cast<Pack<typename F::Out, P> *>(out + plan.head + p * P), result);
            }
        }
    }
}

// The gather kernel. out dense (access PACKED): the head aligns it, then dense_packs, every input's pack
// loaded whole, element by element, or once for a broadcast scalar. out indexed: every element
// at its walked offset. The head and the tail past the last whole pack go element by element first.
template <typename F, int P, int Unroll>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS)
    gather_kernel(F f, ew_strided_plan_t plan, typename F::Out *out, const typename F::In1 *__restrict__ a,
                  const typename F::In2 *__restrict__ b)
{
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    follow_previous_grid();
    const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const ew_access_t access_out = plan.access[0], access_a = plan.access[1], access_b = plan.access[2];
    const In1 a_scalar = access_a == EW_ACCESS_SCALAR ? a[0] : In1{};
    const In2 b_scalar = access_b == EW_ACCESS_SCALAR ? load(b, 0) : In2{};

    const int64_t body_end = plan.head + plan.packs * P;
    const int64_t edges = plan.head + (plan.n - body_end);
    for (int64_t j = thread; j < edges; j += threads) {
        const int64_t i = j < plan.head ? j : body_end + (j - plan.head);
        Walker w{};
        w.seek(plan, i);
        out[w.off[0]] = apply(f, a[w.off[1]], load(b, w.off[2]));
    }

    const bool walks =
        access_out == EW_ACCESS_INDEXED || access_a == EW_ACCESS_INDEXED || access_b == EW_ACCESS_INDEXED;
    if (access_out == EW_ACCESS_INDEXED) {
        for (int64_t p = thread; p < plan.packs; p += threads) {
            const int64_t i = plan.head + p * P;
            Walker w{};
            w.seek(plan, i);
#pragma unroll
            for (int k = 0; k < P; ++k) {
                out[w.off[0]] = apply(f, element(a, access_a, i + k, w.off[1], a_scalar),
                                      element(b, access_b, i + k, w.off[2], b_scalar));
                if (k + 1 < P)
                    w.step(plan, i + k + 1);
            }
        }
        return;
    }

    dense_packs<F, P, Unroll>(
        f, plan, thread, threads, out, [&](int64_t i, Pack<In1, P> &a_in, Pack<In2, P> &b_in) {
            if (access_a == EW_ACCESS_PACKED)
                a_in = load_pack(reinterpret_cast<const Pack<In1, P> *>(a + i));
            if constexpr (!std::is_same_v<In2, NoInput>)
                if (access_b == EW_ACCESS_PACKED)
                    b_in = load_pack(reinterpret_cast<const Pack<In2, P> *>(b + i));
            const bool elementwise = access_a != EW_ACCESS_PACKED ||
                                     (!std::is_same_v<In2, NoInput> && access_b != EW_ACCESS_PACKED);
            if (elementwise) {
                Walker w{}; // a scalar's offset stays 0
                if (walks)
                    w.seek(plan, i);
#pragma unroll
                for (int k = 0; k < P; ++k) {
                    if (access_a != EW_ACCESS_PACKED)
                        a_in.v[k] = element(a, access_a, i + k, w.off[1], a_scalar);
                    if constexpr (!std::is_same_v<In2, NoInput>)
                        if (access_b != EW_ACCESS_PACKED)
                            b_in.v[k] = element(b, access_b, i + k, w.off[2], b_scalar);
                    if (walks && k + 1 < P)
                        w.step(plan, i + k + 1);
                }
            }
        });
}

// One input's pack at out's flat index i = r * C + c (rows of C = plan.shape[0] elements; r = 0 over one
// dimension), for an input neither packed nor a scalar: one vector access where the pack lies in the
// row, contiguous and aligned; one load where the input is broadcast along the row; else element by
// element, carried into the next row where the row ends.
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> load_along_row(const ew_strided_plan_t &plan, int k, const T *p,
                                                     int64_t c, int64_t r)
{
    Pack<T, P> in;
    const int64_t row = plan.shape[0], step = plan.stride[k][0];
    int64_t offset = c * step + (plan.ndim > 1 ? r * plan.stride[k][1] : 0);
    if (c + P <= row) {
        if (step == 1 && (reinterpret_cast<uintptr_t>(p + offset) & (sizeof(Pack<T, P>) - 1)) == 0)
            return load_pack(reinterpret_cast<const Pack<T, P> *>(p + offset));
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

template <typename T, int P>
__device__ __forceinline__ Pack<T, P> load_row_input(const ew_strided_plan_t &plan, int k, const T *p,
                                                     int64_t i, int64_t c, int64_t r, T scalar)
{
    Pack<T, P> in{};
    if constexpr (!std::is_same_v<T, NoInput>) {
        if (plan.access[k] == EW_ACCESS_PACKED)
            return load_pack(reinterpret_cast<const Pack<T, P> *>(p + i));
        if (plan.access[k] != EW_ACCESS_SCALAR)
            return load_along_row<T, P>(plan, k, p, c, r);
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

// Resident blocks the rows kernel asks of ptxas: a full SM where every operand is 4 bytes (on sm_90 8
// blocks, 32 registers: f32 broadcasts +1 to +12 % over no bound); 0 otherwise, which leaves ptxas its
// own choice (f16 add: 56 registers; a bound of 1 gave it 64, bounds of 6 or 8 spilled and ran at
// half speed). Measured on sm_90 only; other architectures take the same rule.
template <typename F>
inline constexpr int
    kRowsMinBlocks = kStorageSize<typename F::Out> == 4 && kStorageSize<typename F::In1> == 4 &&
                             (std::is_same_v<typename F::In2, NoInput> || kStorageSize<typename F::In2> == 4)
                         ? kSmThreads / EW_PLAN_BLOCK_THREADS
                         : 0;

// The rows kernel: out dense over at most two dimensions. The head and the tail past the last whole pack
// go element by element in one extra block at the end of the grid; the other blocks run dense_packs,
// each input's pack loaded by load_row_input.
template <typename F, int P, int Unroll>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS, kRowsMinBlocks<F>)
    rows_kernel(F f, ew_strided_plan_t plan, typename F::Out *out, const typename F::In1 *__restrict__ a,
                const typename F::In2 *__restrict__ b)
{
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    follow_previous_grid();
    const int64_t body_end = plan.head + plan.packs * P;
    const int64_t edges = plan.head + (plan.n - body_end);
    if (edges > 0 && blockIdx.x == gridDim.x - 1) {
        for (int64_t j = threadIdx.x; j < edges; j += blockDim.x) {
            const int64_t i = j < plan.head ? j : body_end + (j - plan.head);
            Walker w{};
            w.seek(plan, i);
            out[i] = apply(f, a[w.off[1]], load(b, w.off[2]));
        }
        return;
    }
    const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t threads = static_cast<int64_t>(gridDim.x - (edges > 0)) * blockDim.x;
    const bool along_rows = (plan.access[1] != EW_ACCESS_PACKED && plan.access[1] != EW_ACCESS_SCALAR) ||
                            (!std::is_same_v<In2, NoInput> && plan.access[2] != EW_ACCESS_PACKED &&
                             plan.access[2] != EW_ACCESS_SCALAR);
    const In1 a_scalar = plan.access[1] == EW_ACCESS_SCALAR ? a[0] : In1{};
    const In2 b_scalar = plan.access[2] == EW_ACCESS_SCALAR ? load(b, 0) : In2{};

    dense_packs<F, P, Unroll>(
        f, plan, thread, threads, out, [&](int64_t i, Pack<In1, P> &a_in, Pack<In2, P> &b_in) {
            int64_t r = 0, c = i;
            if (along_rows) {
                r = static_cast<int64_t>(divide(plan.divider[0], static_cast<uint64_t>(i)));
                c = i - r * plan.shape[0];
            }
            a_in = load_row_input<In1, P>(plan, 1, a, i, c, r, a_scalar);
            b_in = load_row_input<In2, P>(plan, 2, b, i, c, r, b_scalar);
        });
}

// Shared memory for one tiled input: a tile with a column of padding, so that reading it across
// (a column) touches EW_TILE different banks for 4-byte types.
template <typename T> struct Tile {
    static constexpr int kBytes = std::is_same_v<T, NoInput> ? 1 : EW_TILE * (EW_TILE + 1) * sizeof(T);
    __device__ __forceinline__ static T &at(unsigned char *raw, int row, int column)
    {
        return reinterpret_cast<T *>(raw)[row * (EW_TILE + 1) + column];
    }
};

// The tiled kernel: a block per tile of EW_TILE x EW_TILE elements of dimensions 0 and t (tile_dim), a
// thread per column and EW_TILE / EW_TILE_ROWS rows. Tiled inputs are read first, with consecutive
// threads along t (the input's contiguous dimension), into shared memory; then every thread computes
// along dimension 0 (out's), reading the other inputs directly, and stores out.
template <typename F>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS)
    tiled_kernel(F f, ew_strided_plan_t plan, typename F::Out *out, const typename F::In1 *__restrict__ a,
                 const typename F::In2 *__restrict__ b)
{
    using In1 = typename F::In1;
    using In2 = typename F::In2;
    static_assert(EW_TILE * EW_TILE_ROWS == EW_PLAN_BLOCK_THREADS);
    __shared__ alignas(16) unsigned char tile_a[Tile<In1>::kBytes];
    __shared__ alignas(16) unsigned char tile_b[Tile<In2>::kBytes];
    follow_previous_grid();
    const int t = plan.tile_dim;
    const ew_access_t access_a = plan.access[1], access_b = plan.access[2];
    const int column = threadIdx.x % EW_TILE, row0 = threadIdx.x / EW_TILE;
    const In1 a_scalar = access_a == EW_ACCESS_SCALAR ? a[0] : In1{};
    const In2 b_scalar = access_b == EW_ACCESS_SCALAR ? load(b, 0) : In2{};

    for (int64_t tile = blockIdx.x; tile < plan.tiles; tile += gridDim.x) {
        uint64_t rest = static_cast<uint64_t>(tile);
        int64_t x0 = 0, y0 = 0, base[3] = {0, 0, 0};
#pragma unroll
        for (int e = 0; e < EW_MAX_DIMS; ++e) {
            if (e == plan.ndim)
                break;
            const uint64_t next = divide(plan.tile_divider[e], rest);
            const int64_t c = static_cast<int64_t>(rest - next * static_cast<uint64_t>(plan.tile_extent[e]));
            rest = next;
            if (e == 0) {
                x0 = c * EW_TILE;
            } else if (e == 1) {
                y0 = c * EW_TILE;
            } else {
#pragma unroll
                for (int k = 0; k < 3; ++k)
                    base[k] += c * plan.stride[k][plan.tile_order[e]];
            }
        }
        const int64_t xs = plan.shape[0] - x0 < EW_TILE ? plan.shape[0] - x0 : EW_TILE;
        const int64_t ys = plan.shape[t] - y0 < EW_TILE ? plan.shape[t] - y0 : EW_TILE;
        const int64_t corner[3] = {base[0] + x0 * plan.stride[0][0] + y0 * plan.stride[0][t],
                                   base[1] + x0 * plan.stride[1][0] + y0 * plan.stride[1][t],
                                   base[2] + x0 * plan.stride[2][0] + y0 * plan.stride[2][t]};

        // Tiled inputs in: row r of the tile is x0 + r along 0, column c is y0 + c along t.
        if (access_a == EW_ACCESS_TILED || access_b == EW_ACCESS_TILED) {
#pragma unroll
            for (int r = row0; r < EW_TILE; r += EW_TILE_ROWS) {
                if (r < xs && column < ys) {
                    if (access_a == EW_ACCESS_TILED)
                        Tile<In1>::at(tile_a, r, column) =
                            a[corner[1] + r * plan.stride[1][0] + column * plan.stride[1][t]];
                    if constexpr (!std::is_same_v<In2, NoInput>)
                        if (access_b == EW_ACCESS_TILED)
                            Tile<In2>::at(tile_b, r, column) =
                                b[corner[2] + r * plan.stride[2][0] + column * plan.stride[2][t]];
                }
            }
            __syncthreads();
        }
        // out along 0: thread `column` takes x0 + column, its rows y0 + r.
#pragma unroll
        for (int r = row0; r < EW_TILE; r += EW_TILE_ROWS) {
            if (column < xs && r < ys) {
                const In1 av = access_a == EW_ACCESS_TILED ? Tile<In1>::at(tile_a, column, r)
                               : access_a == EW_ACCESS_SCALAR
                                   ? a_scalar
                                   : a[corner[1] + column * plan.stride[1][0] + r * plan.stride[1][t]];
                In2 bv{};
                if constexpr (!std::is_same_v<In2, NoInput>)
                    bv = access_b == EW_ACCESS_TILED ? Tile<In2>::at(tile_b, column, r)
                         : access_b == EW_ACCESS_SCALAR
                             ? b_scalar
                             : b[corner[2] + column * plan.stride[2][0] + r * plan.stride[2][t]];
                out[corner[0] + column * plan.stride[0][0] + r * plan.stride[0][t]] = apply(f, av, bv);
            }
        }
        if (access_a == EW_ACCESS_TILED || access_b == EW_ACCESS_TILED)
            __syncthreads(); // the tile is read before the next one overwrites it
    }
}

// The launches: the functor built from the call's values, the plan by value.
template <auto Kernel, typename F> cudaError_t launch_strided(const ew_strided_args_t *args)
{
    F f = F::make(args->params);
    ew_strided_plan_t plan = args->plan;
    auto *out = static_cast<typename F::Out *>(args->out);
    auto *a = static_cast<const typename F::In1 *>(args->in[0]);
    auto *b = static_cast<const typename F::In2 *>(args->in[1]);
    void *params[] = {&f, &plan, &out, &a, &b};
    return launch_kernel<Kernel>(plan.blocks, 0, args->stream, params, args->dependent_launch);
}

template <typename F, int P> cudaError_t launch_gather(const ew_strided_args_t *args)
{
    return launch_strided<&gather_kernel<F, P, EW_GATHER_UNROLL>, F>(args);
}

template <typename F, int P> cudaError_t launch_rows(const ew_strided_args_t *args)
{
    return launch_strided<&rows_kernel<F, P, EW_GATHER_UNROLL>, F>(args);
}

template <typename F> cudaError_t launch_tiled(const ew_strided_args_t *args)
{
    return launch_strided<&tiled_kernel<F>, F>(args);
}

} // namespace ew
