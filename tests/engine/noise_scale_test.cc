// The gradient noise scale as the engine measures it: against the closed
// form of least squares on Gaussian features, over two data-parallel ranks
// against one rank with the same global batch, and in tokens for the charlm
// whatever the split.
#include "common/noise_scale.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <thread>

#include "tests/support/engine_test_support.h"
#include "tests/support/free_port.h"
#include "worker/engine/dataset.h"
#include "worker/engine/process_group_sync.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {
namespace {

// y = x·w* + ε with x ~ N(0, I_d), ε ~ N(0, σ²), at fixed w = w* + u. With
// the squared error (x·w − y)² per item, the per-item gradient is
// 2x(x·u − ε), so G = 2u and E[gg^T] = 4(2uu^T + (|u|² + σ²)I):
//   |G|² = 4|u|²,  tr(Σ) = 4((d + 1)|u|² + σ²d),
//   B_noise = ((d + 1)|u|² + σ²d) / |u|².
struct GaussianLeastSquares {
  int64_t d = 256;
  double sigma = 1.0;
  torch::Tensor w_star;
  torch::Tensor w;  // the parameter: w* + u, |u| = 1

  explicit GaussianLeastSquares(uint64_t seed) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    w_star = at::randn({d, 1}, gen);
    const torch::Tensor u = at::randn({d, 1}, gen);
    w = (w_star + u / u.norm()).requires_grad_(true);
  }
  double u_sq() const { return (w.detach() - w_star).square().sum().item<double>(); }
  double gradient_sq_norm() const { return 4 * u_sq(); }
  double noise_trace() const {
    return 4 * ((static_cast<double>(d) + 1) * u_sq() + sigma * sigma * static_cast<double>(d));
  }
  double noise_scale() const { return noise_trace() / gradient_sq_norm(); }

  Batch Draw(int64_t n, at::Generator& gen) const {
    const torch::Tensor x = at::randn({n, d}, gen);
    return {x, x.matmul(w_star) + sigma * at::randn({n, 1}, gen)};
  }
  WindowAccumulator Accumulator(int64_t k, GradientSync* sync = nullptr) {
    torch::Tensor parameter = w;
    WindowAccumulator window(
        {w}, [parameter](const torch::Tensor& x) { return x.matmul(parameter); },
        LossKind::kMeanSquaredError, Normalization::kExact, k, /*max_grad_norm=*/0, sync);
    window.set_measure_noise(true);
    return window;
  }
};

// Runs `windows` windows of k micro-batches of `micro` fresh samples each,
// the parameters never stepped; returns the smoothed estimate and the
// relative standard deviation of the per-window noise-scale estimates.
struct Measured {
  NoiseScaleEstimator smoothed{kDecay};
  double small_batch = 0;
  double per_window_relative_sd = 0;
  int windows = 0;
  static constexpr double kDecay = 0.999;
};

Measured Measure(GaussianLeastSquares& problem, WindowAccumulator& window, int64_t micro, int64_t k,
                 int windows, uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  Measured m;
  m.windows = windows;
  std::vector<double> per_window;
  for (int i = 0; i < windows; ++i) {
    for (int64_t j = 0; j < k; ++j) window.AddMicroBatch(problem.Draw(micro, gen));
    const WindowResult result = window.FinishWindow();
    problem.w.mutable_grad() = torch::Tensor();
    EXPECT_TRUE(result.noise_measured);
    m.smoothed.Add(result.noise);
    m.small_batch = result.noise.small_batch;
    const NoiseEstimate e = EstimateNoise(result.noise);
    per_window.push_back(e.noise_trace / e.gradient_sq_norm);
  }
  double mean = 0, square = 0;
  for (double v : per_window) mean += v / static_cast<double>(per_window.size());
  for (double v : per_window) square += (v - mean) * (v - mean);
  m.per_window_relative_sd = std::sqrt(square / static_cast<double>(per_window.size() - 1)) / mean;
  return m;
}

