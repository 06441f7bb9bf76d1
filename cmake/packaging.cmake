# SPDX-License-Identifier: Apache-2.0
# Packages, made by `cpack` in the build directory:
#   - two Debian packages from the install components:
#       libelementwise1     (component runtime): libelementwise.so.1.0.0 and its SONAME link .so.1
#       libelementwise-dev  (component dev): elementwise.h, the pkg-config file, the CMake package and
#                           the libelementwise.so namelink; depends on libelementwise1 (= version)
#   - one .tar.gz holding both components.
# The .debs install under the configured CMAKE_INSTALL_PREFIX: the package preset sets /usr
# (GNUInstallDirs then puts the library in lib/<multiarch>) and builds with debug information, which
# scripts/ci/abi.sh reads; the packaged files are stripped. `cmake --workflow --preset package` makes
# them; scripts/ci/packages.sh also installs and consumes them.
# Each package names the CUDA toolkit it was built with (EW_CUDA_TAG, e.g. cu130: cmake/toolkit.cmake),
# since the runtime linked in decides which drivers run it: in the .debs' Debian revision
# (libelementwise1_1.2.0-1+cu130_amd64.deb; the package names stay, so one replaces the other) and in
# the .tar.gz's name (libelementwise-1.2.0-cu130-Linux-x86_64.tar.gz).
include_guard(GLOBAL)

set(CPACK_PACKAGE_NAME "libelementwise")
set(CPACK_PACKAGE_VENDOR "libelementwise")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
if(NOT CPACK_PACKAGE_CONTACT)
  set(CPACK_PACKAGE_CONTACT "libelementwise maintainers <maintainers@libelementwise.invalid>")
endif()
if(NOT CPACK_GENERATOR)
  set(CPACK_GENERATOR "DEB;TGZ")
endif()
# The .debs install under the configured prefix (which the pkg-config file records); the .tar.gz keeps
# paths relative to its top directory. CPack reads this file once per generator.
set(CPACK_PROJECT_CONFIG_FILE "${PROJECT_BINARY_DIR}/CPackProjectConfig.cmake")
file(WRITE "${CPACK_PROJECT_CONFIG_FILE}" "# Written by cmake/packaging.cmake.
if(CPACK_GENERATOR STREQUAL \"DEB\")
  set(CPACK_PACKAGING_INSTALL_PREFIX \"${CMAKE_INSTALL_PREFIX}\")
endif()
")
# Exactly the library's components, whatever else (tests, bench) may install.
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_STRIP_FILES ON)

# ---- Debian: one package per component ----
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE "1+${EW_CUDA_TAG}")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "libelementwise${PROJECT_VERSION_MAJOR}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# Depends on libc/libstdc++ as dpkg-shlibdeps finds them (cudart is linked in statically; the CUDA
# driver, libcuda.so.1, comes with the NVIDIA driver and is loaded at run time, not a dependency).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
# A shlibs file and an ldconfig trigger, as Debian library packages have.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Later 1.x versions only append to the ABI: anything built against this version runs on newer ones.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "${PROJECT_DESCRIPTION} - shared library
Precompiled, vectorized CUDA kernels for add, mul, relu, scale_add and casts over 13 dtypes, behind a
stable C ABI (SONAME libelementwise.so.${PROJECT_VERSION_MAJOR}). Built with CUDA ${EW_CUDA_VERSION}, whose
runtime it carries: needs an NVIDIA driver of the ${EW_CUDA_DRIVER_SERIES} series or newer.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME "libelementwise-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "${PROJECT_DESCRIPTION} - development files
The C header elementwise.h, the pkg-config file elementwise.pc and the CMake package
(find_package(elementwise), target elementwise::elementwise).")

# ---- tar.gz: everything in one archive ----
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_PACKAGE_FILE_NAME
  "libelementwise-${PROJECT_VERSION}-${EW_CUDA_TAG}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")

include(CPack)

cpack_add_component(runtime DISPLAY_NAME "Shared library"
  DESCRIPTION "libelementwise.so.${PROJECT_VERSION_MAJOR}, what programs linked with it need at run time")
cpack_add_component(dev DISPLAY_NAME "Development files"
  DESCRIPTION "Header, pkg-config file, CMake package and the .so link" DEPENDS runtime)
