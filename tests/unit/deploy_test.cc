// The shipped Grafana dashboard only queries metrics the controller and the
// worker export.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/metrics/registry.h"
#include "server/controller_metrics.h"
#include "tests/support/read_file.h"
#include "worker/worker_metrics.h"

namespace accumulus {
namespace {

using testing::ReadFile;

// Every "expr" string anywhere in the dashboard.
void CollectExpressions(const google::protobuf::Value& value, std::vector<std::string>* out) {
  if (value.has_struct_value()) {
    for (const auto& [key, field] : value.struct_value().fields()) {
      if (key == "expr" && field.has_string_value()) out->push_back(field.string_value());
      CollectExpressions(field, out);
    }
  } else if (value.has_list_value()) {
    for (const auto& item : value.list_value().values()) CollectExpressions(item, out);
  }
}

TEST(GrafanaDashboard, QueriesOnlyExportedMetrics) {
  const std::string json =
      ReadFile(std::string(ACCUMULUS_SOURCE_DIR) + "/deploy/grafana/dashboards/accumulus.json");
  google::protobuf::Value dashboard;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &dashboard).ok())
      << "the dashboard is not valid JSON";
  std::vector<std::string> expressions;
  CollectExpressions(dashboard, &expressions);
  ASSERT_GE(expressions.size(), 30u);

  metrics::Registry controller;
  server::ControllerMetrics controller_metrics(&controller);
  metrics::Registry worker;
  worker::WorkerMetrics worker_metrics(&worker);
  const std::string exposition = controller.Render() + worker.Render();
  const std::regex metric(R"(accumulus_[a-z_]+)");
  std::set<std::string> names;
  for (const std::string& e : expressions) {
    for (std::sregex_iterator it(e.begin(), e.end(), metric), end; it != end; ++it) {
      names.insert(std::regex_replace(it->str(), std::regex("_(bucket|sum|count)$"), ""));
    }
  }
  for (const std::string& name : names) {
    EXPECT_NE(exposition.find("# TYPE " + name + " "), std::string::npos)
        << name << " is queried by the dashboard but not exported";
  }
}

}  // namespace
}  // namespace accumulus
