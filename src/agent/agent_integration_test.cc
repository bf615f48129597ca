// The agent as a process: `tidal agent` with the stand-in NVML, its live
// /metrics checked by promtool and by our grouping check, and scraped by a real
// Prometheus (loopback, temporary data dir, 1 s interval, the shipped rules)
// whose query API must return this machine's disks, their await recorded in ms,
// and the stand-in GPUs with the right labels.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "agent/agent_test_util.h"
#include "agent/exposition_check.h"
#include "testing/process.h"
#include "tidal/agent/diskstats.h"

extern char** environ;

namespace tidal::agent {
namespace {

using tidal::testing::Child;
using tidal::testing::Eventually;
using tidal::testing::FreePort;
using tidal::testing::kPrometheusBinary;
using tidal::testing::kPromtoolBinary;
using tidal::testing::PrometheusServer;
using tidal::testing::ReadFile;
using tidal::testing::TempDir;

constexpr const char* kNode = "it-node";

std::string StubScript() {
  std::string s;
  const char* models[] = {"NVIDIA H100 80GB HBM3", "NVIDIA \"H100\" test\\model"};
  for (int g = 0; g < 2; ++g) {
    const std::string p = "gpu " + std::to_string(g) + " ";
    s += p + "uuid GPU-it-" + std::to_string(g) + "\n";
    s += p + "name " + models[g] + "\n";
    s += p + "bus 00000000:1" + std::to_string(g) + ":00.0\n";
    s += p + "memory 85899345920 0 " + std::to_string((g + 1) * 10737418240LL) + "\n";
    for (int l = 0; l < 4; ++l)
      s += p + "link " + std::to_string(l) + " 00000000:1" + std::to_string(1 - g) + ":00.0\n";
    s += p + "speed 25000\n" + p + "rate 1000000 0\n";
  }
  return s;
}

// The devices the agent must report on this machine: its default set.
std::set<std::string> ExpectedDisks() {
  std::vector<DiskCounters> d;
  ParseDiskstats(ReadFile("/proc/diskstats"), &d);
  std::set<std::string> out;
  for (const auto& c : d)
    if (IsDefaultDevice(c.name, false)) out.insert(c.name);
  return out;
}

// An instant query, at `time` (unix seconds) when given, else now.
nlohmann::json Query(int port, const std::string& expr, const std::string& time = "") {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(5, 0);
  httplib::Params params{{"query", expr}};
  if (!time.empty()) params.emplace("time", time);
  auto r = cli.Get("/api/v1/query", params, httplib::Headers{});
  if (!r || r->status != 200) return nullptr;
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return nullptr;
  return j["data"]["result"];
}

// Writes and syncs 4 MiB so that the disk under `dir` serves some IO: an idle
// disk awaits 0 ms, which any unit conversion maps to 0. A tmpfs has no disk
// under it; the working directory (the build tree) has.
void WriteAndSync(const std::string& dir) {
  struct statfs fs {};
  const std::string base = statfs(dir.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC ? "." : dir;
  const std::string path = base + "/await-io-" + std::to_string(getpid()) + ".bin";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return;
  const std::string chunk(1 << 20, 'x');
  for (int i = 0; i < 4; ++i)
    if (write(fd, chunk.data(), chunk.size()) < 0) break;
  fsync(fd);
  close(fd);
  unlink(path.c_str());
}

// Why the recorded ai_storage_await_ms and the agent's ai_storage_await_seconds,
// both read at one instant, do not show the rule at work ("" when they do):
// each device of `disks` once in each, the same labels, ms = 1000 × seconds, and
// at least one device busy (else the factor is untested).
std::string AwaitsDisagree(const nlohmann::json& ms, const nlohmann::json& seconds,
                           const std::set<std::string>& disks) {
  if (!ms.is_array() || !seconds.is_array()) return "a query failed";
  auto by_device = [](const nlohmann::json& result) {
    std::map<std::string, std::pair<nlohmann::json, double>> out;
    for (const auto& r : result) {
      nlohmann::json labels = r["metric"];
      labels.erase("__name__");
      out[labels.value("device", "")] = {labels, std::stod(r["value"][1].get<std::string>())};
    }
    return out;
  };
  const auto rec = by_device(ms), raw = by_device(seconds);
  if (rec.size() != ms.size() || raw.size() != seconds.size()) return "a device twice";
  bool busy = false;
  for (const std::string& d : disks) {
    const auto r = rec.find(d), s = raw.find(d);
    if (r == rec.end() || s == raw.end()) return d + " is missing";
    if (r->second.first != s->second.first) return d + ": the labels differ";
    const double want = s->second.second * 1000;
    if (std::abs(r->second.second - want) > 1e-9 * std::max(1.0, want))
      return d + ": " + nlohmann::json(r->second.second).dump() + " ms recorded for " +
             nlohmann::json(s->second.second).dump() + " s";
    busy = busy || want > 0;
  }
  if (rec.size() != disks.size() || raw.size() != disks.size()) return "devices beyond the disks";
  return busy ? "" : "every device awaits 0";
}

class AgentProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(kPrometheusBinary, X_OK), 0)
        << kPrometheusBinary << " is required (scripts/install-deps.sh)";
    ASSERT_EQ(access(kPromtoolBinary, X_OK), 0)
        << kPromtoolBinary << " is required (scripts/install-deps.sh)";
    port_ = FreePort();
    ASSERT_GT(port_, 0);
    const std::string script = dir_.Write("nvml.script", StubScript());
    const std::string pods = dir_.Write(
        "pods.json",
        R"({"kind":"PodList","items":[{"metadata":{"name":"a","annotations":{"ai.nvlink-required":"true"}},)"
        R"("spec":{"nodeName":"it-node","containers":[{"name":"c","image":"x"}]},"status":{"phase":"Running"}}]})");
    agent_ = std::make_unique<Child>(
        std::vector<std::string>{TIDAL_BINARY, "agent", "--listen",
                                 "127.0.0.1:" + std::to_string(port_), "--interval", "1s",
                                 "--nvml-lib", TIDAL_NVML_STUB, "--pods-file", pods},
        std::vector<std::string>{"TIDAL_NVML_STUB_SCRIPT=" + script,
                                 std::string("NODE_NAME=") + kNode},
        "", dir_.path() + "/agent.log");
    ASSERT_TRUE(agent_->started());
    httplib::Client cli("127.0.0.1", port_);
    ASSERT_TRUE(Eventually([&] {
      auto r = cli.Get("/metrics");
      // Rates appear from the second pass on.
      return r && r->status == 200 &&
             r->body.find("ai_nvlink_bandwidth_utilization") != std::string::npos;
    })) << ReadFile(dir_.path() + "/agent.log");
  }

