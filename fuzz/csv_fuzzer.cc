// The CSV reader: any bytes, any label column or columns, any header rule;
// what it accepts is a whole table whose labels are classes, and no error
// quotes the file.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/data/csv_table.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  accumulus::data::CsvConfig config;
  config.path = "fuzz.csv";
  config.classification = data[0] & 1;
  config.declared_classes = (data[0] >> 1) & 7;
  const char* columns[] = {"", "0", "-1", "label", "2", "x"};
  const int choice = data[0] >> 4;
  if (choice < 6) {
    config.label_column = columns[choice];
  } else {  // several targets (or the same column twice)
    config.label_columns = {columns[choice % 6], columns[(choice + 3) % 6]};
    if (choice >= 12) config.label_columns.push_back("1");
  }
  // The header rule from the input's length (the first byte is full): a
  // mutation that adds or drops a byte reads the same text under another.
  config.header = static_cast<accumulus::data::CsvHeader>(size % 3);
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  accumulus::StatusOr<accumulus::data::CsvTable> table = accumulus::data::ParseCsv(text, config);
  if (!table.ok()) {
    FUZZ_CHECK(table.status().message().size() < 512);  // never the file's content
    return 0;
  }
  FUZZ_CHECK(table->rows > 0 && table->features > 0);
  FUZZ_CHECK(static_cast<int64_t>(table->inputs.size()) == table->rows * table->features);
  const auto labels = static_cast<int64_t>(std::max<size_t>(config.label_columns.size(), 1));
  FUZZ_CHECK(table->targets_per_row == labels);
  FUZZ_CHECK(static_cast<int64_t>(table->targets.size()) == table->rows * labels);
  for (float x : table->inputs) FUZZ_CHECK(std::isfinite(x));
  if (config.header == accumulus::data::CsvHeader::kNone) FUZZ_CHECK(table->header_line == 0);
  if (config.header == accumulus::data::CsvHeader::kFirstLine) FUZZ_CHECK(table->header_line > 0);
  FUZZ_CHECK(!table->row_names || table->header_line > 0);
  if (config.classification) {
    for (double y : table->targets) {
      FUZZ_CHECK(y >= 0 && y == std::floor(y) && y < static_cast<double>(table->classes));
    }
    if (config.declared_classes > 0) FUZZ_CHECK(table->classes == config.declared_classes);
    // Class names: distinct, in byte order, one class each.
    const std::vector<std::string>& names = table->class_names;
    for (size_t i = 1; i < names.size(); ++i) FUZZ_CHECK(names[i - 1] < names[i]);
    FUZZ_CHECK(static_cast<int64_t>(names.size()) <= table->classes);
  } else {
    FUZZ_CHECK(table->class_names.empty());
  }
  return 0;
}
