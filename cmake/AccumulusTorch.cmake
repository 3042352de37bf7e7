# LibTorch for the engine, the trainer, the engine tests and the bench: the
# one of PyTorch 2.11 (or newer) installed by pip into ACCUMULUS_PYTHON's
# environment. Nothing else in the build sees Torch.
#
# Defines:
#   accumulus::torch    an interface target: Torch's libraries, definitions and
#                       a curated copy of its include path (see below)
#   ACCUMULUS_TORCH_VERSION, ACCUMULUS_TORCH_CUDA (the CUDA it was built for, or "")
#   ACCUMULUS_NCCL_INCLUDE_DIR (the NCCL headers of the NCCL libtorch loads)

set(ACCUMULUS_PYTHON "" CACHE FILEPATH
    "Python whose torch (>= 2.11) provides LibTorch; scripts/common.sh passes its venv's")
if(NOT ACCUMULUS_PYTHON)
  message(FATAL_ERROR
    "ACCUMULUS_PYTHON is not set: pass -DACCUMULUS_PYTHON=<venv>/bin/python of an environment "
    "with torch 2.11 (scripts/common.sh makes one), or -DACCUMULUS_BUILD_ENGINE=OFF to build "
    "the controller, worker daemon and CLI alone")
endif()

execute_process(
  COMMAND "${ACCUMULUS_PYTHON}" -c
    "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__); print(torch.version.cuda or '')"
  OUTPUT_VARIABLE _torch_facts ERROR_VARIABLE _torch_error RESULT_VARIABLE _torch_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _torch_rc EQUAL 0)
  message(FATAL_ERROR "ACCUMULUS_PYTHON=${ACCUMULUS_PYTHON} cannot import torch:\n${_torch_error}")
endif()
string(REPLACE "\n" ";" _torch_facts "${_torch_facts}")
list(GET _torch_facts 0 _torch_prefix)
list(GET _torch_facts 1 ACCUMULUS_TORCH_VERSION)
list(LENGTH _torch_facts _n)
set(ACCUMULUS_TORCH_CUDA "")
if(_n GREATER 2)
  list(GET _torch_facts 2 ACCUMULUS_TORCH_CUDA)
endif()
string(REGEX REPLACE "[+].*" "" _torch_release "${ACCUMULUS_TORCH_VERSION}")
if(_torch_release VERSION_LESS 2.11)
  message(FATAL_ERROR "torch ${ACCUMULUS_TORCH_VERSION} from ${ACCUMULUS_PYTHON}: accumulus needs 2.11 or newer")
endif()