  std::string Scrape() {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Get("/metrics");
    return r ? r->body : "";
  }

  TempDir dir_;
  int port_ = 0;
  std::unique_ptr<Child> agent_;
};

TEST_F(AgentProcess, LiveMetricsPassPromtoolAndTheGroupingCheck) {
  // A scrape with every family, the disks' included (they start on the second pass).
  std::string text;
  ASSERT_TRUE(Eventually([&] {
    text = Scrape();
    return text.find("\nai_storage_await_seconds{") != std::string::npos;
  })) << text;
  EXPECT_EQ(testing::CheckExposition(text), "");
  const std::string file = dir_.Write("scrape.prom", text);
  Child promtool({kPromtoolBinary, "check", "metrics"}, {}, file, dir_.path() + "/promtool.out");
  // Not even a lint: every name follows Prometheus's conventions (base units).
  EXPECT_EQ(promtool.Wait(), 0);
  EXPECT_EQ(ReadFile(dir_.path() + "/promtool.out"), "");
}

TEST_F(AgentProcess, PromtoolRejectsABrokenExposition) {
  // The check above must be able to fail: promtool does see parse errors.
  const std::string file =
      dir_.Write("bad.prom", Scrape() + "# TYPE ai_gpu_memory_used_bytes gauge\n");
  Child promtool({kPromtoolBinary, "check", "metrics"}, {}, file, dir_.path() + "/promtool.out");
  EXPECT_EQ(promtool.Wait(), 1) << ReadFile(dir_.path() + "/promtool.out");
}

TEST_F(AgentProcess, PromtoolReportsAnAbbreviatedUnit) {
  // ... and lint findings: the one a name in ms would draw.
  const std::string file =
      dir_.Write("lint.prom", Scrape() +
                                  "# HELP ai_test_await_ms x\n# TYPE ai_test_await_ms gauge\n"
                                  "ai_test_await_ms 1\n");
  Child promtool({kPromtoolBinary, "check", "metrics"}, {}, file, dir_.path() + "/promtool.out");
  EXPECT_EQ(promtool.Wait(), 3);
  EXPECT_EQ(ReadFile(dir_.path() + "/promtool.out"),
            "ai_test_await_ms metric names should not contain abbreviated units\n");
}

