// The flags every daemon shares for its configuration: --config FILE reads
// flags from a TOML file (a ConfigMap on Kubernetes), --check-config parses
// and checks them and exits. Header-only: only the binaries' main()s use it.
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "common/status.h"

namespace accumulus {

// Adds --config and --check-config to `app`; `check_only` is set by the
// latter. In the file, a flag is its long name without the dashes:
//   lost-worker-ms = 10000
//   data-root = ["/shared/data"]
// A name the binary has no flag for is an error, as on the command line;
// flags given on the command line win over the file's.
inline void AddConfigFlags(CLI::App* app, bool* check_only) {
  app->allow_config_extras(false);
  app->set_config("--config", "", "read flags from this TOML file (NAME = VALUE per flag)");
  app->add_flag("--check-config", *check_only,
                "parse and check the flags (and --config), print what is wrong or "
                "\"configuration ok\", and exit");
}

// Parses the command line: nullopt to go on, or the exit code (help, or an
// error: printed naming the flag or the file's entry).
inline std::optional<int> ParseFlags(CLI::App* app, int argc, char** argv) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::ConfigError& e) {
    const CLI::Option* config = app->get_config_ptr();
    std::cerr << "--config " << (config != nullptr ? config->as<std::string>() : "") << ": "
              << e.what() << " (no flag of that name, or not NAME = VALUE)\n";
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app->exit(e);
  }
  return std::nullopt;
}

// --check-config's answer: "configuration ok" and 0, or what `checked` says
// is wrong and 2.
inline int ReportCheckedConfig(const Status& checked) {
  if (!checked.ok()) {
    std::cerr << checked.message() << "\n";
    return 2;
  }
  std::cout << "configuration ok\n";
  return 0;
}

}  // namespace accumulus
