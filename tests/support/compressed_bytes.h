// gzip files and zip archives made in memory, with zlib, for the tests of
// the readers that take them (common/data/data_file.h). Files as the tools
// themselves write them are the crosscheck's (tests/crosscheck/
// compressed_files.py); these are for the cases no tool writes on purpose:
// damaged, lying, encrypted, zip64 where nothing needs it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace accumulus::testing {

// `data` as one gzip member (RFC 1952).
std::string Gzip(const std::string& data);

// `data` as a raw DEFLATE stream (a zip member's, method 8).
std::string Deflate(const std::string& data);

struct ZipEntry {
  std::string name;
  std::string data;  // uncompressed
  bool deflate = false;
  // What the archive records, where a test wants it to lie or to say more
  // than it needs to.
  bool encrypted = false;
  uint16_t method = 0;  // 0: 8 when deflate, else 0
  bool zip64 = false;   // sizes and offset in a zip64 extra field
  bool wrong_crc = false;
};

// A zip archive of `entries`, in order; zip64 end records when `zip64_end`.
std::string Zip(const std::vector<ZipEntry>& entries, bool zip64_end = false,
                const std::string& comment = "");

}  // namespace accumulus::testing
