#pragma once
// A stand-in for kube-apiserver over HTTPS on loopback, playing its documented
// behaviour for what Tidal uses: paged lists (limit/continue) of nodes and pods
// with a list resourceVersion, chunked watch streams (one JSON event per line,
// bookmarks with allowWatchBookmarks, events after the requested version,
// `410 Gone` as an ERROR event once a version is compacted, or as the HTTP
// status), the pods/binding subresource (409 Conflict when already bound; the
// Binding's annotations copied onto the pod),
// merge patches of annotations, and evictions. It checks the bearer token and
// records every request so tests can check paths, headers and bodies.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "testing/tls.h"

namespace tidal::testing {

class FakeApiServer {
 public:
  struct Recorded {
    std::string method, path, query, body, content_type, authorization;
    int remote_port = 0;  // the client's: the same one for requests on one connection
  };
  struct Event {
    std::uint64_t rv;
    std::string kind;  // "nodes" or "pods"
    std::string type;
    nlohmann::json object;
  };

  FakeApiServer(const TestPki& pki, std::string token)
      : token_(std::move(token)),
        server_(pki.server_cert_file.c_str(), pki.server_key_file.c_str()) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(8); };
    server_.Get(R"(/api/v1/(nodes|pods))", [this](const httplib::Request& q, httplib::Response& r) {
      if (!Admit(q, r)) return;
      const std::string kind = q.matches[1];
      if (q.get_param_value("watch") == "1" || q.get_param_value("watch") == "true") {
        Watch(kind, q, r);
      } else {
        List(kind, q, r);
      }
    });
    // PodDisruptionBudgets: one unpaged list (the rebalancer reads them).
    server_.Get("/apis/policy/v1/poddisruptionbudgets", [this](const httplib::Request& q,
                                                               httplib::Response& r) {
      if (!Admit(q, r)) return;
      std::lock_guard<std::mutex> lock(mu_);
      nlohmann::json items = nlohmann::json::array();
      for (const auto& [key, obj] : pdbs_) items.push_back(obj);
      r.set_content(nlohmann::json{{"kind", "PodDisruptionBudgetList"},
                                   {"apiVersion", "policy/v1"},
                                   {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                                   {"items", items}}
                        .dump(),
                    "application/json");
    });
    server_.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
                [this](const httplib::Request& q, httplib::Response& r) {
                  if (!Admit(q, r)) return;
                  std::lock_guard<std::mutex> lock(mu_);
                  auto it = pods_.find(std::string(q.matches[1]) + "/" + std::string(q.matches[2]));
                  if (it == pods_.end()) return Status(r, 404, "NotFound", "pods not found");
                  r.set_content(it->second.dump(), "application/json");
                });
    server_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
                  [this](const httplib::Request& q, httplib::Response& r) {
                    if (!Admit(q, r)) return;
                    Patch(std::string(q.matches[1]) + "/" + std::string(q.matches[2]), q, r);
                  });
    server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
                 [this](const httplib::Request& q, httplib::Response& r) {
                   if (!Admit(q, r)) return;
                   Bind(q.matches[1], q.matches[2], q, r);
                 });
    server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction)",
                 [this](const httplib::Request& q, httplib::Response& r) {
                   if (!Admit(q, r)) return;
                   Evict(q.matches[1], q.matches[2], q, r);
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the loop runs would be lost, and the destructor would hang.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

  // State changes, each a watch event with the next resourceVersion.
  void PutNode(nlohmann::json node) { Put("nodes", std::move(node)); }
  void PutPod(nlohmann::json pod) { Put("pods", std::move(pod)); }
  void PutPdb(nlohmann::json pdb) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto& m = pdb["metadata"];
    pdbs_[m.value("namespace", "default") + "/" + m["name"].get<std::string>()] = pdb;
  }
  void DeletePod(const std::string& ns, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return;
    nlohmann::json obj = it->second;
    pods_.erase(it);
    Emit("pods", "DELETED", std::move(obj));
  }
  void DeleteNode(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return;
    nlohmann::json obj = it->second;
    nodes_.erase(it);
    Emit("nodes", "DELETED", std::move(obj));
  }
  // Puts a node and forgets every event up to it, in one step: every open
  // watch is then behind the oldest version kept and gets 410 (with
  // `drop_watches`, the watches end first and the 410 comes on the new request).
  void PutNodeAndCompact(nlohmann::json node, bool drop_watches) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string key = Key("nodes", node);
    Emit("nodes", nodes_.count(key) ? "MODIFIED" : "ADDED", std::move(node));
    compacted_rv_ = rv_;
    events_.clear();
    if (drop_watches) ++drop_generation_;
  }
  // Ends every open watch (as an API server restart or its timeout would).
  void DropWatches() {
    std::lock_guard<std::mutex> lock(mu_);
    ++drop_generation_;
    cv_.notify_all();
  }
  void set_page_size_cap(int n) { page_cap_ = n; }
  void set_gone_as_http_status(bool b) { gone_as_http_ = b; }
  void set_bookmark_interval_ms(int ms) { bookmark_ms_ = ms; }
  // The next `n` binding calls answer with `status` (409 or 5xx).
  void FailNextBindings(int n, int status) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_bindings_ = n;
    fail_status_ = status;
  }
  // The next `n` binding calls bind the pod but answer 500 (a lost answer).
  void LoseNextBindingAnswers(int n) { lose_answers_ = n; }

  std::vector<Recorded> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  nlohmann::json pod(const std::string& ns, const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    return it == pods_.end() ? nlohmann::json() : it->second;
  }
  int watches_started(const std::string& kind) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = watches_.find(kind);
    return it == watches_.end() ? 0 : it->second;
  }
  int lists(const std::string& kind) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = lists_.find(kind);
    return it == lists_.end() ? 0 : it->second;
  }

 private:
  static void Status(httplib::Response& r, int code, const std::string& reason,
                     const std::string& message) {
    r.status = code;
    r.set_content(nlohmann::json{{"kind", "Status"},
                                 {"apiVersion", "v1"},
                                 {"status", "Failure"},
                                 {"reason", reason},
                                 {"message", message},
                                 {"code", code}}
                      .dump(),
                  "application/json");
  }

  bool Admit(const httplib::Request& q, httplib::Response& r) {
    std::lock_guard<std::mutex> lock(mu_);
    Recorded rec{q.method,
                 q.path,
                 "",
                 q.body,
                 q.get_header_value("Content-Type"),
                 q.get_header_value("Authorization"),
                 q.remote_port};
    for (const auto& [k, v] : q.params) rec.query += (rec.query.empty() ? "" : "&") + k + "=" + v;
    requests_.push_back(std::move(rec));
    if (q.get_header_value("Authorization") != "Bearer " + token_) {
      Status(r, 401, "Unauthorized", "Unauthorized");
      return false;
    }
    return true;
  }

  void Put(const std::string& kind, nlohmann::json obj) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& store = kind == "nodes" ? nodes_ : pods_;
    const std::string key = Key(kind, obj);
    const bool exists = store.count(key) > 0;
    store[key] = obj;
    Emit(kind, exists ? "MODIFIED" : "ADDED", std::move(obj));
  }

  static std::string Key(const std::string& kind, const nlohmann::json& obj) {
    const auto& m = obj["metadata"];
    return kind == "nodes" ? m["name"].get<std::string>()
                           : m.value("namespace", "default") + "/" + m["name"].get<std::string>();
  }

  // With mu_ held.
  void Emit(const std::string& kind, const std::string& type, nlohmann::json obj) {
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    auto& store = kind == "nodes" ? nodes_ : pods_;
    if (type != "DELETED") store[Key(kind, obj)] = obj;
    events_.push_back({rv_, kind, type, std::move(obj)});
    cv_.notify_all();
  }

  static bool Matches(const std::string& selector, const nlohmann::json& obj) {
    if (selector.empty()) return true;
    if (selector == "spec.nodeName!=") return !obj["spec"].value("nodeName", "").empty();
    return false;
  }

  void List(const std::string& kind, const httplib::Request& q, httplib::Response& r) {
    std::lock_guard<std::mutex> lock(mu_);
    ++lists_[kind];
    const auto& store = kind == "nodes" ? nodes_ : pods_;
    int limit = q.has_param("limit") ? std::stoi(q.get_param_value("limit")) : 0;
    if (page_cap_ > 0 && (limit == 0 || limit > page_cap_)) limit = page_cap_;
    const std::string selector = q.get_param_value("fieldSelector");
    std::string start = q.get_param_value("continue");
    nlohmann::json items = nlohmann::json::array();
    std::string next;
    for (auto it = start.empty() ? store.begin() : store.upper_bound(start); it != store.end();
         ++it) {
      if (!Matches(selector, it->second)) continue;
      if (limit > 0 && static_cast<int>(items.size()) == limit) {
        next = std::prev(it)->first;
        break;
      }
      items.push_back(it->second);
    }
    nlohmann::json list{{"kind", kind == "nodes" ? "NodeList" : "PodList"},
                        {"apiVersion", "v1"},
                        {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                        {"items", items}};
    if (!next.empty()) list["metadata"]["continue"] = next;
    r.set_content(list.dump(), "application/json");
  }

  void Watch(const std::string& kind, const httplib::Request& q, httplib::Response& r) {
    const std::uint64_t from = std::stoull(
        q.get_param_value("resourceVersion").empty() ? "0" : q.get_param_value("resourceVersion"));
    const bool bookmarks = q.get_param_value("allowWatchBookmarks") == "true";
    const int timeout_s =
        q.has_param("timeoutSeconds") ? std::stoi(q.get_param_value("timeoutSeconds")) : 60;
    const std::string selector = q.get_param_value("fieldSelector");
    std::uint64_t drop_gen;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++watches_[kind];
      drop_gen = drop_generation_;
      if (from < compacted_rv_ && gone_as_http_) {
        Status(r, 410, "Expired", "too old resource version");
        return;
      }
    }
    auto sent = std::make_shared<std::uint64_t>(from);
    auto gone_sent = std::make_shared<bool>(false);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    r.set_chunked_content_provider("application/json", [this, kind, selector, bookmarks, deadline,
                                                        sent, gone_sent,
                                                        drop_gen](size_t, httplib::DataSink& sink) {
      std::unique_lock<std::mutex> lock(mu_);
      if (*gone_sent || closing_ || drop_generation_ != drop_gen) {
        sink.done();
        return true;
      }
      if (*sent < compacted_rv_) {
        const std::string line = nlohmann::json{{"type", "ERROR"},
                                                {"object",
                                                 {{"kind", "Status"},
                                                  {"apiVersion", "v1"},
                                                  {"status", "Failure"},
                                                  {"reason", "Expired"},
                                                  {"message", "too old resource version"},
                                                  {"code", 410}}}}
                                     .dump() +
                                 "\n";
        *gone_sent = true;
        lock.unlock();
        sink.write(line.data(), line.size());
        return true;
      }
      std::string out;
      auto collect = [&] {
        for (const auto& e : events_)
          if (e.kind == kind && e.rv > *sent) {
            *sent = e.rv;
            if (Matches(selector, e.object) || e.type == "DELETED")
              out += nlohmann::json{{"type", e.type}, {"object", e.object}}.dump() + "\n";
          }
      };
      collect();
      if (out.empty()) {
        const bool timed_out = cv_.wait_for(lock, std::chrono::milliseconds(bookmark_ms_.load())) ==
                               std::cv_status::timeout;
        if (closing_ || drop_generation_ != drop_gen ||
            std::chrono::steady_clock::now() > deadline) {
          sink.done();
          return true;
        }
        if (!timed_out || *sent < compacted_rv_) return true;  // re-evaluate from the top
        collect();
        if (out.empty() && bookmarks) {
          out = nlohmann::json{{"type", "BOOKMARK"},
                               {"object",
                                {{"kind", kind == "nodes" ? "Node" : "Pod"},
                                 {"apiVersion", "v1"},
                                 {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}}}
                    .dump() +
                "\n";
          *sent = std::max(*sent, rv_);
        }
      }
      lock.unlock();
      if (!out.empty() && !sink.write(out.data(), out.size())) return false;
      return true;
    });
  }

  void Patch(const std::string& key, const httplib::Request& q, httplib::Response& r) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return Status(r, 404, "NotFound", "pods \"" + key + "\" not found");
    if (q.get_header_value("Content-Type") != "application/merge-patch+json")
      return Status(r, 415, "UnsupportedMediaType", "unsupported patch type");
    nlohmann::json patch = nlohmann::json::parse(q.body, nullptr, false);
    if (patch.is_discarded()) return Status(r, 400, "BadRequest", "invalid JSON");
    nlohmann::json obj = it->second;
    obj.merge_patch(patch);
    Emit("pods", "MODIFIED", obj);
    r.set_content(pods_[key].dump(), "application/json");
  }

  void Bind(const std::string& ns, const std::string& name, const httplib::Request& q,
            httplib::Response& r) {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::json b = nlohmann::json::parse(q.body, nullptr, false);
    if (b.is_discarded() || b.value("kind", "") != "Binding" || b.value("apiVersion", "") != "v1" ||
        !b.contains("target") || b["target"].value("kind", "") != "Node" ||
        b["target"].value("name", "").empty() || b["metadata"].value("name", "") != name)
      return Status(r, 400, "BadRequest", "not a v1 Binding for this pod");
    if (fail_bindings_ > 0) {
      --fail_bindings_;
      return Status(r, fail_status_, fail_status_ == 409 ? "Conflict" : "InternalError",
                    "scripted failure");
    }
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return Status(r, 404, "NotFound", "pods \"" + name + "\" not found");
    if (b["metadata"].contains("uid") && b["metadata"]["uid"] != it->second["metadata"]["uid"])
      return Status(r, 409, "Conflict", "Precondition failed: UID in precondition");
    const std::string bound = it->second["spec"].value("nodeName", "");
    if (!bound.empty())
      return Status(r, 409, "Conflict",
                    "Operation cannot be fulfilled on pods/binding \"" + name + "\": pod " + name +
                        " is already assigned to node \"" + bound + "\"");
    nlohmann::json obj = it->second;
    obj["spec"]["nodeName"] = b["target"]["name"];
    // As the API server does: the Binding's annotations land on the pod in the same write.
    if (b["metadata"].contains("annotations") && b["metadata"]["annotations"].is_object())
      for (const auto& [k, v] : b["metadata"]["annotations"].items())
        obj["metadata"]["annotations"][k] = v;
    Emit("pods", "MODIFIED", obj);
    if (lose_answers_ > 0) {
      --lose_answers_;
      return Status(r, 500, "InternalError", "the answer was lost");
    }
    r.status = 201;
    r.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})",
                  "application/json");
  }

  void Evict(const std::string& ns, const std::string& name, const httplib::Request& q,
             httplib::Response& r) {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::json e = nlohmann::json::parse(q.body, nullptr, false);
    if (e.is_discarded() || e.value("kind", "") != "Eviction" ||
        e.value("apiVersion", "") != "policy/v1" || e["metadata"].value("name", "") != name)
      return Status(r, 400, "BadRequest", "not a policy/v1 Eviction for this pod");
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return Status(r, 404, "NotFound", "pods \"" + name + "\" not found");
    if (evictions_blocked_)
      return Status(r, 429, "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.");
    nlohmann::json obj = it->second;
    pods_.erase(it);
    Emit("pods", "DELETED", std::move(obj));
    r.status = 201;
    r.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})",
                  "application/json");
  }

 public:
  void set_evictions_blocked(bool b) {
    std::lock_guard<std::mutex> lock(mu_);
    evictions_blocked_ = b;
  }

 private:
  std::string token_;
  httplib::SSLServer server_;
  std::thread thread_;
  int port_ = -1;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool closing_ = false;
  std::uint64_t rv_ = 100, compacted_rv_ = 0, drop_generation_ = 0;
  std::map<std::string, nlohmann::json> nodes_, pods_, pdbs_;
  std::deque<Event> events_;
  std::vector<Recorded> requests_;
  std::map<std::string, int> watches_, lists_;
  std::atomic<int> page_cap_{0}, bookmark_ms_{200}, lose_answers_{0};
  std::atomic<bool> gone_as_http_{false};
  int fail_bindings_ = 0, fail_status_ = 409;
  bool evictions_blocked_ = false;
};

