// CSV data files as the trainer reads them, parsed without LibTorch (so that
// a fuzzer and the control plane's tests can reach every byte of it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace accumulus::data {

// Whether the file's first line (blank lines aside) names its columns.
enum class CsvHeader {
  kAuto,       // told from the line itself, as ParseCsv says
  kFirstLine,  // it does, whatever it holds (a header of numbers too)
  kNone,       // it is a sample, whatever it holds
};

struct CsvConfig {
  std::string path;  // for errors
  CsvHeader header = CsvHeader::kAuto;
  // The label: a header name, a 0-based index (negative: from the end);
  // "": the last column, unless label_columns names several.
  std::string label_column;
  // Regression: the target columns, named as label_column, in the order of
  // the targets. Exclusive with label_column.
  std::vector<std::string> label_columns;
  bool classification = true;
  // The classes the spec declares (data.outputs); 0: the labels' own.
  int64_t declared_classes = 0;
};

struct CsvTable {
  int64_t rows = 0;
  int64_t features = 0;
  int64_t targets_per_row = 1;  // the label columns
  std::vector<float> inputs;    // rows × features, row-major
  std::vector<double> targets;  // rows × targets_per_row: class indices or values
  int64_t classes = 0;          // classification: at least the largest label + 1
  // Classification by name: class c's name (the names in byte order).
  std::vector<std::string> class_names;
  int64_t header_line = 0;  // the header's line in the file; 0: it has none
  bool row_names = false;   // its first column named the rows, and was skipped
};

// Whether a label column is named by its 0-based index ("2", "-1": a whole
// number) rather than by its name in the header.
bool IsColumnIndex(const std::string& name);

// Numeric columns, one sample per line (booleans, True/TRUE/true and
// False/FALSE/false, read as 1 and 0); a classification's label column may
// hold class names instead, numbered in byte order. The first line is a
// header as config.header says; by default when it holds a label column
// named by name, a field other than a class label's is no number, or it
// numbers the columns from 0 as pandas names a frame's (see IsHeader). A
// first column of no name in the header holds row names, which are
// skipped. Blank lines are skipped; LF, CRLF or CR line ends, a UTF-8 byte
// order mark and RFC 4180 quoted fields (on one line) are fine. Fields are
// separated by commas, or by tabs or semicolons when the first line has
// those and no comma. The label columns are the targets; the other
// columns, in the file's order, the features.
// Every value is finite; a class label is an index below the declared
// classes (else below the most a job may have), or a name, never both in
// one file. A compressed or archived file is refused as such
// (FileSignatureHint). INVALID_ARGUMENT names the file, the line and the
// column and what was expected there — never what the file holds.
StatusOr<CsvTable> ParseCsv(std::string_view text, const CsvConfig& config);

}  // namespace accumulus::data
