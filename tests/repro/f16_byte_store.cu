// SPDX-License-Identifier: Apache-2.0
// Reproducer: the two bytes of an f16 / bf16 conversion result stored as two
// byte stores (st.global.u8 of the value and of its high byte) came out with a wrong low byte on
// the H200 with nvcc 13.0, though the PTX reads right. Build and run on a GPU of cc >= 9.0:
//   nvcc -O3 -arch=sm_90 tests/repro/f16_byte_store.cu -o /tmp/repro && /tmp/repro
// Prints each kernel's mismatches against the same conversion stored as one 16-bit word; exit 1 if any.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

template <typename H> __device__ __forceinline__ H convert(float x);
template <> __device__ __forceinline__ __half convert<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 convert<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

// The form that failed: the result copied to an address aligned to one byte only, byte by byte.
template <typename H> __global__ void by_bytes(unsigned char *out, const long long *in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const H h = convert<H>(static_cast<float>(in[i]));
        memcpy(out + 1 + 2 * i, &h, sizeof h); // out + 1: the compiler knows no alignment
    }
}

// The reference: one 16-bit store of the same bits.
template <typename H> __global__ void by_word(uint16_t *out, const long long *in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const H h = convert<H>(static_cast<float>(in[i]));
        uint16_t bits;
        memcpy(&bits, &h, sizeof bits);
        out[i] = bits;
    }
}

template <typename H> static int check(const char *name, const long long *in, int n)
{
    unsigned char *bytes;
    uint16_t *words;
    cudaMalloc(&bytes, 2 * n + 2);
    cudaMalloc(&words, 2 * n);
    by_bytes<H><<<(n + 255) / 256, 256>>>(bytes, in, n);
    by_word<H><<<(n + 255) / 256, 256>>>(words, in, n);
    unsigned char *got = new unsigned char[2 * n + 2];
    uint16_t *want = new uint16_t[n];
    cudaMemcpy(got, bytes, 2 * n + 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(want, words, 2 * n, cudaMemcpyDeviceToHost);
    long long host_in[8];
    cudaMemcpy(host_in, in, sizeof host_in, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        const uint16_t g = static_cast<uint16_t>(got[1 + 2 * i] | got[2 + 2 * i] << 8);
        if (g != want[i] && bad++ < 4)
            std::printf("%s: element %d (x = %lld): bytes 0x%04x, word 0x%04x\n", name, i,
                        i < 8 ? host_in[i] : 0, g, want[i]);
    }
    std::printf("%s: %d of %d differ (%s)\n", name, bad, n, cudaGetErrorString(cudaGetLastError()));
    cudaFree(bytes);
    cudaFree(words);
    delete[] got;
    delete[] want;
    return bad != 0;
}

int main()
{
    const int n = 1 << 16;
    long long *host = new long long[n];
    for (int i = 0; i < n; ++i)
        host[i] = (i % 7 == 0 ? -1 : 1) * static_cast<long long>(i) * 37 % 100000;
    long long *in;
    cudaMalloc(&in, n * sizeof *in);
    cudaMemcpy(in, host, n * sizeof *in, cudaMemcpyHostToDevice);
    const int failed = check<__half>("f16", in, n) | check<__nv_bfloat16>("bf16", in, n);
    cudaFree(in);
    delete[] host;
    return failed;
}
