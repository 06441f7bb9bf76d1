// Probe (bench/NOTES.md §30): how far above cudaMemcpy D2D can any kernel design move memory with the
// read/write mix of relu (1:1), of the widening casts (1:2, 1:4) and of add (2:1)? Target 1 asks
// 1.02x memcpy of every op at n >= 2^26; this times the designs a library could take on relu f32,
// add f32 and cast f32 <- f16 / f32 <- u8, one design a process, through the benchmark's harness
// (bench/harness.h: the same pools, timing, memcpy reference and bit-for-bit spot checks as ew-bench):
//   ceiling-probe --design NAME [ew-bench options]      (aligned offsets only)
// bench/probes/ceiling.sh runs every design and ew-bench on the same cases and prints the ratios.
// Built with the bench, so it builds in CI and never rots; the copy-engine design needs cc >= 9.0.
#include <cuda/ptx>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "harness.h"

namespace {

struct Relu {
    using In = float;
    using Out = float;
    static constexpr int inputs = 1;
    __device__ static float apply(float x, float) { return x > 0.0f || x != x ? x : 0.0f; }
};
struct Add {
    using In = float;
    using Out = float;
    static constexpr int inputs = 2;
    __device__ static float apply(float x, float y) { return x + y; }
};
struct WidenF16 {
    using In = __half;
    using Out = float;
    static constexpr int inputs = 1;
    __device__ static float apply(__half x, __half) { return __half2float(x); }
};
struct WidenU8 {
    using In = unsigned char;
    using Out = float;
    static constexpr int inputs = 1;
    __device__ static float apply(unsigned char x, unsigned char) { return static_cast<float>(x); }
};

enum LoadKind { kLoadPlain, kLoadNc, kLoadStreaming };
enum StoreKind { kStorePlain, kStoreStreaming };

template <typename T, int N> struct alignas(sizeof(T) * N) Pack {
    T v[N];
};

template <int L, typename P> __device__ __forceinline__ P load(const P *p)
{
    if constexpr (L == kLoadNc)
        return __ldg(p);
    else if constexpr (L == kLoadStreaming)
        return __ldcs(p);
    else
        return *p;
}

// The 16-byte loads and stores are done as uint4 (__ldg/__ldcs/__stcs need a vector type).
template <int L, typename T, int N> __device__ __forceinline__ Pack<T, N> load_pack(const Pack<T, N> *p)
{
    Pack<T, N> r;
    if constexpr (sizeof(r) == 16) {
        const uint4 u = load<L>(reinterpret_cast<const uint4 *>(p));
        std::memcpy(&r, &u, 16);
    } else if constexpr (sizeof(r) == 8) {
        const uint2 u = load<L>(reinterpret_cast<const uint2 *>(p));
        std::memcpy(&r, &u, 8);
    } else {
        const unsigned u = load<L>(reinterpret_cast<const unsigned *>(p));
        std::memcpy(&r, &u, 4);
    }
    return r;
}
template <int S, typename T, int N>
__device__ __forceinline__ void store_pack(Pack<T, N> *p, const Pack<T, N> &v)
{
    static_assert(sizeof(v) == 16, "stores are 16 bytes");
    uint4 u;
    std::memcpy(&u, &v, 16);
    if constexpr (S == kStoreStreaming)
        __stcs(reinterpret_cast<uint4 *>(p), u);
    else
        *reinterpret_cast<uint4 *>(p) = u;
}

// U packs of 16 output bytes a thread, all loads issued before the first store; Stride: a grid-stride
// loop over a grid of resident blocks instead of one step over a full grid.
template <typename F, int U, int L, int S, bool Stride>
__global__ void __launch_bounds__(256)
    direct(float *out, const typename F::In *a, const typename F::In *b, int64_t n)
{
    constexpr int P = 16 / sizeof(float);
    using InPack = Pack<typename F::In, P>;
    using OutPack = Pack<float, P>;
    const int64_t packs = n / P;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x * U;
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x * U + threadIdx.x; base < packs;
         base += step) {
        InPack x[U], y[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t i = base + static_cast<int64_t>(u) * blockDim.x;
            if (i < packs) {
                x[u] = load_pack<L>(reinterpret_cast<const InPack *>(a) + i);
                if constexpr (F::inputs == 2)
                    y[u] = load_pack<L>(reinterpret_cast<const InPack *>(b) + i);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t i = base + static_cast<int64_t>(u) * blockDim.x;
            if (i < packs) {
                OutPack r;
#pragma unroll
                for (int k = 0; k < P; ++k)
                    r.v[k] = F::apply(x[u].v[k], F::inputs == 2 ? y[u].v[k] : x[u].v[k]);
                store_pack<S>(reinterpret_cast<OutPack *>(out) + i, r);
            }
        }
        if (!Stride)
            break;
    }
}

// The copy engine both ways: a tile of inputs into shared memory by cp.async.bulk, computed in place
// into an output tile, which cp.async.bulk writes back. One tile a block, full grid.
constexpr int kTileOut = 8192; // output bytes a tile
template <typename F>
__global__ void __launch_bounds__(256)
    engine(float *out, const typename F::In *a, const typename F::In *b, int64_t n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 // cp.async.bulk; setup() refuses older GPUs
    namespace ptx = cuda::ptx;
    using In = typename F::In;
    constexpr int kElems = kTileOut / sizeof(float);
    __shared__ alignas(128) In in_a[kElems];
    __shared__ alignas(128) In in_b[F::inputs == 2 ? kElems : 1];
    __shared__ alignas(128) float result[kElems];
    __shared__ uint64_t landed;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * kElems;
    const uint32_t in_bytes = kElems * sizeof(In);
    if (threadIdx.x == 0) {
        ptx::mbarrier_init(&landed, 1);
        ptx::fence_proxy_async(ptx::space_shared);
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, in_a, a + first, in_bytes, &landed);
        if constexpr (F::inputs == 2)
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, in_b, b + first, in_bytes, &landed);
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &landed,
                                       in_bytes * F::inputs);
    }
    __syncthreads();
    while (!ptx::mbarrier_try_wait_parity(&landed, 0))
        ;
    for (int k = threadIdx.x; k < kElems; k += blockDim.x)
        result[k] = F::apply(in_a[k], F::inputs == 2 ? in_b[k] : in_a[k]);
    ptx::fence_proxy_async(ptx::space_shared);
    __syncthreads();
    if (threadIdx.x == 0) {
        ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, out + first, result, kTileOut);
        ptx::cp_async_bulk_commit_group();
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
    }