// A disk name and a GPU model that are not UTF-8 (a fixture procfs and the
// stand-in NVML): the live exposition passes promtool with U+FFFD in their place,
// where the raw bytes would void the whole scrape; the log says so once per label.
TEST(AgentLabels, NamesThatAreNotUtf8StillGiveAScrapePromtoolAccepts) {
  ASSERT_EQ(access(kPromtoolBinary, X_OK), 0)
      << kPromtoolBinary << " is required (scripts/install-deps.sh)";
  TempDir dir;
  const std::string procfs = dir.path() + "/proc";
  ASSERT_EQ(mkdir(procfs.c_str(), 0755), 0);
  dir.Write("proc/diskstats",
            "   8       0 sd\xFF\xC0x 1200 0 9600 400 800 0 6400 300 0 600 700\n"
            "   8      16 sdb 10 0 80 4 8 0 64 3 0 6 7\n");
  std::string script = StubScript();
  const std::string model = "NVIDIA H100 80GB HBM3";
  script.replace(script.find(model), model.size(), "NVIDIA \xED\xA0\x80 H100");
  const std::string stub = dir.Write("nvml.script", script);
  const int port = FreePort();
  Child agent({TIDAL_BINARY, "agent", "--listen", "127.0.0.1:" + std::to_string(port), "--interval",
               "200ms", "--nvml-lib", TIDAL_NVML_STUB, "--procfs", procfs},
              {"TIDAL_NVML_STUB_SCRIPT=" + stub, std::string("NODE_NAME=") + kNode}, "",
              dir.path() + "/agent.log");
  ASSERT_TRUE(agent.started());
  httplib::Client cli("127.0.0.1", port);
  std::string text;
  // From the second pass on, with the disks' rates.
  ASSERT_TRUE(Eventually([&] {
    auto r = cli.Get("/metrics");
    text = r && r->status == 200 ? r->body : "";
    return text.find("ai_storage_await_seconds{") != std::string::npos;
  })) << ReadFile(dir.path() + "/agent.log");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_NE(text.find("device=\"sd" + fffd + fffd + "x\""), std::string::npos) << text;
  EXPECT_NE(text.find("model=\"NVIDIA " + fffd + fffd + fffd + " H100\""), std::string::npos)
      << text;
  EXPECT_EQ(testing::CheckExposition(text), "");
  Child ok({kPromtoolBinary, "check", "metrics"}, {}, dir.Write("scrape.prom", text),
           dir.path() + "/promtool.out");
  EXPECT_EQ(ok.Wait(), 0) << ReadFile(dir.path() + "/promtool.out");
  EXPECT_EQ(ReadFile(dir.path() + "/promtool.out"), "");

  // The check can fail: the same scrape with the raw bytes back is refused.
  std::string raw = text;
  for (std::size_t at; (at = raw.find(fffd)) != std::string::npos;) raw.replace(at, 3, "\xFF");
  Child refused({kPromtoolBinary, "check", "metrics"}, {}, dir.Write("raw.prom", raw),
                dir.path() + "/promtool-raw.out");
  EXPECT_NE(refused.Wait(), 0) << "promtool accepted a label value that is not UTF-8";

  // Several passes have repaired both labels; each was said once.
  ASSERT_TRUE(Eventually([&] {
    auto r = cli.Get("/metrics");
    return r && r->body.find("ai_storage_await_seconds{") != std::string::npos;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // three more passes
  agent.Stop();
  const std::string log = ReadFile(dir.path() + "/agent.log");
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = log.find(what, at)) != std::string::npos; at += what.size()) ++n;
    return n;
  };
  EXPECT_EQ(count("not UTF-8"), 2u) << log;
  EXPECT_EQ(count(R"(device="sd\xff\xc0x")"), 1u) << log;
  EXPECT_EQ(count(R"(model="NVIDIA \xed\xa0\x80 H100")"), 1u) << log;
}

