#include "common/rank_threads.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace accumulus {

RankThreads ResolveRankThreads(const v1::ThreadSpec& spec, int worker_intra_op, int worker_blas,
                               int cores) {
  RankThreads t;
  t.cores = std::max(1, cores);
  t.intra_op = spec.intra_op() > 0 ? spec.intra_op() : std::max(0, worker_intra_op);
  t.blas = spec.blas() > 0 ? spec.blas() : std::max(0, worker_blas);
  if (t.rank_measures()) return t;
  if (t.intra_op == 0) t.intra_op = std::max(1, t.cores / t.blas);
  if (t.blas == 0) t.blas = std::max(1, t.cores / t.intra_op);
  return t;
}

Status CheckThreadsFitSlot(const v1::ThreadSpec& spec, int cores, const std::string& slot) {
  std::vector<FieldViolation> bad;
  for (const auto& [field, threads] :
       {std::pair<const char*, int>{"threads.intra_op", spec.intra_op()},
        std::pair<const char*, int>{"threads.blas", spec.blas()}}) {
    if (threads > cores) {
      bad.push_back({field, std::string(field) + " " + std::to_string(threads) + " exceeds the " +
                                std::to_string(cores) + " core(s) of device slot " + slot});
    }
  }
  return bad.empty() ? Status::Ok() : Status::InvalidFields(std::move(bad));
}

}  // namespace accumulus
