# The libraries data files are decompressed with (common/data/
# stream_decoder.h): zlib by CMake's own module; libbz2, liblzma and libzstd
# each by its header and library, as the imported targets Accumulus::bzip2,
# Accumulus::lzma and Accumulus::zstd. On a GPU machine (the engine-only
# build), scripts/gpu-check.sh names the ones the bundle carries:
# ZLIB_INCLUDE_DIR and ZLIB_LIBRARY, BZIP2_INCLUDE_DIR and BZIP2_LIBRARY,
# LZMA_..., ZSTD_....
find_package(ZLIB REQUIRED)

function(accumulus_find_decompressor name header library)
  string(TOUPPER ${name} var)
  find_path(${var}_INCLUDE_DIR ${header} REQUIRED)
  find_library(${var}_LIBRARY NAMES ${library} REQUIRED)
  add_library(Accumulus::${name} UNKNOWN IMPORTED)
  set_target_properties(Accumulus::${name} PROPERTIES
    IMPORTED_LOCATION "${${var}_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${${var}_INCLUDE_DIR}")
endfunction()

accumulus_find_decompressor(bzip2 bzlib.h bz2)
accumulus_find_decompressor(lzma lzma.h lzma)
accumulus_find_decompressor(zstd zstd.h zstd)
