// The CSV reader: any bytes, any label column; what it accepts is a whole
// table whose labels are classes, and no error quotes the file.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/data/csv_table.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  accumulus::data::CsvConfig config;
  config.path = "fuzz.csv";
  config.classification = data[0] & 1;
  config.declared_classes = (data[0] >> 1) & 7;
  const char* columns[] = {"", "0", "-1", "label", "2", "x"};
  config.label_column = columns[(data[0] >> 4) % 6];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  accumulus::StatusOr<accumulus::data::CsvTable> table = accumulus::data::ParseCsv(text, config);
  if (!table.ok()) {
    FUZZ_CHECK(table.status().message().size() < 512);  // never the file's content
    return 0;
  }
  FUZZ_CHECK(table->rows > 0 && table->features > 0);
  FUZZ_CHECK(static_cast<int64_t>(table->inputs.size()) == table->rows * table->features);
  FUZZ_CHECK(static_cast<int64_t>(table->targets.size()) == table->rows);
  for (float x : table->inputs) FUZZ_CHECK(std::isfinite(x));
  if (config.classification) {
    for (double y : table->targets) {
      FUZZ_CHECK(y >= 0 && y == std::floor(y) && y < static_cast<double>(table->classes));
    }
    if (config.declared_classes > 0) FUZZ_CHECK(table->classes == config.declared_classes);
  }
  return 0;
}
