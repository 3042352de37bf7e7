// What a token file costs the trainer now that it is mapped instead of read
// (common/data/mapped_file.h): opening a 512 MiB uint16 corpus in either
// layout — the time to the first step and the anonymous memory it keeps —
// and building one micro-batch from it, which now happens per micro-batch
// on the training thread.
//
// For comparison, reading the same file into tensors as the trainer did
// before held about 34 bytes of anonymous memory per token at its peak (the
// file's bytes, an int64 copy of every token, the samples' int64 copies, and
// int64 inputs and targets): about 8.5 GiB for this file, read whole before
// the first step.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "worker/engine/file_datasets.h"

namespace accumulus::engine {
namespace {

constexpr int64_t kTokens = int64_t{256} << 20;  // 512 MiB of uint16
constexpr int64_t kSequenceLength = 128;
constexpr int64_t kSeparator = 0;

// Anonymous resident memory of this process (RssAnon), in bytes: what the
// data set holds, not the file's pages, which belong to the page cache.
int64_t AnonymousBytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "RssAnon:") {
      int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 10, '\n');
  }
  return 0;
}

// Random ids below 50,257 (GPT-2's vocabulary) in documents of about 1,000
// tokens: written once per process, removed when it exits.
class CorpusFile {
 public:
  CorpusFile() {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr ? dir : "/tmp") + "/accumulus-token-bench.u16";
    std::mt19937 random(1);
    std::ofstream out(path_, std::ios::binary);
    std::string chunk;
    for (int64_t i = 0; i < kTokens; ++i) {
      const auto id =
          static_cast<uint16_t>(random() % 1000 == 0 ? kSeparator : 1 + random() % 50256);
      chunk.push_back(static_cast<char>(id & 0xFF));
      chunk.push_back(static_cast<char>(id >> 8));
      if (chunk.size() >= (1 << 20)) {
        out << chunk;
        chunk.clear();
      }
    }
    out << chunk;
  }
  ~CorpusFile() { std::remove(path_.c_str()); }
  CorpusFile(const CorpusFile&) = delete;
  CorpusFile& operator=(const CorpusFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& Corpus() {
  static const CorpusFile file;
  return file.path();
}

DataConfig TokenFile(TokenLayout layout) {
  DataConfig c;
  c.kind = DataKind::kTokens;
  c.path = Corpus();
  c.token_dtype = TokenDtype::kUint16;
  c.token_layout = layout;
  c.separator = kSeparator;
  c.sequence_length = kSequenceLength;
  return c;
}

void BM_OpenTokenFile(benchmark::State& state, TokenLayout layout) {
  const DataConfig c = TokenFile(layout);
  int64_t samples = 0;
  int64_t held = 0;
  for (auto _ : state) {
    const int64_t before = AnonymousBytes();
    auto data = LoadTokenDataset(c);
    if (!data.ok()) {
      state.SkipWithError(data.status().ToString().c_str());
      return;
    }
    held = AnonymousBytes() - before;
    samples = (*data)->size();
  }
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["anon_MiB"] = static_cast<double>(held) / (1 << 20);
  state.counters["file_MiB"] = static_cast<double>(kTokens * 2) / (1 << 20);
}
BENCHMARK_CAPTURE(BM_OpenTokenFile, blocks, TokenLayout::kBlocks)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_OpenTokenFile, documents, TokenLayout::kDocuments)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// One micro-batch of random samples (the page cache warm, as after the
// first epoch's reads).
void BM_GatherMicroBatch(benchmark::State& state) {
  auto data = LoadTokenDataset(TokenFile(TokenLayout::kBlocks));
  if (!data.ok()) {
    state.SkipWithError(data.status().ToString().c_str());
    return;
  }
  const int64_t micro = state.range(0);
  torch::manual_seed(0);
  for (auto _ : state) {
    state.PauseTiming();
    const torch::Tensor indices = torch::randint((*data)->size(), {micro}, torch::kInt64);
    state.ResumeTiming();
    benchmark::DoNotOptimize((*data)->Gather(indices));
  }
  state.counters["tokens"] = static_cast<double>(micro * kSequenceLength);
}
BENCHMARK(BM_GatherMicroBatch)->Arg(4)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace accumulus::engine

BENCHMARK_MAIN();
