#include "tidal/sim/traces/csv.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "tidal/core/file.h"
#include "tidal/core/status.h"
#include "tidal/core/text.h"

namespace tidal::sim::traces {

Csv::Csv(Csv&&) noexcept = default;
Csv& Csv::operator=(Csv&&) noexcept = default;
Csv::~Csv() = default;

Csv Csv::ReadFile(const std::string& path) {
  return FromText(path, ReadRegularFileOrThrow(path, kMaxDataFileBytes));
}

Csv Csv::FromText(std::string origin, std::string text) {
  Csv csv;
  csv.origin_ = std::move(origin);
  csv.text_ = std::move(text);
  csv.Split();
  return csv;
}

void Csv::Split() {
  // The views point into text_, which never changes after this.
  const std::string_view all(text_);
  Lines lines(all);
  bool have_header = false;
  for (std::string_view row; lines.Next(&row);) {
    const int line_no = lines.number();
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    if (row.empty()) continue;
    CsvLine line;
    line.line = line_no;
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = row.find(',', start);
      const std::size_t stop = comma == std::string_view::npos ? row.size() : comma;
      line.fields.push_back(row.substr(start, stop - start));
      line.columns.push_back(static_cast<int>(start) + 1);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (!have_header) {
      have_header = true;
      for (auto f : line.fields) header_.emplace_back(f);
      if (line.line != 1 || header_.empty())
        throw InputError{origin_ + ":" + std::to_string(line.line) +
                         ":1: expected the header line first"};
      continue;
    }
    lines_.push_back(std::move(line));
  }
  if (!have_header) throw InputError{origin_ + ":1:1: empty file (expected a CSV header line)"};
}

int Csv::Find(std::string_view name) const {
  for (std::size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == name) return static_cast<int>(i);
  return -1;
}

int Csv::Require(std::string_view name) const {
  const int i = Find(name);
  if (i >= 0) return i;
  std::string have;
  for (const auto& h : header_) have += (have.empty() ? "" : ",") + h;
  throw InputError{origin_ + ":1:1: missing column \"" + std::string(name) + "\" (header is " +
                   QuoteInput(have) + ")"};
}

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (*first == '+') ++first;  // from_chars rejects a leading plus
  const auto r = std::from_chars(first, last, *out);
  return r.ec == std::errc() && r.ptr == last;
}

bool ParseInt(std::string_view text, std::int64_t* out) {
  if (text.empty()) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

FieldReader::FieldReader(const Csv& csv) : csv_(csv) {}

void FieldReader::Fail(const CsvLine& line, int col, const std::string& message) {
  ++count_;
  if (static_cast<int>(errors_.size()) >= kMaxErrors) return;
  const int column = col < static_cast<int>(line.columns.size()) ? line.columns[col] : 1;
  std::string where =
      csv_.origin() + ":" + std::to_string(line.line) + ":" + std::to_string(column) + ": ";
  if (col >= 0 && col < static_cast<int>(csv_.header().size())) where += csv_.header()[col] + ": ";
  errors_.push_back(where + message);
}

bool FieldReader::CheckWidth(const CsvLine& line) {
  if (line.fields.size() == csv_.header().size()) return true;
  ++count_;
  if (static_cast<int>(errors_.size()) < kMaxErrors)
    errors_.push_back(csv_.origin() + ":" + std::to_string(line.line) +
                      ":1: " + std::to_string(line.fields.size()) + " fields (expected " +
                      std::to_string(csv_.header().size()) + ", one per header column)");
  return false;
}

std::int64_t FieldReader::Int(const CsvLine& line, int col, std::string_view what, std::int64_t lo,
                              std::int64_t hi) {
  const std::string_view t = line.fields[col];
  std::int64_t v = 0;
  if (!ParseInt(t, &v)) {
    // Integral values written as decimals ("8.0") are common in pandas exports.
    double d = 0;
    if (!ParseDouble(t, &d) || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e15) {
      Fail(line, col,
           QuoteInput(t) + " is not a whole number (expected " + std::string(what) + ")");
      return lo;
    }
    v = static_cast<std::int64_t>(d);
  }
  if (v < lo || v > hi) {
    Fail(line, col,
         std::to_string(v) + " is out of range (expected " + std::string(what) + ", " +
             std::to_string(lo) + " to " + std::to_string(hi) + ")");
    return lo;
  }
  return v;
}

namespace {
std::string Num(double v) {
  std::ostringstream ss;
  ss << v;
  return ss.str();
}
}  // namespace

double FieldReader::Number(const CsvLine& line, int col, std::string_view what, double lo,
                           double hi) {
  const std::string_view t = line.fields[col];
  double v = 0;
  if (!ParseDouble(t, &v) || !std::isfinite(v)) {
    Fail(line, col, QuoteInput(t) + " is not a finite number (expected " + std::string(what) + ")");
    return lo;
  }
  if (v < lo || v > hi) {
    Fail(line, col,
         Num(v) + " is out of range (expected " + std::string(what) + ", " + Num(lo) + " to " +
             Num(hi) + ")");
    return lo;
  }
  return v;
}

std::optional<double> FieldReader::OptionalNumber(const CsvLine& line, int col,
                                                  std::string_view what, double lo, double hi) {
  const std::string_view t = line.fields[col];
  if (t.empty() || t == "nan" || t == "NaN") return std::nullopt;
  return Number(line, col, what, lo, hi);
}

std::string_view FieldReader::NonEmpty(const CsvLine& line, int col, std::string_view what) {
  const std::string_view t = line.fields[col];
  if (t.empty()) Fail(line, col, "empty (expected " + std::string(what) + ")");
  return t;
}

void FieldReader::Finish() const {
  if (count_ == 0) return;
  std::string msg;
  for (const auto& e : errors_) msg += (msg.empty() ? "" : "\n") + e;
  if (count_ > static_cast<int>(errors_.size()))
    msg +=
        "\n... and " + std::to_string(count_ - static_cast<int>(errors_.size())) + " more problems";
  throw InputError{msg};
}

}  // namespace tidal::sim::traces
