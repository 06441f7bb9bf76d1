# SPDX-License-Identifier: Apache-2.0
# The CUDA toolkit and what its version decides. Included by the top-level CMakeLists.txt before the
# CUDA language is enabled, because the default GPU architectures depend on the version and CMake's
# check of the CUDA compiler already compiles for them.
#
# The version that counts is the runtime's (CUDART_VERSION of cuda_runtime_api.h): the library links
# that runtime statically, so it decides which drivers can run the library (README: "What each build
# needs"), and it names the packages. Sets:
#   EW_CUDA_RUNTIME_VERSION  e.g. 13000 or 12090 (CUDART_VERSION)
#   EW_CUDA_VERSION          e.g. 13.0 or 12.9
#   EW_CUDA_TAG              e.g. cu130 or cu129: the packages' names carry it (cmake/packaging.cmake)
#   EW_CUDA_DRIVER_SERIES    the oldest NVIDIA driver series that runs this runtime (525 for 12.x,
#                            with CUDA's minor-version compatibility; 580 for 13.x)
#   CMAKE_CUDA_ARCHITECTURES its default: Turing through Blackwell, PTX for the newest (below)
# and the CUDAToolkit package's targets (CUDA::cudart_static for the tests, the bench, the fuzzer).
include_guard(GLOBAL)

# The same toolkit as the CUDA compiler CMake is about to use: the one named by CMAKE_CUDA_COMPILER
# or CUDACXX, else the nvcc on PATH (the presets append /usr/local/cuda/bin).
if(NOT DEFINED CUDAToolkit_ROOT)
  if(DEFINED CMAKE_CUDA_COMPILER)
    set(ew_nvcc "${CMAKE_CUDA_COMPILER}")
  elseif(DEFINED ENV{CUDACXX})
    set(ew_nvcc "$ENV{CUDACXX}")
  endif()
  if(DEFINED ew_nvcc AND IS_ABSOLUTE "${ew_nvcc}")
    get_filename_component(ew_nvcc_bin "${ew_nvcc}" DIRECTORY)
    get_filename_component(CUDAToolkit_ROOT "${ew_nvcc_bin}" DIRECTORY)
  endif()
endif()
find_package(CUDAToolkit REQUIRED)

# CUDAToolkit_INCLUDE_DIRS may list several directories (CCCL's beside the runtime's).
find_file(ew_cudart_header cuda_runtime_api.h PATHS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(NOT ew_cudart_header)
  message(FATAL_ERROR "no cuda_runtime_api.h in ${CUDAToolkit_INCLUDE_DIRS}")
endif()
file(STRINGS "${ew_cudart_header}" ew_cudart_line REGEX "^#define[ \t]+CUDART_VERSION[ \t]+[0-9]+")
if(NOT ew_cudart_line MATCHES "CUDART_VERSION[ \t]+([0-9]+)")
  message(FATAL_ERROR "no CUDART_VERSION in ${ew_cudart_header}")
endif()
set(EW_CUDA_RUNTIME_VERSION ${CMAKE_MATCH_1})
math(EXPR ew_major "${EW_CUDA_RUNTIME_VERSION} / 1000")
math(EXPR ew_minor "${EW_CUDA_RUNTIME_VERSION} % 1000 / 10")
set(EW_CUDA_VERSION ${ew_major}.${ew_minor})
set(EW_CUDA_TAG cu${ew_major}${ew_minor})
if(EW_CUDA_RUNTIME_VERSION LESS 12040)
  message(FATAL_ERROR "CUDA ${EW_CUDA_VERSION} (${CUDAToolkit_INCLUDE_DIRS}) is too old: the library "
                      "needs CUDA 12.4 or newer")
elseif(ew_major EQUAL 12)
  set(EW_CUDA_DRIVER_SERIES 525)
else()
  set(EW_CUDA_DRIVER_SERIES 580)
endif()
message(STATUS "CUDA ${EW_CUDA_VERSION} runtime (${EW_CUDA_TAG}): runs on NVIDIA drivers of the "
               "${EW_CUDA_DRIVER_SERIES} series or newer")

# Machine code for Turing through Blackwell, plus PTX for the newest so later GPUs still run. sm_86,
# sm_87 and sm_88 run sm_80's machine code (one major version): they add no instruction the kernels
# use, and their own machine code would cost an eighth more of the build's time. The one override is
# -DCMAKE_CUDA_ARCHITECTURES (e.g. 90-real: a quick build for one GPU; the gpu preset), which the
# user's list keeps as given. Set before the CUDA language is enabled, so CMake's own default
# (and the CUDAARCHS variable) never applies. Blackwell (sm_100, sm_120) needs CUDA 12.8: older
# toolkits drop it, and their PTX is Hopper's.
set(EW_DEFAULT_CUDA_ARCHITECTURES "75-real;80-real;89-real;90-real;100-real;120-real;120-virtual")
if(EW_CUDA_RUNTIME_VERSION LESS 12080)
  set(EW_DEFAULT_CUDA_ARCHITECTURES "75-real;80-real;89-real;90-real;90-virtual")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    message(NOTICE "CUDA ${EW_CUDA_VERSION} predates Blackwell (12.8): the default build leaves out "
                   "sm_100 and sm_120; its PTX (compute_90) lets the driver compile for them")
  endif()
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "${EW_DEFAULT_CUDA_ARCHITECTURES}" CACHE STRING "CUDA architectures to build for")
endif()
