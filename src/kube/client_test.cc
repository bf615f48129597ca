// The client and the informer against a local HTTPS server that plays the
// API server's documented list/watch behaviour (tests/testing/fake_apiserver.h).
#include "tidal/kube/client.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "testing/fake_apiserver.h"
#include "testing/process.h"
#include "tidal/kube/informer.h"

namespace tidal::kube {
namespace {

using testing::FakeApiServer;

std::shared_ptr<spdlog::logger> NullLog() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

Endpoint EndpointFor(const FakeApiServer& api, const testing::TestPki& pki,
                     const std::string& token) {
  std::string error;
  Endpoint e = *ParseServerUrl(api.url(), &error);
  e.ca_pem = pki.ca_pem;
  e.token = token;
  e.source = "test";
  return e;
}

class KubeClientTest : public ::testing::Test {
 protected:
  testing::TempDir dir;
  testing::TestPki pki = testing::MakeTestPki(dir);
  FakeApiServer api{pki, "secret"};
};

TEST_F(KubeClientTest, VerifiesTheCaAndSendsTheToken) {
  api.PutNode(testing::TestNode("n1", 4));
  KubeClient client(EndpointFor(api, pki, "secret"));
  HttpResponse r = client.Do({"GET", "/api/v1/nodes?limit=10", "", ""});
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  EXPECT_NE(r.body.find("\"n1\""), std::string::npos);
  const auto reqs = api.requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_EQ(reqs.back().authorization, "Bearer secret");

  // Another CA: the server's certificate must not be trusted.
  testing::TempDir other_dir;
  const testing::TestPki other = testing::MakeTestPki(other_dir);
  Endpoint wrong = EndpointFor(api, pki, "secret");
  wrong.ca_pem = other.ca_pem;
  KubeClient untrusting(wrong);
  r = untrusting.Do({"GET", "/api/v1/nodes", "", ""});
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.error.empty());
}

TEST_F(KubeClientTest, RereadsARotatedTokenFile) {
  const std::string token_file = dir.Write("token", "old-token\n");
  Endpoint e = EndpointFor(api, pki, "");
  e.token_file = token_file;
  KubeClient client(e);
  EXPECT_EQ(client.Do({"GET", "/api/v1/nodes", "", ""}).status, 401);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later mtime
  dir.Write("token", "secret\n");
  EXPECT_EQ(client.Do({"GET", "/api/v1/nodes", "", ""}).status, 200);
}

// A bind is one request: a TLS connection made for each would cost more than it.
TEST_F(KubeClientTest, RequestsReuseAKeptAliveConnection) {
  KubeClient client(EndpointFor(api, pki, "secret"));
  for (int i = 0; i < 5; ++i) ASSERT_EQ(client.Do({"GET", "/api/v1/nodes", "", ""}).status, 200);
  std::set<int> ports;
  for (const auto& r : api.requests()) ports.insert(r.remote_port);
  EXPECT_EQ(ports.size(), 1u) << "requests on " << ports.size() << " connections";
}

TEST_F(KubeClientTest, RejectsCertificatesThatDoNotParse) {
  Endpoint e = EndpointFor(api, pki, "secret");
  e.ca_pem = "not a certificate";
  EXPECT_THROW(KubeClient{e}, InputError);
}

// Keeps what the informer reports, by name.
class Recorder : public InformerHandler {
 public:
  void Replace(const std::vector<std::string>& objects) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++replaces_;
    state_.clear();
    for (const auto& o : objects) {
      auto j = nlohmann::json::parse(o);
      state_[j["metadata"]["name"]] = j;
    }
  }
  void Apply(const WatchEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto j = nlohmann::json::parse(e.object);
    ++events_;
    if (e.type == WatchEvent::Type::kDeleted) {
      state_.erase(j["metadata"]["name"]);
    } else {
      state_[j["metadata"]["name"]] = j;
    }
  }
  std::map<std::string, nlohmann::json> state() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  int replaces() const {
    std::lock_guard<std::mutex> lock(mu_);
    return replaces_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> state_;
  int replaces_ = 0, events_ = 0;
};

InformerOptions FastOptions() {
  InformerOptions o;
  o.page_size = 500;
  o.backoff_initial_ms = 20;
  o.backoff_max_ms = 200;
  return o;
}

TEST_F(KubeClientTest, InformerListsInPagesThenWatches) {
  for (int i = 0; i < 5; ++i) api.PutNode(testing::TestNode("n" + std::to_string(i), 8));
  api.set_page_size_cap(2);
  KubeClient client(EndpointFor(api, pki, "secret"));
  Recorder rec;
  Informer informer(client, "/api/v1/nodes", rec, NullLog(), FastOptions());
  informer.Start();
  ASSERT_TRUE(testing::Eventually([&] { return informer.synced(); }));
  EXPECT_EQ(rec.state().size(), 5u);

  // Three pages, then a watch from the list's version with bookmarks.
  int pages = 0;
  std::string watch_query;
  for (const auto& r : api.requests()) {
    if (r.path != "/api/v1/nodes") continue;
    if (r.query.find("watch=1") != std::string::npos) {
      watch_query = r.query;
    } else {
      ++pages;
    }
  }
  EXPECT_EQ(pages, 3);
  ASSERT_TRUE(testing::Eventually([&] {
    for (const auto& r : api.requests())
      if (r.query.find("watch=1") != std::string::npos) return true;
    return false;
  }));
  for (const auto& r : api.requests())
    if (r.query.find("watch=1") != std::string::npos) watch_query = r.query;
  EXPECT_NE(watch_query.find("allowWatchBookmarks=true"), std::string::npos) << watch_query;
  EXPECT_NE(watch_query.find("resourceVersion=105"), std::string::npos) << watch_query;

  api.PutNode(testing::TestNode("n9", 2));
  api.PutNode(testing::TestNode("n0", 4));  // modified
  api.DeleteNode("n1");
  ASSERT_TRUE(testing::Eventually([&] {
    auto s = rec.state();
    return s.count("n9") && !s.count("n1") &&
           s["n0"]["status"]["allocatable"]["nvidia.com/gpu"] == "4";
  }));
  EXPECT_EQ(rec.replaces(), 1);
  EXPECT_EQ(api.lists("nodes"), 3);
  informer.Stop();
}

TEST_F(KubeClientTest, InformerResumesAfterAWatchEnds) {
  api.PutNode(testing::TestNode("a", 1));
  api.set_bookmark_interval_ms(50);
  KubeClient client(EndpointFor(api, pki, "secret"));
  Recorder rec;
  Informer informer(client, "/api/v1/nodes", rec, NullLog(), FastOptions());
  informer.Start();
  ASSERT_TRUE(testing::Eventually([&] { return api.watches_started("nodes") >= 1; }));

  // The server ends the watch (restart, timeout): resumed from the last version, no list.
  api.DropWatches();
  ASSERT_TRUE(testing::Eventually([&] { return api.watches_started("nodes") >= 2; }));
  api.PutNode(testing::TestNode("b", 1));
  ASSERT_TRUE(testing::Eventually([&] { return rec.state().count("b") == 1; }));
  EXPECT_EQ(api.lists("nodes"), 1);
  // Bookmarks come every 50 ms on an open watch: wait for one (a loaded machine).
  EXPECT_TRUE(testing::Eventually([&] { return informer.stats().bookmarks >= 1; }));
  informer.Stop();
}

TEST_F(KubeClientTest, InformerRelistsOnGoneEventAndStatus) {
  for (bool as_status : {false, true}) {
    SCOPED_TRACE(as_status ? "410 as the HTTP status" : "410 as an ERROR event");
    testing::TempDir d;
    const testing::TestPki p = testing::MakeTestPki(d);
    FakeApiServer server(p, "secret");
    server.set_gone_as_http_status(as_status);
    server.set_bookmark_interval_ms(30);
    server.PutNode(testing::TestNode("a", 1));
    KubeClient client(EndpointFor(server, p, "secret"));
    Recorder rec;
    InformerOptions o = FastOptions();
    Informer informer(client, "/api/v1/nodes", rec, NullLog(), o);
    informer.Start();
    ASSERT_TRUE(testing::Eventually([&] { return server.watches_started("nodes") >= 1; }));
    server.PutNodeAndCompact(testing::TestNode("b", 1), /*drop_watches=*/as_status);
    ASSERT_TRUE(testing::Eventually([&] { return server.lists("nodes") >= 2; }));
    ASSERT_TRUE(testing::Eventually([&] { return rec.state().count("b") == 1; }));
    EXPECT_GE(informer.stats().gone, 1u);
    EXPECT_GE(rec.replaces(), 2);
    informer.Stop();
  }
}

// A transport whose watches end with no event after `watch_lasts_ms` of the
// test's clock: a quiet watch ended by the server's timeout or the read timeout.
class QuietWatches final : public Transport {
 public:
  explicit QuietWatches(TimeMs watch_lasts_ms) : lasts_ms_(watch_lasts_ms) {}
  HttpResponse Do(const HttpRequest&) override {
    return {200, R"({"kind":"NodeList","metadata":{"resourceVersion":"7"},"items":[]})", ""};
  }
  HttpResponse Stream(const std::string&, const std::function<bool(std::string_view)>&) override {
    clock.Advance(lasts_ms_);  // the informer's thread alone reads the clock
    ++streams;
    return {200, "", ""};
  }
  void CancelStreams() override {}
  std::string Describe() const override { return "quiet"; }
  ManualClock clock{1'000'000};
  std::atomic<int> streams{0};

