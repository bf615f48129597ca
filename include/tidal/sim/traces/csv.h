#pragma once
// A small CSV reader for the public traces: the whole file is read, split into
// lines and fields, and every field keeps its line and column so that a bad value
// can be reported as file:line:column. No quoting: none of the traces use it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidal::sim::traces {

struct CsvLine {
  int line = 0;                          // 1-based line number in the file
  std::vector<std::string_view> fields;  // views into the Csv's text
  std::vector<int> columns;              // 1-based column of each field's first byte
};

class Csv {
 public:
  // Throws InputError when the file cannot be read.
  static Csv ReadFile(const std::string& path);
  // `origin` names the input in messages (a file name for files).
  static Csv FromText(std::string origin, std::string text);

  Csv(const Csv&) = delete;
  Csv& operator=(const Csv&) = delete;
  Csv(Csv&&) noexcept;
  Csv& operator=(Csv&&) noexcept;
  ~Csv();

  const std::string& origin() const { return origin_; }
  const std::vector<std::string>& header() const { return header_; }
  // Data lines (empty lines are skipped: some traces end with one).
  const std::vector<CsvLine>& lines() const { return lines_; }
  int Find(std::string_view name) const;  // index in the header, -1 if absent
  bool Has(std::string_view name) const { return Find(name) >= 0; }
  // Index of `name`; throws InputError naming line 1 and the header otherwise.
  int Require(std::string_view name) const;

 private:
  Csv() = default;
  void Split();

  std::string origin_;
  std::string text_;
  std::vector<std::string> header_;
  std::vector<CsvLine> lines_;
};

// Typed reads of fields. Problems are collected (the first kMaxErrors are kept
// in full) and thrown together by Finish(), so a loader either returns a whole
// table or nothing.
class FieldReader {
 public:
  static constexpr int kMaxErrors = 10;
  explicit FieldReader(const Csv& csv);

  // Checks the line has one field per header column; false (and an error) if not.
  bool CheckWidth(const CsvLine& line);
  std::string_view Text(const CsvLine& line, int col) const { return line.fields[col]; }
  // A whole number in [lo, hi]; `what` says what was expected ("milli-CPU").
  std::int64_t Int(const CsvLine& line, int col, std::string_view what, std::int64_t lo,
                   std::int64_t hi);
  // A finite number in [lo, hi]. Integral decimals like "66.0" are fine.
  double Number(const CsvLine& line, int col, std::string_view what, double lo, double hi);
  // Empty or "nan" (how pandas writes a missing value) gives nullopt.
  std::optional<double> OptionalNumber(const CsvLine& line, int col, std::string_view what,
                                       double lo, double hi);
  // Non-empty text.
  std::string_view NonEmpty(const CsvLine& line, int col, std::string_view what);
  void Fail(const CsvLine& line, int col, const std::string& message);
  bool ok() const { return count_ == 0; }
  int errors() const { return count_; }
  // Throws InputError with every collected problem, if any.
  void Finish() const;

 private:
  const Csv& csv_;
  std::vector<std::string> errors_;
  int count_ = 0;
};

// Parses a decimal number with std::from_chars rules (no locale); false if the
// whole text is not one.
bool ParseDouble(std::string_view text, double* out);
bool ParseInt(std::string_view text, std::int64_t* out);

}  // namespace tidal::sim::traces
