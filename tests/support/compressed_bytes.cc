#include "tests/support/compressed_bytes.h"

#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <stdexcept>

namespace accumulus::testing {
namespace {

// window_bits as deflateInit2 takes them: -15 raw, 15 + 16 gzip.
std::string Compress(const std::string& data, int window_bits) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<const Bytef*>(data.data());
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}

void Put(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i) & 0xFF));
}

}  // namespace

std::string CompressibleText(size_t size) {
  std::string text;
  for (size_t i = 0; text.size() < size; ++i) text += std::to_string(i * i % 977) + ",";
  text.resize(size);
  return text;
}

std::string Gzip(const std::string& data) { return Compress(data, 15 + 16); }

std::string Deflate(const std::string& data) { return Compress(data, -15); }

std::string Bzip2(const std::string& data, int level) {
  // The worst case bzlib documents: 1% larger, plus 600 bytes.
  std::string out(data.size() + data.size() / 100 + 600, '\0');
  unsigned int size = static_cast<unsigned int>(out.size());
  if (BZ2_bzBuffToBuffCompress(out.data(), &size, const_cast<char*>(data.data()),
                               static_cast<unsigned int>(data.size()), level, 0, 0) != BZ_OK) {
    throw std::runtime_error("BZ2_bzBuffToBuffCompress failed");
  }
  out.resize(size);
  return out;
}

std::string Xz(const std::string& data) {
  std::string out(lzma_stream_buffer_bound(data.size()), '\0');
  size_t size = 0;
  if (lzma_easy_buffer_encode(
          6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(data.data()), data.size(),
          reinterpret_cast<uint8_t*>(out.data()), &size, out.size()) != LZMA_OK) {
    throw std::runtime_error("lzma_easy_buffer_encode failed");
  }
  out.resize(size);
  return out;
}

std::string Zstd(const std::string& data, int window_log) {
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1);
  if (window_log != 0) {
    ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, window_log);
    ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 0);
  }
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const size_t size = ZSTD_compress2(context, out.data(), out.size(), data.data(), data.size());
  ZSTD_freeCCtx(context);
  if (ZSTD_isError(size)) throw std::runtime_error(ZSTD_getErrorName(size));
  out.resize(size);
  return out;
}

std::string ZipLzma(const std::string& data, bool end_marker) {
  lzma_options_lzma options;
  if (lzma_lzma_preset(&options, 6)) throw std::runtime_error("lzma_lzma_preset failed");
  // LZMA1EXT without the flag: no end marker; LZMA1: one.
  options.ext_flags = 0;
  lzma_filter filters[2] = {{end_marker ? LZMA_FILTER_LZMA1 : LZMA_FILTER_LZMA1EXT, &options},
                            {LZMA_VLI_UNKNOWN, nullptr}};
  uint8_t properties[5];
  if (lzma_properties_encode(&filters[0], properties) != LZMA_OK) {
    throw std::runtime_error("lzma_properties_encode failed");
  }
  std::string out = "\x09\x14\x05";  // LZMA SDK 9.20; 5 bytes of properties
  out.push_back('\0');
  out.append(reinterpret_cast<const char*>(properties), sizeof(properties));
  const size_t header = out.size();
  out.resize(header + lzma_stream_buffer_bound(data.size()));
  size_t size = header;
  if (lzma_raw_buffer_encode(filters, nullptr, reinterpret_cast<const uint8_t*>(data.data()),
                             data.size(), reinterpret_cast<uint8_t*>(out.data()), &size,
                             out.size()) != LZMA_OK) {
    throw std::runtime_error("lzma_raw_buffer_encode failed");
  }
  out.resize(size);
  return out;
}

std::string Tar(const std::vector<TarEntry>& entries) {
  std::string archive;
  for (const TarEntry& e : entries) {
    std::string header(512, '\0');
    header.replace(0, std::min<size_t>(e.name.size(), 100), e.name.substr(0, 100));
    const auto octal = [&](size_t at, size_t width, uint64_t value) {
      std::string digits(width - 1, '0');
      for (size_t i = width - 1; i-- > 0; value >>= 3)
        digits[i] = static_cast<char>('0' + (value & 7));
      header.replace(at, width - 1, digits);
    };
    octal(100, 8, 0644);
    octal(108, 8, 0);
    octal(116, 8, 0);
    octal(124, 12, e.data.size());
    octal(136, 12, 0);
    header[156] = e.type;
    header.replace(257, 8,
                   std::string("ustar\0"
                               "00",
                               8));
    header.replace(148, 8, std::string(8, ' '));
    uint64_t sum = 0;
    for (char c : header) sum += static_cast<unsigned char>(c);
    octal(148, 7, sum);
    archive += header + e.data + std::string((512 - e.data.size() % 512) % 512, '\0');
  }
  return archive + std::string(1024, '\0');
}

