// The deployable stack: every kustomize tree renders with the kubectl on PATH and
// passes our schemas and pod checks (probes, ports, resources; each shown to fail
// on a bad fixture); the kube-prometheus-stack overlay carries the chart's labels; the rules pass
// promtool's checks and unit tests (which must fail when a threshold is changed); the
// PrometheusRule is the rules file; the plain scrape config is a valid Prometheus config; and every
// PromQL expression of the rules and of the dashboard is accepted by a real Prometheus.
#include <gtest/gtest.h>
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "testing/process.h"

namespace tidal {
namespace {

using testing::ReadFile;
using testing::RunProgram;
using testing::TempDir;

constexpr const char* kPython = "/usr/bin/python3";

std::string Src(const std::string& rel) { return std::string(TIDAL_SOURCE_DIR) + "/" + rel; }

std::string Kubectl() {
  const std::string k = testing::OnPath("kubectl");
  return k;
}

struct Rendered {
  int exit_code = -1;
  std::string yaml;
  std::string err;
};

Rendered Render(const std::string& dir, const TempDir& scratch) {
  Rendered r;
  auto res = RunProgram({Kubectl(), "kustomize", Src(dir)}, scratch);
  r.exit_code = res.exit_code;
  // kubectl's warnings about deprecated fields go to stderr, merged here as
  // comment lines starting with '#', which YAML ignores.
  r.yaml = res.out;
  return r;
}

std::multiset<std::string> Kinds(const std::string& yaml) {
  std::multiset<std::string> kinds;
  for (const auto& doc : YAML::LoadAll(yaml))
    if (doc.IsMap() && doc["kind"])
      kinds.insert(doc["kind"].as<std::string>() + "/" + doc["metadata"]["name"].as<std::string>());
  return kinds;
}

class Stack : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Kubectl().empty()) << "kubectl is required on PATH (scripts/install-deps.sh)";
    ASSERT_EQ(access(kPython, X_OK), 0) << kPython << " is required (scripts/install-deps.sh)";
    ASSERT_EQ(access(testing::kPromtoolBinary, X_OK), 0)
        << "promtool is required (scripts/install-deps.sh)";
  }
  TempDir dir_;
};

// validate_manifests.py on a file, with its options.
testing::RunResult Validate(const std::string& file, const TempDir& dir,
                            std::vector<std::string> options = {}) {
  std::vector<std::string> argv = {kPython, Src("deploy/tests/validate_manifests.py")};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(file);
  return RunProgram(argv, dir);
}

// The namespace kube-prometheus-stack runs in: the overlay puts the dashboard there.
const std::vector<std::string> kMonitoringExists = {"--namespace-exists", "monitoring"};