TEST_F(AgentProcess, HealthzIsOk) {
  httplib::Client cli("127.0.0.1", port_);
  auto r = cli.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(AgentProcess, PrometheusScrapesDisksAndStandInGpus) {
  // The shipped rules, as a cluster's Prometheus loads them.
  const PrometheusServer prom(dir_, dir_.path() + "/data",
                              "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                              "rule_files: ['" TIDAL_SOURCE_DIR
                              "/deploy/monitoring/plain/tidal.rules.yaml']\n"
                              "scrape_configs:\n  - job_name: tidal-agent\n    static_configs:\n"
                              "      - targets: ['127.0.0.1:" +
                                  std::to_string(port_) + "']\n");
  ASSERT_TRUE(prom.started());
  const int prom_port = prom.port();

  const std::set<std::string> disks = ExpectedDisks();
  ASSERT_FALSE(disks.empty()) << "this machine shows no real block device";
  nlohmann::json await;
  ASSERT_TRUE(Eventually(
      [&] {
        await = Query(prom_port, std::string("ai_storage_await_seconds{node=\"") + kNode + "\"}");
        return await.is_array() && await.size() >= disks.size();
      },
      90))
      << ReadFile(dir_.path() + "/prometheus.log");
  std::set<std::string> got;
  for (const auto& r : await) {
    got.insert(r["metric"].value("device", ""));
    EXPECT_EQ(r["metric"].value("job", ""), "tidal-agent");
    EXPECT_GE(std::stod(r["value"][1].get<std::string>()), 0.0);
  }
  EXPECT_EQ(got, disks);

  // The recording rule's ms series. Both are read at the instant of one rule
  // evaluation, when the rule saw what the query sees; a scrape that was still
  // being stored as the rule ran is the one reason to look at a later one.
  const std::string sel = std::string("{node=\"") + kNode + "\"}";
  std::string why = "no evaluation yet";
  int attempt = 0;
  EXPECT_TRUE(Eventually(
      [&] {
        if (attempt++ % 10 == 0) WriteAndSync(dir_.path());  // about once a second
        const auto at = Query(prom_port, "max(timestamp(ai_storage_await_ms" + sel + "))");
        if (!at.is_array() || at.size() != 1) return false;
        const std::string t = at[0]["value"][1].get<std::string>();
        why = AwaitsDisagree(Query(prom_port, "ai_storage_await_ms" + sel, t),
                             Query(prom_port, "ai_storage_await_seconds" + sel, t), disks);
        return why.empty();
      },
      90))
      << why << "\n"
      << ReadFile(dir_.path() + "/prometheus.log");

  nlohmann::json mem;
  ASSERT_TRUE(Eventually([&] {
    mem = Query(prom_port, "ai_gpu_memory_used_bytes");
    return mem.is_array() && mem.size() == 2;
  }));
  for (const auto& r : mem) {
    const std::string id = r["metric"].value("gpu_id", "");
    SCOPED_TRACE("gpu " + id);
    EXPECT_EQ(r["metric"].value("node", ""), kNode);
    EXPECT_EQ(r["metric"].value("uuid", ""), "GPU-it-" + id);
    // The second model name carries a quote and a backslash: escaping must round-trip.
    EXPECT_EQ(r["metric"].value("model", ""),
              id == "0" ? "NVIDIA H100 80GB HBM3" : "NVIDIA \"H100\" test\\model");
    EXPECT_EQ(r["value"][1].get<std::string>(), id == "0" ? "10737418240" : "21474836480");
  }
  auto util = Query(prom_port, "ai_gpu_memory_utilization{gpu_id=\"1\"}");
  ASSERT_TRUE(util.is_array() && util.size() == 1);
  EXPECT_EQ(util[0]["value"][1].get<std::string>(), "0.25");

  auto peers = Query(prom_port, "ai_gpu_nvlink_peer_links{gpu_id=\"0\",peer_gpu_id=\"1\"}");
  ASSERT_TRUE(peers.is_array() && peers.size() == 1);
  EXPECT_EQ(peers[0]["value"][1].get<std::string>(), "4");

  // 1e6 KiB/s over 4 links × 25 GB/s = 1.024e9 / 1e11.
  nlohmann::json nvl;
  ASSERT_TRUE(Eventually([&] {
    nvl = Query(prom_port, "ai_nvlink_bandwidth_utilization{gpu_id=\"0\"}");
    return nvl.is_array() && nvl.size() == 1;
  }));
  EXPECT_NEAR(std::stod(nvl[0]["value"][1].get<std::string>()), 0.01024, 1e-4);

  auto comp = Query(prom_port, "ai_nvlink_competition_index");
  ASSERT_TRUE(comp.is_array() && comp.size() == 1);
  EXPECT_EQ(comp[0]["value"][1].get<std::string>(), "0.25");  // 1 pod / (2 GPUs × 2 slots)

  auto up = Query(prom_port, "min(ai_collector_up)");
  ASSERT_TRUE(up.is_array() && up.size() == 1);
  EXPECT_EQ(up[0]["value"][1].get<std::string>(), "1") << "every collector is up";
}

}  // namespace
}  // namespace tidal::agent
