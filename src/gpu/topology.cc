// Parser for `nvidia-smi topo -m`.
//
// Two shapes of the same output occur: the raw bytes (cells separated by TABs, the header
// wrapped in ANSI underline escapes) and pasted copies whose TABs were expanded to 8-column
// stops. Matrix and affinity cells never contain spaces, so rows are split on any whitespace;
// the TAB structure only matters for the header (multi-word column names) and for rows whose
// affinity cells are empty, and for pasted copies it is rebuilt from the column positions.
#include "tidal/gpu/topology.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tidal {

std::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kSelf:
      return "X";
    case LinkKind::kNvlink:
      return "NV#";
    case LinkKind::kPix:
      return "PIX";
    case LinkKind::kPxb:
      return "PXB";
    case LinkKind::kPhb:
      return "PHB";
    case LinkKind::kNode:
      return "NODE";
    case LinkKind::kSys:
      return "SYS";
    case LinkKind::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::vector<NvlinkPeer> GpuTopology::PeersOf(int gpu) const {
  std::vector<NvlinkPeer> peers;
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= gpu_links.size()) return peers;
  const std::vector<TopoCell>& row = gpu_links[static_cast<std::size_t>(gpu)];
  for (std::size_t j = 0; j < row.size(); ++j) {
    if (row[j].kind == LinkKind::kNvlink) peers.push_back({static_cast<int>(j), row[j].nvlinks});
  }
  return peers;
}

namespace {

constexpr std::size_t kTabStop = 8;
constexpr int kMaxNvlinks = 999;       // far above any real NV#; bounds the integer parse
constexpr std::size_t kQuoteMax = 40;  // keeps messages about garbage input readable

constexpr std::string_view kCpuAffinity = "CPU Affinity";
constexpr std::string_view kNumaAffinity = "NUMA Affinity";
constexpr std::string_view kGpuNumaId = "GPU NUMA ID";
constexpr std::string_view kKnownAttributes[] = {kCpuAffinity, kNumaAffinity, kGpuNumaId};
constexpr std::string_view kNotAvailable = "N/A";

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!IsDigit(c)) return false;
  return true;
}

// Quotes a piece of input for an error message, escaping bytes that would garble it.
std::string Quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < kQuoteMax; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\t') {
      out += "\\t";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (s.size() > kQuoteMax) out += "...";
  out += "'";
  return out;
}

Status LineError(std::size_t line_no, std::string_view what) {
  return Status::Error("line " + std::to_string(line_no) + ": " + std::string(what));
}

// Drops ANSI CSI sequences (ESC [ ... final byte): nvidia-smi underlines the header even
// when its output is not a terminal. A lone ESC is dropped too.
std::string StripAnsi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b') {
      out += line[i];
      continue;
    }
    if (i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e)) ++i;
    }
  }
  return out;
}

// Lines without their terminator ('\n' or "\r\n") and without ANSI escapes.
std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(StripAnsi(line));
    begin = end + 1;
  }
  return lines;
}

struct Token {
  std::string_view text;
  std::size_t start = 0;  // byte column in the line
  std::size_t end() const { return start + text.size(); }
};

std::vector<Token> Tokenize(std::string_view line) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsSpace(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !IsSpace(line[i])) ++i;
    if (i > start) tokens.push_back({line.substr(start, i - start), start});
  }
  return tokens;
}

// The TAB-separated fields of a line, trimmed; empty fields are kept.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  if (line.find('\t') != std::string_view::npos) {
    std::size_t begin = 0;
    while (true) {
      const std::size_t tab = line.find('\t', begin);
      fields.push_back(Trim(line.substr(begin, tab == std::string_view::npos ? tab : tab - begin)));
      if (tab == std::string_view::npos) break;
      begin = tab + 1;
    }
    return fields;
  }
  // A pasted copy, TABs expanded to 8-column stops. Every field starts at a stop (the self
  // cell " X " one column after), so the TABs between two words are the stops crossed between
  // them; words with no stop between them belong to one field ("CPU Affinity").
  std::size_t field_start = 0;
  std::size_t prev_end = 0;
  bool first = true;
  for (const Token& t : Tokenize(line)) {
    const std::size_t stop = t.start / kTabStop;
    const std::size_t prev_stop = prev_end / kTabStop;
    const std::size_t tabs = first ? stop + 1 : (stop > prev_stop ? stop - prev_stop : 0);
    if (tabs == 0) {
      fields.back() = line.substr(field_start, t.end() - field_start);
    } else {
      for (std::size_t i = 1; i < tabs; ++i) fields.emplace_back();
      fields.push_back(t.text);
      field_start = t.start;
    }
    prev_end = t.end();
    first = false;
  }
  return fields;
}