// The standard error of a bias-corrected moving average of T independent
// windows with decay β: the per-window sd over the square root of its
// effective count (Σw)²/Σw², with weights w_t = β^(T−t).
double SmoothedRelativeError(const Measured& m) {
  const double beta = Measured::kDecay;
  const double sum = (1 - std::pow(beta, m.windows)) / (1 - beta);
  const double sum_sq = (1 - std::pow(beta, 2 * m.windows)) / (1 - beta * beta);
  return m.per_window_relative_sd / std::sqrt(sum * sum / sum_sq);
}

// d = 256, σ = 1, |u| = 1: B_noise = 513. With micro-batches of 64 and
// windows of 1024 a window's estimate scatters by about 40% (mostly |G|²'s,
// whose relative error is about sqrt(16/B_big) here), so the moving average
// over 3000 windows with decay 0.999 (about 1800 effective) has a standard
// error near 1%, and the 5% bound is about five standard errors. The test
// checks that claim on its own data.
TEST(NoiseScale, LeastSquaresOnGaussianFeaturesMatchesTheClosedForm) {
  torch::manual_seed(0);
  GaussianLeastSquares problem(1);
  WindowAccumulator window = problem.Accumulator(16);
  const Measured m = Measure(problem, window, 64, 16, 3000, 2);
  EXPECT_EQ(m.small_batch, 64);  // one rank: the first micro-batch
  EXPECT_LT(SmoothedRelativeError(m), 0.05 / 4) << "the bound would not be statistical";
  const double expected = problem.noise_scale();
  EXPECT_NEAR(m.smoothed.noise_scale(), expected, 0.05 * expected)
      << "per-window relative sd " << m.per_window_relative_sd;
  EXPECT_NEAR(m.smoothed.gradient_sq_norm(), problem.gradient_sq_norm(),
              0.05 * problem.gradient_sq_norm());
  EXPECT_NEAR(m.smoothed.noise_trace(), problem.noise_trace(), 0.05 * problem.noise_trace());
  std::cout << "[ noise   ] B_noise " << m.smoothed.noise_scale() << " (closed form " << expected
            << ", standard error " << SmoothedRelativeError(m) * 100 << "%)\n";
}

// Two ranks of 8 micro-batches measure the same noise scale as one rank of
// 16, and they do it with their own windows (512 each) as the small batch.
TEST(NoiseScale, TwoRanksOfKMeasureWhatOneRankOf2KMeasures) {
  GaussianLeastSquares single(1);
  WindowAccumulator one_rank = single.Accumulator(16);
  const Measured alone = Measure(single, one_rank, 64, 16, 3000, 2);

  const int port = testing::FreeLoopbackPort();
  std::vector<Measured> ranks(2);
  auto rank = [&](int r) {
    ProcessGroupConfig config;
    config.rank = r;
    config.world_size = 2;
    config.rendezvous_port = port;
    config.timeout = std::chrono::milliseconds(60000);
    StatusOr<std::unique_ptr<GradientSync>> sync = ConnectProcessGroup(config);
    ASSERT_TRUE(sync.ok()) << sync.status().ToString();
    GaussianLeastSquares problem(1);  // the same w on both ranks
    WindowAccumulator window = problem.Accumulator(8, sync->get());
    ranks[r] = Measure(problem, window, 64, 8, 3000, 10 + static_cast<uint64_t>(r));
  };
  std::thread first(rank, 0), second(rank, 1);
  first.join();
  second.join();

  const double expected = single.noise_scale();
  EXPECT_EQ(ranks[0].small_batch, 512) << "the per-rank windows are the small batch";
  EXPECT_EQ(ranks[0].smoothed.noise_scale(), ranks[1].smoothed.noise_scale())
      << "every rank computes the same estimate";
  EXPECT_LT(SmoothedRelativeError(ranks[0]), 0.05 / 4);
  EXPECT_NEAR(ranks[0].smoothed.noise_scale(), expected, 0.05 * expected);
  EXPECT_NEAR(alone.smoothed.noise_scale(), expected, 0.05 * expected);
  std::cout << "[ noise   ] 2 ranks × 8: " << ranks[0].smoothed.noise_scale() << " (standard error "
            << SmoothedRelativeError(ranks[0]) * 100
            << "%), 1 rank × 16: " << alone.smoothed.noise_scale() << ", closed form " << expected
            << "\n";
}