#endif
}

using Launch = void (*)(float *out, const void *a, const void *b, int64_t n, cudaStream_t stream);

int sm_count;

template <typename F, int U, int L, int S, bool Stride>
void launch_direct(float *out, const void *a, const void *b, int64_t n, cudaStream_t stream)
{
    const int64_t blocks = Stride ? int64_t{sm_count} * 8 : (n / 4 + 256LL * U - 1) / (256LL * U);
    direct<F, U, L, S, Stride><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
        out, static_cast<const typename F::In *>(a), static_cast<const typename F::In *>(b), n);
}

template <typename F>
void launch_engine(float *out, const void *a, const void *b, int64_t n, cudaStream_t stream)
{
    engine<F><<<static_cast<unsigned>(n * sizeof(float) / kTileOut), 256, 0, stream>>>(
        out, static_cast<const typename F::In *>(a), static_cast<const typename F::In *>(b), n);
}

// One design: its kernel for each of the four cases.
struct Design {
    const char *name;
    Launch relu, add, widen_f16, widen_u8;
    bool engine; // cp.async.bulk both ways: cc >= 9.0, whole tiles
};

template <template <typename> class Make> constexpr Design design(const char *name, bool engine = false)
{
    return {name,  Make<Relu>::launch, Make<Add>::launch, Make<WidenF16>::launch, Make<WidenU8>::launch,
            engine};
}
template <int U, int L, int S, bool Stride> struct Direct {
    template <typename F> struct Of {
        static constexpr Launch launch = &launch_direct<F, U, L, S, Stride>;
    };
};
template <typename F> struct Engine {
    static constexpr Launch launch = &launch_engine<F>;
};

