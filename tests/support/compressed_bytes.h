// Compressed files, tar and zip archives made in memory, with zlib, libbz2,
// liblzma and libzstd, for the tests of the readers that take them
// (common/data/data_file.h). Files as the tools
// themselves write them are the crosscheck's (tests/crosscheck/
// compressed_files.py); these are for the cases no tool writes on purpose:
// damaged, lying, encrypted, zip64 where nothing needs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace accumulus::testing {

// Text that compresses but is not all one byte ("0,1,4,9,16,...").
std::string CompressibleText(size_t size);

// `data` as one gzip member (RFC 1952).
std::string Gzip(const std::string& data);

// `data` as a raw DEFLATE stream (a zip member's, method 8).
std::string Deflate(const std::string& data);

// `data` as one bzip2 stream (block size 100k × `level`).
std::string Bzip2(const std::string& data, int level = 9);

// `data` as one xz stream with a CRC-64 check (`xz`'s default).
std::string Xz(const std::string& data);

// `data` as one zstd frame, its size and checksum recorded; or, given a
// `window_log`, with a window of 2^`window_log` bytes and no size, as
// `zstd --long` writes to a pipe (the reader then needs the window).
std::string Zstd(const std::string& data, int window_log = 0);

// `data` as a zip member's LZMA (method 14): the LZMA SDK's header, then
// raw LZMA1, with an end marker or not.
std::string ZipLzma(const std::string& data, bool end_marker);

struct ZipEntry {
  std::string name;
  std::string data;  // uncompressed
  bool deflate = false;
  // What the archive records, where a test wants it to lie or to say more
  // than it needs to.
  bool encrypted = false;
  uint16_t method = 0;  // 0: compressed_with, or 8 when deflate, else 0
  bool zip64 = false;   // sizes and offset in a zip64 extra field
  bool wrong_crc = false;
  // Compressed with another method than deflate: 12 bzip2, 14 LZMA (with
  // an end marker), 93 zstd, 95 xz.
  uint16_t compressed_with = 0;
};

struct TarEntry {
  std::string name;
  std::string data;
  char type = '0';  // '0' a file, '5' a directory, 'x' a pax header, 'L' a GNU long name
};

// A POSIX ustar archive of `entries`, in order, with its two zero blocks
// at the end.
std::string Tar(const std::vector<TarEntry>& entries);

// A zip archive of `entries`, in order; zip64 end records when `zip64_end`.
std::string Zip(const std::vector<ZipEntry>& entries, bool zip64_end = false,
                const std::string& comment = "");

}  // namespace accumulus::testing
