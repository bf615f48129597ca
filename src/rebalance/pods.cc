#include "tidal/rebalance/pods.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>

#include "tidal/kubetypes/pod.h"
#include "tidal/policy/config.h"

namespace tidal::rebalance {
namespace {

using simdjson::SUCCESS;
using simdjson::dom::element;

bool Field(element e, std::string_view key, element* out) {
  simdjson::dom::object obj;
  if (e.get_object().get(obj) != SUCCESS) return false;
  if (obj.at_key(key).get(*out) != SUCCESS) return false;
  return !out->is_null();
}

Status StringField(element e, std::string_view key, const std::string& path, std::string* out) {
  element v;
  out->clear();
  if (!Field(e, key, &v)) return Status::Ok();
  std::string_view text;
  if (v.get_string().get(text) != SUCCESS)
    return Status::Error(fmt::format("{}.{}: expected a string", path, key));
  *out = std::string(text);
  return Status::Ok();
}

Status Root(simdjson::dom::parser& parser, std::string_view json, const char* what, element* out) {
  if (parser.parse(json.data(), json.size()).get(*out) != SUCCESS)
    return Status::Error(fmt::format("{}: not valid JSON", what));
  if (!out->is_object()) return Status::Error(fmt::format("{}: expected a JSON object", what));
  return Status::Ok();
}

// A duration annotation: ParseDurationMs's forms, not negative.
Status Duration(const Labels& annotations, std::string_view key, std::optional<TimeMs>* out) {
  out->reset();
  const auto it = annotations.find(std::string(key));
  if (it == annotations.end()) return Status::Ok();
  const auto ms = ParseDurationMs(it->second);
  if (!ms || *ms < 0)
    return Status::Error(fmt::format(
        "annotation {}: \"{}\": expected a duration such as 15m, 900s or 900", key, it->second));
  *out = ms;
  return Status::Ok();
}

}  // namespace

Status ParseMoveTraits(const Labels& annotations, TimeMs default_startup_ms, MoveTraits* out) {
  MoveTraits t;
  t.startup_ms = default_startup_ms;
  if (const auto it = annotations.find(std::string(kMigratableAnnotation));
      it != annotations.end()) {
    if (it->second != "true" && it->second != "false")
      return Status::Error(fmt::format("annotation {}: \"{}\": expected \"true\" or \"false\"",
                                       kMigratableAnnotation, it->second));
    t.migratable = it->second == "true";
  }
  if (Status s = Duration(annotations, kCheckpointIntervalAnnotation, &t.checkpoint_interval_ms);
      !s.ok())
    return s;
  if (t.checkpoint_interval_ms && *t.checkpoint_interval_ms == 0)
    return Status::Error(fmt::format("annotation {}: expected a duration above zero",
                                     kCheckpointIntervalAnnotation));
  std::optional<TimeMs> startup;
  if (Status s = Duration(annotations, kStartupAnnotation, &startup); !s.ok()) return s;
  if (startup) t.startup_ms = *startup;
  if (Status s = Duration(annotations, kExpectedDurationAnnotation, &t.expected_duration_ms);
      !s.ok())
    return s;
  if (const auto it = annotations.find(std::string(kExpectedEndAnnotation));
      it != annotations.end()) {
    t.expected_end_ms = ParseRfc3339Ms(it->second);
    if (!t.expected_end_ms)
      return Status::Error(fmt::format(
          "annotation {}: \"{}\": expected an RFC 3339 time such as 2026-01-01T06:00:00Z",
          kExpectedEndAnnotation, it->second));
  }
  if (const auto it = annotations.find(std::string(kIoShareAnnotation)); it != annotations.end()) {
    // A plain decimal, the whole text: "0.5", "1", "0"; no sign, blank, NaN or tail.
    const std::string& text = it->second;
    char* end = nullptr;
    const bool plain =
        !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.');
    const double v = plain ? std::strtod(text.c_str(), &end) : -1;
    if (!plain || end != text.c_str() + text.size() || !(v >= 0 && v <= 1))
      return Status::Error(
          fmt::format("annotation {}: \"{}\": expected a share between 0 and 1, such as 0.5",
                      kIoShareAnnotation, text));
    t.io_share = v;
  }
  if (const auto it = annotations.find(std::string(kAnnotationGpus)); it != annotations.end()) {
    // "0,2": indices below kMaxGpusPerNode, no repeats.
    const std::string& text = it->second;
    std::size_t i = 0;
    while (i < text.size()) {
      std::size_t j = i;
      int v = 0;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) && j - i < 3)
        v = v * 10 + (text[j++] - '0');
      const bool end = j == text.size();
      if (j == i || v >= kMaxGpusPerNode || t.gpus.Has(v) || (!end && text[j] != ',') ||
          (!end && j + 1 == text.size()))
        return Status::Error(fmt::format(
            "annotation {}: \"{}\": expected GPU indices 0..{} separated by commas, such as 0,2",
            kAnnotationGpus, text, kMaxGpusPerNode - 1));
      t.gpus.Add(v);
      i = end ? j : j + 1;
    }
  }
  *out = t;
  return Status::Ok();
}