TEST(NoiseScale, OneMicroBatchOnOneRankIsNotMeasured) {
  GaussianLeastSquares problem(1);
  WindowAccumulator window = problem.Accumulator(1);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(3);
  window.AddMicroBatch(problem.Draw(64, gen));
  EXPECT_FALSE(window.FinishWindow().noise_measured);
}

// The charlm's items are target tokens: its noise scale is in tokens, and
// the same windows cut into different micro-batches estimate the same value
// (at fixed parameters: lr 0).
TrainConfig CharLm(int64_t micro, int64_t accumulation) {
  TrainConfig c;
  c.model.kind = ModelKind::kCharLm;
  c.model.d_model = 16;
  c.model.heads = 2;
  c.model.layers = 1;
  c.data.task = DataTask::kLanguageModeling;
  c.data.samples = 256;
  c.data.sequence_length = 16;
  c.data.min_sequence_length = 2;
  c.data.seed = 6;
  c.optimizer.lr = 0;
  c.micro_batch = micro;
  c.accumulation_steps = accumulation;
  c.max_steps = 800;
  c.seed = 4;
  return c;
}

struct Means {
  double noise_scale = 0;
  double relative_error = 0;  // the ratio's standard error, relative
};

// The ratio of the mean per-window estimates, with its standard error by
// the delta method.
Means MeanEstimate(const std::vector<StepReport>& steps) {
  std::vector<double> g, t;
  for (const StepReport& s : steps) {
    if (!s.noise.measured) continue;
    g.push_back(s.noise.window.gradient_sq_norm);
    t.push_back(s.noise.window.noise_trace);
  }
  const double n = static_cast<double>(g.size());
  double mg = 0, mt = 0;
  for (size_t i = 0; i < g.size(); ++i) mg += g[i] / n, mt += t[i] / n;
  double vg = 0, vt = 0, cov = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    vg += (g[i] - mg) * (g[i] - mg) / (n - 1);
    vt += (t[i] - mt) * (t[i] - mt) / (n - 1);
    cov += (g[i] - mg) * (t[i] - mt) / (n - 1);
  }
  Means m;
  m.noise_scale = mt / mg;
  m.relative_error = std::sqrt((vt / (mt * mt) + vg / (mg * mg) - 2 * cov / (mt * mg)) / n);
  return m;
}

TEST(NoiseScale, TheCharLmMeasuresInTokensWhateverTheSplit) {
  testing::RecordingSink four_by_eight, sixteen_by_two;
  ASSERT_TRUE(Train(CharLm(4, 8), &four_by_eight).ok());
  ASSERT_TRUE(Train(CharLm(16, 2), &sixteen_by_two).ok());

  const StepReport& first = four_by_eight.steps.front();
  ASSERT_TRUE(first.noise.measured);
  EXPECT_GT(first.tokens, 0);
  EXPECT_EQ(first.noise.sample.big_batch, static_cast<double>(first.tokens))
      << "the window's size is its target tokens, not its 32 samples";
  EXPECT_GT(first.noise.sample.small_batch, 4) << "the first micro-batch's tokens";
  EXPECT_EQ(first.noise.sample.small_batch, std::floor(first.noise.sample.small_batch));

  const Means a = MeanEstimate(four_by_eight.steps);
  const Means b = MeanEstimate(sixteen_by_two.steps);
  const double bound = 4 * std::hypot(a.relative_error, b.relative_error);
  EXPECT_LT(bound, 0.2) << "the statistical bound is too loose to mean anything";
  EXPECT_NEAR(a.noise_scale / b.noise_scale, 1.0, bound)
      << "4×8: " << a.noise_scale << " ± " << a.relative_error * a.noise_scale
      << ", 16×2: " << b.noise_scale << " ± " << b.relative_error * b.noise_scale;
  std::cout << "[ noise   ] charlm B_noise in tokens: 4×8 " << a.noise_scale << ", 16×2 "
            << b.noise_scale << " (4 standard errors: " << bound * 100 << "%)\n";
}

}  // namespace
}  // namespace accumulus::engine
