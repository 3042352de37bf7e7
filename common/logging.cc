#include "common/logging.h"

#include <spdlog/async.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace accumulus {
namespace {

// The %j flag: the message escaped as a JSON string body, so a quote or a
// newline in a log message cannot break a JSON log line.
class JsonEscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (char c : msg.payload) {
      switch (c) {
        case '"':
          dest.append(std::string_view("\\\""));
          break;
        case '\\':
          dest.append(std::string_view("\\\\"));
          break;
        case '\n':
          dest.append(std::string_view("\\n"));
          break;
        case '\t':
          dest.append(std::string_view("\\t"));
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            dest.append(std::string_view(escaped));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

}  // namespace

Status SetUpLogging(const std::string& component, const LoggingOptions& options) {
  const spdlog::level::level_enum level = spdlog::level::from_str(options.level);
  if (level == spdlog::level::off && options.level != "off") {
    return Status::InvalidArgument("--log-level \"" + options.level +
                                   "\" is not one of trace, debug, info, warn, error, off");
  }
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  std::shared_ptr<spdlog::logger> logger;
  if (options.asynchronous) {
    constexpr size_t kQueuedLines = 8192;
    spdlog::init_thread_pool(kQueuedLines, 1);
    logger = std::make_shared<spdlog::async_logger>(
        component, std::move(sink), spdlog::thread_pool(), spdlog::async_overflow_policy::block);
  } else {
    logger = std::make_shared<spdlog::logger>(component, std::move(sink));
  }
  if (options.format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonEscapedMessage>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","component":"%n","pid":%P,"msg":"%j"})");
    logger->set_formatter(std::move(formatter));
  } else if (options.format == "text") {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%L%$ %n: %v");
  } else {
    return Status::InvalidArgument("--log-format \"" + options.format +
                                   "\" is not one of text, json");
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

void StopLogging() {
  std::shared_ptr<spdlog::logger> current = spdlog::default_logger();
  // Synchronous from now on, to the same sinks (which keep the format), so
  // that what still logs (destructors) is written rather than lost.
  auto synchronous = std::make_shared<spdlog::logger>(current->name(), current->sinks().begin(),
                                                      current->sinks().end());
  synchronous->set_level(current->level());
  synchronous->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(synchronous));
  current.reset();
  // The pool writes out what is queued (each queued line holds its logger)
  // before its thread stops.
  spdlog::details::registry::instance().set_tp(nullptr);
}

}  // namespace accumulus
