#pragma once
// A client of Prometheus's HTTP query API (also Thanos, Mimir, VictoriaMetrics):
// instant and range queries, with the response parsed by simdjson. Blocking and
// bounded by a timeout: call it from a background thread (the extender's
// refresher, `tidal health`), never from a request handler.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tidal/core/clock.h"
#include "tidal/core/status.h"
#include "tidal/core/types.h"

namespace httplib {
class Client;
}

namespace tidal::prom {

enum class ResultType { kVector, kMatrix, kScalar, kString };

struct Point {
  double time_s = 0;  // Unix seconds, millisecond decimals
  double value = 0;   // NaN and ±Inf survive (the API sends values as strings)
};

// One element of a vector (one point) or a matrix (a series of points).
struct Series {
  Labels metric;
  std::vector<Point> points;
};

struct QueryResult {
  ResultType type = ResultType::kVector;
  std::vector<Series>
      series;                // vector: one point each; matrix: many; scalar: one series, no labels
  std::string string_value;  // string results
  std::vector<std::string> warnings;
};

// Parses a body of /api/v1/query or /api/v1/query_range. An error envelope, a
// non-2xx status, malformed JSON or a malformed element gives an error Status
// whose reason names what was wrong; nothing half-parsed is returned.
Status ParseQueryResponse(std::string_view body, int http_status, QueryResult* out);

// A number as the API writes it: decimal, "NaN", "+Inf", "-Inf".
std::optional<double> ParseSampleValue(std::string_view text);

// A sample's value read as a Unix time in seconds (timestamp(), ai_collector_up's
// time): milliseconds, or nothing unless it lies between 1970 and the year 5000.
std::optional<TimeMs> UnixSecondsToMs(double seconds);

struct ClientOptions {
  std::string url;  // http(s)://host:port[/path-prefix]
  TimeMs timeout_ms = 5'000;
  std::string ca_file;            // https: the CA to verify the server with (default: system store)
  std::string bearer_token_file;  // re-read on every query, so a rotated token is used
};

class PrometheusClient {
 public:
  // Throws InputError when the URL is not http(s)://host[:port][/prefix].
  explicit PrometheusClient(ClientOptions options);
  ~PrometheusClient();
  PrometheusClient(const PrometheusClient&) = delete;
  PrometheusClient& operator=(const PrometheusClient&) = delete;

  // Instant query at `time_s` (Unix seconds), or the server's now.
  Status Query(std::string_view expr, std::optional<double> time_s, QueryResult* out);
  Status QueryRange(std::string_view expr, double start_s, double end_s, double step_s,
                    QueryResult* out);
  const std::string& url() const { return options_.url; }

 private:
  Status Post(const std::string& path, const std::vector<std::pair<std::string, std::string>>& form,
              QueryResult* out);

  ClientOptions options_;
  std::string prefix_;  // path prefix without trailing '/'
  std::mutex mu_;       // httplib::Client is not safe for concurrent requests
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace tidal::prom