const Design kDesigns[] = {
    design<Direct<1, kLoadPlain, kStorePlain, false>::Of>("pack1"),
    design<Direct<2, kLoadPlain, kStorePlain, false>::Of>("pack2"),
    design<Direct<4, kLoadPlain, kStorePlain, false>::Of>("pack4"),
    design<Direct<2, kLoadNc, kStorePlain, false>::Of>("pack2-nc"),
    design<Direct<2, kLoadStreaming, kStoreStreaming, false>::Of>("pack2-cs"),
    design<Direct<2, kLoadPlain, kStoreStreaming, false>::Of>("pack2-stcs"),
    design<Direct<2, kLoadPlain, kStorePlain, true>::Of>("pack2-stride"),
    design<Engine>("engine", true),
};
const Design *chosen;

Launch find(const ewb_entry_t *e)
{
    if (e->op == EW_OP_RELU && e->out == EW_F32)
        return chosen->relu;
    if (e->op == EW_OP_ADD && e->out == EW_F32)
        return chosen->add;
    if (e->op == EW_OP_CAST && e->out == EW_F32 && e->in == EW_F16)
        return chosen->widen_f16;
    if (e->op == EW_OP_CAST && e->out == EW_F32 && e->in == EW_U8)
        return chosen->widen_u8;
    return nullptr;
}

int supports(void *, const ewb_entry_t *e) { return find(e) != nullptr; }

int setup(void *, int device)
{
    int major = 0;
    if (cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
        return -1;
    if (chosen->engine && major < 9) {
        std::fprintf(stderr, "ceiling-probe: design %s needs cc >= 9.0\n", chosen->name);
        return -1;
    }
    return 0;
}

// The designs move whole 16-byte packs (the copy engine whole tiles) from aligned pointers only.
int call(void *, const ewb_entry_t *e, int64_t n, void *out, const void *a, const void *b,
         cudaStream_t stream)
{
    const uintptr_t any =
        reinterpret_cast<uintptr_t>(out) | reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
    if (any % 16 != 0 || n % 4 != 0 || (chosen->engine && n * sizeof(float) % kTileOut != 0)) {
        std::fprintf(stderr, "ceiling-probe: aligned pointers and whole %s only\n",
                     chosen->engine ? "tiles" : "packs");
        return -1;
    }
    find(e)(static_cast<float *>(out), a, b, n, stream);
    const cudaError_t error = cudaPeekAtLastError();
    if (error == cudaSuccess)
        return 0;
    std::fprintf(stderr, "ceiling-probe %s: %s\n", chosen->name, cudaGetErrorName(error));
    return -1;
}

} // namespace

int main(int argc, char **argv)
{
    // --design NAME, taken out of the options before the harness parses the rest.
    const char *name = nullptr;
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--design") == 0 && i + 1 < argc)
            name = argv[++i];
        else
            argv[kept++] = argv[i];
    }
    for (const Design &d : kDesigns)
        if (name != nullptr && std::strcmp(d.name, name) == 0)
            chosen = &d;
    if (chosen == nullptr) {
        std::fprintf(stderr, "usage: ceiling-probe --design NAME [ew-bench options]; designs:");
        for (const Design &d : kDesigns)
            std::fprintf(stderr, " %s", d.name);
        std::fprintf(stderr, "\n");
        return 2;
    }
    static char impl_name[64], memcpy_name[80];
    std::snprintf(impl_name, sizeof impl_name, "probe-%s", chosen->name);
    std::snprintf(memcpy_name, sizeof memcpy_name, "memcpy_probe-%s", chosen->name);
    ewb_impl_t impl{};
    impl.name = impl_name;
    impl.memcpy_name = memcpy_name;
    impl.supports = supports;
    impl.setup = setup;
    impl.call = call;
    return ewb_main(kept, argv, &impl);
}
