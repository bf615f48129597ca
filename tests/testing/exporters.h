#pragma once
// Fixed expositions served on loopback as exporters would serve them, at
// /NAME/metrics, and the scrape jobs a real Prometheus (PrometheusServer) needs to
// read them: one job per name, every second.
#include <httplib.h>

#include <string>
#include <thread>
#include <vector>

namespace tidal::testing {

class FakeExporters {
 public:
  FakeExporters() = default;
  FakeExporters(const FakeExporters&) = delete;
  FakeExporters& operator=(const FakeExporters&) = delete;
  ~FakeExporters() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  // Before Start: `text` at /NAME/metrics, scraped as job `job_prefix` + NAME.
  void Serve(const std::string& name, std::string text, const std::string& job_prefix = "") {
    server_.Get("/" + name + "/metrics",
                [text = std::move(text)](const httplib::Request&, httplib::Response& res) {
                  res.set_content(text, "text/plain; version=0.0.4");
                });
    jobs_.push_back({job_prefix + name, name});
  }
  // Listens on a free loopback port; false when none could be bound.
  bool Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) return false;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    return true;
  }
  // prometheus.yml with a 1 s scrape and evaluation interval and these jobs.
  std::string PrometheusConfig() const {
    std::string yaml = "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n";
    for (const Job& j : jobs_)
      yaml += "  - job_name: " + j.name + "\n    metrics_path: /" + j.path +
              "/metrics\n    static_configs: [{targets: ['127.0.0.1:" + std::to_string(port_) +
              "']}]\n";
    return yaml;
  }

 private:
  struct Job {
    std::string name, path;
  };
  httplib::Server server_;
  std::thread thread_;
  std::vector<Job> jobs_;
  int port_ = 0;
};

}  // namespace tidal::testing