list(PREPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
find_package(Torch REQUIRED)
message(STATUS "LibTorch ${ACCUMULUS_TORCH_VERSION} (CUDA: ${ACCUMULUS_TORCH_CUDA}) from ${TORCH_INSTALL_PREFIX}")

# The CUDA and NCCL code paths are compiled whenever LibTorch has CUDA, so they
# cannot rot unseen on machines without a GPU; switching them off against a
# CUDA LibTorch is a configuration error, not a silent CPU-only build.
option(ACCUMULUS_CUDA "Compile the CUDA and NCCL code paths (requires a CUDA LibTorch)" ON)
if(ACCUMULUS_TORCH_CUDA AND NOT ACCUMULUS_CUDA)
  message(FATAL_ERROR "LibTorch ${ACCUMULUS_TORCH_VERSION} is built with CUDA ${ACCUMULUS_TORCH_CUDA}: "
                      "ACCUMULUS_CUDA=OFF would leave its CUDA and NCCL code uncompiled")
endif()
if(ACCUMULUS_CUDA AND NOT ACCUMULUS_TORCH_CUDA)
  message(FATAL_ERROR "ACCUMULUS_CUDA=ON but LibTorch ${ACCUMULUS_TORCH_VERSION} has no CUDA: "
                      "install the CUDA build of torch, or configure with -DACCUMULUS_CUDA=OFF")
endif()
if(ACCUMULUS_CUDA AND NOT TARGET c10_cuda)
  message(FATAL_ERROR "LibTorch reports CUDA ${ACCUMULUS_TORCH_CUDA} but exports no c10_cuda target")
endif()

# The wheel's include directory also holds headers of libraries it was built
# with: an old protobuf under google/ and a newer fmt under fmt/. On the
# include path ahead of /usr/include they would shadow Debian's protobuf 3.21
# (our generated *.pb.h refuse them) and the fmt 9 that spdlog links against.
# Torch's targets therefore see a mirror of that directory, made of links to
# every entry except those two, so no include order can pick them up.
set(_torch_include "${TORCH_INSTALL_PREFIX}/include")
set(_mirror "${CMAKE_BINARY_DIR}/torch-include")
file(REMOVE_RECURSE "${_mirror}")
file(MAKE_DIRECTORY "${_mirror}")
file(GLOB _entries RELATIVE "${_torch_include}" "${_torch_include}/*")
foreach(_entry IN LISTS _entries)
  if(NOT _entry STREQUAL "google" AND NOT _entry STREQUAL "fmt")
    file(CREATE_LINK "${_torch_include}/${_entry}" "${_mirror}/${_entry}" SYMBOLIC)
  endif()
endforeach()
foreach(_target torch torch_cpu torch_cuda c10 c10_cuda)
  if(TARGET ${_target})
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(_dirs)
      list(TRANSFORM _dirs REPLACE "^${_torch_include}$" "${_mirror}")
      list(TRANSFORM _dirs REPLACE "^${_torch_include}/" "${_mirror}/")
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_dirs}")
    endif()
  endif()
endforeach()

add_library(accumulus_torch INTERFACE)
add_library(accumulus::torch ALIAS accumulus_torch)
target_link_libraries(accumulus_torch INTERFACE ${TORCH_LIBRARIES})
# libtorch.so and libtorch_cpu.so export a statically linked copy of
# libstdc++'s std::filesystem (pytorch/pytorch#133437) that does not work
# outside torch: its throwing remove_all(path) jumps to address 0. The dynamic
# linker binds a symbol to the first library in a binary's DT_NEEDED order, and
# g++ appends libstdc++ after every library on the line, so torch's copy would
# win. Naming libstdc++ among the link options, which precede the objects and
# libraries, puts the system's libstdc++ first in every binary that links torch.
target_link_options(accumulus_torch INTERFACE
  "LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")

if(ACCUMULUS_CUDA)
  # NCCL's header from the same wheel as the libnccl that libtorch_cuda loads.
  execute_process(
    COMMAND "${ACCUMULUS_PYTHON}" -c
      "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'include'))"
    OUTPUT_VARIABLE ACCUMULUS_NCCL_INCLUDE_DIR RESULT_VARIABLE _nccl_rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT _nccl_rc EQUAL 0 OR NOT EXISTS "${ACCUMULUS_NCCL_INCLUDE_DIR}/nccl.h")
    message(FATAL_ERROR "the NCCL headers of torch's nvidia-nccl wheel are missing "
                        "(looked in '${ACCUMULUS_NCCL_INCLUDE_DIR}')")
  endif()
  target_include_directories(accumulus_torch SYSTEM BEFORE INTERFACE "${ACCUMULUS_NCCL_INCLUDE_DIR}")
  target_compile_definitions(accumulus_torch INTERFACE ACCUMULUS_WITH_CUDA)
endif()

# The wheel ships no gloo headers, which ProcessGroupGloo.hpp includes; gloo's
# symbols are inside libtorch_cpu. Debian's libgloo-dev provides the headers
# (declarations only: we never link Debian's libgloo).
find_path(ACCUMULUS_GLOO_INCLUDE_DIR gloo/algorithm.h REQUIRED)
if(NOT ACCUMULUS_GLOO_INCLUDE_DIR STREQUAL "/usr/include")  # already searched, and last
  target_include_directories(accumulus_torch SYSTEM INTERFACE "${ACCUMULUS_GLOO_INCLUDE_DIR}")
endif()
