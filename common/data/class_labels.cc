#include "common/data/class_labels.h"

namespace accumulus::data {

std::string ExpectedClass(int64_t declared) {
  if (declared <= 0) {
    return "a class index from 0 to " + std::to_string(kMaxClasses - 1) +
           " (or declare data.outputs)";
  }
  return "a class index from 0 to " + std::to_string(declared - 1) + " (data.outputs " +
         std::to_string(declared) + ")";
}

}  // namespace accumulus::data
