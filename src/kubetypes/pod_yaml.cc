#include "tidal/kubetypes/pod_yaml.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kubetypes/pod_reader.h"

namespace tidal {
namespace {

using pod_reader::DecodePod;
using pod_reader::Kind;

class YamlValue {
 public:
  YamlValue() = default;
  explicit YamlValue(YAML::Node node) : node_(std::move(node)), present_(true) {}

  Kind kind() const {
    // IsDefined first: a missing key is a "zombie" node whose other queries throw.
    if (!present_ || !node_.IsDefined()) return Kind::kAbsent;
    if (node_.IsMap()) return Kind::kObject;
    if (node_.IsSequence()) return Kind::kArray;
    if (node_.IsScalar()) return Kind::kString;  // YAML scalars are text: 2, true, 16Gi
    return Kind::kNull;
  }

  YamlValue Get(std::string_view key) const {
    if (kind() != Kind::kObject) return {};
    return YamlValue(node_[std::string(key)]);  // const lookup: never inserts the key
  }

  template <class F>
  Status ForEachMember(const std::string& path, F&& f) const {
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsDefined() || !it->first.IsScalar())
        return Status::Error(path + ": a key is not a string");
      if (Status s = f(std::string_view(it->first.Scalar()), YamlValue(it->second)); !s.ok())
        return s;
    }
    return {};
  }

  template <class F>
  Status ForEachElement(F&& f) const {
    std::size_t i = 0;
    for (auto it = node_.begin(); it != node_.end(); ++it)
      if (Status s = f(i++, YamlValue(*it)); !s.ok()) return s;
    return {};
  }

  std::optional<std::string> Text() const {
    if (kind() != Kind::kString) return std::nullopt;
    return node_.Scalar();
  }

 private:
  YAML::Node node_;
  bool present_ = false;
};

// Counts a YAML stream's documents before YAML::LoadAll runs. yaml-cpp 0.7's LoadAll loops
// forever, allocating, on a stray flow indicator such as a leading ',' (jbeder/yaml-cpp#1040):
// its parser then yields empty documents without consuming input. A document that starts
// where the previous one did is that loop, and is reported as invalid YAML instead.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    start_ = mark;
    content_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content_ = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    content_ = true;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    content_ = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    content_ = true;
  }
  void OnMapEnd() override {}

  const YAML::Mark& start() const { return start_; }
  bool content() const { return content_; }

 private:
  YAML::Mark start_;
  bool content_ = false;
};

// The number of non-empty documents (stopping at 2), or an error. May throw YAML exceptions.
Status CountYamlDocuments(const std::string& yaml, int* count) {
  constexpr int kMaxDocuments = 1000;  // empty "---" documents; more is not a Pod file
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  DocumentCounter counter;
  int documents = 0;
  std::optional<int> previous_pos;
  *count = 0;
  while (*count < 2 && parser.HandleNextDocument(counter)) {
    if (counter.start().pos == previous_pos || ++documents > kMaxDocuments)
      return Status::Error("invalid YAML: unexpected input at line " +
                           std::to_string(counter.start().line + 1) + ", column " +
                           std::to_string(counter.start().column + 1));
    previous_pos = counter.start().pos;
    if (counter.content()) ++*count;
  }
  return {};
}

}  // namespace

Status DecodePodYaml(std::string_view yaml, RawPod* out) {
  *out = RawPod{};
  try {
    const std::string text(yaml);
    int count = 0;
    if (Status s = CountYamlDocuments(text, &count); !s.ok()) return s;
    if (count == 0) return Status::Error("pod: the YAML document is empty");
    if (count > 1) return Status::Error("pod: expected one YAML document, found several");
    // Safe now: the same parser run above ended.
    const std::vector<YAML::Node> docs = YAML::LoadAll(text);
    const YAML::Node* doc = nullptr;
    for (const YAML::Node& d : docs)
      if (!d.IsNull()) doc = &d;  // skips a stray "---" at either end
    if (doc == nullptr) return Status::Error("pod: the YAML document is empty");
    RawPod pod;
    if (Status s = DecodePod(YamlValue(*doc), &pod); !s.ok()) return s;
    *out = std::move(pod);
    return {};
  } catch (const YAML::Exception& e) {
    return Status::Error(std::string("invalid YAML: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Error(std::string("invalid YAML: ") + e.what());
  }
}

Status DecodePodText(std::string_view text, RawPod* out) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return DecodePodJson(text, out);
  return DecodePodYaml(text, out);
}

}  // namespace tidal
