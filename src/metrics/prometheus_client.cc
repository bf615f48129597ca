#include "tidal/metrics/prometheus_client.h"

#include <fmt/format.h>
#include <httplib.h>
#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "tidal/core/file.h"
#include "tidal/core/text.h"

namespace tidal::prom {
namespace {

// Reasons quote at most this much of a server's text.
constexpr std::size_t kQuoteLimit = 200;

std::string Clip(std::string_view text) {
  return std::string(text.substr(0, kQuoteLimit)) + (text.size() > kQuoteLimit ? "…" : "");
}

Status ParseTime(simdjson::dom::element e, double* out) {
  double t = 0;
  if (e.is_double()) {
    t = e.get_double().value_unsafe();
  } else if (e.is_int64()) {
    t = static_cast<double>(e.get_int64().value_unsafe());
  } else if (e.is_uint64()) {
    t = static_cast<double>(e.get_uint64().value_unsafe());
  } else {
    return Status::Error("expected a timestamp number");
  }
  *out = t;
  return Status::Ok();
}

// [ts, "value"]
Status ParsePoint(simdjson::dom::element e, Point* out) {
  simdjson::dom::array pair;
  if (e.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2)
    return Status::Error("expected [timestamp, \"value\"]");
  Status s = ParseTime(pair.at(0).value_unsafe(), &out->time_s);
  if (!s.ok()) return s;
  std::string_view text;
  if (pair.at(1).get_string().get(text) != simdjson::SUCCESS)
    return Status::Error("expected the value as a string");
  const auto v = ParseSampleValue(text);
  if (!v) return Status::Error("value " + QuoteInput(text) + " is not a number");
  out->value = *v;
  return Status::Ok();
}

Status ParseMetric(simdjson::dom::element e, Labels* out) {
  simdjson::dom::object labels;
  if (e.get_object().get(labels) != simdjson::SUCCESS)
    return Status::Error("\"metric\" is not an object");
  for (auto field : labels) {
    std::string_view v;
    if (field.value.get_string().get(v) != simdjson::SUCCESS)
      return Status::Error(fmt::format("label {} is not a string", QuoteInput(field.key)));
    (*out)[std::string(field.key)] = std::string(v);
  }
  return Status::Ok();
}

Status ParseResult(simdjson::dom::object data, QueryResult* out) {
  std::string_view type;
  if (data["resultType"].get_string().get(type) != simdjson::SUCCESS)
    return Status::Error("data.resultType is missing");
  simdjson::dom::element result;
  if (data["result"].get(result) != simdjson::SUCCESS)
    return Status::Error("data.result is missing");
  if (type == "scalar" || type == "string") {
    out->type = type == "scalar" ? ResultType::kScalar : ResultType::kString;
    simdjson::dom::array pair;
    if (result.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2)
      return Status::Error("data.result: expected [timestamp, \"value\"]");
    if (out->type == ResultType::kString) {
      std::string_view text;
      if (pair.at(1).get_string().get(text) != simdjson::SUCCESS)
        return Status::Error("data.result: expected a string value");
      out->string_value = std::string(text);
      return Status::Ok();
    }
    Series s;
    s.points.emplace_back();
    Status st = ParsePoint(result, &s.points.back());
    if (!st.ok()) return Status::Error("data.result: " + st.reason());
    out->series.push_back(std::move(s));
    return Status::Ok();
  }
  const bool matrix = type == "matrix";
  if (!matrix && type != "vector")
    return Status::Error("data.resultType " + QuoteInput(type) +
                         ": expected vector, matrix, scalar or string");
  out->type = matrix ? ResultType::kMatrix : ResultType::kVector;
  simdjson::dom::array items;
  if (result.get_array().get(items) != simdjson::SUCCESS)
    return Status::Error("data.result is not an array");
  out->series.reserve(items.size());
  std::size_t i = 0;
  for (simdjson::dom::element item : items) {
    const std::string where = fmt::format("data.result[{}]", i++);
    Series s;
    simdjson::dom::element metric;
    if (item["metric"].get(metric) != simdjson::SUCCESS)
      return Status::Error(where + ".metric is missing");
    Status st = ParseMetric(metric, &s.metric);
    if (!st.ok()) return Status::Error(where + ": " + st.reason());
    if (matrix) {
      simdjson::dom::array values;
      if (item["values"].get_array().get(values) != simdjson::SUCCESS)
        return Status::Error(where + ".values is missing");
      s.points.reserve(values.size());
      for (simdjson::dom::element v : values) {
        s.points.emplace_back();
        st = ParsePoint(v, &s.points.back());
        if (!st.ok()) return Status::Error(where + ".values: " + st.reason());
      }
    } else {
      simdjson::dom::element value;
      if (item["value"].get(value) != simdjson::SUCCESS)
        return Status::Error(where + ".value is missing");
      s.points.emplace_back();
      st = ParsePoint(value, &s.points.back());
      if (!st.ok()) return Status::Error(where + ".value: " + st.reason());
    }
    out->series.push_back(std::move(s));
  }
  return Status::Ok();
}

std::string ReadToken(const std::string& path) {
  std::string t;
  if (!ReadRegularFile(path, kMaxConfigFileBytes, &t).ok()) t.clear();  // no token: a 401 says why
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  return t;
}

std::string FormatSeconds(double s) { return fmt::format("{:.3f}", s); }

}  // namespace

std::optional<TimeMs> UnixSecondsToMs(double seconds) {
  constexpr double kYear5000 = 95'617'584'000;
  if (!(seconds >= 1 && seconds < kYear5000)) return std::nullopt;
  return static_cast<TimeMs>(std::llround(seconds * 1000));
}

std::optional<double> ParseSampleValue(std::string_view text) {
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
    return std::nullopt;
  if (std::isnan(v) || std::isinf(v)) return std::nullopt;  // only the spellings above
  return v;
}

Status ParseQueryResponse(std::string_view body, int http_status, QueryResult* out) {
  *out = QueryResult{};
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const simdjson::padded_string padded(body);
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) {
    if (http_status < 200 || http_status > 299)
      return Status::Error(fmt::format("HTTP {}: {}", http_status, QuoteInput(Clip(body))));
    return Status::Error("response is not JSON: " + QuoteInput(Clip(body)));
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS)
    return Status::Error("response is not a JSON object");
  std::string_view status;
  if (obj["status"].get_string().get(status) != simdjson::SUCCESS)
    return Status::Error("response has no \"status\"");
  if (status != "success") {
    std::string_view type = "unknown", error;
    if (obj["errorType"].get_string().get(type) != simdjson::SUCCESS) type = "unknown";
    if (obj["error"].get_string().get(error) != simdjson::SUCCESS) error = "(no message)";
    return Status::Error(fmt::format("HTTP {}: {}: {}", http_status, type, Clip(error)));
  }
  if (http_status < 200 || http_status > 299)
    return Status::Error(fmt::format("HTTP {} with a success envelope", http_status));
  simdjson::dom::array warnings;
  QueryResult result;
  if (obj["warnings"].get_array().get(warnings) == simdjson::SUCCESS)
    for (auto w : warnings) {
      std::string_view text;
      if (w.get_string().get(text) == simdjson::SUCCESS) result.warnings.emplace_back(text);
    }
  simdjson::dom::object data;
  if (obj["data"].get_object().get(data) != simdjson::SUCCESS)
    return Status::Error("response has no \"data\" object");
  Status s = ParseResult(data, &result);
  if (!s.ok()) return s;
  *out = std::move(result);
  return Status::Ok();
}

