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
  // Lines are queued and written to stderr by a thread of spdlog's, so code
  // that logs while holding a lock (the controller's job manager) never
  // waits on the terminal or a log collector's pipe. A full queue (8192
  // lines) makes the caller wait rather than lose a line.
  bool asynchronous = false;
};

// Creates the logger named `component` (writing to stderr) and makes it the
// default. INVALID_ARGUMENT for an unknown level or format.
Status SetUpLogging(const std::string& component, const LoggingOptions& options);

// Writes out every queued line and stops the asynchronous logger's thread;
// logging after it is synchronous. Call before a process that logs
// asynchronously returns from main.
void StopLogging();

}  // namespace accumulus
