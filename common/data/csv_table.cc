#include "common/data/csv_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "common/data/class_labels.h"
#include "common/data/file_signature.h"

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

// A data field: a number, or a boolean as 1 or 0 (pandas writes bool
// columns, get_dummies' one-hot columns among them, as True and False; R
// as TRUE and FALSE).
bool ParseValue(const std::string& text, double* value) {
  if (ParseNumber(text, value)) return true;
  for (const char* word : {"True", "TRUE", "true", "False", "FALSE", "false"}) {
    if (text == word) {
      *value = (word[0] == 'T' || word[0] == 't') ? 1 : 0;
      return true;
    }
  }
  return false;
}

std::string At(const std::string& path, int64_t line) { return path + ":" + std::to_string(line); }

// Class labels given as names ("setosa"): a name's class is its rank in
// byte order among the file's names — the order Python's sorted() gives —
// whatever order the rows come in, so that every rank and every restart
// numbers them alike.
class ClassNames {
 public:
  // `name`'s provisional id: the first name seen is 0, the next new one 1.
  int64_t Id(const std::string& name) {
    return ids_.try_emplace(name, static_cast<int64_t>(ids_.size())).first->second;
  }
  size_t size() const { return ids_.size(); }
  // The names in class order; `class_of_id` gets each provisional id's class.
  std::vector<std::string> Sorted(std::vector<int64_t>* class_of_id) const {
    std::vector<std::string> names;
    names.reserve(ids_.size());
    for (const auto& entry : ids_) names.push_back(entry.first);
    std::sort(names.begin(), names.end());
    class_of_id->assign(ids_.size(), 0);
    for (size_t c = 0; c < names.size(); ++c) {
      (*class_of_id)[static_cast<size_t>(ids_.at(names[c]))] = static_cast<int64_t>(c);
    }
    return names;
  }

 private:
  std::unordered_map<std::string, int64_t> ids_;
};

// The column a whole number names by its 0-based index among `columns`
// (negative: from the end); -1 for none, or for a name.
int64_t ColumnByIndex(const std::string& name, int64_t columns) {
  double index = 0;
  if (!ParseNumber(name, &index) || index != std::floor(index)) return -1;
  if (std::fabs(index) >= static_cast<double>(columns) + (index < 0)) return -1;
  const auto i = static_cast<int64_t>(index);
  return i < 0 ? columns + i : i;
}

// The column the header names `name`; -1 for none.
int64_t ColumnByName(const std::string& name, const std::vector<std::string>& header) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int64_t>(it - header.begin());
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
    // A header of numbers (years; pandas' 0, 1, 2) is named as its columns
    // are numbered, or not: a number that names one column and indexes
    // another is refused, not guessed at.
    const int64_t by_name = ColumnByName(names[n], header);
    const int64_t by_index = ColumnByIndex(names[n], columns);
    if (by_name >= 0 && by_index >= 0 && by_name != by_index) {
      const auto column = [&](int64_t i) { return std::to_string(i + 1 + (row_names ? 1 : 0)); };
      return Status::InvalidArgument(
          field + " \"" + names[n] + "\" names column " + column(by_name) + " of " + config.path +
          " by its header and column " + column(by_index) +
          " by its 0-based index: give the one meant as an index from the end (\"" +
          std::to_string(by_name - columns) + "\" for column " + column(by_name) + ", \"" +
          std::to_string(by_index - columns) + "\" for column " + column(by_index) + ")");
    }
    const int64_t index = names[n].empty() && !several ? columns - 1
                          : by_name >= 0               ? by_name
                                                       : by_index;
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

// Whether fields[first..] are "0", "1", "2", ...: pandas' names for the
// columns of a frame made from an array.
bool NumbersColumnsFrom(const std::vector<std::string>& fields, size_t first) {
  for (size_t i = first; i < fields.size(); ++i) {
    if (fields[i] != std::to_string(i - first)) return false;
  }
  return true;
}

// Whether the file's first line names its columns rather than holding a
// sample: when it holds a label column named by name (or by a number that
// is no column's index: a year), or a field other than a class label's (a
// class may be a name) is a name; or, of no names but a class label's,
// when it is the header pandas writes for a frame of numbered columns
// ("0,1,2", of at least 3 columns: a sample of two reads "0,1" too often),
// or an empty first field is followed by names (",species") or by pandas'
// numbers with the frame's index (",0,1,2"). A sample with a missing value
// is refused as one. data.header settles what this cannot.
bool IsHeader(const std::vector<std::string>& fields, const CsvConfig& config) {
  const std::vector<std::string> names = config.label_columns.empty()
                                             ? std::vector<std::string>{config.label_column}
                                             : config.label_columns;
  const auto width = static_cast<int64_t>(fields.size());
  for (const std::string& name : names) {
    // By name: a name, or a number no column has as its index (a year).
    if (!name.empty() && ColumnByIndex(name, width) < 0 && ColumnByName(name, fields) >= 0) {
      return true;
    }
  }
  const int64_t class_label = !config.classification || names.size() != 1 ? -1
                              : names[0].empty()                          ? width - 1
                                                 : ColumnByIndex(names[0], width);
  bool empty = false;
  double value = 0;
  for (int64_t i = 0; i < width; ++i) {
    const std::string& field = fields[static_cast<size_t>(i)];
    if (i == class_label) continue;
    if (field.empty()) {
      empty = true;
    } else if (!ParseValue(field, &value)) {
      return true;
    }
  }
  if (!empty) return fields.size() >= 3 && NumbersColumnsFrom(fields, 0);
  if (!fields[0].empty()) return false;
  const auto named = [&](const std::string& field) {
    return !field.empty() && !ParseValue(field, &value);
  };
  if (std::all_of(fields.begin() + 1, fields.end(), named)) return true;  // ",species"
  return NumbersColumnsFrom(fields, 1);
}

}  // namespace

