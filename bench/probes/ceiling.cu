// Probe (bench/NOTES.md §30): how far above cudaMemcpy D2D can any kernel design move memory with the
// read/write mix of relu (1:1), of the widening casts (1:2, 1:4) and of add (2:1)? Target 1 asks
// 1.02x memcpy of every op at n >= 2^26; this measures the designs a library could take, in one
// process, against the same memcpy and the library itself. Built with the bench (target
// ceiling-probe, so it builds in CI and never rots); run it on a GPU of cc >= 9.0:
//   build/bench/probes/ceiling-probe
// Without such a GPU it says so and exits 0. Each design's output is compared bit for bit with the
// library's; a mismatch is printed and the exit status is 1. Timing: CUDA events, 3 warm-up calls,
// then 11 rounds in which every design times a batch of calls in turn (the first to go rotating), the
// median batch per call. Two slices per buffer alternate, each far larger than the 50 MiB L2.
#include <cuda/ptx>
#include <cuda_fp16.h>
#include <elementwise.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CHECK(x)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (x);                                                               \
        if (e_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(2);                                                                   \
        }                                                                                   \
    } while (0)

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
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 // cp.async.bulk; main() runs it only there
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

__global__ void fill(unsigned char *p, size_t bytes, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < bytes;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        if (i & 1)
            h &= ~0x40u; // the high byte of every f16 and f32: exponent below all ones, so finite
        p[i] = static_cast<unsigned char>(h | 1); // never zero
    }
}

__global__ void count_diffs(const unsigned *x, const unsigned *y, size_t words, unsigned long long *diffs)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        if (x[i] != y[i])
            atomicAdd(diffs, 1ull);
}

struct Design {
    std::string name;
    std::function<void(float *, const void *, const void *, cudaStream_t)> run;
};

static int sm_count;

template <typename F, int U, int L, int S, bool Stride> Design direct_design(const char *name, int64_t n)
{
    const int64_t packs = n / 4;
    const unsigned grid = Stride ? static_cast<unsigned>(sm_count * 8)
                                 : static_cast<unsigned>((packs + 256LL * U - 1) / (256LL * U));
    return {name, [=](float *o, const void *a, const void *b, cudaStream_t s) {
                direct<F, U, L, S, Stride><<<grid, 256, 0, s>>>(o, static_cast<const typename F::In *>(a),
                                                                static_cast<const typename F::In *>(b), n);
            }};
}