TimeMs WorkLostMs(TimeMs age_ms, const std::optional<TimeMs>& checkpoint_interval_ms) {
  if (age_ms <= 0) return 0;
  if (!checkpoint_interval_ms || *checkpoint_interval_ms <= 0) return age_ms;
  return age_ms % *checkpoint_interval_ms;
}

RemainingRun EstimateRemaining(const MoveTraits& traits, TimeMs age_ms, TimeMs now_ms,
                               TimeMs horizon_ms) {
  RemainingRun r;
  if (age_ms < 0) age_ms = 0;
  if (traits.expected_end_ms) {
    r.basis = RemainingRun::Basis::kExpectedEnd;
    r.uncapped_ms = *traits.expected_end_ms - now_ms;
  } else if (traits.expected_duration_ms) {
    r.basis = RemainingRun::Basis::kExpectedDuration;
    r.uncapped_ms = *traits.expected_duration_ms - age_ms;
  } else {
    r.basis = RemainingRun::Basis::kAge;
    r.uncapped_ms = age_ms;
  }
  r.uncapped_ms = std::max<TimeMs>(0, r.uncapped_ms);
  r.ms = std::min(r.uncapped_ms, std::max<TimeMs>(0, horizon_ms));
  return r;
}

std::optional<TimeMs> ParseRfc3339Ms(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)
  auto digits = [&](std::size_t pos, std::size_t n, int* v) {
    if (pos + n > text.size()) return false;
    *v = 0;
    for (std::size_t k = pos; k < pos + n; ++k) {
      if (!std::isdigit(static_cast<unsigned char>(text[k]))) return false;
      *v = *v * 10 + (text[k] - '0');
    }
    return true;
  };
  int year, mon, day, hour, min, sec;
  if (!digits(0, 4, &year) || text.size() < 20 || text[4] != '-' || !digits(5, 2, &mon) ||
      text[7] != '-' || !digits(8, 2, &day) || (text[10] != 'T' && text[10] != 't') ||
      !digits(11, 2, &hour) || text[13] != ':' || !digits(14, 2, &min) || text[16] != ':' ||
      !digits(17, 2, &sec))
    return std::nullopt;
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
    return std::nullopt;
  std::size_t pos = 19;
  TimeMs frac_ms = 0;
  if (text[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    TimeMs scale = 100;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      frac_ms += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  TimeMs offset_s = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (!digits(pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !digits(pos + 4, 2, &om) || oh > 23 || om > 59)
      return std::nullopt;
    offset_s = (text[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  const std::time_t t = timegm(&tm);
  return (static_cast<TimeMs>(t) - offset_s) * 1000 + frac_ms;
}

NvlinkPodCounts CountNvlinkPods(const std::vector<PodInfo>& pods,
                                const NvlinkDetection& detection) {
  NvlinkPodCounts counts;
  for (const PodInfo& p : pods) {
    if (p.Active() && !p.deleting && p.demand.gpu_count > 0 && PodUsesNvlink(detection, p.demand))
      ++counts[p.node];
  }
  return counts;
}

Status DecodePodInfo(std::string_view json, PodInfo* out) {
  RawPod raw;
  if (Status s = DecodePodJson(json, &raw); !s.ok()) return s;
  simdjson::dom::parser parser;
  element root, metadata, status, owners, deletion;
  if (Status s = Root(parser, json, "Pod", &root); !s.ok()) return s;
  PodInfo p;
  p.demand = ToPodDemand(raw);
  p.node = raw.node_name;
  p.phase = raw.phase;
  const std::string where = "Pod " + raw.name;
  if (Field(root, "metadata", &metadata)) {
    p.deleting = Field(metadata, "deletionTimestamp", &deletion);
    if (Field(metadata, "ownerReferences", &owners)) {
      simdjson::dom::array arr;
      if (owners.get_array().get(arr) != SUCCESS)
        return Status::Error(where + ": metadata.ownerReferences: expected an array");
      for (element ref : arr) {
        element controller;
        bool is_controller = false;
        if (Field(ref, "controller", &controller) &&
            controller.get_bool().get(is_controller) != SUCCESS)
          return Status::Error(where + ": metadata.ownerReferences[].controller: expected a bool");
        if (!is_controller) continue;
        std::string kind, name;
        if (Status s = StringField(ref, "kind", where + ": ownerReferences[]", &kind); !s.ok())
          return s;
        if (Status s = StringField(ref, "name", where + ": ownerReferences[]", &name); !s.ok())
          return s;
        if (kind.empty() || name.empty())
          return Status::Error(where +
                               ": metadata.ownerReferences[]: a controller needs kind and name");
        p.owner = kind + "/" + name;
      }
    }
  }
  if (Field(root, "status", &status)) {
    std::string start;
    if (Status s = StringField(status, "startTime", where + ": status", &start); !s.ok()) return s;
    if (!start.empty()) {
      const auto ms = ParseRfc3339Ms(start);
      if (!ms)
        return Status::Error(where + ": status.startTime: \"" + start +
                             "\": expected RFC 3339 such as 2026-01-01T00:00:00Z");
      p.started_ms = *ms;
    }
  }
  *out = std::move(p);
  return Status::Ok();
}

bool DisruptionBudget::Covers(const PodDemand& pod) const {
  if (pod.namespace_name != namespace_name) return false;
  if (covers_namespace) return true;
  for (const auto& [k, v] : match_labels) {
    const auto it = pod.labels.find(k);
    if (it == pod.labels.end() || it->second != v) return false;
  }
  return true;  // policy/v1: an empty selector selects every pod of the namespace
}

Status DecodeDisruptionBudget(std::string_view json, DisruptionBudget* out) {
  simdjson::dom::parser parser;
  element root, metadata, spec, selector, labels, exprs, status, allowed;
  if (Status s = Root(parser, json, "PodDisruptionBudget", &root); !s.ok()) return s;
  DisruptionBudget b;
  if (!Field(root, "metadata", &metadata) || !metadata.is_object())
    return Status::Error("PodDisruptionBudget.metadata: expected an object");
  if (Status s = StringField(metadata, "name", "PodDisruptionBudget.metadata", &b.name); !s.ok())
    return s;
  if (b.name.empty())
    return Status::Error("PodDisruptionBudget.metadata.name: expected a non-empty string");
  const std::string where = "PodDisruptionBudget " + b.name;
  if (Status s = StringField(metadata, "namespace", where + ": metadata", &b.namespace_name);
      !s.ok())
    return s;
  if (b.namespace_name.empty()) b.namespace_name = "default";
  if (Field(root, "spec", &spec) && Field(spec, "selector", &selector)) {
    if (!selector.is_object()) return Status::Error(where + ": spec.selector: expected an object");
    if (Field(selector, "matchLabels", &labels)) {
      simdjson::dom::object obj;
      if (labels.get_object().get(obj) != SUCCESS)
        return Status::Error(where + ": spec.selector.matchLabels: expected an object");
      for (auto [k, v] : obj) {
        std::string_view text;
        if (v.get_string().get(text) != SUCCESS)
          return Status::Error(
              fmt::format("{}: spec.selector.matchLabels.{}: expected a string", where, k));
        b.match_labels[std::string(k)] = std::string(text);
      }
    }
    simdjson::dom::array arr;
    if (Field(selector, "matchExpressions", &exprs)) {
      if (exprs.get_array().get(arr) != SUCCESS)
        return Status::Error(where + ": spec.selector.matchExpressions: expected an array");
      if (arr.size() > 0) b.covers_namespace = true;
    }
  }
  // Without a status the controller has not computed the budget yet: nothing is allowed.
  if (Field(root, "status", &status) && Field(status, "disruptionsAllowed", &allowed)) {
    std::int64_t n = 0;
    if (allowed.get_int64().get(n) != SUCCESS || n < 0 || n > 1'000'000)
      return Status::Error(where + ": status.disruptionsAllowed: expected a count");
    b.disruptions_allowed = static_cast<int>(n);
  }
  *out = std::move(b);
  return Status::Ok();
}

}  // namespace tidal::rebalance
