/* SPDX-License-Identifier: Apache-2.0 */
/* ew_stream_t is exactly the type cudaStream_t names, so either may be passed without a cast.
 * Compiled with the CUDA headers, as C11 (_Generic) and, with -x c++, as C++11 (std::is_same).
 * Built with -DEW_EXPECT_MISMATCH it asserts a different type instead and must fail to compile,
 * which shows the check can fail. */
#include <cuda_runtime_api.h>
#include <elementwise.h>

#ifdef EW_EXPECT_MISMATCH
typedef struct ew_not_a_stream *ew_check_type; /* any other pointer type */
#else
typedef cudaStream_t ew_check_type;
#endif

#ifdef __cplusplus
#include <type_traits>
static_assert(std::is_same<ew_stream_t, ew_check_type>::value, "ew_stream_t is not cudaStream_t");
#else
_Static_assert(_Generic((ew_check_type)0, ew_stream_t: 1, default: 0), "ew_stream_t is not cudaStream_t");
#endif

/* And a stream passes both ways without a cast. */
#ifdef __cplusplus
extern "C" {
#endif
ew_stream_t ew_check_round_trip(cudaStream_t stream);
#ifdef __cplusplus
}
#endif
ew_stream_t ew_check_round_trip(cudaStream_t stream)
{
    ew_stream_t ours = stream;
    cudaStream_t theirs = ours;
    return theirs;
}