template <typename F>
static int probe(const char *label, int64_t n, ew_handle_t h, ew_dtype_t in_dtype, int log2n)
{
    using In = typename F::In;
    const size_t in_bytes = n * sizeof(In), out_bytes = n * sizeof(float);
    const size_t moved = in_bytes * F::inputs + out_bytes;
    unsigned char *a, *b, *out, *check, *copy_src, *copy_dst;
    CHECK(cudaMalloc(&a, 2 * in_bytes));
    CHECK(cudaMalloc(&b, F::inputs == 2 ? 2 * in_bytes : 16));
    CHECK(cudaMalloc(&out, 2 * out_bytes));
    CHECK(cudaMalloc(&check, out_bytes));
    CHECK(cudaMalloc(&copy_src, moved)); // memcpy moves half the bytes: two slices of moved / 2
    CHECK(cudaMalloc(&copy_dst, moved));
    fill<<<1024, 256>>>(a, 2 * in_bytes, 17u);
    if (F::inputs == 2)
        fill<<<1024, 256>>>(b, 2 * in_bytes, 91u);
    fill<<<1024, 256>>>(copy_src, moved, 5u);
    CHECK(cudaDeviceSynchronize());

    std::vector<Design> designs;
    designs.push_back({"cudaMemcpy", nullptr});
    designs.push_back({"library", [=](float *o, const void *x, const void *y, cudaStream_t s) {
                           ew_status_t st;
                           if (F::inputs == 2)
                               st = ew_binary(h, EW_OP_ADD, EW_F32, n, o, x, y, s);
                           else if (std::is_same_v<In, float>)
                               st = ew_unary(h, EW_OP_RELU, EW_F32, n, o, x, s);
                           else
                               st = ew_cast(h, EW_F32, in_dtype, n, o, x, s);
                           if (st != EW_SUCCESS)
                               std::exit(3);
                       }});
    designs.push_back(direct_design<F, 1, kLoadPlain, kStorePlain, false>("1 pack, full grid", n));
    designs.push_back(direct_design<F, 2, kLoadPlain, kStorePlain, false>("2 packs, full grid", n));
    designs.push_back(direct_design<F, 4, kLoadPlain, kStorePlain, false>("4 packs, full grid", n));
    designs.push_back(direct_design<F, 2, kLoadNc, kStorePlain, false>("2 packs, ld.nc", n));
    designs.push_back(direct_design<F, 2, kLoadStreaming, kStoreStreaming, false>("2 packs, ld.cs st.cs", n));
    designs.push_back(direct_design<F, 2, kLoadPlain, kStoreStreaming, false>("2 packs, st.cs", n));
    designs.push_back(direct_design<F, 2, kLoadPlain, kStorePlain, true>("2 packs, grid-stride 8/SM", n));
    designs.push_back({"copy engine both ways", [=](float *o, const void *x, const void *y, cudaStream_t s) {
                           engine<F><<<static_cast<unsigned>(out_bytes / kTileOut), 256, 0, s>>>(
                               o, static_cast<const In *>(x), static_cast<const In *>(y), n);
                       }});

    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    auto call = [&](size_t d, int slice) {
        if (d == 0)
            CHECK(cudaMemcpyAsync(copy_dst + slice * (moved / 2), copy_src + slice * (moved / 2), moved / 2,
                                  cudaMemcpyDeviceToDevice, s));
        else
            designs[d].run(reinterpret_cast<float *>(out + slice * out_bytes), a + slice * in_bytes,
                           F::inputs == 2 ? b + slice * in_bytes : nullptr, s);
    };

    int failed = 0;
    unsigned long long *diffs;
    CHECK(cudaMalloc(&diffs, sizeof *diffs));
    for (size_t d = 1; d < designs.size(); ++d) { // outputs against the library's, on slice 0
        CHECK(cudaMemsetAsync(out, 0xA5, out_bytes, s));
        call(d, 0);
        if (d == 1)
            CHECK(cudaMemcpyAsync(check, out, out_bytes, cudaMemcpyDeviceToDevice, s));
        CHECK(cudaMemsetAsync(diffs, 0, sizeof *diffs, s));
        count_diffs<<<1024, 256, 0, s>>>(reinterpret_cast<unsigned *>(out),
                                         reinterpret_cast<unsigned *>(check), out_bytes / 4, diffs);
        unsigned long long host = 0;
        CHECK(cudaMemcpyAsync(&host, diffs, sizeof host, cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaGetLastError());
        if (host != 0) {
            std::printf("MISMATCH %s %s: %llu words differ from the library's\n", label,
                        designs[d].name.c_str(), host);
            failed = 1;
        }
    }

    const int calls = log2n >= 28 ? 20 : 80, rounds = 11;
    std::vector<std::vector<float>> per_call(designs.size());
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (size_t d = 0; d < designs.size(); ++d)
        for (int w = 0; w < 3; ++w)
            call(d, w & 1);
    for (int r = 0; r < rounds; ++r)
        for (size_t k = 0; k < designs.size(); ++k) {
            const size_t d = (k + r) % designs.size();
            CHECK(cudaEventRecord(start, s));
            for (int c = 0; c < calls; ++c)
                call(d, c & 1);
            CHECK(cudaEventRecord(stop, s));
            CHECK(cudaEventSynchronize(stop));
            float ms;
            CHECK(cudaEventElapsedTime(&ms, start, stop));
            per_call[d].push_back(ms / calls);
        }
    CHECK(cudaGetLastError());
    double memcpy_gbps = 0;
    for (size_t d = 0; d < designs.size(); ++d) {
        std::vector<float> t = per_call[d];
        std::sort(t.begin(), t.end());
        const double ms = t[t.size() / 2];
        const double gbps = moved / (ms * 1e6);
        if (d == 0)
            memcpy_gbps = gbps;
        std::printf("%-10s n=2^%d  %-26s %9.1f us %8.1f GB/s  %.3fx memcpy  (spread %.1f %%)\n", label, log2n,
                    designs[d].name.c_str(), ms * 1e3, gbps, gbps / memcpy_gbps,
                    100.0 * (t.back() - t.front()) / t.front());
    }
    std::fflush(stdout);
    CHECK(cudaStreamDestroy(s));
    for (void *p : {(void *)a, (void *)b, (void *)out, (void *)check, (void *)copy_src, (void *)copy_dst,
                    (void *)diffs})
        CHECK(cudaFree(p));
    return failed;
}

int main()
{
    int devices = 0, major = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0 ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess || major < 9) {
        std::printf("ceiling-probe: no GPU of compute capability 9.0 or later; nothing measured\n");
        return 0;
    }
    CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
    ew_handle_t h;
    if (ew_handle_create(0, &h) != EW_SUCCESS)
        return 2;
    int failed = 0;
    for (int log2n : {26, 28}) {
        const int64_t n = int64_t{1} << log2n;
        failed |= probe<Relu>("relu f32", n, h, EW_F32, log2n);
        failed |= probe<WidenF16>("f32<-f16", n, h, EW_F16, log2n);
        failed |= probe<WidenU8>("f32<-u8", n, h, EW_U8, log2n);
        failed |= probe<Add>("add f32", n, h, EW_F32, log2n);
    }
    ew_handle_destroy(h);
    return failed;
}