bool IsColumnIndex(const std::string& name) {
  double index = 0;
  return ParseNumber(name, &index) && index == std::floor(index);
}

StatusOr<CsvTable> ParseCsv(std::string_view text, const CsvConfig& config) {
  if (const std::string hint = FileSignatureHint(text); !hint.empty()) {
    return Status::InvalidArgument(config.path + ": expected CSV text; " + hint);
  }
  // A byte order mark (as spreadsheets write UTF-8) is not part of the first
  // field: left there, it would make a header of a first row of numbers.
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  const size_t start =
      text.compare(0, kByteOrderMark.size(), kByteOrderMark) == 0 ? kByteOrderMark.size() : 0;
  std::string line;
  int64_t line_number = 0;
  std::vector<std::string> header;
  int64_t header_line = 0;
  std::vector<std::vector<double>> rows;
  std::vector<int64_t> row_lines;              // each row's line in the file
  size_t fields_per_line = 0;                  // row names too
  size_t row_names = 0;                        // 1: the first field of each line names its row
  char delimiter = 0;                          // from the first line
  std::optional<std::vector<int64_t>> labels;  // once the first row is read
  // Classification: the label's field, and how its labels read (named, or
  // indices) since which line.
  size_t class_field = std::string::npos;
  ClassNames class_names;
  bool labels_named = false;
  int64_t labels_read_since = 0;
  for (size_t at = start; at < text.size();) {
    // A line ends at LF, CRLF or a lone CR (classic Mac OS line ends, which
    // Excel for Mac still writes as "CSV (Macintosh)"); read by LF alone,
    // such a file would be one line of one header and no rows.
    const size_t end = std::min(text.find_first_of("\r\n", at), text.size());
    line.assign(text.substr(at, end - at));
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
      if (config.header == CsvHeader::kFirstLine ||
          (config.header == CsvHeader::kAuto && IsHeader(fields, config))) {
        // A first column of no name holds row names, as pandas' to_csv (the
        // index) and R's write.csv write them by default: not data (as a
        // feature they would teach the model where a sample sits in the
        // file), and not always numbers.
        header = fields;
        header_line = line_number;
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
    if (!labels) {
      const size_t columns = fields_per_line - row_names;
      if (columns < 2) {
        return Status::InvalidArgument(config.path + ": needs at least 2 columns" +
                                       (row_names ? " besides the row names" : "") +
                                       " (features and a label)");
      }
      StatusOr<std::vector<int64_t>> found =
          LabelIndices(config, header, static_cast<int64_t>(columns), row_names != 0);
      if (!found.ok()) return found.status();
      labels = *std::move(found);
      if (config.classification) class_field = static_cast<size_t>((*labels)[0]) + row_names;
    }
    // Never quoting the field: the file may hold what its reader may not
    // see (the error reaches whoever submitted the job).
    const auto column = [&](size_t i) {
      return At(config.path, line_number) + ": column " + std::to_string(i + 1);
    };
    std::vector<double> row(fields.size() - row_names);
    for (size_t i = row_names; i < fields.size(); ++i) {
      double& value = row[i - row_names];
      if (i == class_field) {
        const bool named = !ParseNumber(fields[i], &value);
        if (labels_read_since == 0) {
          labels_named = named;
          labels_read_since = line_number;
        }
        if (fields[i].empty()) {
          return Status::InvalidArgument(column(i) +
                                         " (the label): expected a class index or name, found an "
                                         "empty field");
        }
        if (named != labels_named) {
          return Status::InvalidArgument(
              column(i) + " (the label): expected a class " + (labels_named ? "name" : "index") +
              " as from line " + std::to_string(labels_read_since) +
              " on: the labels are class indices or class names, not both" +
              (labels_named && header.empty()
                   ? " (if line " + std::to_string(labels_read_since) +
                         " names the columns, give data.label_column by its name)"
                   : ""));
        }
        if (named) {
          value = static_cast<double>(class_names.Id(fields[i]));
          if (static_cast<int64_t>(class_names.size()) > ClassLimit(config.declared_classes)) {
            return Status::InvalidArgument(
                column(i) + " (the label): one class name more than " +
                (config.declared_classes > 0
                     ? "data.outputs " + std::to_string(config.declared_classes) + " declares"
                     : "the " + std::to_string(kMaxClasses) + " a job may have"));
          }
        }
        continue;
      }
      if (!ParseValue(fields[i], &value)) {
        return Status::InvalidArgument(column(i) + ": expected a number");
      }
      // Trained as float32: a value beyond its range would be inf there.
      if (!std::isfinite(static_cast<float>(value))) {
        return Status::InvalidArgument(column(i) +
                                       ": expected a finite number (not nan, inf or beyond the "
                                       "range of a float)");
      }
    }
    rows.push_back(std::move(row));
    row_lines.push_back(line_number);
  }
  if (rows.empty()) return Status::InvalidArgument(config.path + ": no data rows");
  const size_t columns = fields_per_line - row_names;
  const auto width = static_cast<int64_t>(columns);
  std::vector<bool> is_label(columns, false);
  for (int64_t c : *labels) is_label[static_cast<size_t>(c)] = true;

  CsvTable table;
  if (labels_named) {
    std::vector<int64_t> class_of_id;
    table.class_names = class_names.Sorted(&class_of_id);
    const size_t label = class_field - row_names;
    for (std::vector<double>& row : rows) {
      row[label] = static_cast<double>(class_of_id[static_cast<size_t>(row[label])]);
    }
  }
  table.header_line = header_line;
  table.row_names = row_names != 0;
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
