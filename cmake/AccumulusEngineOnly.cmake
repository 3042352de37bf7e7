# ACCUMULUS_ENGINE_ONLY: the engine, the GPU tests that need nothing but it
# and the GPU bench, from LibTorch, the decompressors and the standard
# library alone. This is scripts/gpu-check.sh's fallback on a GPU machine
# where the bundle made here cannot run; that machine has torch, CUDA, CMake
# and a compiler, nothing of Debian's. googletest is built from source: ACCUMULUS_GTEST_SOURCE_DIR
# (Debian's /usr/src/googletest, which the bundle carries); gloo's headers
# come from ACCUMULUS_GLOO_INCLUDE_DIR, and the decompressors' as
# cmake/AccumulusDecompressors.cmake says (also carried).
set(ACCUMULUS_BUILD_ENGINE ON)
include(cmake/AccumulusTorch.cmake)
if(NOT ACCUMULUS_CUDA)
  message(FATAL_ERROR "ACCUMULUS_ENGINE_ONLY builds the GPU tests: it needs a CUDA LibTorch")
endif()

add_subdirectory(common)
add_subdirectory(worker/engine)

set(ACCUMULUS_GTEST_SOURCE_DIR "/usr/src/googletest" CACHE PATH "googletest's source tree")
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
add_subdirectory(${ACCUMULUS_GTEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
if(NOT TARGET GTest::gtest_main)  # older googletest trees lack the name FindGTest gives it
  add_library(GTest::gtest_main ALIAS gtest_main)
endif()

enable_testing()
add_subdirectory(tests/gpu)
add_subdirectory(bench)
