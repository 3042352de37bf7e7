#include "common/checkpoint_frame.h"

#include <cstring>

namespace accumulus {
namespace {

constexpr char kMagic[8] = {'A', 'C', 'C', 'C', 'K', 'P', 'T', '1'};
constexpr size_t kHeaderBytes = sizeof(kMagic) + 2 * sizeof(uint64_t);

}  // namespace

uint64_t Fnv1a64(const std::string& data) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string FrameCheckpoint(const std::string& payload) {
  std::string file(kMagic, sizeof kMagic);
  const uint64_t length = payload.size();
  const uint64_t checksum = Fnv1a64(payload);
  file.append(reinterpret_cast<const char*>(&length), sizeof length);
  file.append(reinterpret_cast<const char*>(&checksum), sizeof checksum);
  file += payload;
  return file;
}

StatusOr<std::string> UnframeCheckpoint(const std::string& file) {
  if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) {
    return Status::DataLoss("not an accumulus checkpoint (" + std::to_string(file.size()) +
                            " bytes, no header)");
  }
  uint64_t length = 0;
  uint64_t checksum = 0;
  std::memcpy(&length, file.data() + sizeof kMagic, sizeof length);
  std::memcpy(&checksum, file.data() + sizeof kMagic + sizeof length, sizeof checksum);
  if (file.size() - kHeaderBytes != length) {
    return Status::DataLoss("truncated: " + std::to_string(file.size() - kHeaderBytes) + " of " +
                            std::to_string(length) + " payload bytes");
  }
  std::string payload = file.substr(kHeaderBytes);
  if (Fnv1a64(payload) != checksum) return Status::DataLoss("checksum mismatch (garbled)");
  return payload;
}

}  // namespace accumulus