PrometheusClient::PrometheusClient(ClientOptions options) : options_(std::move(options)) {
  const std::string& url = options_.url;
  const auto scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    throw InputError{"--prometheus " + QuoteInput(url) +
                     ": expected http://host:port or https://host:port, optionally with a path"};
  const auto host_start = scheme_end + 3;
  const auto path_start = url.find('/', host_start);
  const std::string host_port = url.substr(
      host_start, path_start == std::string::npos ? std::string::npos : path_start - host_start);
  if (host_port.empty() || host_port.find_first_of("?#@ ") != std::string::npos)
    throw InputError{"--prometheus " + QuoteInput(url) + ": expected a host after " + scheme +
                     "://"};
  if (path_start != std::string::npos) {
    prefix_ = url.substr(path_start);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  }
  http_ = std::make_unique<httplib::Client>(scheme + "://" + host_port);
  const auto sec = options_.timeout_ms / 1000;
  const auto usec = (options_.timeout_ms % 1000) * 1000;
  http_->set_connection_timeout(sec, usec);
  http_->set_read_timeout(sec, usec);
  http_->set_write_timeout(sec, usec);
  http_->set_keep_alive(true);
  http_->set_tcp_nodelay(true);
  if (scheme == "https") {
    http_->enable_server_certificate_verification(true);
    if (!options_.ca_file.empty()) http_->set_ca_cert_path(options_.ca_file.c_str());
  }
}

PrometheusClient::~PrometheusClient() = default;

Status PrometheusClient::Query(std::string_view expr, std::optional<double> time_s,
                               QueryResult* out) {
  std::vector<std::pair<std::string, std::string>> form{{"query", std::string(expr)}};
  if (time_s) form.emplace_back("time", FormatSeconds(*time_s));
  form.emplace_back("timeout", fmt::format("{}ms", options_.timeout_ms));
  return Post("/api/v1/query", form, out);
}

Status PrometheusClient::QueryRange(std::string_view expr, double start_s, double end_s,
                                    double step_s, QueryResult* out) {
  return Post("/api/v1/query_range",
              {{"query", std::string(expr)},
               {"start", FormatSeconds(start_s)},
               {"end", FormatSeconds(end_s)},
               {"step", fmt::format("{}", step_s)},
               {"timeout", fmt::format("{}ms", options_.timeout_ms)}},
              out);
}

Status PrometheusClient::Post(const std::string& path,
                              const std::vector<std::pair<std::string, std::string>>& form,
                              QueryResult* out) {
  httplib::Params params;
  for (const auto& [k, v] : form) params.emplace(k, v);
  httplib::Headers headers;
  if (!options_.bearer_token_file.empty())
    headers.emplace("Authorization", "Bearer " + ReadToken(options_.bearer_token_file));
  std::lock_guard<std::mutex> lock(mu_);
  auto res = http_->Post(prefix_ + path, headers, params);
  if (!res)
    return Status::Error(
        fmt::format("{}{}: {}", options_.url, path, httplib::to_string(res.error())));
  Status s = ParseQueryResponse(res->body, res->status, out);
  if (!s.ok()) return Status::Error(fmt::format("{}{}: {}", options_.url, path, s.reason()));
  return s;
}

}  // namespace tidal::prom