TEST_F(Stack, EveryStackRendersAndPassesTheChecks) {
  struct Case {
    const char* name;
    const char* dir;
    std::vector<std::string> options;
    std::vector<std::string> must_have;
    std::vector<std::string> must_not_have;
  };
  const Case cases[] = {
      {"with the Prometheus Operator",
       "deploy",
       {},
       {"Namespace/tidal-system", "DaemonSet/ai-node-metrics", "ServiceMonitor/ai-node-metrics",
        "Deployment/load-aware-scheduler", "ServiceMonitor/load-aware-scheduler",
        "PrometheusRule/tidal", "ConfigMap/tidal-grafana-dashboard", "Deployment/tidal-rebalancer",
        "ClusterRole/tidal-rebalancer"},
       {"ConfigMap/tidal-prometheus", "PodMonitor/load-aware-scheduler",
        "ClusterRole/ai-node-metrics"}},
      {"with the agent reading its kubelet's pods",
       "deploy/overlays/kubelet-pods",
       {},
       {"Namespace/tidal-system", "DaemonSet/ai-node-metrics", "ServiceMonitor/ai-node-metrics",
        "Deployment/load-aware-scheduler", "ClusterRole/ai-node-metrics",
        "ClusterRoleBinding/ai-node-metrics"},
       {"ConfigMap/tidal-prometheus"}},
      {"with kube-prometheus-stack",
       "deploy/overlays/kube-prometheus-stack",
       kMonitoringExists,
       {"Namespace/tidal-system", "DaemonSet/ai-node-metrics", "ServiceMonitor/ai-node-metrics",
        "Deployment/load-aware-scheduler", "ServiceMonitor/load-aware-scheduler",
        "PrometheusRule/tidal", "ConfigMap/tidal-grafana-dashboard", "Deployment/tidal-rebalancer"},
       {"ConfigMap/tidal-prometheus"}},
      {"without the operator",
       "deploy/overlays/no-operator",
       {},
       {"Namespace/tidal-system", "DaemonSet/ai-node-metrics", "Deployment/load-aware-scheduler",
        "ConfigMap/tidal-prometheus", "ConfigMap/tidal-grafana-dashboard",
        "Deployment/tidal-rebalancer"},
       {"ServiceMonitor/ai-node-metrics", "ServiceMonitor/load-aware-scheduler",
        "PrometheusRule/tidal"}},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const Rendered r = Render(tc.dir, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.yaml;
    const std::string file = dir_.Write(std::string(tc.name) + ".yaml", r.yaml);
    const auto v = Validate(file, dir_, tc.options);
    EXPECT_EQ(v.exit_code, 0) << v.out;
    const auto kinds = Kinds(r.yaml);
    for (const auto& k : tc.must_have) EXPECT_EQ(kinds.count(k), 1u) << k;
    for (const auto& k : tc.must_not_have) EXPECT_EQ(kinds.count(k), 0u) << k;
  }
}

// The agent reads the kubelet's pods (with a token allowed nodes/proxy) only in
// the overlay that asks for it; by default it has no token at all.
TEST_F(Stack, OnlyTheKubeletPodsOverlayGivesTheAgentTheKubelet) {
  struct Case {
    const char* dir;
    bool kubelet;
  };
  for (const Case& tc : {Case{"deploy", false}, Case{"deploy/overlays/no-operator", false},
                         Case{"deploy/overlays/kubelet-pods", true}}) {
    SCOPED_TRACE(tc.dir);
    const Rendered r = Render(tc.dir, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.yaml;
    YAML::Node agent;
    for (const auto& doc : YAML::LoadAll(r.yaml))
      if (doc.IsMap() && doc["kind"] && doc["kind"].as<std::string>() == "DaemonSet" &&
          doc["metadata"]["name"].as<std::string>() == "ai-node-metrics")
        agent = doc;
    ASSERT_TRUE(agent) << "no DaemonSet ai-node-metrics";
    const YAML::Node pod = agent["spec"]["template"]["spec"];
    bool kubelet_url = false;
    for (const auto& a : pod["containers"][0]["args"])
      kubelet_url = kubelet_url || a.as<std::string>().rfind("--kubelet-url=", 0) == 0;
    EXPECT_EQ(kubelet_url, tc.kubelet);
    EXPECT_EQ(pod["automountServiceAccountToken"].as<bool>(), tc.kubelet);
  }
}

// Every directory of deploy/ with a kustomization.yaml: the stacks above and
// each part on its own (deploy/agent, deploy/overlays/kube-prometheus-stack/grafana,
// ...), so that a part that breaks only when applied alone is seen too. A part's
// references to the rest of the stack are not checked (--fragment).
TEST_F(Stack, EveryKustomizeTreeRendersAndPassesTheChecks) {
  std::vector<std::string> trees;
  const std::filesystem::path root = Src("deploy");
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    const std::string rel = std::filesystem::relative(e.path(), Src("")).string();
    if (e.path().filename() == "kustomization.yaml" && rel.rfind("deploy/tests/", 0) != 0)
      trees.push_back(std::filesystem::relative(e.path().parent_path(), Src("")).string());
  }
  std::sort(trees.begin(), trees.end());
  // The discovery finds what is known to be there (and so cannot pass on nothing).
  for (const char* known :
       {"deploy", "deploy/agent", "deploy/scheduler", "deploy/rebalancer", "deploy/workloads",
        "deploy/monitoring", "deploy/monitoring/plain", "deploy/overlays/no-operator",
        "deploy/overlays/kube-prometheus-stack", "deploy/overlays/kube-prometheus-stack/grafana"})
    EXPECT_TRUE(std::count(trees.begin(), trees.end(), known)) << known << " was not found";
  for (const auto& tree : trees) {
    SCOPED_TRACE(tree);
    const Rendered r = Render(tree, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.yaml;
    const std::string file = dir_.Write("tree.yaml", r.yaml);
    const auto v = Validate(file, dir_, {"--fragment"});
    EXPECT_EQ(v.exit_code, 0) << v.out;
  }
}

// Every tree a user applies runs the image of the one setting
// (deploy/workloads/kustomization.yaml), which scripts/build-image.sh builds:
// tidal:<VERSION> unless changed there. deploy/device-plugin repeats it.
TEST_F(Stack, EveryTreeRunsTheImageOfTheOneSetting) {
  const YAML::Node setting =
      YAML::LoadFile(Src("deploy/workloads/kustomization.yaml"))["images"][0];
  ASSERT_TRUE(setting) << "deploy/workloads/kustomization.yaml has no images: setting";
  const std::string image =
      setting["newName"].as<std::string>() + ":" + setting["newTag"].as<std::string>();
  std::string version = testing::ReadFile(Src("VERSION"));
  version = version.substr(0, version.find_first_of(" \n"));
  EXPECT_EQ(image, "tidal:" + version) << "the setting names another tag than VERSION";
  for (const char* tree : {"deploy", "deploy/overlays/no-operator",
                           "deploy/overlays/kube-prometheus-stack", "deploy/device-plugin"}) {
    SCOPED_TRACE(tree);
    const Rendered r = Render(tree, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.yaml;
    int containers = 0;
    for (const auto& doc : YAML::LoadAll(r.yaml)) {
      if (!doc.IsMap() || !doc["spec"] || !doc["spec"]["template"]) continue;
      const YAML::Node spec = doc["spec"]["template"]["spec"];
      for (const char* list : {"containers", "initContainers"}) {
        if (!spec[list]) continue;
        for (const auto& c : spec[list]) {
          const std::string name = c["image"].as<std::string>();
          if (name.rfind("registry.k8s.io/", 0) == 0) continue;  // kube-scheduler
          ++containers;
          EXPECT_EQ(name, image) << doc["metadata"]["name"].as<std::string>();
        }
      }
    }
    EXPECT_GT(containers, 0) << "no Tidal container found";
  }
}

// Each pod check fails on a manifest that breaks it (deploy/tests/fixtures: the
// first line of each names the problem it must be reported with), and passes
// the good ones.
TEST_F(Stack, ThePodChecksRejectBadManifests) {
  struct Case {
    const char* name;
    const char* fixture;
    int exit_code;
  };
  const Case cases[] = {
      {"verbs on loopback, probes and metrics on a second port", "good.yaml", 0},
      {"a hostNetwork pod probed on loopback", "good-host-network.yaml", 0},
      {"a probe with a loopback host", "bad-loopback-probe-host.yaml", 1},
      {"a probe on a port the args bind to loopback", "bad-loopback-listener.yaml", 1},
      {"a probe on a port nothing declares or listens on", "bad-undeclared-probe-port.yaml", 1},
      {"a probe naming an unknown port", "bad-unknown-port-name.yaml", 1},
      {"a Service targeting an unknown port", "bad-service-target.yaml", 1},
      {"a ServiceMonitor on a port its Service does not name", "bad-servicemonitor-port.yaml", 1},
      {"a PodMonitor on a port bound to loopback", "bad-podmonitor-loopback.yaml", 1},
      {"a container without a memory limit", "bad-no-memory-limit.yaml", 1},
      {"a container without resources", "bad-no-resources.yaml", 1},
  };
  std::set<std::string> covered;
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const std::string file = Src(std::string("deploy/tests/fixtures/") + tc.fixture);
    const std::string text = ReadFile(file);
    const std::string tag = "# expect: ";
    ASSERT_EQ(text.rfind(tag, 0), 0u) << tc.fixture << " does not start with " << tag;
    const std::string expect = text.substr(tag.size(), text.find('\n') - tag.size());
    const auto v = Validate(file, dir_, {"--fragment"});
    EXPECT_EQ(v.exit_code, tc.exit_code) << v.out;
    EXPECT_NE(v.out.find(expect), std::string::npos) << v.out;
    if (tc.exit_code != 0) {  // the one problem the fixture was made for, no other
      EXPECT_NE(v.out.find(" 1 problems"), std::string::npos) << v.out;
    }
    covered.insert(tc.fixture);
  }
  // A fixture added without a case here would never run.
  for (const auto& e : std::filesystem::directory_iterator(Src("deploy/tests/fixtures")))
    if (e.path().extension() == ".yaml") {
      EXPECT_TRUE(covered.count(e.path().filename().string())) << e.path().filename();
    }
}

// What kube-prometheus-stack's default selectors need: the `release` label on
// every ServiceMonitor and PrometheusRule, the dashboard in Grafana's namespace
// with the sidecar's label. And the one Prometheus setting each stack gives
// tidal serve and tidal rebalance.
TEST_F(Stack, EachStackReachesItsPrometheusAndGrafana) {
  struct Case {
    const char* name;
    const char* dir;
    const char* release;  // "" when none is expected
    const char* dashboard_namespace;
    const char* prometheus_url;
  };
  const Case cases[] = {
      {"with the Prometheus Operator", "deploy", "", "tidal-system",
       "http://prometheus-operated.monitoring.svc:9090"},
      {"with kube-prometheus-stack", "deploy/overlays/kube-prometheus-stack",
       "kube-prometheus-stack", "monitoring", "http://prometheus-operated.monitoring.svc:9090"},
      {"without the operator", "deploy/overlays/no-operator", "", "tidal-system",
       "http://prometheus.monitoring.svc:9090"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const Rendered r = Render(tc.dir, dir_);
    ASSERT_EQ(r.exit_code, 0) << r.yaml;
    std::string settings;  // the tidal-settings ConfigMap's generated name
    int queriers = 0;
    for (const auto& doc : YAML::LoadAll(r.yaml)) {
      if (!doc.IsMap() || !doc["kind"]) continue;
      const std::string kind = doc["kind"].as<std::string>();
      const std::string name = doc["metadata"]["name"].as<std::string>();
      const YAML::Node labels = doc["metadata"]["labels"];
      if (kind == "ServiceMonitor" || kind == "PrometheusRule") {
        const std::string release =
            labels && labels["release"] ? labels["release"].as<std::string>() : "";
        EXPECT_EQ(release, tc.release) << kind << "/" << name;
      }
      if (kind == "ConfigMap" && name == "tidal-grafana-dashboard") {
        EXPECT_EQ(doc["metadata"]["namespace"].as<std::string>(), tc.dashboard_namespace);
        EXPECT_EQ(labels["grafana_dashboard"].as<std::string>(), "1");
      }
      if (kind == "ConfigMap" && name.rfind("tidal-settings", 0) == 0) {
        settings = name;
        EXPECT_EQ(doc["data"]["prometheus-url"].as<std::string>(), tc.prometheus_url);
      }
    }
    ASSERT_FALSE(settings.empty()) << "no tidal-settings ConfigMap";
    // Every --prometheus flag reads it, through the container's environment.
    for (const auto& doc : YAML::LoadAll(r.yaml)) {
      if (!doc.IsMap() || !doc["spec"] || !doc["spec"]["template"]) continue;
      for (const auto& c : doc["spec"]["template"]["spec"]["containers"]) {
        for (const auto& a : c["args"]) {
          const std::string arg = a.as<std::string>();
          if (arg.rfind("--prometheus=", 0) != 0) continue;
          ++queriers;
          EXPECT_EQ(arg, "--prometheus=$(PROMETHEUS_URL)") << c["name"];
          std::string from;
          for (const auto& e : c["env"])
            if (e["name"].as<std::string>() == "PROMETHEUS_URL")
              from = e["valueFrom"]["configMapKeyRef"]["name"].as<std::string>();
          EXPECT_EQ(from, settings) << c["name"];
        }
      }
    }
    EXPECT_EQ(queriers, 2) << "tidal serve and tidal rebalance";
  }
}

TEST_F(Stack, TheSchemaCheckRejectsBrokenObjects) {
  const Rendered r = Render("deploy", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.yaml;
  struct Case {
    const char* name;
    std::string from, to;
    std::string expect;  // a piece of the problem line
  };
  const Case cases[] = {
      {"a wrong apiVersion", "apiVersion: apps/v1", "apiVersion: apps/v1beta9",
       "'apps/v1' was expected"},
      {"an unknown kind", "kind: ServiceAccount", "kind: ServiceAcount",
       "no schema for kind 'ServiceAcount'"},
      {"a container without image", "image: ", "imageX: ", "'image' is a required property"},
      {"a port out of range", "containerPort: 9410", "containerPort: 94100",
       ".containerPort: 94100 is greater"},
      {"a selector that misses the template",
       "matchLabels:\n      app.kubernetes.io/name: ai-node-metrics",
       "matchLabels:\n      app.kubernetes.io/name: other",
       "does not match .spec.template.metadata.labels"},
      {"a namespace the stack does not create", "\n  namespace: tidal-system\n",
       "\n  namespace: elsewhere\n", "namespace 'elsewhere' is not created"},
      {"a rule without expr", "expr: stddev(", "exp: stddev(", "'expr' is a required property"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::string broken = r.yaml;
    const auto at = broken.find(tc.from);
    ASSERT_NE(at, std::string::npos) << tc.from;
    broken.replace(at, tc.from.size(), tc.to);
    const std::string file = dir_.Write("broken.yaml", broken);
    const auto v = Validate(file, dir_);
    EXPECT_EQ(v.exit_code, 1) << v.out;
    EXPECT_NE(v.out.find(tc.expect), std::string::npos) << v.out;
  }
}

TEST_F(Stack, ThePrometheusRuleCarriesTheRulesFile) {
  const auto v = RunProgram({kPython, Src("scripts/gen-prometheusrule.py"), "--check"}, dir_);
  EXPECT_EQ(v.exit_code, 0)
      << "deploy/monitoring/prometheusrule.yaml is stale: run scripts/gen-prometheusrule.py\n"
      << v.out;
}

TEST_F(Stack, PromtoolChecksAndUnitTestsTheRules) {
  auto check = RunProgram(
      {testing::kPromtoolBinary, "check", "rules", Src("deploy/monitoring/plain/tidal.rules.yaml")},
      dir_);
  EXPECT_EQ(check.exit_code, 0) << check.out;
  auto unit = RunProgram({testing::kPromtoolBinary, "test", "rules",
                          Src("deploy/monitoring/tests/tidal.rules.test.yaml")},
                         dir_);
  EXPECT_EQ(unit.exit_code, 0) << unit.out;
}

TEST_F(Stack, TheRuleUnitTestsFailWhenAnAlertChanges) {
  const std::string rules = ReadFile(Src("deploy/monitoring/plain/tidal.rules.yaml"));
  const std::string tests = ReadFile(Src("deploy/monitoring/tests/tidal.rules.test.yaml"));
  struct Case {
    const char* name;
    std::string from, to;
  };
  const Case cases[] = {
      {"LSCS threshold", "cluster:tidal_lscs:ratio > 0.15", "cluster:tidal_lscs:ratio > 0.5"},
      {"LSCS duration",
       "for: 10m\n        labels: {severity: warning}\n        annotations:\n          summary: "
       "GPU",
       "for: 1m\n        labels: {severity: warning}\n        annotations:\n          summary: "
       "GPU"},
      {"migration threshold", "ratio1h > 0.005", "ratio1h > 0.9"},
      {"old evictions counted again", "kube_pod_status_reason{reason=\"Evicted\"} offset 1h == 1",
       "kube_pod_status_reason{reason=\"Evicted\"} offset 1h == 2"},
      {"NVLink threshold", "stdvar_avg5m > 0.02", "stdvar_avg5m > 0.05"},
      {"fallback stage", "(tidal_extender_fallback_stage) >= 2",
       "(tidal_extender_fallback_stage) >= 1"},
      {"collector down", "(ai_collector_up) == 0", "(ai_collector_up) == 2"},
      {"stale node", "unless on (node) max by (node) (ai_collector_up)",
       "and on (node) max by (node) (ai_collector_up)"},
      {"await in ms", "ai_storage_await_seconds * 1000", "ai_storage_await_seconds * 100"},
      {"await labels", "expr: ai_storage_await_seconds * 1000",
       "expr: max by (node, device) (ai_storage_await_seconds) * 1000"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::string mutated = rules;
    const auto at = mutated.find(tc.from);
    ASSERT_NE(at, std::string::npos) << tc.from;
    mutated.replace(at, tc.from.size(), tc.to);
    dir_.Write("mutant/plain/tidal.rules.yaml", mutated);
    const std::string t = dir_.Write("mutant/tests/tidal.rules.test.yaml", tests);
    auto unit = RunProgram({testing::kPromtoolBinary, "test", "rules", t}, dir_);
    EXPECT_NE(unit.exit_code, 0) << "the unit tests did not notice: " << tc.name;
  }
}

TEST_F(Stack, ThePlainScrapeConfigIsAValidPrometheusConfig) {
  const Rendered r = Render("deploy/overlays/no-operator", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.yaml;
  const std::string file = dir_.Write("plain.yaml", r.yaml);
  const std::string out = dir_.path() + "/configmaps";
  const auto v = RunProgram({kPython, Src("deploy/tests/validate_manifests.py"), file, out}, dir_);
  ASSERT_EQ(v.exit_code, 0) << v.out;
  // The ConfigMap's two keys side by side, as mounted: the config loads the rules.
  const std::string conf = dir_.path() + "/prom/prometheus.yml";
  std::filesystem::create_directories(dir_.path() + "/prom");
  std::filesystem::copy_file(out + "/tidal-prometheus.prometheus.yml", conf);
  std::filesystem::copy_file(out + "/tidal-prometheus.tidal.rules.yaml",
                             dir_.path() + "/prom/tidal.rules.yaml");
  auto check = RunProgram({testing::kPromtoolBinary, "check", "config", conf}, dir_);
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find("1 rule files found"), std::string::npos) << check.out;
  // The rules shipped in the ConfigMap are the source file, byte for byte.
  EXPECT_EQ(ReadFile(dir_.path() + "/prom/tidal.rules.yaml"),
            ReadFile(Src("deploy/monitoring/plain/tidal.rules.yaml")));
}

// Every PromQL expression of the rules file (record and alert) and of the
// dashboard (panel targets), named by where it comes from.
std::vector<std::pair<std::string, std::string>> Expressions(std::string* error) {
  std::vector<std::pair<std::string, std::string>> out;
  const YAML::Node rules = YAML::LoadFile(Src("deploy/monitoring/plain/tidal.rules.yaml"));
  for (const auto& g : rules["groups"])
    for (const auto& r : g["rules"])
      out.emplace_back("rule " + (r["record"] ? r["record"] : r["alert"]).as<std::string>(),
                       r["expr"].as<std::string>());
  const auto dash = nlohmann::json::parse(ReadFile(Src("deploy/monitoring/dashboards/tidal.json")),
                                          nullptr, false);
  if (dash.is_discarded()) {
    *error = "the dashboard is not JSON";
    return out;
  }
  for (const auto& p : dash.at("panels"))
    for (const auto& t : p.value("targets", nlohmann::json::array()))
      out.emplace_back(
          "panel " + p.at("title").get<std::string>() + " " + t.at("refId").get<std::string>(),
          t.at("expr").get<std::string>());
  return out;
}

// The dashboard shows the golden metrics (docs/design.md#golden-metrics), storage
// await, and the extender's latency, fallback stage and reservations.
TEST_F(Stack, TheDashboardHasEveryPanelTheIssueAsksFor) {
  const auto dash = nlohmann::json::parse(ReadFile(Src("deploy/monitoring/dashboards/tidal.json")),
                                          nullptr, false);
  ASSERT_FALSE(dash.is_discarded());
  std::set<int> ids;
  std::map<std::string, std::set<std::string>>
      by_metric;  // metric -> types of the panels showing it
  for (const auto& p : dash.at("panels")) {
    EXPECT_TRUE(ids.insert(p.at("id").get<int>()).second) << "duplicate panel id " << p.at("id");
    for (const auto& t : p.value("targets", nlohmann::json::array())) {
      static const std::regex name(R"([a-z_:]+[a-z0-9_:]*)");
      const std::string expr = t.at("expr").get<std::string>();
      for (std::sregex_iterator it(expr.begin(), expr.end(), name), end; it != end; ++it)
        by_metric[it->str()].insert(p.at("type").get<std::string>());
    }
  }
  const std::pair<const char*, const char*> wanted[] = {
      {"node:ai_gpu_memory_utilization:ratio", "heatmap"},
      {"cluster:tidal_lscs:ratio", "stat"},
      {"node:ai_nvlink_bandwidth_utilization:stdvar_avg5m", "timeseries"},
      {"node:ai_storage_await_ms:max", "timeseries"},
      {"tidal_extender_request_duration_seconds_bucket", "timeseries"},
      {"tidal_extender_fallback_stage", "stat"},
      {"tidal_extender_reservations_in_flight", "timeseries"},
  };
  for (const auto& [metric, type] : wanted) {
    SCOPED_TRACE(metric);
    EXPECT_TRUE(by_metric[metric].count(type)) << "no " << type << " panel shows it";
  }
}

TEST_F(Stack, OnlyTheExtendersPublishedSeriesAreUsed) {
  // A typo in an extender series name would make a panel or an alert silently empty.
  const std::set<std::string> published = {"tidal_extender_requests_total",
                                           "tidal_extender_request_duration_seconds_bucket",
                                           "tidal_extender_request_duration_seconds_sum",
                                           "tidal_extender_request_duration_seconds_count",
                                           "tidal_extender_snapshot_age_seconds",
                                           "tidal_extender_fallback_stage",
                                           "tidal_extender_fallback_golden_pool_empty",
                                           "tidal_extender_unknown_nodes",
                                           "tidal_extender_rejections_total",
                                           "tidal_extender_reservations_in_flight"};
  std::string error;
  const auto exprs = Expressions(&error);
  ASSERT_EQ(error, "");
  static const std::regex name(R"(tidal_extender_[a-z0-9_]+)");
  int seen = 0;
  for (const auto& [where, expr] : exprs)
    for (std::sregex_iterator it(expr.begin(), expr.end(), name), end; it != end; ++it, ++seen)
      EXPECT_TRUE(published.count(it->str())) << where << ": " << it->str();
  EXPECT_GT(seen, 5);
}

TEST_F(Stack, EveryExpressionIsAcceptedByPrometheus) {
  ASSERT_EQ(access(testing::kPrometheusBinary, X_OK), 0)
      << "prometheus is required (scripts/install-deps.sh)";
  std::string error;
  auto exprs = Expressions(&error);
  ASSERT_EQ(error, "");
  ASSERT_GT(exprs.size(), 25u);
  testing::PrometheusServer prom(dir_, dir_.path() + "/data");
  ASSERT_TRUE(prom.started());
  httplib::Client cli("127.0.0.1", prom.port());
  cli.set_read_timeout(10, 0);
  ASSERT_TRUE(testing::Eventually([&] {
    auto r = cli.Get("/-/ready");
    return r && r->status == 200;
  })) << prom.log();
  auto query = [&](const std::string& expr) {
    auto r = cli.Post("/api/v1/query", httplib::Params{{"query", expr}});
    return r ? r->status : -1;
  };
  // The check can fail: Prometheus does reject a broken expression.
  EXPECT_EQ(query("sum by (node (ai_gpu_memory_used_bytes)"), 400);
  for (const auto& [where, expr] : exprs) {
    SCOPED_TRACE(where);
    EXPECT_EQ(query(expr), 200) << expr;
  }
}

}  // namespace
}  // namespace tidal
