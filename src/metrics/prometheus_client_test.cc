#include "tidal/metrics/prometheus_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

namespace tidal::prom {
namespace {

std::string Sample(const std::string& name) {
  std::ifstream in(std::string(TIDAL_TESTDATA_DIR) + "/reference/prometheus/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PrometheusParse, RealResponses) {
  struct Case {
    const char* file;
    ResultType type;
    std::size_t series;
  };
  const Case cases[] = {
      {"api-query_vector_avg-by-node.json", ResultType::kVector, 2},
      {"api-query_vector_empty.json", ResultType::kVector, 0},
      {"api-query_vector_stddev-of-node-avg.json", ResultType::kVector, 1},
      {"api-query_scalar.json", ResultType::kScalar, 1},
      {"api-query_matrix_range-selector.json", ResultType::kMatrix, 0 /* checked below */},
      {"api-query_subquery-deriv.json", ResultType::kVector, 1},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.file);
    const std::string body = Sample(tc.file);
    ASSERT_FALSE(body.empty());
    QueryResult r;
    Status s = ParseQueryResponse(body, 200, &r);
    ASSERT_TRUE(s.ok()) << s.reason();
    EXPECT_EQ(r.type, tc.type);
    if (tc.type != ResultType::kMatrix) {
      EXPECT_EQ(r.series.size(), tc.series);
    }
  }
}

TEST(PrometheusParse, VectorValuesAndLabels) {
  QueryResult r;
  ASSERT_TRUE(ParseQueryResponse(Sample("api-query_vector_avg-by-node.json"), 200, &r).ok());
  ASSERT_EQ(r.series.size(), 2u);
  EXPECT_EQ(r.series[0].metric.at("node"), "node-a");
  EXPECT_DOUBLE_EQ(r.series[0].points[0].value, 0.5);
  EXPECT_NEAR(r.series[0].points[0].time_s, 1796205933.254, 1e-6);
  EXPECT_DOUBLE_EQ(r.series[1].points[0].value, 0.2);

  ASSERT_TRUE(ParseQueryResponse(Sample("api-query_matrix_range-selector.json"), 200, &r).ok());
  ASSERT_FALSE(r.series.empty());
  EXPECT_GT(r.series[0].points.size(), 1u);
  EXPECT_EQ(r.series[0].metric.at("__name__"), "gpu_memory_utilization_ratio");
}

TEST(PrometheusParse, ErrorsNameTheProblem) {
  struct Case {
    const char* name;
    std::string body;
    int http;
    const char* want;  // substring of the reason
  };
  const Case cases[] = {
      {"error envelope", Sample("api-query_error_bad-data.json"), 400, "bad_data"},
      {"not JSON", "<html>bad gateway</html>", 502, "HTTP 502"},
      {"truncated", R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{})",
       200, "not JSON"},
      {"no status", R"({"data":{}})", 200, "no \"status\""},
      {"unknown result type", R"({"status":"success","data":{"resultType":"table","result":[]}})",
       200, "table"},
      {"value not a string",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,0.5]}]}})",
       200, "value as a string"},
      {"value garbage",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.5x"]}]}})",
       200, "\"0.5x\""},
      {"label not a string",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":3},"value":[1,"1"]}]}})",
       200, "label"},
      {"success body with a 500",
       R"({"status":"success","data":{"resultType":"vector","result":[]}})", 500, "HTTP 500"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    QueryResult r;
    r.warnings.push_back("stale");
    Status s = ParseQueryResponse(tc.body, tc.http, &r);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.reason().find(tc.want), std::string::npos) << s.reason();
    EXPECT_TRUE(r.series.empty() && r.warnings.empty()) << "nothing half-parsed is returned";
  }
}

TEST(PrometheusParse, SampleValues) {
  struct Case {
    const char* text;
    std::optional<double> want;
  };
  const Case cases[] = {{"0.5", 0.5}, {"1e3", 1000}, {"+2", 2},   {"-1.25", -1.25}, {"", {}},
                        {"abc", {}},  {"1 ", {}},    {"nan", {}}, {"inf", {}}};
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.text);
    EXPECT_EQ(ParseSampleValue(tc.text), tc.want);
  }
  EXPECT_TRUE(std::isnan(*ParseSampleValue("NaN")));
  EXPECT_EQ(*ParseSampleValue("+Inf"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(*ParseSampleValue("-Inf"), -std::numeric_limits<double>::infinity());
}

ClientOptions Options(std::string url, TimeMs timeout_ms = 5'000) {
  ClientOptions o;
  o.url = std::move(url);
  o.timeout_ms = timeout_ms;
  return o;
}

TEST(PrometheusClient, RejectsBadUrls) {
  for (const char* url : {"localhost:9090", "ftp://x", "http://", "http:///api"}) {
    SCOPED_TRACE(url);
    EXPECT_THROW(PrometheusClient(Options(url)), InputError);
  }
  EXPECT_NO_THROW(PrometheusClient(Options("http://prom.monitoring:9090/prefix/")));
}

// A local server playing Prometheus: checks the form the client posts, and the
// client's path prefix and timeouts.
TEST(PrometheusClient, QueriesOverHttp) {
  httplib::Server server;
  std::string seen_query, seen_time, seen_auth;
  server.Post("/prom/api/v1/query", [&](const httplib::Request& req, httplib::Response& res) {
    seen_query = req.get_param_value("query");
    seen_time = req.get_param_value("time");
    seen_auth = req.get_header_value("Authorization");
    res.set_content(R"({"status":"success","data":{"resultType":"scalar","result":[10.5,"42"]}})",
                    "application/json");
  });
  server.Post("/prom/api/v1/query_range", [&](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // longer than the timeout
    res.set_content("{}", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });

  PrometheusClient client(
      Options("http://127.0.0.1:" + std::to_string(port) + "/prom", /*timeout_ms=*/300));
  QueryResult r;
  Status s = client.Query("sum(up)", 12.25, &r);
  ASSERT_TRUE(s.ok()) << s.reason();
  EXPECT_EQ(seen_query, "sum(up)");
  EXPECT_EQ(seen_time, "12.250");
  EXPECT_TRUE(seen_auth.empty());
  ASSERT_EQ(r.type, ResultType::kScalar);
  EXPECT_DOUBLE_EQ(r.series.at(0).points.at(0).value, 42);

  s = client.QueryRange("up", 0, 10, 1, &r);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.reason().find("query_range"), std::string::npos) << s.reason();

  server.stop();
  t.join();
  s = client.Query("up", std::nullopt, &r);
  EXPECT_FALSE(s.ok()) << "a server that is gone is an error, never an empty result";
}

}  // namespace
}  // namespace tidal::prom