namespace {

// A zip entry's data as the archive holds it.
std::string Compressed(const ZipEntry& e) {
  switch (e.compressed_with) {
    case 12:
      return Bzip2(e.data);
    case 14:
      return ZipLzma(e.data, /*end_marker=*/true);
    case 93:
      return Zstd(e.data);
    case 95:
      return Xz(e.data);
    default:
      return e.deflate ? Deflate(e.data) : e.data;
  }
}

}  // namespace

std::string Zip(const std::vector<ZipEntry>& entries, bool zip64_end, const std::string& comment) {
  std::string archive;
  std::string directory;
  for (const ZipEntry& e : entries) {
    const std::string stored = Compressed(e);
    const uint16_t method = e.method != 0            ? e.method
                            : e.compressed_with != 0 ? e.compressed_with
                            : e.deflate              ? 8
                                                     : 0;
    uint32_t crc = crc32_z(0, reinterpret_cast<const Bytef*>(e.data.data()), e.data.size());
    if (e.wrong_crc) crc ^= 1;
    const uint16_t flags = e.encrypted ? 1 : 0;
    const uint64_t offset = archive.size();
    // Local header: what zipfile writes, sizes included.
    Put(&archive, 0x04034b50, 4);
    Put(&archive, 20, 2);
    Put(&archive, flags, 2);
    Put(&archive, method, 2);
    Put(&archive, 0, 4);  // time and date
    Put(&archive, crc, 4);
    Put(&archive, stored.size(), 4);
    Put(&archive, e.data.size(), 4);
    Put(&archive, e.name.size(), 2);
    Put(&archive, 0, 2);
    archive += e.name + stored;
    // Central directory entry.
    std::string extra;
    if (e.zip64) {
      Put(&extra, 0x0001, 2);
      Put(&extra, 24, 2);
      Put(&extra, e.data.size(), 8);
      Put(&extra, stored.size(), 8);
      Put(&extra, offset, 8);
    }
    const uint64_t full = 0xFFFFFFFF;
    Put(&directory, 0x02014b50, 4);
    Put(&directory, 45, 2);
    Put(&directory, 20, 2);
    Put(&directory, flags, 2);
    Put(&directory, method, 2);
    Put(&directory, 0, 4);
    Put(&directory, crc, 4);
    Put(&directory, e.zip64 ? full : stored.size(), 4);
    Put(&directory, e.zip64 ? full : e.data.size(), 4);
    Put(&directory, e.name.size(), 2);
    Put(&directory, extra.size(), 2);
    Put(&directory, 0, 2);  // comment
    Put(&directory, 0, 2);  // disk
    Put(&directory, 0, 2);  // internal attributes
    Put(&directory, 0, 4);  // external attributes
    Put(&directory, e.zip64 ? full : offset, 4);
    directory += e.name + extra;
  }
  const uint64_t directory_offset = archive.size();
  archive += directory;
  if (zip64_end) {
    const uint64_t record = archive.size();
    Put(&archive, 0x06064b50, 4);
    Put(&archive, 44, 8);  // the record's size after this field
    Put(&archive, 45, 2);
    Put(&archive, 45, 2);
    Put(&archive, 0, 4);
    Put(&archive, 0, 4);
    Put(&archive, entries.size(), 8);
    Put(&archive, entries.size(), 8);
    Put(&archive, directory.size(), 8);
    Put(&archive, directory_offset, 8);
    Put(&archive, 0x07064b50, 4);  // locator
    Put(&archive, 0, 4);
    Put(&archive, record, 8);
    Put(&archive, 1, 4);
  }
  Put(&archive, 0x06054b50, 4);
  Put(&archive, 0, 2);
  Put(&archive, 0, 2);
  Put(&archive, zip64_end ? 0xFFFF : entries.size(), 2);
  Put(&archive, zip64_end ? 0xFFFF : entries.size(), 2);
  Put(&archive, zip64_end ? 0xFFFFFFFF : directory.size(), 4);
  Put(&archive, zip64_end ? 0xFFFFFFFF : directory_offset, 4);
  Put(&archive, comment.size(), 2);
  return archive + comment;
}

}  // namespace accumulus::testing
