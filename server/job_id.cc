#include "server/job_id.h"

#include <cstdint>
#include <random>

namespace accumulus::server {

std::string NewJobId() {
  static constexpr char kAlphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";  // 32, no i l o u
  // The kernel's entropy (/dev/urandom or the CPU's): ids need not be
  // secret, only never to repeat.
  std::random_device entropy;
  const uint64_t bits = (static_cast<uint64_t>(entropy()) << 32) | entropy();
  std::string id = "job-";
  for (int i = 0; i < 12; ++i) id += kAlphabet[(bits >> (5 * i)) & 31];
  return id;
}

}  // namespace accumulus::server