std::optional<TopoCell> ParseCell(std::string_view s) {
  if (s == "X") return TopoCell{LinkKind::kSelf, 0};
  if (s == "PIX") return TopoCell{LinkKind::kPix, 0};
  if (s == "PXB") return TopoCell{LinkKind::kPxb, 0};
  if (s == "PHB") return TopoCell{LinkKind::kPhb, 0};
  if (s == "NODE") return TopoCell{LinkKind::kNode, 0};
  if (s == "SYS") return TopoCell{LinkKind::kSys, 0};
  if (s == "SOC") return TopoCell{LinkKind::kSys, 0};  // what older drivers print for SYS
  if (s.size() > 2 && s.size() <= 5 && s.substr(0, 2) == "NV" && AllDigits(s.substr(2))) {
    int n = 0;
    for (char c : s.substr(2)) n = n * 10 + (c - '0');
    if (n >= 1 && n <= kMaxNvlinks) return TopoCell{LinkKind::kNvlink, n};
  }
  return std::nullopt;
}

bool IsGpuName(std::string_view s) {
  return s.size() > 3 && s.substr(0, 3) == "GPU" && AllDigits(s.substr(3));
}

bool IsDeviceName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!IsAlnum(c) && c != '_' && c != '-' && c != '.' && c != ':') return false;
  return true;
}

bool IsKnownAttribute(std::string_view s) {
  for (std::string_view a : kKnownAttributes)
    if (s == a) return true;
  return false;
}

// A list such as "0-31,64-95", "3" or "6-7" (CPUs or NUMA nodes).
bool IsIdList(std::string_view s) {
  if (s.empty()) return false;
  while (true) {
    const std::size_t comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      if (!AllDigits(item)) return false;
    } else if (!AllDigits(item.substr(0, dash)) || !AllDigits(item.substr(dash + 1))) {
      return false;
    }
    if (comma == std::string_view::npos) return true;
    s.remove_prefix(comma + 1);
  }
}

// The column names of the header. With TABs the fields are the names; in a pasted copy the
// words are split on whitespace and the known multi-word names rejoined.
std::vector<std::string> HeaderNames(std::string_view line) {
  std::vector<std::string> names;
  if (line.find('\t') != std::string_view::npos) {
    for (std::string_view f : Fields(line))
      if (!f.empty()) names.emplace_back(f);
    return names;
  }
  const std::vector<Token> tokens = Tokenize(line);
  for (std::size_t i = 0; i < tokens.size();) {
    std::size_t used = 1;
    for (std::string_view attr : kKnownAttributes) {
      std::string joined(tokens[i].text);
      std::size_t j = i + 1;
      while (joined.size() < attr.size() && j < tokens.size()) {
        joined += ' ';
        joined += tokens[j++].text;
      }
      if (joined == attr) {
        used = j - i;
        break;
      }
    }
    std::string name(tokens[i].text);
    for (std::size_t j = i + 1; j < i + used; ++j) {
      name += ' ';
      name += tokens[j].text;
    }
    names.push_back(std::move(name));
    i += used;
  }
  return names;
}

