#include "common/data/csv_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "common/data/class_labels.h"

namespace accumulus::data {
namespace {

// The file's delimiter, from its first line: a comma, unless that line has
// none outside quotes but has tabs (a TSV file) or semicolons (CSV as
// spreadsheets write it where the decimal separator is a comma).
char DelimiterOf(const std::string& line) {
  bool quoted = false;
  int commas = 0, tabs = 0, semicolons = 0;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (!quoted) {
      commas += c == ',';
      tabs += c == '\t';
      semicolons += c == ';';
    }
  }
  if (commas == 0 && tabs > 0) return '\t';
  if (commas == 0 && semicolons > 0) return ';';
  return ',';
}

std::string SeparatedBy(char delimiter) {
  switch (delimiter) {
    case '\t':
      return "tab-separated";
    case ';':
      return "semicolon-separated";
    default:
      return "comma-separated";
  }
}

// One line's fields, trimmed of spaces (and tabs, when they do not separate
// the fields). A field may be quoted as RFC 4180 says — `"1.5"`, `"a, b"`,
// `"say ""x"""` — as spreadsheets and R's write.csv quote headers and text;
// a quote opened must close on the same line. Null when one does not, or
// text follows a closing quote (`*error` says which).
std::optional<std::vector<std::string>> SplitFields(const std::string& line, char delimiter,
                                                    std::string* error) {
  const std::string_view blanks = delimiter == '\t' ? " " : " \t";
  std::vector<std::string> fields;
  size_t i = 0;
  const auto skip_blanks = [&] {
    while (i < line.size() && blanks.find(line[i]) != std::string_view::npos) ++i;
  };
  while (true) {
    skip_blanks();
    std::string field;
    if (i < line.size() && line[i] == '"') {
      const size_t column = fields.size() + 1;
      bool closed = false;
      for (++i; i < line.size(); ++i) {
        if (line[i] != '"') {
          field += line[i];
        } else if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';  // "" is a quote inside the field
          ++i;
        } else {
          closed = true;
          ++i;
          break;
        }
      }
      skip_blanks();
      if (!closed) {
        *error = "column " + std::to_string(column) + ": a quoted field does not end on its line";
        return std::nullopt;
      }
      if (i < line.size() && line[i] != delimiter) {
        *error = "column " + std::to_string(column) + ": text after a quoted field's closing quote";
        return std::nullopt;
      }
    } else {
      const size_t end = std::min(line.find(delimiter, i), line.size());
      field = line.substr(i, end - i);
      field.erase(field.find_last_not_of(blanks) + 1);  // npos + 1 == 0: all blanks
      i = end;
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) return fields;
    ++i;  // the delimiter
  }
}

