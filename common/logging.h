// Logging setup: one named spdlog logger per component, level from a flag,
// human-readable or JSON lines (for log collectors on clusters).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace accumulus {

struct LoggingOptions {
  // "trace", "debug", "info", "warn", "error", "off".
  std::string level = "info";
  // "text" or "json".
  std::string format = "text";
};

// Creates the logger named `component` (writing to stderr) and makes it the
// default. INVALID_ARGUMENT for an unknown level or format.
Status SetUpLogging(const std::string& component, const LoggingOptions& options);

}  // namespace accumulus