std::string JoinNames(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

std::string Plural(std::size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

enum class Assign { kOk, kTooMany, kAmbiguous };

// Assigns the cells after the link cells of a row to the k attribute columns. Empty cells
// vanish when splitting on whitespace, so when fewer words than columns remain the TAB fields
// decide. Raw output puts an extra empty field before "GPU NUMA ID", so surplus empty fields
// are skipped and the last column takes the last field.
Assign AssignAttributes(std::string_view line, const std::vector<Token>& tokens, std::size_t n,
                        std::size_t k, std::vector<std::string_view>* values) {
  values->assign(k, std::string_view());
  const std::size_t words = tokens.size() - (n + 1);
  if (words > k) return Assign::kTooMany;
  if (words == k) {
    for (std::size_t a = 0; a < k; ++a) (*values)[a] = tokens[n + 1 + a].text;
    return Assign::kOk;
  }
  const std::vector<std::string_view> fields = Fields(line);
  std::size_t i = 0;
  for (std::size_t seen = 0; i < fields.size() && seen < n + 1; ++i)
    if (!fields[i].empty()) ++seen;
  std::vector<std::string_view> rest(fields.begin() + static_cast<std::ptrdiff_t>(i), fields.end());
  while (!rest.empty() && rest.back().empty()) rest.pop_back();
  if (rest.size() <= k) {
    for (std::size_t a = 0; a < rest.size(); ++a) (*values)[a] = rest[a];
    return Assign::kOk;
  }
  // Here k >= 1, since words < k.
  for (std::size_t a = 0; a + 1 < k; ++a) (*values)[a] = rest[a];
  for (std::size_t f = k - 1; f + 1 < rest.size(); ++f)
    if (!rest[f].empty()) return Assign::kAmbiguous;
  (*values)[k - 1] = rest.back();
  return Assign::kOk;
}

std::string ExpectedHeader(std::string_view got) {
  return "expected the header row of `nvidia-smi topo -m` naming the device columns "
         "(GPU0 GPU1 ... CPU Affinity NUMA Affinity)" +
         std::string(got);
}

// One `nvidia-smi topo -m` output read into a topology: the header, one row per
// device column, then the legend.
struct MatrixReader {
  explicit MatrixReader(std::string_view text)
      : lines(SplitLines(text)), end_line_no(lines.size() + 1) {}

  const std::vector<std::string> lines;
  const std::size_t end_line_no;
  std::size_t next = 0;                 // the first line not read yet
  std::vector<std::string> devices;     // the matrix's columns, in header order
  std::vector<std::string> attributes;  // the columns after the matrix
  std::vector<int> gpu_of;              // device column → GPU index, or -1
  std::vector<int> nic_of;              // device column → NIC index, or -1
  int cpu_col = -1, numa_col = -1, gpu_numa_col = -1;
  GpuTopology topo;

  Status Read() {
    if (Status s = ReadHeader(); !s.ok()) return s;
    SizeTopology();
    // One row per device column, in header order.
    for (std::size_t r = 0; r < devices.size(); ++r)
      if (Status s = ReadRow(r); !s.ok()) return s;
    if (Status s = CheckNoFurtherRow(); !s.ok()) return s;
    ReadNicLegend();
    return Status::Ok();
  }

  void SkipBlank() {
    while (next < lines.size() && Trim(lines[next]).empty()) ++next;
  }

  Status ReadHeader() {
    SkipBlank();
    if (next == lines.size()) return LineError(end_line_no, ExpectedHeader(", got end of input"));
    const std::size_t header_no = next + 1;
    const std::string& header_line = lines[next++];
    for (std::string& name : HeaderNames(header_line)) {
      if (attributes.empty() && !IsKnownAttribute(name) && name.find(' ') == std::string::npos) {
        devices.push_back(std::move(name));
      } else {
        attributes.push_back(std::move(name));
      }
    }
    for (const std::string& d : devices) {
      if (ParseCell(d)) {
        return LineError(header_no, ExpectedHeader(", but " + Quote(Trim(header_line)) +
                                                   " looks like a matrix row; is the header "
                                                   "missing?"));
      }
    }
    if (devices.empty() || !IsGpuName(devices.front())) {
      return LineError(header_no, ExpectedHeader(", got " + Quote(Trim(header_line))));
    }
    if (Status s = AddDevices(header_no); !s.ok()) return s;
    FindAttributeColumns();
    return Status::Ok();
  }

  // Each device column as a GPU or a NIC of the topology.
  Status AddDevices(std::size_t header_no) {
    gpu_of.assign(devices.size(), -1);
    nic_of.assign(devices.size(), -1);
    for (std::size_t d = 0; d < devices.size(); ++d) {
      if (!IsDeviceName(devices[d])) {
        return LineError(header_no, "column name " + Quote(devices[d]) +
                                        " is not a device name (expected GPU#, NIC# or a NIC "
                                        "device such as mlx5_0)");
      }
      for (std::size_t e = 0; e < d; ++e) {
        if (devices[e] == devices[d]) {
          return LineError(header_no,
                           "column " + Quote(devices[d]) + " appears twice in the header");
        }
      }
      if (IsGpuName(devices[d])) {
        gpu_of[d] = static_cast<int>(topo.gpus.size());
        topo.gpus.push_back(devices[d]);
      } else {
        nic_of[d] = static_cast<int>(topo.nics.size());
        topo.nics.push_back(devices[d]);
      }
    }
    if (topo.gpus.size() > static_cast<std::size_t>(kMaxGpusPerNode)) {
      return LineError(header_no, "the header names " + std::to_string(topo.gpus.size()) +
                                      " GPUs, more than the " + std::to_string(kMaxGpusPerNode) +
                                      " a node may have");
    }
    return Status::Ok();
  }

  void FindAttributeColumns() {
    for (std::size_t a = 0; a < attributes.size(); ++a) {
      if (attributes[a] == kCpuAffinity) cpu_col = static_cast<int>(a);
      if (attributes[a] == kNumaAffinity) numa_col = static_cast<int>(a);
      if (attributes[a] == kGpuNumaId) gpu_numa_col = static_cast<int>(a);
    }
  }

  void SizeTopology() {
    const std::size_t g = topo.gpus.size();
    topo.gpu_links.assign(g, std::vector<TopoCell>(g));
    topo.gpu_nic.assign(g, std::vector<TopoCell>(topo.nics.size()));
    topo.cpu_affinity.assign(g, std::string());
    topo.numa_affinity.assign(g, std::string());
  }

  Status ReadRow(std::size_t r) {
    const std::size_t n = devices.size();
    const std::string& want = devices[r];
    SkipBlank();
    if (next == lines.size()) {
      return LineError(end_line_no, "expected the row for " + want + ", got end of input; the " +
                                        "header names " + Plural(n, "device column") +
                                        " but only " + Plural(r, "row") +
                                        " follow (the matrix must be square)");
    }
    const std::size_t line_no = next + 1;
    const std::string& line = lines[next++];
    const std::vector<Token> tokens = Tokenize(line);
    if (tokens.front().text != want) {
      return LineError(line_no, "expected the row for " + want + " (row " + std::to_string(r + 1) +
                                    " of the " + std::to_string(n) +
                                    " device columns in the header), got " + Quote(Trim(line)));
    }
    if (tokens.size() < n + 1) {
      return LineError(line_no, "row " + want + " has " + Plural(tokens.size() - 1, "link cell") +
                                    ", expected " + std::to_string(n) + " (one per device column " +
                                    devices.front() + ".." + devices.back() + ")");
    }
    for (std::size_t c = 0; c < n; ++c)
      if (Status s = ReadLink(r, c, line_no, tokens[c + 1].text); !s.ok()) return s;
    return ReadAttributes(r, line_no, line, tokens);
  }

  // The cell of row r, column c.
  Status ReadLink(std::size_t r, std::size_t c, std::size_t line_no, std::string_view cell_text) {
    const std::optional<TopoCell> cell = ParseCell(cell_text);
    const std::string where = "row " + devices[r] + ", column " + devices[c] + ": ";
    if (!cell) {
      return LineError(line_no, where + "unknown link code " + Quote(cell_text) +
                                    " (expected X, NV#, PIX, PXB, PHB, NODE or SYS)");
    }
    if (c == r && cell->kind != LinkKind::kSelf) {
      return LineError(line_no, where + "expected X (the device itself), got " + Quote(cell_text));
    }
    if (c != r && cell->kind == LinkKind::kSelf) {
      return LineError(line_no, where + "X (the device itself) appears off the diagonal");
    }
    if (gpu_of[r] < 0) return Status::Ok();  // NIC rows repeat what the GPU rows say
    const auto gr = static_cast<std::size_t>(gpu_of[r]);
    if (gpu_of[c] >= 0) topo.gpu_links[gr][static_cast<std::size_t>(gpu_of[c])] = *cell;
    if (nic_of[c] >= 0) topo.gpu_nic[gr][static_cast<std::size_t>(nic_of[c])] = *cell;
    return Status::Ok();
  }

  // The cells after the matrix: affinity columns on GPU rows, nothing on NIC rows.
  Status ReadAttributes(std::size_t r, std::size_t line_no, std::string_view line,
                        const std::vector<Token>& tokens) {
    const std::size_t n = devices.size();
    const std::size_t k = attributes.size();
    const std::string& want = devices[r];
    std::vector<std::string_view> values;
    switch (AssignAttributes(line, tokens, n, k, &values)) {
      case Assign::kOk:
        break;
      case Assign::kTooMany:
        return LineError(line_no, "row " + want + " has " + Plural(tokens.size() - 1 - n, "cell") +
                                      " after its " + Plural(n, "link cell") +
                                      ", but the header names " + Plural(k, "other column") + " (" +
                                      JoinNames(attributes) +
                                      "); is a device column missing from the header?");
      case Assign::kAmbiguous:
        return LineError(line_no, "row " + want + ": cannot tell which of the columns " +
                                      JoinNames(attributes) +
                                      " the cells after the matrix belong to");
    }
    if (gpu_of[r] < 0) return Status::Ok();
    const auto gr = static_cast<std::size_t>(gpu_of[r]);
    if (Status s = CheckIdList(r, line_no, values, cpu_col, &topo.cpu_affinity[gr]); !s.ok())
      return s;
    if (Status s = CheckIdList(r, line_no, values, numa_col, &topo.numa_affinity[gr]); !s.ok())
      return s;
    return CheckIdList(r, line_no, values, gpu_numa_col, nullptr);
  }

  // The value of attribute column `col` (-1: absent), stored in `store` if given.
  Status CheckIdList(std::size_t r, std::size_t line_no,
                     const std::vector<std::string_view>& values, int col,
                     std::string* store) const {
    if (col < 0) return Status::Ok();
    const std::string_view v = values[static_cast<std::size_t>(col)];
    if (v.empty() || v == kNotAvailable) return Status::Ok();
    if (!IsIdList(v)) {
      return LineError(line_no, "row " + devices[r] + ": " +
                                    attributes[static_cast<std::size_t>(col)] + " " + Quote(v) +
                                    " is not a list such as 0-31,64-95 or 3, nor N/A");
    }
    if (store != nullptr) *store = std::string(v);
    return Status::Ok();
  }

  // A further matrix row means the header lacks a column.
  Status CheckNoFurtherRow() {
    SkipBlank();
    if (next < lines.size()) {
      const std::vector<Token> tokens = Tokenize(lines[next]);
      if (tokens.size() >= 2 && IsDeviceName(tokens[0].text) && ParseCell(tokens[1].text)) {
        return LineError(next + 1, "found a row for " + Quote(tokens[0].text) + " after the " +
                                       Plural(devices.size(), "row") +
                                       " named by the header (the matrix must be square; is a "
                                       "column missing from the header?)");
      }
    }
    return Status::Ok();
  }

  // The legend after the matrix is ignored except for the "NIC Legend:" block.
  void ReadNicLegend() {
    for (std::size_t i = next; i < lines.size(); ++i) {
      if (Trim(lines[i]) != "NIC Legend:") continue;
      for (std::size_t j = i + 1; j < lines.size(); ++j) {
        const std::string_view entry = Trim(lines[j]);
        if (entry.empty()) {
          if (topo.nic_legend.empty()) continue;
          break;
        }
        const std::size_t colon = entry.find(':');
        if (colon == std::string_view::npos) break;
        const std::string_view name = Trim(entry.substr(0, colon));
        const std::string_view device = Trim(entry.substr(colon + 1));
        if (!IsDeviceName(name) || !IsDeviceName(device)) break;
        topo.nic_legend.emplace_back(std::string(name), std::string(device));
      }
      break;
    }
  }
};

}  // namespace

// Builds into a local value so that *out is left untouched on error.
Status ParseTopoMatrix(std::string_view text, GpuTopology* out) {
  if (out == nullptr) return Status::Error("topo -m: no output GpuTopology given");
  MatrixReader reader(text);
  if (Status s = reader.Read(); !s.ok()) return s;
  *out = std::move(reader.topo);
  return Status::Ok();
}

}  // namespace tidal
