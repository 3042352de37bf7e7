// The flags every daemon shares for its configuration: --config FILE reads
// flags from a TOML file (a ConfigMap on Kubernetes), --check-config parses
// and checks them and exits. Header-only: only the binaries' main()s use it.
#pragma once

#include <CLI/CLI.hpp>
#include <cctype>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/small_file.h"
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

namespace config_file {

// The file's lines (none where it cannot be read: CLI11 has said so then).
inline std::vector<std::string> LinesOf(const std::string& path) {
  constexpr size_t kMaxConfigBytes = size_t{1} << 20;  // flags, not data
  const StatusOr<std::string> text = ReadSmallFile(path, kMaxConfigBytes, path);
  std::vector<std::string> lines;
  if (!text.ok()) return lines;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line of the TOML file `path` whose entry is `key` (`key = ...`), or
// that opens the table `[key]` when `table`; 0 if none. CLI11 names what
// it could not take, never where it stands.
inline int LineOf(const std::string& path, const std::string& key, bool table) {
  const std::vector<std::string> lines = LinesOf(path);
  for (int number = 1; number <= static_cast<int>(lines.size()); ++number) {
    const std::string& line = lines[number - 1];
    const size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos) continue;
    std::string_view text(line);
    text.remove_prefix(begin);
    if (table) {
      if (text.substr(0, key.size() + 2) == "[" + key + "]") return number;
      continue;
    }
    if (text.substr(0, key.size()) != key) continue;
    text.remove_prefix(key.size());
    const size_t equals = text.find_first_not_of(" \t");
    if (equals != std::string_view::npos && text[equals] == '=') return number;
  }
  return 0;
}

inline std::string PathOf(const CLI::App& app) {
  const CLI::Option* config = app.get_config_ptr();
  return config != nullptr && config->count() > 0 ? config->as<std::string>() : "";
}

// "--config FILE:LINE" (or without the line where it cannot be found).
inline std::string Where(const std::string& path, int line) {
  return "--config " + path + (line > 0 ? ":" + std::to_string(line) : "");
}

// What CLI11 would read past: a line that is neither a comment, a [table]
// nor NAME = VALUE with a value (`metrics-port =` set nothing, silently).
// "--config FILE:LINE: ..." for the first such line, or empty.
inline std::string SyntaxError(const std::string& path) {
  const std::vector<std::string> lines = LinesOf(path);
  for (int number = 1; number <= static_cast<int>(lines.size()); ++number) {
    const std::string& line = lines[number - 1];
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos || line[begin] == '#' || line[begin] == '[') continue;
    const size_t equals = line.find('=', begin);
    const size_t value = equals == std::string::npos ? std::string::npos
                                                     : line.find_first_not_of(" \t\r", equals + 1);
    if (value == std::string::npos || line[value] == '#') {
      return Where(path, number) +
             ": expected NAME = VALUE (a flag's long name and its value, on one line)";
    }
  }
  return "";
}

// What the file has that no flag takes (CLI11's "INI was not able to parse
// ITEM"): a name, or a [table] (its item then ends in ".++").
inline std::string ExtraText(const std::string& path, const std::string& what) {
  static const std::string kPrefix = "INI was not able to parse ";
  if (what.rfind(kPrefix, 0) != 0) return "--config " + path + ": " + what;
  std::string item = what.substr(kPrefix.size());
  static const std::string kTable = ".++";
  if (item.size() > kTable.size() &&
      item.compare(item.size() - kTable.size(), kTable.size(), kTable) == 0) {
    item.resize(item.size() - kTable.size());
    return Where(path, LineOf(path, item, true)) + ": [" + item +
           "] opens a table; flags go at the top level, NAME = VALUE";
  }
  // A dotted name as written, or a name under a [table] (CLI11 prefixes
  // the table's).
  int line = LineOf(path, item, false);
  if (const size_t dot = item.rfind('.'); line == 0 && dot != std::string::npos) {
    line = LineOf(path, item.substr(dot + 1), false);
  }
  return Where(path, line) + ": " + item + " is not a flag of this program";
}

// For an error about a flag's value that the file gave (the command line
// did not): where in the file. Empty when the error is not about such a flag.
inline std::string ValueSource(const CLI::App& app, const std::string& path,
                               const std::string& what, int argc, char** argv) {
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      const std::string flag = "--" + name;
      const size_t at = what.find(flag);
      const size_t after = at + flag.size();
      if (at == std::string::npos ||
          (after < what.size() &&
           (std::isalnum(static_cast<unsigned char>(what[after])) || what[after] == '-'))) {
        continue;  // not this flag, or a longer one it begins
      }
      bool on_command_line = false;
      for (int i = 1; i < argc; ++i) {
        const std::string_view arg(argv[i]);
        on_command_line |= arg == flag || arg.rfind(flag + "=", 0) == 0;
      }
      const int line = LineOf(path, name, false);
      if (!on_command_line && line > 0) return Where(path, line);
    }
  }
  return "";
}

}  // namespace config_file

// Parses the command line: nullopt to go on, or the exit code (help, or an
// error: printed naming the flag, and for the file's entries the file and
// the line).
inline std::optional<int> ParseFlags(CLI::App* app, int argc, char** argv) {
  // A malformed line first: what CLI11 says of it names a value or a
  // "flag" the line was never meant to be.
  const auto malformed = [app]() -> std::optional<int> {
    const std::string path = config_file::PathOf(*app);
    const std::string error = path.empty() ? "" : config_file::SyntaxError(path);
    if (error.empty()) return std::nullopt;
    std::cerr << error << "\n";
    return static_cast<int>(CLI::ExitCodes::ConfigError);
  };
  try {
    app->parse(argc, argv);
  } catch (const CLI::ConfigError& e) {
    if (std::optional<int> exit_code = malformed()) return exit_code;
    std::cerr << config_file::ExtraText(config_file::PathOf(*app), e.what()) << "\n";
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app->exit(e);  // --help
    if (std::optional<int> exit_code = malformed()) return exit_code;
    const std::string path = config_file::PathOf(*app);
    const std::string where =
        path.empty() ? "" : config_file::ValueSource(*app, path, e.what(), argc, argv);
    if (where.empty()) return app->exit(e);
    std::cerr << where << ": " << e.what() << "\n";
    return e.get_exit_code();
  }
  return malformed();
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
