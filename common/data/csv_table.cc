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

// The column `name` names among `columns`: a whole number is a 0-based
// index (negative: from the end), anything else a header name. -1: none.
int64_t ColumnIndex(const std::string& name, const std::vector<std::string>& header,
                    int64_t columns) {
  double index = 0;
  if (ParseNumber(name, &index) && index == std::floor(index)) {
    if (std::fabs(index) >= static_cast<double>(columns) + (index < 0)) return -1;
    const auto i = static_cast<int64_t>(index);
    return i < 0 ? columns + i : i;
  }
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int64_t>(i);
  }
  return -1;
}

// The label columns' indices among the `columns` of data (after the row
// names, if any), in the order of the targets: config's label_columns, or
// its label_column, or the last column.
StatusOr<std::vector<int64_t>> LabelIndices(const CsvConfig& config,
                                            const std::vector<std::string>& header, int64_t columns,
                                            bool row_names) {
  if (!config.label_column.empty() && !config.label_columns.empty()) {
    return Status::InvalidArgument(
        "give data.label_column (one label) or data.label_columns (several targets), not both");
  }
  if (config.classification && config.label_columns.size() > 1) {
    return Status::InvalidArgument("data.label_columns names " +
                                   std::to_string(config.label_columns.size()) +
                                   " columns: several label columns are regression targets");
  }
  const bool several = !config.label_columns.empty();
  const std::vector<std::string> names =
      several ? config.label_columns : std::vector<std::string>{config.label_column};
  std::vector<int64_t> indices;
  for (size_t n = 0; n < names.size(); ++n) {
    const std::string field =
        several ? "data.label_columns[" + std::to_string(n) + "]" : "data.label_column";
    const int64_t index =
        names[n].empty() && !several ? columns - 1 : ColumnIndex(names[n], header, columns);
    if (index < 0) {
      return Status::InvalidArgument(field + " \"" + names[n] + "\" is not a column of " +
                                     config.path + " (it has " + std::to_string(columns) +
                                     " columns" +
                                     (header.empty() ? " and no header line)"
                                      : row_names    ? " besides its row names)"
                                                     : ")"));
    }
    const auto same = std::find(indices.begin(), indices.end(), index);
    if (same != indices.end()) {
      const size_t other = static_cast<size_t>(same - indices.begin());
      return Status::InvalidArgument(field + " \"" + names[n] + "\" names column " +
                                     std::to_string(index + 1 + (row_names ? 1 : 0)) + " of " +
                                     config.path + ", as data.label_columns[" +
                                     std::to_string(other) + "] \"" + names[other] + "\" does");
    }
    indices.push_back(index);
  }
  if (static_cast<int64_t>(indices.size()) >= columns) {
    return Status::InvalidArgument(config.path + ": each of its " + std::to_string(columns) +
                                   " columns is a label column; at least one must be a feature");
  }
  return indices;
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
  size_t fields_per_line = 0;      // row names too
  size_t row_names = 0;            // 1: the first field of each line names its row
  char delimiter = 0;              // from the first line
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
    if (fields_per_line == 0) {
      fields_per_line = fields.size();
      double value = 0;
      const bool numeric = std::all_of(fields.begin(), fields.end(), [&](const std::string& f) {
        return ParseNumber(f, &value);
      });
      if (!numeric) {
        // The first line names the columns. A first column of no name
        // holds row names, as pandas' to_csv (the index) and R's write.csv
        // write them by default: not data (as a feature they would teach
        // the model where a sample sits in the file), and not always
        // numbers.
        header = fields;
        row_names = header[0].empty() ? 1 : 0;
        header.erase(header.begin(), header.begin() + static_cast<ptrdiff_t>(row_names));
        const auto nameless = std::find(header.begin(), header.end(), "");
        if (nameless != header.end()) {
          return Status::InvalidArgument(
              At(config.path, line_number) + ": column " +
              std::to_string(nameless - header.begin() + 1 + static_cast<ptrdiff_t>(row_names)) +
              ": expected a column name in the header line");
        }
        continue;
      }
    }
    if (fields.size() != fields_per_line) {
      return Status::InvalidArgument(
          At(config.path, line_number) + ": expected " + std::to_string(fields_per_line) + " " +
          SeparatedBy(delimiter) + " columns, found " + std::to_string(fields.size()));
    }
    // Never quoting the field: the file may hold what its reader may not
    // see (the error reaches whoever submitted the job).
    std::vector<double> row(fields.size() - row_names);
    for (size_t i = row_names; i < fields.size(); ++i) {
      double& value = row[i - row_names];
      if (!ParseNumber(fields[i], &value)) {
        return Status::InvalidArgument(At(config.path, line_number) + ": column " +
                                       std::to_string(i + 1) + ": expected a number");
      }
      // Trained as float32: a value beyond its range would be inf there.
      if (!std::isfinite(static_cast<float>(value))) {
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
  const size_t columns = fields_per_line - row_names;
  if (columns < 2) {
    return Status::InvalidArgument(config.path + ": needs at least 2 columns" +
                                   (row_names ? " besides the row names" : "") +
                                   " (features and a label)");
  }
  const auto width = static_cast<int64_t>(columns);
  StatusOr<std::vector<int64_t>> labels = LabelIndices(config, header, width, row_names != 0);
  if (!labels.ok()) return labels.status();
  std::vector<bool> is_label(columns, false);
  for (int64_t c : *labels) is_label[static_cast<size_t>(c)] = true;

  CsvTable table;
  table.rows = static_cast<int64_t>(rows.size());
  table.targets_per_row = static_cast<int64_t>(labels->size());
  table.features = width - table.targets_per_row;
  table.inputs.reserve(rows.size() * static_cast<size_t>(table.features));
  table.targets.reserve(rows.size() * labels->size());
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < columns; ++c) {
      if (!is_label[c]) table.inputs.push_back(static_cast<float>(rows[r][c]));
    }
    for (int64_t label : *labels) {
      const double y = rows[r][static_cast<size_t>(label)];
      if (config.classification) {
        if (y < 0 || y != std::floor(y) ||
            y >= static_cast<double>(ClassLimit(config.declared_classes))) {
          return Status::InvalidArgument(
              At(config.path, row_lines[r]) + ": column " +
              std::to_string(label + 1 + static_cast<int64_t>(row_names)) +
              " (the label): expected " + ExpectedClass(config.declared_classes));
        }
        table.classes = std::max(table.classes, static_cast<int64_t>(y) + 1);
      }
      table.targets.push_back(y);
    }
  }
  if (config.classification) table.classes = std::max(table.classes, config.declared_classes);
  return table;
}

}  // namespace accumulus::data