inline std::string Base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(k[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(k[((val << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

// A kubeconfig for the fake server: its URL, its CA (inline) and a bearer token.
inline std::string TestKubeconfig(const std::string& url, const std::string& ca_pem,
                                  const std::string& token) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
         "clusters:\n- name: c\n  cluster:\n    server: " +
         url + "\n    certificate-authority-data: " + Base64(ca_pem) +
         "\n"
         "contexts:\n- name: test\n  context: {cluster: c, user: u}\n"
         "users:\n- name: u\n  user: {token: " +
         token + "}\n";
}

// Small builders for the objects the tests put.
inline nlohmann::json TestNode(const std::string& name, int gpus,
                               nlohmann::json labels = nlohmann::json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"status",
           {{"allocatable",
             {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

inline nlohmann::json TestPod(const std::string& ns, const std::string& name, int gpus,
                              const std::string& node = "", const std::string& phase = "Pending",
                              nlohmann::json annotations = nlohmann::json::object()) {
  nlohmann::json pod{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}, {"annotations", annotations}}},
      {"spec",
       {{"schedulerName", "load-aware-scheduler"},
        {"containers",
         {{{"name", "main"},
           {"image", "pytorch/pytorch:2.1"},
           {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
      {"status", {{"phase", phase}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

}  // namespace tidal::testing
