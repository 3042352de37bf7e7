// Reading a small file a user names (a job spec, a token, a certificate)
// whole, with errors that say what went wrong: the file is missing, is a
// directory (which std::ifstream opens and reads as empty), or is far larger
// than such a file can be (a data set passed by mistake).
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace accumulus {

// The bytes of `path`, at most `max_bytes` of them. Errors start with
// `label` (the path itself, or e.g. "--tls-cert /etc/x.pem"): "LABEL: cannot
// be read (No such file or directory)", "LABEL: is a directory, not a file".
// Pipes and character devices are read like files (`submit <(make-spec)`).
StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes,
                                    const std::string& label);

}  // namespace accumulus
