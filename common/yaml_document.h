// One YAML document from a text, refusing a second one instead of ignoring
// it, and never trusting yaml-cpp 0.7's LoadAll, which loops forever (and
// allocates without bound) on a stray flow indicator such as `,`
// (jbeder/yaml-cpp#1319, fixed after Debian 12's 0.7).
#pragma once

#include <yaml-cpp/node/node.h>

#include <string>

#include "common/status.h"

namespace accumulus {

// The text's one document. INVALID_ARGUMENT, with `source` and the line, for
// YAML syntax errors, for text the parser cannot begin a node with (yaml-cpp
// otherwise ignores it), and for a second non-empty document; empty
// documents after the first (a trailing `---`) are nothing said. `what` names
// the document in that error ("a job spec").
StatusOr<YAML::Node> LoadOneYamlDocument(const std::string& yaml, const std::string& source,
                                         const std::string& what);

}  // namespace accumulus