 private:
  TimeMs lasts_ms_;
};

TEST(Informer, AQuietWatchIsResumedAtOnceAndOneEndingAtOnceBacksOff) {
  struct Case {
    std::string name;
    TimeMs watch_lasts_ms;
    bool failure;
  };
  const std::vector<Case> cases = {
      {"quiet until the read timeout", 120'000, false},
      {"quiet until the server's timeout", 90'000, false},
      {"ended at once", 0, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    QuietWatches api(c.watch_lasts_ms);
    Recorder rec;
    InformerOptions o = FastOptions();
    o.clock = &api.clock;
    // A backoff the test would not outlive: resumed watches must not wait for it.
    o.backoff_initial_ms = o.backoff_max_ms = 600'000;
    Informer informer(api, "/api/v1/nodes", rec, NullLog(), o);
    informer.Start();
    if (c.failure) {
      ASSERT_TRUE(testing::Eventually([&] { return informer.stats().failures >= 1; }));
      EXPECT_NE(informer.stats().last_error.find("ended at once"), std::string::npos)
          << informer.stats().last_error;
      EXPECT_EQ(api.streams.load(), 1);  // backing off, not retrying in a loop
    } else {
      ASSERT_TRUE(testing::Eventually([&] { return api.streams.load() >= 3; }));
      EXPECT_EQ(informer.stats().failures, 0u) << informer.stats().last_error;
    }
    informer.Stop();
  }
}

TEST_F(KubeClientTest, InformerBacksOffWhileTheServerRefuses) {
  KubeClient client(EndpointFor(api, pki, "wrong-token"));
  Recorder rec;
  Informer informer(client, "/api/v1/nodes", rec, NullLog(), FastOptions());
  informer.Start();
  ASSERT_TRUE(testing::Eventually([&] { return informer.stats().failures >= 3; }));
  EXPECT_FALSE(informer.synced());
  EXPECT_NE(informer.stats().last_error.find("HTTP 401"), std::string::npos)
      << informer.stats().last_error;
  informer.Stop();  // returns promptly while backing off
}

}  // namespace
}  // namespace tidal::kube