bool ParseNumber(const std::string& text, double* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

std::string At(const std::string& path, int64_t line) { return path + ":" + std::to_string(line); }

// The label column's index among `columns`, or -1.
int64_t LabelIndex(const CsvConfig& config, const std::vector<std::string>& header,
                   int64_t columns) {
  if (config.label_column.empty()) return columns - 1;
  double index = 0;
  if (ParseNumber(config.label_column, &index)) {
    if (!std::isfinite(index) || std::fabs(index) > static_cast<double>(columns)) return -1;
    const auto i = static_cast<int64_t>(index);
    return i < 0 ? columns + i : i;
  }
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == config.label_column) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace

StatusOr<CsvTable> ParseCsv(const std::string& text, const CsvConfig& config) {
  // A byte order mark (as spreadsheets write UTF-8) is not part of the first
  // field: left there, it would make a header of a first row of numbers.
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  const size_t start =
      text.compare(0, kByteOrderMark.size(), kByteOrderMark) == 0 ? kByteOrderMark.size() : 0;
  std::string line;
  int64_t line_number = 0;
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
  std::vector<int64_t> row_lines;  // each row's line in the file
  size_t columns = 0;
  char delimiter = 0;  // from the first line
  for (size_t at = start; at < text.size();) {
    // A line ends at LF, CRLF or a lone CR (classic Mac OS line ends, which
    // Excel for Mac still writes as "CSV (Macintosh)"); read by LF alone,
    // such a file would be one line of one header and no rows.
    const size_t end = std::min(text.find_first_of("\r\n", at), text.size());
    line.assign(text, at, end - at);
    at = end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1);
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
    if (delimiter == 0) delimiter = DelimiterOf(line);
    std::string split_error;
    const std::optional<std::vector<std::string>> split =
        SplitFields(line, delimiter, &split_error);
    if (!split) return Status::InvalidArgument(At(config.path, line_number) + ": " + split_error);
    const std::vector<std::string>& fields = *split;
    std::vector<double> row(fields.size());
    bool numeric = true;
    for (size_t i = 0; i < fields.size() && numeric; ++i) numeric = ParseNumber(fields[i], &row[i]);
    if (!numeric && rows.empty() && header.empty()) {
      header = fields;  // the first line names the columns
      columns = fields.size();
      continue;
    }
    if (columns == 0) columns = fields.size();
    if (fields.size() != columns) {
      return Status::InvalidArgument(At(config.path, line_number) + ": expected " +
                                     std::to_string(columns) + " " + SeparatedBy(delimiter) +
                                     " columns, found " + std::to_string(fields.size()));
    }
    // Never quoting the field: the file may hold what its reader may not
    // see (the error reaches whoever submitted the job).
    for (size_t i = 0; i < fields.size(); ++i) {
      if (!ParseNumber(fields[i], &row[i])) {
        return Status::InvalidArgument(At(config.path, line_number) + ": column " +
                                       std::to_string(i + 1) + ": expected a number");
      }
      // Trained as float32: a value beyond its range would be inf there.
      if (!std::isfinite(static_cast<float>(row[i]))) {
        return Status::InvalidArgument(At(config.path, line_number) + ": column " +
                                       std::to_string(i + 1) +
                                       ": expected a finite number (not nan, inf or beyond the "
                                       "range of a float)");
      }
    }
    rows.push_back(std::move(row));
    row_lines.push_back(line_number);
  }
  if (rows.empty()) return Status::InvalidArgument(config.path + ": no data rows");
  if (columns < 2) {
    return Status::InvalidArgument(config.path +
                                   ": needs at least 2 columns (features and a label)");
  }
  const auto width = static_cast<int64_t>(columns);
  const int64_t label = LabelIndex(config, header, width);
  if (label < 0 || label >= width) {
    return Status::InvalidArgument("data.label_column \"" + config.label_column +
                                   "\" is not a column of " + config.path + " (it has " +
                                   std::to_string(columns) + " columns" +
                                   (header.empty() ? " and no header line)" : ")"));
  }

  CsvTable table;
  table.rows = static_cast<int64_t>(rows.size());
  table.features = width - 1;
  table.inputs.reserve(rows.size() * (columns - 1));
  table.targets.reserve(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t c = 0; c < width; ++c) {
      if (c != label) table.inputs.push_back(static_cast<float>(rows[r][static_cast<size_t>(c)]));
    }
    const double y = rows[r][static_cast<size_t>(label)];
    if (config.classification) {
      if (y < 0 || y != std::floor(y) ||
          y >= static_cast<double>(ClassLimit(config.declared_classes))) {
        return Status::InvalidArgument(At(config.path, row_lines[r]) + ": column " +
                                       std::to_string(label + 1) + " (the label): expected " +
                                       ExpectedClass(config.declared_classes));
      }
      table.classes = std::max(table.classes, static_cast<int64_t>(y) + 1);
    }
    table.targets.push_back(y);
  }
  if (config.classification) table.classes = std::max(table.classes, config.declared_classes);
  return table;
}

}  // namespace accumulus::data
